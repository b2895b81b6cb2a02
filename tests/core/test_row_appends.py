"""Row appends of one batch to the same table are written by one insert (providers/duckdb/connection.py)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from stratamem import Memory, TenantContext
from stratamem.providers.duckdb import DuckDBProvider
from stratamem.providers.duckdb.connection import RowAppend, merge_row_appends

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
        release = threading.Event()
        holding = threading.Event()

        def hold() -> None:  # the worker cannot write while this holds the lock: the searches' appends queue up
            with provider.writer_lock():
                holding.set()
                release.wait(30)

        holder = threading.Thread(target=hold)
        holder.start()
        assert holding.wait(10)
        results: list[int] = []
        searcher = threading.Thread(
            target=lambda: results.extend(
                len(mem.search(T, "release train", identifiers=WHO).results) for _ in range(4)
            )
        )
        try:
            searcher.start()
            searcher.join(10)
            assert not searcher.is_alive(), "searches waited for the write lock"
        finally:
            release.set()
            holder.join()
            searcher.join()
        returned = sum(results)
        provider.flush_appends()
        assert _count(provider, "search") == before[0] + 4
        assert _count(provider, "access") == before[1] + returned > before[1]


def _count(provider: DuckDBProvider, event: str) -> int:
    row = provider._cursor().execute("SELECT count(*) FROM memory_events WHERE event = ?", [event]).fetchone()
    assert row is not None
    return int(row[0])
