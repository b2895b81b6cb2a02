"""REST latency through a real `stratamem serve` (uvicorn) on loopback.

    python benchmarks/server_latency.py [--requests 300] [--embedder hashing|local]

Creates an API key, starts the server as a subprocess on a fresh DuckDB file, then times sequential
HTTP requests (add, search, get, list; auth + rate-limit check included) with one keep-alive client.
Prints a table, writes benchmarks/results/server_latency.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=300)
    ap.add_argument("--embedder", default="hashing")
    args = ap.parse_args()
    env = {**os.environ, "STRATAMEM_EMBEDDER": args.embedder, "STRATAMEM_RATE_LIMIT_PER_SECOND": "0"}
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "bench.duckdb")
        out = subprocess.run(
            [sys.executable, "-m", "stratamem", "keys", "create", "--db", db, "--tenant", "bench", "--user-id", "u1"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        key = out.stdout.split()[-1]
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        proc = subprocess.Popen(
            [sys.executable, "-m", "stratamem", "serve", "--db", db, "--port", str(port), "--log-level", "warning"],
            env=env,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            for _ in range(300):
                try:
                    if httpx.get(url + "/ready").status_code == 200:
                        break
                except httpx.HTTPError:
                    time.sleep(0.1)
            timings: dict[str, list[float]] = {"add": [], "search": [], "get": [], "list": []}
            ids = {"userId": "u1"}
            with httpx.Client(base_url=url, headers={"X-API-Key": key}) as http:
                http.post("/v1/memories", json={"content": "warm-up", "layer": "user", "identifiers": ids})
                mids = []
                for i in range(args.requests):
                    t0 = time.perf_counter()
                    r = http.post(
                        "/v1/memories",
                        json={"content": f"note {i} about topic {i % 17}", "layer": "user", "identifiers": ids},
                    )
                    timings["add"].append((time.perf_counter() - t0) * 1000)
                    mids.append(r.json()["memory"]["id"])
                for i in range(args.requests):
                    t0 = time.perf_counter()
                    http.post("/v1/memories/search", json={"query": f"topic {i % 17}", "identifiers": ids})
                    timings["search"].append((time.perf_counter() - t0) * 1000)
                    t0 = time.perf_counter()
                    http.get(f"/v1/memories/{mids[i]}")
                    timings["get"].append((time.perf_counter() - t0) * 1000)
                    t0 = time.perf_counter()
                    http.get("/v1/memories", params={"layer": "user", "userId": "u1", "limit": 20})
                    timings["list"].append((time.perf_counter() - t0) * 1000)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    rows = {
        op: {"p50_ms": round(pct(v, 0.5), 2), "p95_ms": round(pct(v, 0.95), 2), "n": len(v)}
        for op, v in timings.items()
    }
    print(f"{'operation':<10} {'p50 ms':>8} {'p95 ms':>8} {'n':>6}")
    for op, row in rows.items():
        print(f"{op:<10} {row['p50_ms']:>8} {row['p95_ms']:>8} {row['n']:>6}")
    result = {
        "embedder": args.embedder,
        "requests": args.requests,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "results": rows,
    }
    path = Path(__file__).parent / "results" / "server_latency.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
