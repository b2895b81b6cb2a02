"""Bulk ingestion against the embedder's own batched throughput, with and without the knowledge graph.

    python benchmarks/ingest_ratio.py [--rounds 8] [--batch 1000] [--embedder onnx]

Two stores in one process, one with ``MemoryConfig(graph_enabled=True)`` (the default) and one
without. Each round, for each store in turn, ``batch`` new sentences of ``benchmarks/sentences.py``
go first through ``embedder.embed`` alone, then through ``Memory.bulk_add``: the model and the
ingestion see the same texts under the same load, and interleaving the two stores spreads the
machine's drift over both. The ratio (embedder time / ``bulk_add`` time, summed over the rounds)
is the share of the model's speed ingestion keeps; the issue's target is >= 0.90. Process CPU
time (all threads: the model's, DuckDB's, the preparing thread) is reported beside it.

The stores start small (one warm-up batch each), so this measures the add path itself;
``scale.py`` measures the same ratio inside a 100k/1M run, where the store's growth adds to it.

Prints a table, writes benchmarks/results/ingest_ratio.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sentences import SentenceGenerator
from stratamem import Memory, MemoryConfig, TenantContext
from stratamem.embeddings import make_embedder

TENANT = TenantContext(tenant_id="bench")
IDS = {"user_id": "u1"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--embedder", default="onnx", help="local, onnx[:DIR] or hashing[:DIM]")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "ingest_ratio.json")
    args = parser.parse_args()
    if args.rounds < 1 or args.batch < 1:
        parser.error("--rounds and --batch must be at least 1")

    gen = iter(SentenceGenerator(args.seed))
    embedder = make_embedder(args.embedder)
    modes = {"graph on (default)": True, "graph off": False}
    totals: dict[str, dict[str, float]] = {
        m: dict.fromkeys(("embed_s", "ingest_s", "embed_cpu_s", "ingest_cpu_s"), 0.0) for m in modes
    }

    def texts() -> list[str]:
        return [next(gen).text for _ in range(args.batch)]

    with tempfile.TemporaryDirectory(prefix="stratamem-ingest-") as tmp:
        stores = {
            mode: Memory.open(
                Path(tmp) / f"store-{i}.duckdb", embedder=embedder, config=MemoryConfig(graph_enabled=graph)
            )
            for i, (mode, graph) in enumerate(modes.items())
        }
        try:
            for mem in stores.values():  # warm-up: model session, tables, caches
                mem.bulk_add(TENANT, [{"content": t, "layer": "user", "identifiers": IDS} for t in texts()])
            for _ in range(args.rounds):
                for mode, mem in stores.items():
                    batch = texts()
                    t0, c0 = time.perf_counter(), time.process_time()
                    embedder.embed(batch)
                    t1, c1 = time.perf_counter(), time.process_time()
                    mem.bulk_add(TENANT, [{"content": t, "layer": "user", "identifiers": IDS} for t in batch])
                    t2, c2 = time.perf_counter(), time.process_time()
                    tot = totals[mode]
                    tot["embed_s"] += t1 - t0
                    tot["embed_cpu_s"] += c1 - c0
                    tot["ingest_s"] += t2 - t1
                    tot["ingest_cpu_s"] += c2 - c1
        finally:
            for mem in stores.values():
                mem.close()

    results: list[dict[str, Any]] = []
    per = args.batch * args.rounds
    for mode, tot in totals.items():
        results.append(
            {
                "mode": mode,
                "embed_per_s": per / tot["embed_s"],
                "ingest_per_s": per / tot["ingest_s"],
                "ratio": tot["embed_s"] / tot["ingest_s"],
                "embed_cpu_ms_per_1000": tot["embed_cpu_s"] / per * 1e6,
                "ingest_cpu_ms_per_1000": tot["ingest_cpu_s"] / per * 1e6,
            }
        )
    print(
        f"\n{'mode':<20} | {'embedder texts/s':>16} | {'bulk_add memories/s':>19} | {'ratio':>5} | "
        f"{'CPU ms/1000 embed / ingest':>26}"
    )
    for r in results:
        print(
            f"{r['mode']:<20} | {r['embed_per_s']:>16.0f} | {r['ingest_per_s']:>19.0f} | {r['ratio']:>5.3f} | "
            f"{r['embed_cpu_ms_per_1000']:>12.0f} / {r['ingest_cpu_ms_per_1000']:<11.0f}"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "benchmark": "ingest_ratio",
                "command": shlex.join(["python", *sys.argv]),
                "date": datetime.now(UTC).isoformat(timespec="seconds"),
                "machine": {
                    "platform": platform.platform(),
                    "cpus": os.cpu_count(),
                    "python": platform.python_version(),
                },
                "embedder": embedder.model_id,
                "rounds": args.rounds,
                "batch": args.batch,
                "target_ratio": 0.90,
                "results": results,
            },
            indent=2,
        )
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
