"""Smoke run of benchmarks/load.py: a real server, a few clients for a moment, its JSON written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_load_benchmark_runs_and_writes_its_json(tmp_path: Path) -> None:
    out = tmp_path / "load.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    run = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "load.py"),
            "--memories",
            "40",
            "--clients",
            "3",
            "--seconds",
            "1.5",
            "--embedder",
            "hashing",
            "--embed-sample",
            "64",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    data = json.loads(out.read_text())
    assert data["errors"] == {} and data["clients"] == 3 and data["batch_queries"] is True
    assert data["latency_ms"]["search"]["n"] > 0 and data["requests_per_s"] > 0
    assert data["embedder_batched_texts_per_s"] > 0 and data["server_rss_mb"]["end"] > 0
    assert data["server_rss_mb"]["samples"] and all(v > 0 for v in data["server_rss_mb"]["samples"])
    assert len(data["store_memory_mb"]) == len(data["server_rss_mb"]["samples"])
    assert all(0 < v < data["server_rss_mb"]["end"] for v in data["store_memory_mb"])
    # single texts (queries, one-memory adds) went through the micro-batching queue, at most once each
    lat = data["latency_ms"]
    assert 0 < data["query_batching"]["texts"] <= lat["search"]["n"] + lat["add"]["n"]
    assert "throughput" in run.stdout and "p95" in run.stdout


def test_load_benchmark_keeps_and_reuses_its_store(tmp_path: Path) -> None:
    store = tmp_path / "kept" / "load.duckdb"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    args = [sys.executable, str(ROOT / "benchmarks" / "load.py"), "--memories", "30", "--clients", "2"]
    args += ["--seconds", "1", "--embedder", "hashing", "--embed-sample", "32", "--store", str(store)]
    runs = []
    for i in range(2):
        out = tmp_path / f"load{i}.json"
        run = subprocess.run([*args, "--out", str(out)], capture_output=True, text=True, env=env, timeout=300)
        assert run.returncode == 0, run.stdout + run.stderr
        runs.append((run.stderr, json.loads(out.read_text())))
    assert "30 memories in" in runs[0][0] and f"reusing {store} (" in runs[1][0]
    assert store.is_file()
    for _, data in runs:  # the second run's fresh key works against the kept store
        assert data["errors"] == {} and data["latency_ms"]["search"]["n"] > 0
