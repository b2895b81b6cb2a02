"""Durability and single-writer behaviour of the embedded store."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from stratamem import ErrorCode, Memory, MemoryError, TenantContext
from stratamem.providers.duckdb import DuckDBProvider

SRC = str(Path(__file__).resolve().parents[2] / "src")
U1 = {"user_id": "u1"}


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": SRC, "STRATAMEM_EMBEDDER": "hashing"}


def _kill_9_after(writer: str, lines: int, *, timeout: float) -> list[str]:
    """Run ``writer`` in a subprocess, collect the lines it acknowledges until ``lines`` of them
    (or ``timeout``), then SIGKILL it: no close, no checkpoint."""
    proc = subprocess.Popen([sys.executable, "-c", writer], stdout=subprocess.PIPE, text=True, env=_env())
    acked: list[str] = []
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while len(acked) < lines and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        acked.append(line.strip())
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    return acked


def test_acknowledged_adds_survive_kill_9(tmp_path: Path) -> None:
    db = tmp_path / "crash.duckdb"
    writer = textwrap.dedent(
        f"""
        import sys
        from stratamem import Memory, TenantContext
        mem = Memory.open({str(db)!r}, embedder="hashing")
        t = TenantContext(tenant_id="acme")
        i = 0
        while True:
            out = mem.add(t, content=f"fact number {{i}}", layer="user", identifiers={{"user_id": "u1"}})
            print(out.memory.id, flush=True)   # acknowledged only after add() returned
            i += 1
        """
    )
    acked = _kill_9_after(writer, 40, timeout=60)
    assert len(acked) >= 40, "writer did not start"
    with Memory.open(db, embedder="hashing") as mem:
        ctx = TenantContext(tenant_id="acme")
        for mid in acked:
            assert mem.get(ctx, mid) is not None, f"acknowledged memory {mid} lost"
        assert mem.search(ctx, "fact number 3", identifiers=U1, threshold=0.0).results


def test_second_process_gets_a_clear_error(tmp_path: Path, acme: TenantContext) -> None:
    db = tmp_path / "owned.duckdb"
    with Memory.open(db, embedder="hashing") as mem:
        mem.add(acme, content="owned by this process", layer="user", identifiers=U1)
        probe = textwrap.dedent(
            f"""
            from stratamem import Memory, MemoryError
            try:
                Memory.open({str(db)!r}, embedder="hashing")
            except MemoryError as exc:
                print(exc.code.value, exc.details.get("reason"), exc.message)
            else:
                print("OPENED")
            """
        )
        out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=_env(), timeout=60)
        assert out.stdout.startswith("PROVIDER_ERROR locked"), out.stdout + out.stderr
        assert "another process" in out.stdout
        assert mem.get(acme, mem.list(acme).memories[0].id) is not None  # the owner is unaffected


def test_two_memory_objects_in_one_process_share_the_store(db_path: Path, acme: TenantContext) -> None:
    a = Memory.open(db_path, embedder="hashing")
    b = Memory.open(db_path, embedder="hashing")
    try:
        errors: list[BaseException] = []

        def write(mem: Memory, tag: str) -> None:
            try:
                for i in range(25):
                    mem.add(acme, content=f"{tag} {i}", layer="user", identifiers=U1)
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=write, args=(m, tag)) for m, tag in ((a, "from a"), (b, "from b"))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert a.list(acme).total_count == 50 and b.list(acme).total_count == 50
        a.close()
        assert b.list(acme).total_count == 50  # closing one leaves the other working
    finally:
        a.close()
        b.close()
    with Memory.open(db_path, embedder="hashing") as c:
        assert c.list(acme).total_count == 50


def test_unsupported_store_url() -> None:
    with pytest.raises(MemoryError) as err:
        Memory.open("ftp://example/db", embedder="hashing")
    assert err.value.code is ErrorCode.CONFIGURATION_ERROR


@pytest.mark.parametrize("url", ["duckdb:///:memory:", "duckdb://:memory:", "duckdb://"])
def test_in_memory_duckdb_urls(url: str, acme: TenantContext) -> None:
    from stratamem.embeddings import HashingEmbedder

    with Memory.open(url, embedder=HashingEmbedder()) as mem:
        out = mem.add(acme, content="kept only in memory", layer="company", identifiers={"company_id": "c1"})
        assert mem.get(acme, out.memory.id) is not None
    assert not Path("/:memory:").exists()


def test_feature_migrations_apply_by_version_set(db_path: Path) -> None:
    """A migration with a lower version than one already applied still runs (features land in any order)."""
    import duckdb

    from stratamem.embeddings import HashingEmbedder
    from stratamem.providers.duckdb import schema as duckdb_schema

    Memory.open(db_path, embedder=HashingEmbedder()).close()
    extra = duckdb_schema.Migration(
        99, "test-only table", lambda cur, dims: cur.execute("CREATE TABLE test_only (x INTEGER)")
    )
    duckdb_schema.MIGRATIONS.append(extra)
    try:
        Memory.open(db_path, embedder=HashingEmbedder()).close()
    finally:
        duckdb_schema.MIGRATIONS.remove(extra)
    con = duckdb.connect(str(db_path))
    try:
        versions = {r[0] for r in con.execute("SELECT version FROM schema_version").fetchall()}
        assert {1, 99} <= versions
        assert con.execute("SELECT count(*) FROM test_only").fetchone() == (0,)
    finally:
        con.close()


def test_bulk_batches_in_a_large_wal_survive_kill_9(tmp_path: Path) -> None:
    """Checkpoints wait for 128 MB of WAL (``CHECKPOINT_THRESHOLD``): several acknowledged batches of
    1000 memories live only in the WAL when the process dies, and the next open replays them."""
    db = tmp_path / "bulk.duckdb"
    writer = textwrap.dedent(
        f"""
        from stratamem import Memory, TenantContext
        mem = Memory.open({str(db)!r}, embedder="hashing")
        t = TenantContext(tenant_id="acme")
        b = 0
        while True:
            out = mem.bulk_add(t, [{{"content": f"batch {{b}} fact {{i}} about topic {{i % 37}}", "layer": "user",
                                     "identifiers": {{"user_id": "u1"}}}} for i in range(1000)])
            print(b, len(out.results), flush=True)   # acknowledged only after bulk_add() returned
            b += 1
        """
    )
    # ~2.4 MB of WAL a batch (each vector is written once): 9 batches pass DuckDB's default 16 MB
    acked = _kill_9_after(writer, 9, timeout=120)
    assert acked[:9] == [f"{b} 1000" for b in range(9)], "writer did not start"
    wal = db.with_name(db.name + ".wal")
    assert wal.stat().st_size > 16 * 2**20  # beyond DuckDB's default threshold: no checkpoint ran
    with Memory.open(db, embedder="hashing") as mem:
        ctx = TenantContext(tenant_id="acme")
        assert mem.stats(ctx).total >= 9000
        hits = mem.search(ctx, "batch 8 fact 999 about topic 0", identifiers=U1, threshold=0.0, limit=1).results
        assert hits[0].memory.content == "batch 8 fact 999 about topic 0"


def test_checkpoint_threshold_is_applied_and_checked(tmp_path: Path) -> None:
    provider = DuckDBProvider(tmp_path / "a.duckdb", checkpoint_threshold="64MB")
    provider.initialize("hashing", 8)
    try:
        row = provider.db.conn.execute("SELECT current_setting('checkpoint_threshold')").fetchone()
        assert row == ("61.0 MiB",)
    finally:
        provider.shutdown()
    with pytest.raises(MemoryError) as err:
        DuckDBProvider(tmp_path / "b.duckdb", checkpoint_threshold="lots").initialize("hashing", 8)
    assert err.value.code is ErrorCode.CONFIGURATION_ERROR and "checkpoint_threshold" in err.value.message
