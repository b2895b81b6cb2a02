"""Latency of single SDK adds that follow a search, as in an agent's turn (search, then remember).

    python benchmarks/add_latency.py [--adds 200] [--embedder onnx] [--store PATH] [--out PATH]

Opens a fresh DuckDB store (a temporary file unless ``--store``), warms it with 20 add + search
pairs, then times ``--adds`` adds, each right after a search of the same user: the search leaves
its bookkeeping appends (access statistics, its ``memory_events`` row) queued, so the add's write
transaction finds them there. Prints p50/p90/p99 in ms and writes JSON to ``--out`` (default
benchmarks/results/add_latency.json).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from sentences import SentenceGenerator
from stratamem import Memory, TenantContext

T = TenantContext(tenant_id="bench-add", principal="u1")
WHO = {"user_id": "u1"}
WARM = 20


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def run(path: Path, adds: int, embedder: str) -> list[float]:
    texts = SentenceGenerator(seed=1).texts(WARM + adds)
    latencies: list[float] = []
    with Memory.open(path, embedder=embedder) as mem:
        for i, text in enumerate(texts):
            mem.search(T, text[:30], identifiers=WHO)
            start = time.perf_counter()
            mem.add(T, text, layer="user", identifiers=WHO)
            if i >= WARM:
                latencies.append((time.perf_counter() - start) * 1e3)
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--adds", type=int, default=200)
    parser.add_argument("--embedder", default="onnx")
    parser.add_argument("--store", type=Path, default=None, help="store file (default: a temporary one)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "add_latency.json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        latencies = run(args.store or Path(tmp) / "add.duckdb", args.adds, args.embedder)
    row = {q: round(pct(latencies, v), 2) for q, v in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99))}
    print(f"{args.adds} adds after a search, embedder {args.embedder}")
    print("         p50      p90      p99")
    print(f"add  {row['p50']:7.1f}  {row['p90']:7.1f}  {row['p99']:7.1f} ms")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"adds": args.adds, "embedder": args.embedder, "ms": row}, indent=2))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
