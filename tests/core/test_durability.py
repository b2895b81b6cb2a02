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

SRC = str(Path(__file__).resolve().parents[2] / "src")
U1 = {"user_id": "u1"}


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": SRC, "STRATAMEM_EMBEDDER": "hashing"}


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
    proc = subprocess.Popen([sys.executable, "-c", writer], stdout=subprocess.PIPE, text=True, env=_env())
    acked: list[str] = []
    assert proc.stdout is not None
    deadline = time.monotonic() + 60
    while len(acked) < 40 and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        acked.append(line.strip())
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
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
