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
    run = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "ingest_ratio.py"),
            "--rounds",
            "2",
            "--batch",
            "40",
            "--embedder",
            "hashing",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert "graph on (default)" in run.stdout and "graph off" in run.stdout
    data = json.loads(out.read_text())
    assert [r["mode"] for r in data["results"]] == ["graph on (default)", "graph off"]
    for r in data["results"]:
        assert r["ratio"] > 0 and r["ingest_per_s"] > 0 and r["embed_per_s"] > 0
    assert data["rounds"] == 2 and data["batch"] == 40


def test_boosts_benchmark_runs_and_writes_its_json(tmp_path: Path) -> None:
    """Without LoCoMo data (a path that does not exist) only the superseded-facts workload runs."""
    out = tmp_path / "boosts.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    run = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "boosts.py"),
            "--embedder",
            "hashing",
            "--distractors",
            "50",
            "--recency",
            "0.1",
            "--importance",
            "0.3",
            "--data",
            str(tmp_path / "absent.json"),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert "LoCoMo skipped" in run.stderr and "recency 0.1" in run.stdout
    rows = json.loads(out.read_text())["rows"]
    assert list(rows) == ["off (default)", "recency 0.1", "importance 0.3"]
    # a recency boost puts the newer of two conflicting facts above the older one
    assert rows["recency 0.1"]["newer_above_older"] > max(0.9, rows["off (default)"]["newer_above_older"])
    assert all("locomo_recall@10" not in row for row in rows.values())


def test_floor_options_runs_and_writes_its_json(tmp_path: Path) -> None:
    out = tmp_path / "floor_options.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    run = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "floor_options.py"),
            "--embedder",
            "hashing",
            "--sizes",
            "7",
            "--trials",
            "2",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    data = json.loads(out.read_text())
    assert set(data["small scopes"]["7"]) == {"floor", "off"}
    for by_split in data["small scopes"]["7"].values():
        assert set(by_split) == {"dev", "holdout"}
        assert all(0.0 <= v <= 1.0 for row in by_split.values() for v in row.values())
