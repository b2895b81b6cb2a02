"""A write transaction on the DuckDB store writes the queued bookkeeping appends itself.

Before, every write transaction first wrote the queue in a transaction of its own: two commits per
add when searches or the previous add had left appends queued. Now the appends are the first
statements of the write's own transaction. They are never lost with it: a write that rolls back,
or an append that fails inside it, leaves them written in a transaction of their own (and a failing
append never fails the write)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stratamem import Memory, TenantContext
from stratamem.providers.duckdb import DuckDBProvider

T = TenantContext(tenant_id="acme", principal="u1")
WHO = {"user_id": "u1"}


def _provider(mem: Memory) -> DuckDBProvider:
    provider = mem.engine.provider
    assert isinstance(provider, DuckDBProvider)
    provider.flush_appends()
    provider.settle_access()
    with provider.transaction() as cur:
        cur.execute("CREATE TABLE IF NOT EXISTS probe (n INTEGER, tx UBIGINT)")
    return provider


def _tx_id(cur: Any) -> int:
    row = cur.execute("SELECT current_transaction_id()").fetchall()
    return int(row[0][0])


def _probe_rows(provider: DuckDBProvider) -> list[tuple[int, int]]:
    with provider.read() as cur:
        return [(int(n), int(tx)) for n, tx in cur.execute("SELECT n, tx FROM probe ORDER BY n").fetchall()]


def _queue(provider: DuckDBProvider, n: int, runs: list[str]) -> None:
    """A bookkeeping append on the store's queue that records the transaction it was written in;
    ``runs`` records each time the queue's own runner wrote a batch."""

    def runner(writes: Any) -> None:
        runs.append("runner")
        provider._write_appends(writes)

    def write(cur: Any) -> None:
        cur.execute("INSERT INTO probe VALUES (?, ?)", [n, _tx_id(cur)])

    with provider.writer_lock():  # the worker cannot take it before the write below does
        assert provider.db.appends.put(runner, [write])


def test_queued_appends_are_written_in_the_write_transaction(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "m.duckdb", embedder="hashing") as mem:
        provider = _provider(mem)
        runs: list[str] = []
        with provider.writer_lock():
            _queue(provider, 1, runs)
            _queue(provider, 2, runs)
            with provider.transaction() as cur:
                own = _tx_id(cur)
                seen = cur.execute("SELECT count(*) FROM probe").fetchall()[0][0]
        assert seen == 2  # the write sees them
        assert _probe_rows(provider) == [(1, own), (2, own)]  # written in the write's own transaction
        assert runs == []  # not by the queue's runner in a transaction of their own
        assert provider.db.appends.pending == 0


def test_a_write_that_rolls_back_leaves_the_appends_it_carried_written(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "m.duckdb", embedder="hashing") as mem:
        provider = _provider(mem)
        runs: list[str] = []
        with provider.writer_lock():
            _queue(provider, 1, runs)
            with pytest.raises(RuntimeError), provider.transaction() as cur:
                own = _tx_id(cur)
                cur.execute("INSERT INTO probe VALUES (99, 0)")
                raise RuntimeError("the write fails")
        rows = _probe_rows(provider)
        assert [n for n, _ in rows] == [1]  # the write's own row is gone, the append is not
        assert rows[0][1] != own
        assert provider.db.appends.pending == 0


def test_a_failing_append_does_not_fail_the_write_that_carries_it(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "m.duckdb", embedder="hashing") as mem:
        provider = _provider(mem)

        def broken(cur: Any) -> None:
            cur.execute("INSERT INTO no_such_table VALUES (1)")

        with provider.writer_lock():
            assert provider.db.appends.put(provider._write_appends, [broken])
            with provider.transaction() as cur:
                cur.execute("INSERT INTO probe VALUES (7, 0)")
        assert [n for n, _ in _probe_rows(provider)] == [7]
        assert provider.db.appends.pending == 0


def test_search_statistics_are_exact_after_an_add(tmp_path: Path) -> None:
    """End to end: searches queue their access rows and events; the next add carries them and the
    counts read afterwards are complete."""
    with Memory.open(tmp_path / "m.duckdb", embedder="hashing") as mem:
        first = mem.add(T, "the release train leaves on Fridays", layer="user", identifiers=WHO).memory
        hits = sum(len(mem.search(T, "release train", identifiers=WHO, threshold=0.0).results) for _ in range(3))
        assert hits >= 3
        mem.add(T, "the staging cluster runs in Frankfurt", layer="user", identifiers=WHO)
        got = mem.get(T, first.id)
        assert got is not None and got.access_count == 3
        events = mem.engine.provider.count_memory_events(T.tenant_id)
        assert events.get("search") == 3
