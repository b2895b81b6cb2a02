"""The "PostgreSQL and Redis" examples of docs/postgres-redis.md run as written (store URL and queue
swapped for the test's)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import redis

from stratamem import Memory, TenantContext
from stratamem.coordination import WriteCoordinator

from ..conftest import require_service

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "postgres-redis.md").read_text(encoding="utf-8")
SECTION = DOC.split("## PostgreSQL and Redis", 1)[1].split("\n## ", 1)[0]
BLOCKS = re.findall(r"```py\n(.*?)```", SECTION, flags=re.S)
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src")}


def test_postgres_example_runs(pg_store_url: str, tmp_path: Path) -> None:
    code = BLOCKS[0]
    url = re.search(r'"(postgresql://[^"]+)"', code)
    assert url is not None
    code = code.replace(url.group(1), pg_store_url)
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, env=ENV, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "Deploys go out on Tuesdays 1.0"


def test_queued_writer_example_runs(tmp_path: Path) -> None:
    url = "redis://127.0.0.1:6379/0"
    try:
        client = redis.Redis.from_url(url)
        client.ping()
    except redis.RedisError as exc:
        require_service("Redis", False, str(exc))
    queue = f"stratamem-test-readme-{os.getpid()}-{threading.get_ident()}"
    code = BLOCKS[1].replace('"shared"', repr(queue))
    mem = Memory.open(tmp_path / "shared.duckdb", embedder="hashing")
    coord = WriteCoordinator(mem, client, queue, lock_ttl=5, poll=0.05)
    coord.start()
    serve = threading.Thread(target=coord.run)
    serve.start()
    try:
        out = subprocess.run(
            [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, env=ENV, timeout=120
        )
        assert out.returncode == 0, out.stderr
        got = mem.get(TenantContext(tenant_id="acme"), out.stdout.strip())
        assert got is not None and got.content == "Prefers dark mode"
    finally:
        coord.stop()
        serve.join(timeout=10)
        mem.close()
        keys = list(client.scan_iter(match=f"{queue}*"))
        if keys:
            client.delete(*keys)
