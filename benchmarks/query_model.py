"""Search queries on the int8 query model against the float model (the default ``onnx`` embedder).

    python benchmarks/query_model.py [--queries 300] [--rounds 3] [--out PATH]

On the paraphrased questions and the memory sentences of ``sentences.py`` (seed 0):

* agreement: the cosine of each query's int8 vector to its float vector (min, mean), and how often
  the best of the stored sentences (float vectors) is the same for the int8 and the float query;
* latency of one query, p50/p95 (ms): the float model (``embed`` of one text, its single-text
  session) and the int8 query model (``embed_queries``), alternated round by round;
* throughput (texts/s): the float model in batches of 16 and 32 (what the server's micro-batching
  gives a burst of queries), the int8 query model one query at a time (how it runs queries).

Prints a table and writes JSON (default ``benchmarks/results/query_model.json``).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from sentences import SentenceGenerator
from stratamem.embeddings.onnx import OnnxEmbedder

ROOT = Path(__file__).resolve().parent.parent


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def latencies(fn: Callable[[str], object], queries: list[str]) -> list[float]:
    out = []
    for q in queries:
        start = time.perf_counter()
        fn(q)
        out.append((time.perf_counter() - start) * 1000)
    return out


def rate(fn: Callable[[list[str]], object], queries: list[str], batch: int) -> float:
    start = time.perf_counter()
    for i in range(0, len(queries), batch):
        fn(queries[i : i + batch])
    return len(queries) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3, help="alternated latency rounds per model")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "query_model.json")
    args = parser.parse_args()

    facts = SentenceGenerator(0).take(args.queries)
    queries, stored = [f.query for f in facts], [f.text for f in facts]
    embedder = OnnxEmbedder(int8_queries=True)
    if embedder.query_model is None:
        sys.exit("the model directory has no int8 query model: run `stratamem models install --rebuild`")
    embedder.warm_up()

    floats = np.vstack([embedder.embed([q]) for q in queries])
    int8 = embedder.embed_queries(queries)
    docs = embedder.embed(stored)
    cosines = (floats * int8).sum(axis=1)
    same_best = float(np.mean((floats @ docs.T).argmax(axis=1) == (int8 @ docs.T).argmax(axis=1)))

    timings: dict[str, list[float]] = {"float": [], "int8": []}
    for _ in range(args.rounds):
        timings["float"] += latencies(lambda q: embedder.embed([q]), queries)
        timings["int8"] += latencies(lambda q: embedder.embed_queries([q]), queries)

    rates = {
        "float, batches of 16": rate(embedder.embed, queries, 16),
        "float, batches of 32": rate(embedder.embed, queries, 32),
        "int8, one query at a time": rate(embedder.embed_queries, queries, 1),
    }

    rows: list[tuple[str, str]] = [
        ("cosine int8 / float vector, min", f"{float(cosines.min()):.4f}"),
        ("cosine int8 / float vector, mean", f"{float(cosines.mean()):.4f}"),
        ("same best stored sentence", f"{same_best:.3f}"),
    ]
    for name, values in timings.items():
        p50, p95 = percentile(values, 0.5), percentile(values, 0.95)
        rows.append((f"one query, {name}, p50 / p95 (ms)", f"{p50:.2f} / {p95:.2f}"))
    for name, value in rates.items():
        rows.append((f"throughput, {name} (texts/s)", f"{value:.0f}"))
    width = max(len(k) for k, _ in rows)
    print(f"{args.queries} queries, {args.rounds} alternated latency rounds; model {embedder.query_model}")
    for key, value in rows:
        print(f"{key:<{width}}  {value}")

    result: dict[str, Any] = {
        "command": " ".join(sys.argv),
        "machine": platform.platform(),
        "queries": args.queries,
        "cosine_min": float(cosines.min()),
        "cosine_mean": float(cosines.mean()),
        "same_best_stored": same_best,
        "latency_ms": {
            name: {"p50": percentile(v, 0.5), "p95": percentile(v, 0.95), "mean": statistics.fmean(v)}
            for name, v in timings.items()
        },
        "throughput": rates,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
