"""The (README-linked) docs page's "Snapshots (S3)" Python example runs as written against the real SeaweedFS."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from stratamem.persistence import S3Settings, S3Store

ROOT = Path(__file__).resolve().parents[2]


def test_readme_snapshot_example_runs(tmp_path: Path, s3_settings: S3Settings, s3: S3Store) -> None:
    readme = (ROOT / "docs" / "snapshots.md").read_text(encoding="utf-8")
    section = readme.split("## Snapshots (S3)", 1)[1].split("\n## ", 1)[0]
    (code,) = re.findall(r"```py\n(.*?)```", section, flags=re.S)
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src"),
        "STRATAMEM_S3_URL": str(s3_settings.endpoint_url),
        "STRATAMEM_S3_BUCKET": s3_settings.bucket,
        "AWS_ACCESS_KEY_ID": str(s3_settings.access_key_id),
        "AWS_SECRET_ACCESS_KEY": str(s3_settings.secret_access_key),
    }
    env.pop("STRATAMEM_EMBEDDER", None)
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300
    )
    assert out.returncode == 0, out.stderr
    counts, content, same = out.stdout.splitlines()
    rows, files = map(int, counts.split())
    # one memory row; one file per non-empty table (memories, embedding cache, the graph's tables)
    assert rows == 1 and files >= 2
    assert (content, same) == ("User prefers dark mode", "True")
    assert all(k.startswith("acme/graph/") for k in (str(o["Key"]) for o in s3.list("")))
