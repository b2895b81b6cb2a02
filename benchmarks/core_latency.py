"""Core latency benchmark: add latency and search latency at 1k and 10k memories.

    python benchmarks/core_latency.py [--sizes 1000 10000] [--embedder local|hashing] [--queries 200]

Runs on a fresh DuckDB file through the public SDK. "search" is end to end (query embedding
included, distinct queries so the query cache never hits); "search (store)" repeats queries whose
embedding is cached, isolating the storage + merge path. Prints a table, writes
benchmarks/results/core_latency.json.
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

SUBJECTS = ["The user", "Alice", "The team", "Our project", "The backend", "Bob", "The customer", "Marketing"]
VERBS = ["prefers", "uses", "dislikes", "needs", "migrated to", "asked about", "is evaluating", "documented"]
OBJECTS = [
    "dark mode",
    "PostgreSQL 16",
    "tabs for indentation",
    "weekly releases",
    "Rust for the parser",
    "a faster CI pipeline",
    "GraphQL",
    "the new billing flow",
    "Kubernetes autoscaling",
    "vim keybindings",
    "server-side rendering",
    "the Berlin office",
    "on-call rotations",
    "feature flags",
    "type hints",
]
CONTEXT = [
    "since March",
    "for the mobile app",
    "in production",
    "after the outage",
    "for the Q3 roadmap",
    "when reviewing code",
    "on weekends",
    "for compliance",
    "in the data pipeline",
    "during onboarding",
]


def sentence(rng: random.Random) -> str:
    return f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} {rng.choice(CONTEXT)}."


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def run(size: int, embedder: str, queries: int, rng: random.Random) -> dict[str, object]:
    ctx = TenantContext(tenant_id="bench")
    ids = {"user_id": "u1", "project_id": "p1", "team_id": "t1"}
    layers = ["user", "project", "team"]
    with tempfile.TemporaryDirectory() as tmp, Memory.open(Path(tmp) / "bench.duckdb", embedder=embedder) as mem:
        mem.add(ctx, content="warm-up", layer="user", identifiers=ids)
        start = time.perf_counter()
        batch = 500
        for i in range(0, size, batch):
            items = [
                {"content": f"{sentence(rng)} #{i + j}", "layer": layers[(i + j) % 3], "identifiers": ids}
                for j in range(min(batch, size - i))
            ]
            mem.bulk_add(ctx, items)
        ingest_s = time.perf_counter() - start
        add_ms = []
        for i in range(100):
            t0 = time.perf_counter()
            mem.add(ctx, content=f"single add {i}: {sentence(rng)}", layer="user", identifiers=ids)
            add_ms.append((time.perf_counter() - t0) * 1000)
        e2e_ms, store_ms = [], []
        for i in range(queries):
            q = f"{rng.choice(SUBJECTS)} {rng.choice(OBJECTS)} {i}"
            t0 = time.perf_counter()
            mem.search(ctx, q, identifiers=ids, limit=10)
            e2e_ms.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            mem.search(ctx, q, identifiers=ids, limit=10)  # query vector now cached
            store_ms.append((time.perf_counter() - t0) * 1000)
    return {
        "memories": size,
        "embedder": embedder,
        "ingest_seconds": round(ingest_s, 2),
        "ingest_per_second": round(size / ingest_s, 1),
        "add_p50_ms": round(statistics.median(add_ms), 2),
        "add_p95_ms": round(pct(add_ms, 0.95), 2),
        "search_p50_ms": round(statistics.median(e2e_ms), 2),
        "search_p95_ms": round(pct(e2e_ms, 0.95), 2),
        "search_store_p50_ms": round(statistics.median(store_ms), 2),
        "search_store_p95_ms": round(pct(store_ms, 0.95), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--embedder", default="onnx")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "core_latency.json")
    args = parser.parse_args()
    rng = random.Random(42)
    rows = [run(size, args.embedder, args.queries, rng) for size in args.sizes]
    cols = list(rows[0])
    print(" | ".join(cols))
    print(" | ".join("---" for _ in cols))
    for row in rows:
        print(" | ".join(str(row[c]) for c in cols))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps({"machine": platform.platform(), "cpus": __import__("os").cpu_count(), "results": rows}, indent=2)
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
