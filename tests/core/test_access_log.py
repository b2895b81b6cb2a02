"""DuckDB access log: ``record_access`` appends, the next read or transaction that changes stored rows
folds it into ``memories`` (an add of new rows does not).

The statistics a caller sees must be exactly those of the UPDATE per access the log replaces: counts
summed, the latest access time and importance kept — through reads, writes, close, a crash (rows
left in the log by a process that never folded them) and concurrent readers and writers.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb

from stratamem import Memory, TenantContext
from stratamem.model import MemoryEntry
from stratamem.providers.duckdb import DuckDBProvider
from stratamem.providers.duckdb.schema import ACCESS_LOG_TABLE

ACME = TenantContext(tenant_id="acme")
IDS = {"user_id": "u1"}
T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def _provider(mem: Memory) -> DuckDBProvider:
    provider = mem.engine.provider
    assert isinstance(provider, DuckDBProvider)
    return provider


def _raw(provider: DuckDBProvider, tenant: str, memory_id: str) -> tuple[int, datetime | None, float]:
    """The stored row, read without settling the log."""
    row = (
        provider._cursor()
        .execute(
            "SELECT access_count, last_accessed_at, importance FROM memories WHERE tenant_id = ? AND id = ?",
            [tenant, memory_id],
        )
        .fetchone()
    )
    assert row is not None
    return int(row[0]), row[1], float(row[2])


def _log_rows(provider: DuckDBProvider) -> int:
    row = provider._cursor().execute(f"SELECT count(*) FROM {ACCESS_LOG_TABLE}").fetchone()
    return int(row[0]) if row else -1


def _two(mem: Memory) -> tuple[str, str]:
    out = mem.bulk_add(
        ACME,
        [
            {"content": "the user prefers dark mode", "layer": "user", "identifiers": IDS},
            {"content": "the user lives in Berlin", "layer": "user", "identifiers": IDS},
        ],
    )
    return out.results[0].memory.id, out.results[1].memory.id


def test_access_is_appended_then_folded_by_the_next_read(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "m.duckdb", embedder="hashing") as mem:
        a, b = _two(mem)
        p = _provider(mem)
        p.record_access("acme", {a: 0.4, b: 0.5}, T0)
        p.record_access("acme", {a: 0.6}, T0 + timedelta(minutes=1), counts={a: 3})
        p.record_access("acme", {a: 0.7}, T0 + timedelta(minutes=2))
        assert _log_rows(p) == 4
        assert _raw(p, "acme", a)[0] == 0  # memories untouched until the log is folded
        got = p.get("acme", a, T0 + timedelta(hours=1))
        assert got is not None
        assert got.access_count == 5 and got.importance == 0.7
        assert got.last_accessed_at == T0 + timedelta(minutes=2)
        other = p.get("acme", b, T0 + timedelta(hours=1))
        assert other is not None and other.access_count == 1 and other.importance == 0.5
        assert _log_rows(p) == 0
        assert _raw(p, "acme", a)[0] == 5


def test_a_write_folds_the_log_in_its_own_transaction(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "m.duckdb", embedder="hashing") as mem:
        a, b = _two(mem)
        p = _provider(mem)
        p.record_access("acme", {a: 0.9}, T0, counts={a: 2})
        mem.delete(ACME, b)  # any write transaction
        assert _log_rows(p) == 0
        assert _raw(p, "acme", a)[:2] == (2, T0.replace(tzinfo=None))


def test_an_add_of_new_rows_leaves_the_log_to_the_next_write_or_read(tmp_path: Path) -> None:
    """The fold scans ``memories``; an insert of new rows cannot be overwritten by it, so an add
    does not pay for it. The statistics stay exact for every later read and write."""
    with Memory.open(tmp_path / "m.duckdb", embedder="hashing") as mem:
        a, b = _two(mem)
        p = _provider(mem)
        p.record_access("acme", {a: 0.9}, T0, counts={a: 2})
        p.flush_appends()
        added = mem.add(ACME, content="the user drinks green tea", layer="user", identifiers=IDS).memory.id
        assert _log_rows(p) == 1 and _raw(p, "acme", a)[0] == 0  # the add left the log as it was
        assert _raw(p, "acme", added)[0] == 0
        mem.update(ACME, b, content="the user lives in Munich")  # changes a stored row: folds first
        assert _log_rows(p) == 0
        assert _raw(p, "acme", a)[:2] == (2, T0.replace(tzinfo=None))
        p.record_access("acme", {a: 0.3}, T0 + timedelta(minutes=1))
        p.flush_appends()
        mem.add(ACME, content="the user plays chess on Sundays", layer="user", identifiers=IDS)
        got = p.get("acme", a, T0 + timedelta(hours=1))  # a read folds what the add left
        assert got is not None and got.access_count == 3 and got.importance == 0.3
        assert _log_rows(p) == 0


def test_search_statistics_match_without_the_log_and_searches_do_not_fold(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "m.duckdb", embedder="hashing") as mem:
        a, _ = _two(mem)
        p = _provider(mem)
        for _ in range(3):
            p.flush_appends()  # a search does not wait for the previous one's appends (in flight)
            res = mem.search(ACME, "dark mode", identifiers=IDS, limit=1, threshold=0.0)
            assert res.results[0].memory.id == a
        p.flush_appends()  # the last search's appends are written by a worker right after it
        assert _log_rows(p) == 3  # searches answer from the index: no scan of memories per search
        assert res.results[0].memory.access_count == 2  # the index saw the first two accesses
        got = mem.get(ACME, a)
        assert got is not None and got.access_count == 3  # before the get's own access is recorded


def test_close_folds_and_a_crashed_process_rows_are_folded_at_open(tmp_path: Path) -> None:
    path = tmp_path / "m.duckdb"
    with Memory.open(path, embedder="hashing") as mem:
        a, b = _two(mem)
        _provider(mem).record_access("acme", {a: 0.3}, T0)
    con = duckdb.connect(str(path))
    try:
        assert con.execute(f"SELECT count(*) FROM {ACCESS_LOG_TABLE}").fetchone() == (0,)
        assert con.execute("SELECT access_count FROM memories WHERE id = ?", [a]).fetchone() == (1,)
        # what a process that died after appending leaves behind
        con.execute(
            f"INSERT INTO {ACCESS_LOG_TABLE} (tenant_id, memory_id, n, accessed_at, importance) "
            "VALUES ('acme', ?, 4, ?, 0.8)",
            [b, T0.replace(tzinfo=None)],
        )
    finally:
        con.close()
    with Memory.open(path, embedder="hashing") as mem:
        got = _provider(mem).get("acme", b, T0)
        assert got is not None and got.access_count == 4 and got.importance == 0.8


def test_rows_of_another_tenant_or_a_deleted_memory_are_never_applied_elsewhere(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "m.duckdb", embedder="hashing") as mem:
        a, _ = _two(mem)
        p = _provider(mem)
        p.record_access("globex", {a: 0.9}, T0)  # same id, other tenant: matches no row of acme
        p.record_access("acme", {"no-such-id": 0.9}, T0)
        got = p.get("acme", a, T0)
        assert got is not None and got.access_count == 0
        assert _log_rows(p) == 0


def test_concurrent_accesses_reads_and_writes_keep_exact_counts(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "m.duckdb", embedder="hashing") as mem:
        a, _ = _two(mem)
        p = _provider(mem)
        errors: list[BaseException] = []

        def access() -> None:
            try:
                for i in range(50):
                    p.record_access("acme", {a: 0.5}, T0 + timedelta(seconds=i))
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        def churn() -> None:
            try:
                for i in range(20):
                    assert p.get("acme", a, T0) is not None
                    mem.add(ACME, f"note {i}", layer="user", identifiers=IDS)
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=access) for _ in range(4)] + [threading.Thread(target=churn)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        got = p.get("acme", a, T0)
        assert got is not None and got.access_count == 200


def test_the_fold_tells_row_caches_which_rows_changed(tmp_path: Path) -> None:
    """Caches of rows (graph traversal) read before the fold must not keep the old statistics."""
    with Memory.open(tmp_path / "m.duckdb", embedder="hashing") as mem:
        a, b = _two(mem)
        p = _provider(mem)
        notices: list[tuple[str, list[str]]] = []
        p.row_listeners.append(lambda tenant, ids: notices.append((tenant, sorted(ids))))
        p.record_access("acme", {a: 0.5, b: 0.5}, T0)
        assert notices == [("acme", sorted([a, b]))]  # the append
        assert p.get("acme", a, T0) is not None
        assert notices[1:] == [("acme", sorted([a, b]))]  # the fold


def _count_transactions(provider: DuckDBProvider) -> list[int]:
    """Instrument (not replace) the provider's write transactions."""
    calls: list[int] = []
    real = provider.transaction

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    provider.transaction = counted  # type: ignore[method-assign]
    return calls


