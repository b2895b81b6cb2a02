"""Row appends of one batch to the same table are written by one insert (providers/duckdb/connection.py)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from stratamem import Memory, TenantContext
from stratamem.providers.duckdb import DuckDBProvider
from stratamem.providers.duckdb.connection import RowAppend, merge_row_appends

from .locks import writer_held

T = TenantContext(tenant_id="acme", principal="u1")
WHO = {"user_id": "u1"}


def test_merge_keeps_rows_in_order_and_other_writes_in_place() -> None:
    calls: list[tuple[str, list[Sequence[Any]]]] = []

    def insert_to(name: str) -> Any:
        return lambda _cur, rows: calls.append((name, list(rows)))

    other: list[str] = []
    writes = [
        RowAppend("events", [[1], [2]], insert_to("events")),
        lambda _cur: other.append("x"),
        RowAppend("log", [["a"]], insert_to("log")),
        RowAppend("events", [[3]], insert_to("events")),
    ]
    merged = merge_row_appends(writes)
    assert len(merged) == 3
    for write in merged:
        write(None)
    assert calls == [("events", [[1], [2], [3]]), ("log", [["a"]])]
    assert other == ["x"]
    first = writes[0]
    assert isinstance(first, RowAppend) and first.rows == [[1], [2]]  # the queued appends are not changed


def test_the_events_of_searches_queued_together_are_all_written(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "m.duckdb", embedder="hashing") as mem:
        provider = mem.engine.provider
        assert isinstance(provider, DuckDBProvider)
        for i in range(5):
            mem.add(T, f"note {i} about the release train", layer="user", identifiers=WHO)
        mem.search(T, "release", identifiers=WHO)  # the partition is loaded into the search index
        provider.flush_appends()
        before = _count(provider, "search"), _count(provider, "access")
        results: list[int] = []
        searcher = threading.Thread(
            target=lambda: results.extend(
                len(mem.search(T, "release train", identifiers=WHO).results) for _ in range(4)
            )
        )
        with writer_held(provider):
            searcher.start()
            searcher.join(10)
            assert not searcher.is_alive(), "searches waited for the write lock"
        searcher.join()
        returned = sum(results)
        provider.flush_appends()
        assert _count(provider, "search") == before[0] + 4
        assert _count(provider, "access") == before[1] + returned > before[1]


def _count(provider: DuckDBProvider, event: str) -> int:
    row = provider._cursor().execute("SELECT count(*) FROM memory_events WHERE event = ?", [event]).fetchone()
    assert row is not None
    return int(row[0])


def test_access_rows_of_searches_queued_together_share_one_insert_and_sum_per_memory(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "m.duckdb", embedder="hashing") as mem:
        provider = mem.engine.provider
        assert isinstance(provider, DuckDBProvider)
        added = [mem.add(T, f"note {i} about the release train", layer="user", identifiers=WHO) for i in range(3)]
        mem.search(T, "release", identifiers=WHO, threshold=0.0)  # the partition is loaded into the search index
        provider.flush_appends()
        before = {a.memory.id: provider.get(T.tenant_id, a.memory.id, mem.engine.now()) for a in added}  # not an access
        inserts: list[int] = []
        insert = provider._insert_access

        def counting(cur: Any, rows: Sequence[Sequence[Any]]) -> None:
            inserts.append(len(rows))
            insert(cur, rows)

        provider._insert_access = counting  # type: ignore[method-assign]
        with writer_held(provider):
            for _ in range(3):  # each search returns every note: each memory is accessed three times
                assert len(mem.search(T, "release train", identifiers=WHO, threshold=0.0).results) == 3
        provider.flush_appends()
        assert inserts == [9]  # three searches, three rows each, one statement
        for memory_id, old in before.items():
            assert old is not None
            now = provider.get(T.tenant_id, memory_id, mem.engine.now())  # the store's row (the log folded)
            assert now is not None and now.access_count == old.access_count + 3
        # the search index's copy of the rows saw the same accesses
        hits = mem.search(T, "release train", identifiers=WHO, threshold=0.0).results
        assert {h.memory.id: h.memory.access_count for h in hits} == {
            i: o.access_count + 3 for i, o in before.items() if o is not None
        }


def test_a_consistent_read_sees_the_bookkeeping_still_waiting_in_the_queue(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "m.duckdb", embedder="hashing") as mem:
        provider = mem.engine.provider
        assert isinstance(provider, DuckDBProvider)
        mem.add(T, "the release train leaves on Fridays", layer="user", identifiers=WHO)
        provider.flush_appends()
        provider.db.appends.linger = 30.0  # the worker would hold the batch for 30 s
        before = _count(provider, "search")
        mem.search(T, "release train", identifiers=WHO)
        # a snapshot's read (one read transaction over every table) writes the queue first
        with provider.consistent_read() as cur:
            row = cur.execute("SELECT count(*) FROM memory_events WHERE event = 'search'").fetchone()
        assert row is not None and int(row[0]) == before + 1
