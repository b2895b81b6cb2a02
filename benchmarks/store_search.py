"""SDK search latency on a store that is already built (e.g. the one ``load.py --store`` keeps).

    python benchmarks/store_search.py --store PATH [--queries 200] [--embedder onnx] [--out PATH]
                                      [--tenant bench-load] [--user u1]

Building a 100k-memory store takes minutes; this measures search on one that exists, through the
public SDK, as an application embedding stratamem would call it:

* ``open + first search``: ``Memory.open`` to the first answer (the first search loads the scope's
  partition into the search index and starts the model);
* ``search``: ``mem.search`` end to end with distinct queries (query embedding included), p50/p95;
* ``search (vector cached)``: the same queries again (the engine's query cache hits);
* ``search, first person``: the same queries after "I wonder: ", which makes each a question in the
  user's voice, asked of the personal layers in their memories' words (``retrieval/voice.py``: two
  or three texts embedded instead of one, and the scope's centroid read).
* with ``--engine-rounds N``: N more passes of cached searches, split into the time spent in
  ``provider.search`` and the rest (``engine only``: the engine's own work around the store, query
  embedding excluded), each as wall time and as CPU time of the searching thread
  (``time.thread_time``, steadier than wall time when other processes share the cores).

The queries are the paraphrased questions of ``sentences.py`` (seed 0, as ``load.py`` asks them) over
the tenant and user ``load.py`` writes (``--tenant bench-main`` searches a store kept by ``scale.py
--keep``). Prints a table and writes JSON to ``--out`` (default
benchmarks/results/store_search.json).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from load import TENANT, USER
from sentences import SentenceGenerator
from stratamem import Memory, TenantContext

ROOT = Path(__file__).resolve().parent.parent


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def engine_split(
    mem: Memory, ctx: TenantContext, who: dict[str, str], queries: list[str], rounds: int
) -> dict[str, list[float]]:
    """Cached searches, each split into ``provider.search`` and the engine's own work (ms)."""
    provider = mem.engine.provider
    search = provider.search
    spent = [0.0, 0.0]  # wall, thread CPU inside provider.search during one mem.search

    def timed(query: Any) -> Any:
        wall, cpu = time.perf_counter(), time.thread_time()
        try:
            return search(query)
        finally:
            spent[0] += time.perf_counter() - wall
            spent[1] += time.thread_time() - cpu

    out: dict[str, list[float]] = {
        "cached: engine only": [],
        "cached: engine only, CPU": [],
        "cached: provider.search, CPU": [],
    }
    provider.search = timed  # type: ignore[method-assign]
    try:
        for _ in range(rounds):
            for q in queries:
                spent[0] = spent[1] = 0.0
                wall, cpu = time.perf_counter(), time.thread_time()
                mem.search(ctx, q, identifiers=who, limit=10)
                wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
                out["cached: engine only"].append((wall - spent[0]) * 1000)
                out["cached: engine only, CPU"].append((cpu - spent[1]) * 1000)
                out["cached: provider.search, CPU"].append(spent[1] * 1000)
    finally:
        del provider.search  # the instance attribute: the class's method again
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", type=Path, required=True, help="a DuckDB store built by load.py --store")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--embedder", default="onnx")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tenant", default=TENANT, help="tenant searched (scale.py --keep stores: bench-main)")
    parser.add_argument("--user", default=USER, help="user_id of the searched scope")
    parser.add_argument("--engine-rounds", type=int, default=0, help="passes of the engine-only measurement")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "store_search.json")
    args = parser.parse_args(argv)
    if not args.store.exists():
        print(f"no store at {args.store}: build one with load.py --store", file=sys.stderr)
        return 2
    queries = [f.query for f in SentenceGenerator(args.seed).take(args.queries)]
    ctx = TenantContext(tenant_id=args.tenant, principal="bench")
    who = {"user_id": args.user}
    started = time.perf_counter()
    with Memory.open(args.store, embedder=args.embedder) as mem:
        mem.search(ctx, queries[0], identifiers=who, limit=10)
        open_first_ms = (time.perf_counter() - started) * 1000
        rows: dict[str, list[float]] = {"search": [], "search (vector cached)": [], "search, first person": []}
        counts: list[int] = []
        for label in rows:
            for q in queries if label != "search, first person" else [f"I wonder: {q}" for q in queries]:
                t0 = time.perf_counter()
                res = mem.search(ctx, q, identifiers=who, limit=10)
                rows[label].append((time.perf_counter() - t0) * 1000)
                counts.append(len(res.results))
        if args.engine_rounds > 0:
            rows.update(engine_split(mem, ctx, who, queries, args.engine_rounds))
        total = mem.list(ctx, layer="user", identifiers=who, limit=1).total_count
    result = {
        "store": str(args.store),
        "embedder": args.embedder,
        "queries": len(queries),
        "memories_in_scope": total,
        "open_first_search_ms": open_first_ms,
        "latency_ms": {k: {"p50": statistics.median(v), "p95": percentile(v, 0.95)} for k, v in rows.items()},
        "mean_results": statistics.fmean(counts) if counts else 0.0,
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
    }
    print(f"store {args.store} ({total} memories in the searched scope), {len(queries)} queries, {args.embedder}")
    print(f"{'open + first search':<30} {open_first_ms:>9.1f} ms")
    for label, row in result["latency_ms"].items():
        print(f"{label:<30} p50 {row['p50']:>7.2f} ms   p95 {row['p95']:>7.2f} ms")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