def _events(provider: DuckDBProvider, event: str) -> int:
    row = (
        provider._cursor()
        .execute("SELECT count(*) FROM memory_events WHERE tenant_id = 'acme' AND event = ?", [event])
        .fetchone()
    )
    return int(row[0]) if row else -1


def test_a_search_writes_its_access_and_its_event_in_one_transaction(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "m.duckdb", embedder="hashing") as mem:
        a, b = _two(mem)
        p = _provider(mem)
        mem.search(ACME, "warm up", identifiers=IDS, layers=["user"])  # loads the partition into the index
        p.flush_appends()
        before_log, before_events = _log_rows(p), _events(p, "search")
        calls = _count_transactions(p)
        hits = mem.search(ACME, "dark mode", identifiers=IDS, layers=["user"], threshold=0.0).results
        p.flush_appends()  # written by the store's worker right after the search (or now)
        assert len(calls) == 1  # was two: one commit (and one WAL sync) per search
        assert _log_rows(p) == before_log + len(hits) and _events(p, "search") == before_events + 1
        assert {h.memory.id for h in hits} == {a, b}


def test_with_defer_appends_off_a_search_writes_its_bookkeeping_before_it_returns(tmp_path: Path) -> None:
    provider = DuckDBProvider(tmp_path / "m.duckdb", defer_appends=False)
    with Memory.open(provider, embedder="hashing") as mem:
        _two(mem)
        mem.search(ACME, "warm up", identifiers=IDS, layers=["user"])
        before_log, before_events = _log_rows(provider), _events(provider, "search")
        calls = _count_transactions(provider)
        hits = mem.search(ACME, "dark mode", identifiers=IDS, layers=["user"], threshold=0.0).results
        assert len(calls) == 1  # no flush needed: stored before the search returned
        assert _log_rows(provider) == before_log + len(hits) and _events(provider, "search") == before_events + 1


