"""Smoke runs of benchmark scripts that nothing else exercises (tiny sizes, hashing embedder)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ingest_ratio_runs_and_writes_its_json(tmp_path: Path) -> None:
    out = tmp_path / "ingest_ratio.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "ingest_ratio.py"), "--rounds", "2",
                          "--batch", "40", "--embedder", "hashing", "--out", str(out)],
                         capture_output=True, text=True, env=env, timeout=300, check=False)
    assert run.returncode == 0, run.stderr
    assert "graph on (default)" in run.stdout and "graph off" in run.stdout
    data = json.loads(out.read_text())
    assert [r["mode"] for r in data["results"]] == ["graph on (default)", "graph off"]
    for r in data["results"]:
        assert r["ratio"] > 0 and r["ingest_per_s"] > 0 and r["embed_per_s"] > 0
    assert data["rounds"] == 2 and data["batch"] == 40
