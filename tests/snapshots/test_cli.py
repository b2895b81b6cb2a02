"""``stratamem snapshot …`` end to end: subprocesses on real DuckDB files and a real SeaweedFS."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from stratamem.persistence import S3Settings, S3Store

SRC = str(Path(__file__).resolve().parents[2] / "src")


def run(settings: S3Settings, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": SRC,
        "STRATAMEM_EMBEDDER": "hashing",
        "COLUMNS": "200",
        "STRATAMEM_S3_URL": str(settings.endpoint_url),
        "STRATAMEM_S3_BUCKET": settings.bucket,
        "AWS_ACCESS_KEY_ID": str(settings.access_key_id),
        "AWS_SECRET_ACCESS_KEY": str(settings.secret_access_key),
    }
    out = subprocess.run(
        [sys.executable, "-m", "stratamem", *args], capture_output=True, text=True, env=env, timeout=120
    )
    if check:
        assert out.returncode == 0, out.stdout + out.stderr
    return out


def test_push_list_restore_at(tmp_path: Path, s3_settings: S3Settings, s3: S3Store) -> None:
    db = str(tmp_path / "cli.duckdb")
    run(s3_settings, "add", "User prefers dark mode", "--db", db, "-t", "acme", "--user-id", "u1")
    first = json.loads(run(s3_settings, "snapshot", "push", "--db", db, "--json").stdout)
    assert [r["tenant_id"] for r in first] == ["acme"] and first[0]["tables"]["memories"] == 1
    between = datetime.now(UTC).isoformat()
    run(s3_settings, "add", "User uses vim", "--db", db, "-t", "acme", "--user-id", "u1")
    second = json.loads(run(s3_settings, "snapshot", "push", "--db", db, "-t", "acme", "--json").stdout)
    listed = json.loads(run(s3_settings, "snapshot", "list", "--db", db, "-t", "acme", "--json").stdout)
    assert [s["snapshot_id"] for s in listed] == [second[0]["snapshot_id"], first[0]["snapshot_id"]]

    restored = run(s3_settings, "snapshot", "restore", "--at", between, "--db", db, "-t", "acme")
    assert first[0]["snapshot_id"] in restored.stdout and "before" in restored.stdout
    stats = json.loads(run(s3_settings, "stats", "--db", db, "-t", "acme", "--json").stdout)
    assert stats["total"] == 1

    pulled = json.loads(run(s3_settings, "snapshot", "pull", "--db", db, "--json").stdout)
    assert pulled[0]["snapshot_id"] == second[0]["snapshot_id"] and pulled[0]["before"]["memories"] == 1

    bad = run(s3_settings, "snapshot", "restore", "--at", "2001-01-01T00:00:00Z", "--db", db, "-t", "acme", check=False)
    assert bad.returncode == 2 and bad.stderr.startswith("error PROVIDER_ERROR: no snapshot of tenant acme")