def test_deferred_bookkeeping_is_seen_by_every_reader_and_survives_close(tmp_path: Path) -> None:
    """The appends a search leaves behind are written by a worker, but no read can miss them: reads and
    writes of any thread write the queue first, and close writes what is left."""
    path = tmp_path / "m.duckdb"
    with Memory.open(path, embedder="hashing") as mem:
        a, _ = _two(mem)
        p = _provider(mem)
        for n in range(1, 4):
            mem.search(ACME, "dark mode", identifiers=IDS, layers=["user"], limit=1, threshold=0.0)
            seen: list[MemoryEntry | None] = []
            reader = threading.Thread(target=lambda out=seen: out.append(p.get("acme", a, T0 + timedelta(days=1))))
            reader.start()
            reader.join()
            assert [e.access_count for e in seen if e] == [n]  # another thread's read, right after the search
        p.flush_appends()  # a search never waits for bookkeeping: the previous one's may be in flight
        hits = mem.search(ACME, "dark mode", identifiers=IDS, layers=["user"], limit=1, threshold=0.0).results
        assert hits[0].memory.access_count == 3  # once written, a search's hits include the searches before it
        mem.search(ACME, "dark mode", identifiers=IDS, layers=["user"], limit=1, threshold=0.0)
    con = duckdb.connect(str(path))  # closed right after a search: its appends were written
    try:
        assert con.execute("SELECT access_count FROM memories WHERE id = ?", [a]).fetchone() == (5,)
        assert con.execute("SELECT count(*) FROM memory_events WHERE event = 'search'").fetchone() == (5,)
    finally:
        con.close()


