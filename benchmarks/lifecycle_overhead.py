"""Lifecycle overhead: cost of access tracking on get/search, and maintenance/close_session speed.

    python benchmarks/lifecycle_overhead.py [--size 10000] [--queries 200] [--embedder hashing|local]

Fresh DuckDB file through the public SDK. Reports get and search p50/p95 with access tracking on
and off (one batched UPDATE per read), ``maintain`` over the whole store, and ``close_session`` of a
200-entry session. Prints a table, writes benchmarks/results/lifecycle_overhead.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import tempfile
import time
from pathlib import Path

from stratamem import Memory, TenantContext
from stratamem.lifecycle.config import LifecycleConfig

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "deploy",
    "release",
    "billing",
    "postgres",
    "kafka",
    "redis",
    "cache",
    "index",
    "vector",
    "graph",
    "user",
    "team",
    "project",
    "friday",
    "monday",
    "launch",
    "budget",
    "roadmap",
    "oncall",
    "outage",
    "latency",
]


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(8))


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=10_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--embedder", default="hashing")
    args = ap.parse_args()
    rng = random.Random(7)
    ctx = TenantContext(tenant_id="bench", principal="bench")
    ids = {"user_id": "u1"}
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as tmp, Memory.open(Path(tmp) / "b.duckdb", embedder=args.embedder) as mem:
        for i in range(0, args.size, 500):
            mem.bulk_add(
                ctx,
                [
                    {"content": f"{sentence(rng)} #{i + j}", "layer": "user", "identifiers": ids}
                    for j in range(min(500, args.size - i))
                ],
            )
        all_ids = [e.id for e in mem.export(ctx)]
        queries = [sentence(rng) for _ in range(args.queries)]
        for tracking in ("warm-up", "off", "sync", "background"):
            mem.lifecycle.config = LifecycleConfig(
                track_access=tracking != "off", access_write="background" if tracking == "background" else "sync"
            )
            get_ms, search_ms = [], []
            for q in queries:
                t0 = time.perf_counter()
                mem.get(ctx, rng.choice(all_ids))
                get_ms.append((time.perf_counter() - t0) * 1000)
                t0 = time.perf_counter()
                mem.search(ctx, q, identifiers=ids, limit=10, threshold=0.0)
                search_ms.append((time.perf_counter() - t0) * 1000)
            mem.lifecycle.flush()
            if tracking == "warm-up":
                continue
            for op, values in (("get", get_ms), ("search k=10", search_ms)):
                rows.append(
                    {
                        "operation": op,
                        "tracking": tracking,
                        "p50_ms": round(statistics.median(values), 3),
                        "p95_ms": round(pct(values, 0.95), 3),
                    }
                )
        session = {"user_id": "u1", "session_id": "s1"}
        mem.bulk_add(
            ctx,
            [
                {
                    "content": f"session note {i} {sentence(rng)}",
                    "layer": "session",
                    "identifiers": session,
                    "importance": 0.9 if i % 4 == 0 else None,
                }
                for i in range(200)
            ],
        )
        t0 = time.perf_counter()
        closed = mem.close_session(ctx, "u1", "s1")
        rows.append(
            {
                "operation": f"close_session (200 entries, {len(closed.promoted)} promoted)",
                "tracking": "-",
                "p50_ms": round((time.perf_counter() - t0) * 1000, 3),
                "p95_ms": "-",
            }
        )
        t0 = time.perf_counter()
        mem.maintain()
        rows.append(
            {
                "operation": f"maintain ({args.size + 200 + len(closed.promoted)} entries)",
                "tracking": "-",
                "p50_ms": round((time.perf_counter() - t0) * 1000, 3),
                "p95_ms": "-",
            }
        )
    print(f"{'operation':<48} {'tracking':>10} {'p50 ms':>10} {'p95 ms':>10}")
    for r in rows:
        print(f"{r['operation']!s:<48} {r['tracking']!s:>10} {r['p50_ms']!s:>10} {r['p95_ms']!s:>10}")
    out = Path(__file__).resolve().parent / "results" / "lifecycle_overhead.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {"size": args.size, "embedder": args.embedder, "python": platform.python_version(), "rows": rows}, indent=2
        )
    )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
