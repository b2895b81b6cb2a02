"""``stratamem graph check [--repair]`` and ``stratamem graph related|path`` in a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from stratamem import Memory, TenantContext

SRC = Path(__file__).resolve().parents[2] / "src"


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC), "STRATAMEM_EMBEDDER": "hashing", "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "stratamem", "graph", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_cli_check_related_path(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    t = TenantContext(tenant_id="acme")
    with Memory.open(db, embedder="hashing") as mem:
        a = mem.add(t, "Alice works on Project A.", layer="user", identifiers={"user_id": "u1"}).memory.id
        mem.add(t, "Alice found a memory leak.", layer="user", identifiers={"user_id": "u1"})
        with mem.engine.provider.graph_transaction() as tx:  # type: ignore[attr-defined]
            tx.execute("DELETE FROM memories WHERE tenant_id = 'acme' AND id = ?", [a])
    out = _run("check", "--db", str(db), "--json", cwd=tmp_path)
    assert out.returncode == 1, out.stderr
    report = json.loads(out.stdout)
    assert report["total_orphans"] >= 1 and report["tenants"][0]["orphans"]["nodes_missing_memory"] == 1
    out = _run("check", "--db", str(db), "--repair", cwd=tmp_path)
    assert out.returncode == 0 and "repaired" in out.stdout
    assert _run("check", "--db", str(db), cwd=tmp_path).returncode == 0
    out = _run("path", "Alice", "memory leak", "--db", str(db), "-t", "acme", cwd=tmp_path)
    assert out.returncode == 0 and "Alice —MENTIONS→ memory leak" in out.stdout
    out = _run("related", "Alice", "--db", str(db), "-t", "acme", "--hops", "1", "--json", cwd=tmp_path)
    assert out.returncode == 0 and len(json.loads(out.stdout)["items"]) == 1
    out = _run("related", "Nobody", "--db", str(db), "-t", "acme", cwd=tmp_path)
    assert out.returncode == 2 and "MEMORY_NOT_FOUND" in out.stderr