def test_deferred_appends_under_concurrent_searches_partition_loads_and_writes(tmp_path: Path) -> None:
    """Searches that load new partitions (the write lock held while the worker writes the queue),
    reads and writes from several threads: nothing waits forever, every access is counted."""
    with Memory.open(tmp_path / "m.duckdb", embedder="hashing") as mem:
        users = [f"u{i}" for i in range(6)]
        ids = {
            u: mem.add(ACME, f"{u} prefers dark mode", layer="user", identifiers={"user_id": u}).memory.id
            for u in users
        }
        errors: list[BaseException] = []

        def search(user: str) -> None:
            try:
                for _ in range(15):
                    mem.search(
                        ACME, "dark mode", identifiers={"user_id": user}, layers=["user"], limit=1, threshold=0.0
                    )
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        def write() -> None:
            try:
                for i in range(10):
                    mem.add(ACME, f"note {i}", layer="user", identifiers={"user_id": "writer"})
                    mem.list(ACME, layer="user", identifiers={"user_id": "writer"})
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=search, args=(u,)) for u in users] + [threading.Thread(target=write)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert not any(t.is_alive() for t in threads), "a thread is stuck"
        assert errors == []
        for user, memory_id in ids.items():
            got = _provider(mem).get("acme", memory_id, T0 + timedelta(days=1))
            assert got is not None and got.access_count == 15, user


def test_grouped_appends_are_seen_by_reads_and_writes_of_the_same_thread(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "m.duckdb", embedder="hashing") as mem:
        a, _ = _two(mem)
        p = _provider(mem)
        with p.grouped_appends():
            p.record_access("acme", {a: 0.5}, T0)
            with p.grouped_appends():  # nested: joins the outer group
                p.record_access("acme", {a: 0.6}, T0 + timedelta(minutes=1))
            assert _log_rows(p) == 0  # queued, not written yet
            got = p.get("acme", a, T0 + timedelta(hours=1))  # a read writes the queue first
            assert got is not None and got.access_count == 2 and got.importance == 0.6
            p.record_access("acme", {a: 0.7}, T0 + timedelta(minutes=2))
            p.set_status("acme", [a], "archived", T0)  # so does a write transaction
            assert _log_rows(p) == 0 and _raw(p, "acme", a)[0] == 3
        assert _log_rows(p) == 0


def test_a_failed_grouped_append_is_logged_and_never_fails_the_operation(tmp_path: Path, caplog: object) -> None:
    import logging

    import pytest

    assert isinstance(caplog, pytest.LogCaptureFixture)
    with Memory.open(tmp_path / "m.duckdb", embedder="hashing") as mem:
        a, _ = _two(mem)
        p = _provider(mem)
        with caplog.at_level(logging.WARNING, logger="stratamem.duckdb"), p.grouped_appends():
            p.append_memory_events([{"tenant_id": "acme", "id": "e1", "ts": T0, "event": "search"}])
            p.append_memory_events([{"tenant_id": "acme", "id": "e1", "ts": T0, "event": "search"}])  # same key
        with caplog.at_level(logging.WARNING, logger="stratamem.duckdb"):
            p.flush_appends()  # the group went to the store's worker when it ended
        assert any("bookkeeping appends" in r.getMessage() for r in caplog.records)
        assert _events(p, "search") == 0  # the group is one transaction: all or nothing
        p.record_access("acme", {a: 0.5}, T0)  # the provider is still usable
        assert _log_rows(p) == 1


def test_adds_read_the_embedding_cache_and_the_graph_dictionary_without_waiting_for_bookkeeping(tmp_path: Path) -> None:
    """The append worker's commit holds nothing a bulk add reads before embedding: the embedding
    cache lookup and the graph's prepared dictionary read go ahead while a batch is being written
    (they used to wait for its commit, ~50 ms, before the model could start)."""
    mem = Memory.open(tmp_path / "s.duckdb", embedder="hashing")
    provider = _provider(mem)
    first = mem.add(ACME, "Acme Corp builds the billing service", layer="user", identifiers=IDS)
    entries = [
        mem.engine._prepare(
            ACME,
            mem.engine._coerce_input(
                {"content": f"Acme Corp ships release {i}", "layer": "user", "identifiers": IDS}, "bulk_add"
            ),
            "bulk_add",
        )
        for i in range(3)
    ]
    writing, release = threading.Event(), threading.Event()

    def slow_runner(writes: object) -> None:
        writing.set()
        assert release.wait(10)

    assert provider.db.appends.put(slow_runner, [lambda _cur: None])
    assert writing.wait(5)  # the worker is inside its batch
    try:
        done: dict[str, object] = {}

        def reads() -> None:
            done["cache"] = provider.cache_get(
                ACME.tenant_id, mem.engine.embeddings.model_id, [first.memory.content_hash, "sha256:none"]
            )
            done["prepared"] = provider.prepare_add(entries)

        reader = threading.Thread(target=reads)
        reader.start()
        reader.join(5)
        assert not reader.is_alive(), "the reads waited for the bookkeeping batch"
        assert list(done["cache"]) == [first.memory.content_hash]  # type: ignore[call-overload]
        prepared = done["prepared"]
        assert prepared is not None
        graph_known = prepared.hooks[id(mem.graph.store)].known  # type: ignore[attr-defined, union-attr]
        assert "acme corp" in graph_known
    finally:
        release.set()
    provider.flush_appends()
    mem.close()
