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

        holding, release = threading.Event(), threading.Event()

        def writer() -> None:  # a long write transaction in progress
            with provider.writer_lock():
                holding.set()
                release.wait(30)

        held = threading.Thread(target=writer)
        held.start()
        assert holding.wait(10)
        results: list[int] = []
        try:
            # The first search queues its bookkeeping behind the held lock; the second must not wait for it.
            reader = threading.Thread(
                target=lambda: results.extend(
                    len(mem.search(T, "deployment pipeline", identifiers=WHO).results) for _ in range(2)
                )
            )
            reader.start()
            reader.join(10)
            finished = not reader.is_alive()
        finally:
            release.set()
            held.join()
        reader.join()
        assert finished, "a search waited for the write lock held by another transaction"
        assert results and all(n > 0 for n in results)
        provider.flush_appends()  # the queued bookkeeping is written once the lock is free
        row = provider._cursor().execute("SELECT count(*) FROM memory_events WHERE event = 'search'").fetchone()
        assert row is not None and row[0] >= 3
