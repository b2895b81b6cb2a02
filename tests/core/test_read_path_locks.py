"""A search never waits for the embedded store's write lock.

A write transaction (an add: rows, graph, postings) holds the DuckDB store's write lock for a while;
the bookkeeping appends of earlier searches (``memory_events`` rows, access statistics) wait for it
in the append queue. A search reads the tenant's policy and the in-memory search index: neither is
touched by those appends, so it must not wait for them to be written (which would queue every
search behind every add under concurrent load).
"""

from __future__ import annotations

import threading
from pathlib import Path

from stratamem import Memory, TenantContext
from stratamem.providers.duckdb import DuckDBProvider

from .locks import writer_held

T = TenantContext(tenant_id="acme", principal="u1")
WHO = {"user_id": "u1"}


def test_a_search_does_not_wait_for_the_write_lock(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "m.duckdb", embedder="hashing") as mem:
        provider = mem.engine.provider
        assert isinstance(provider, DuckDBProvider)
        for i in range(12):
            mem.add(T, f"fact number {i} about the deployment pipeline", layer="user", identifiers=WHO)
        mem.policies.ttl_s = 0.0  # every search reads the tenant's policy from the store
        mem.search(T, "deployment", identifiers=WHO)  # the partition is loaded into the index
        provider.flush_appends()

        results: list[int] = []
        with writer_held(provider):
            # The first search queues its bookkeeping behind the held lock; the second must not wait for it.
            reader = threading.Thread(
                target=lambda: results.extend(
                    len(mem.search(T, "deployment pipeline", identifiers=WHO).results) for _ in range(2)
                )
            )
            reader.start()
            reader.join(10)
            finished = not reader.is_alive()
        reader.join()
        assert finished, "a search waited for the write lock held by another transaction"
        assert results and all(n > 0 for n in results)
        provider.flush_appends()  # the queued bookkeeping is written once the lock is free
        row = provider._cursor().execute("SELECT count(*) FROM memory_events WHERE event = 'search'").fetchone()
        assert row is not None and row[0] >= 3


def test_a_read_inside_a_write_transaction_after_searches_logged_accesses(tmp_path: Path) -> None:
    """Under load an add's transaction read rows (``_read``) while searches had logged accesses: the
    transaction folds the access log when it begins but the store still says "pending" until it
    commits, so the read tried to fold it again in a transaction of its own, on the thread's cursor
    already inside one ("cannot start a transaction within a transaction", a 503 after retries)."""
    with Memory.open(tmp_path / "m.duckdb", embedder="hashing") as mem:
        provider = mem.engine.provider
        assert isinstance(provider, DuckDBProvider)
        first = mem.add(T, "the deployment runs on Fridays", layer="user", identifiers=WHO).memory
        assert mem.search(T, "deployment", identifiers=WHO).results
        provider.flush_appends()  # the search's access is in the access log, not yet folded
        with provider.transaction():  # folds the log as it begins
            got = provider.get("acme", first.id, first.created_at)
            assert got is not None and got.access_count == 1
        assert mem.get(T, first.id).access_count >= 1
