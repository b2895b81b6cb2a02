"""A read leaves no open DuckDB transaction behind on its thread's cursor.

DuckDB ends a statement's transaction only when its result has been read to the end; a
``fetchone()`` of a one-row result leaves it open. A server's worker thread that made such a read
and then stayed idle kept that transaction open, and with it every newer row version of the
database: under load, DuckDB's ``TRANSACTION`` memory grew by gigabytes. Every provider read now
ends its statement's transaction."""

from __future__ import annotations

import threading
from pathlib import Path

from stratamem import Memory, TenantContext
from stratamem.providers.duckdb import DuckDBProvider

CTX = TenantContext(tenant_id="acme")
WHO = {"user_id": "u1"}


def _transaction_mb(provider: DuckDBProvider) -> float:
    return provider.memory_usage().get("TRANSACTION", 0) / 1e6


def _write_rows(mem: Memory) -> None:
    """3000 memories of about 1 kB each in the user's scope."""
    for start in range(0, 3000, 1000):
        mem.bulk_add(
            CTX,
            [
                {"content": f"fact {i} " + "x" * 1000, "layer": "user", "identifiers": WHO}
                for i in range(start, start + 1000)
            ],
        )


def _grown_by_updates(provider: DuckDBProvider) -> float:
    """MB of TRANSACTION memory added by 30 writes that each leave an old version of every row."""
    before = _transaction_mb(provider)
    for i in range(30):
        with provider.transaction() as cur:
            cur.execute("UPDATE memories SET content = content || ? WHERE tenant_id = ?", [str(i % 10), CTX.tenant_id])
    return _transaction_mb(provider) - before


def test_an_idle_thread_after_a_one_row_read_does_not_pin_row_versions(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "m.duckdb", embedder="hashing") as mem:
        provider = mem.engine.provider
        assert isinstance(provider, DuckDBProvider)
        first = mem.add(CTX, "the first fact", layer="user", identifiers=WHO).memory
        _write_rows(mem)
        read_done, finish = threading.Event(), threading.Event()

        def idle_reader() -> None:  # a one-row read (fetchone), then the thread waits, as a pool thread does
            found = provider.get(CTX.tenant_id, first.id, mem.engine.now())
            assert found is not None and found.content == "the first fact"
            read_done.set()
            finish.wait(60)

        reader = threading.Thread(target=idle_reader)
        reader.start()
        try:
            assert read_done.wait(30)
            grown = _grown_by_updates(provider)
        finally:
            finish.set()
            reader.join()
        # with the idle reader's transaction open, the old versions of the 3000 rows of each of the
        # 30 updates are all kept (about 8 MB here); without it they are cleaned up after each commit
        assert grown < 2, f"TRANSACTION memory grew by {grown:.1f} MB"


def test_the_thread_that_opened_the_store_does_not_pin_row_versions(tmp_path: Path) -> None:
    """``stratamem serve`` opens the store on its main thread, which then runs the event loop and
    never reads the store again: the last statement of the store's initialisation (a one-row read of
    the schema version) must not keep its transaction open."""
    path = tmp_path / "m.duckdb"
    with Memory.open(path, embedder="hashing") as mem:  # the rows, written before the server starts
        _write_rows(mem)
    opened: list[Memory] = []
    open_done, finish = threading.Event(), threading.Event()

    def opener() -> None:  # opens the store, then waits, as the server's event-loop thread does
        opened.append(Memory.open(path, embedder="hashing"))
        open_done.set()
        finish.wait(60)

    thread = threading.Thread(target=opener)
    thread.start()
    try:
        assert open_done.wait(60)
        mem = opened[0]
        provider = mem.engine.provider
        assert isinstance(provider, DuckDBProvider)
        grown = _grown_by_updates(provider)
    finally:
        finish.set()
        thread.join()
        if opened:
            opened[0].close()
    assert grown < 2, f"TRANSACTION memory grew by {grown:.1f} MB"
