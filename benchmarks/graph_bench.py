"""Knowledge-graph benchmark: traversal latency on a large multi-tenant graph, extraction cost.

    python benchmarks/graph_bench.py [--memories 100000] [--tenants 50] [--queries 200]

The graph is built with bulk SQL straight into the tables (memories, memory_nodes, entities,
memory_edges, entity_edges) because going through ``Memory.add`` for 100k memories would take far
longer than the traversals being measured: each memory mentions two entities of its tenant's pool
and contributes one typed entity relation, so 100k memories give 200k memory edges + 100k entity
edges (~300k). Tenants are interleaved row by row (the worst case for locality).

Traversals go through the public SDK (``mem.graph.related`` / ``mem.graph.path``) with the result
cache disabled, so every query traverses: once with the recursive SQL (``adjacency_cache=False``)
and once over the per-tenant CSR snapshot (loaded for every tenant before timing; the load itself
is a separate row, as is the cached path). Memory rows are materialised lazily, so the snapshot rows
include building the returned ``MemoryEntry`` objects. ``--check N`` asserts, for N random queries
per kind, that both engines return identical results. Each row reports wall-clock p50/p95 and the
p50 of process CPU time (``time.process_time``), which is less sensitive to a shared machine.
Extraction cost is the offline extractor on realistic sentences, plus the end-to-end ``add``
overhead of the graph hook (graph on vs. off, hashing embedder).

Prints a table and writes benchmarks/results/graph_bench.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stratamem import Memory, TenantContext
from stratamem.graph.extract import RuleBasedExtractor
from stratamem.graph.traverse import _LRU
from stratamem.layers import scope_key
from stratamem.model import Layer, LayerIdentifiers

RESULTS = Path(__file__).resolve().parent / "results"
LABELLED = Path(__file__).resolve().parent / "data" / "graph_extraction_labelled.jsonl"
ENTITIES_PER_TENANT = 600
RELS = ["WORKS_ON", "CAUSED_BY", "RELATES_TO", "USES", "DEPENDS_ON"]

PEOPLE = ["Alice", "Bob Smith", "Carol", "Dave", "Erin", "Frank", "Grace Hopper", "Heidi"]
THINGS = [
    "Project Phoenix",
    "the billing service",
    "a memory leak",
    "Redis",
    "PostgreSQL",
    "Acme Corp",
    'the "session cache"',
    "Kubernetes",
    "the search API",
    "Project A",
]
VERBS = ["works on", "reported", "fixed", "depends on", "manages", "joined", "uses", "found"]


MEMORIES_SQL = """
INSERT INTO memories SELECT 't' || (i % $T), 'm' || i, 'user', $scope, 'synthetic memory ' || i,
       'h' || i, '{"user_id":"u"}', '{}', '{}', NULL, 'active', 1, 'e' || i, 0.0, 0,
       now()::TIMESTAMP, now()::TIMESTAMP, NULL, NULL, NULL,
       list_transform(range(DIMS), x -> 0.0::FLOAT)::FLOAT[DIMS]
  FROM range($N) r(i)
"""


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def build(mem: Memory, memories: int, tenants: int) -> dict[str, int]:
    scope = scope_key(Layer.USER, LayerIdentifiers(user_id="u"))
    dims = mem.engine.store_info.dimensions
    n_ent = ENTITIES_PER_TENANT
    provider: Any = mem.engine.provider
    with provider.transaction() as tx:
        # only the integer embedding dimension is substituted into the statement
        tx.execute(MEMORIES_SQL.replace("DIMS", str(int(dims))), {"T": tenants, "N": memories, "scope": scope})
        tx.execute(
            "INSERT INTO memory_nodes SELECT 't' || (i % $T), 'm' || i, 'm' || i, 'user', 'synthetic memory ' || i, "
            "now()::TIMESTAMP, now()::TIMESTAMP, NULL FROM range($N) r(i)",
            {"T": tenants, "N": memories},
        )
        tx.execute(
            "INSERT INTO entities SELECT 't' || t, 'ent_t' || t || '_' || k, 'Entity ' || k, 'entity ' || k, 'ENTITY', "
            "now()::TIMESTAMP, now()::TIMESTAMP, NULL FROM range($T) a(t), range($E) b(k)",
            {"T": tenants, "E": n_ent},
        )
        # two mentions per memory: entity k1 and k2 of the memory's tenant
        tx.execute(
            """
            INSERT INTO memory_edges
            SELECT 't' || (i % $T), 'me' || i || '_' || j, 'm' || i,
                   'ent_t' || (i % $T) || '_' || (CASE WHEN j = 0 THEN hash(i) % $E ELSE hash(i * 31 + 7) % $E END),
                   'entity', 'MENTIONS', 'm' || i, 1.0, now()::TIMESTAMP, NULL
              FROM range($N) r(i), range(2) s(j)
            """,
            {"T": tenants, "N": memories, "E": n_ent},
        )
        tx.execute(
            """
            INSERT INTO entity_edges
            SELECT 't' || (i % $T), 'ee' || i, 'ent_t' || (i % $T) || '_' || (hash(i) % $E),
                   'ent_t' || (i % $T) || '_' || (hash(i * 31 + 7) % $E),
                   list_extract(['WORKS_ON', 'CAUSED_BY', 'RELATES_TO', 'USES', 'DEPENDS_ON'], (i % 5) + 1),
                   'm' || i, now()::TIMESTAMP, NULL
              FROM range($N) r(i)
            """,
            {"T": tenants, "N": memories, "E": n_ent},
        )
        counts = {
            t: int(tx.execute(f"SELECT count(*) FROM {t}").fetchone()[0])  # noqa: S608 (fixed names)
            for t in ("memories", "memory_nodes", "entities", "memory_edges", "entity_edges")
        }
    tx2: Any
    with provider._read() as tx2:
        tx2.execute("CHECKPOINT")
    return counts


def timed(fn: Callable[[], Any], n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--memories", type=int, default=100_000)
    ap.add_argument("--tenants", type=int, default=50)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--check", type=int, default=5, help="random queries compared between both engines")
    args = ap.parse_args()
    rng = random.Random(7)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        mem = Memory.open(Path(tmp) / "graph.duckdb", embedder="hashing")
        t0 = time.perf_counter()
        counts = build(mem, args.memories, args.tenants)
        build_s = time.perf_counter() - t0
        graph: Any = mem.graph
        graph.queries._cache = _LRU(0)  # no result cache: every query traverses

        def start() -> tuple[TenantContext, str]:
            i = rng.randrange(args.memories)
            return TenantContext(tenant_id=f"t{i % args.tenants}"), f"m{i}"

        queries: Any = graph.queries
        cur: Any = graph.engine.provider._cursor()

        def warm() -> None:
            queries.adjacency_cache = True
            for t in range(args.tenants):
                queries._rows_of(cur, f"t{t}", queries._snapshot(cur, f"t{t}"))

        for engine, hops in [("sql", 1), ("sql", 2), ("sql", 3), ("adj", 1), ("adj", 2), ("adj", 3)]:
            if engine == "adj" and hops == 1:
                warm()
            queries.adjacency_cache = engine == "adj"
            sizes: list[int] = []
            lat: list[float] = []
            cpu: list[float] = []
            for _ in range(args.queries):
                ctx, ref = start()
                t1, c1 = time.perf_counter(), time.process_time()
                out = graph.related(ctx, ref, hops, limit=50)
                lat.append((time.perf_counter() - t1) * 1000)
                cpu.append((time.process_time() - c1) * 1000)
                sizes.append(len(out.items))
            label = "recursive SQL" if engine == "sql" else "CSR snapshot"
            rows.append(
                {
                    "query": f"related {hops}-hop, {label}",
                    "p50_ms": pct(lat, 0.5),
                    "p95_ms": pct(lat, 0.95),
                    "cpu_p50_ms": pct(cpu, 0.5),
                    "mean_results": statistics.mean(sizes),
                }
            )
        for engine in ("sql", "adj"):
            queries.adjacency_cache = engine == "adj"
            lat, cpu = [], []
            found = 0
            for _ in range(args.queries):
                t = rng.randrange(args.tenants)
                ctx = TenantContext(tenant_id=f"t{t}")
                a, b = rng.sample(range(ENTITIES_PER_TENANT), 2)
                t1, c1 = time.perf_counter(), time.process_time()
                p = graph.path(ctx, f"ent_t{t}_{a}", f"ent_t{t}_{b}", max_hops=6)
                lat.append((time.perf_counter() - t1) * 1000)
                cpu.append((time.process_time() - c1) * 1000)
                found += p.found
            label = "recursive SQL" if engine == "sql" else "CSR snapshot, bidirectional"
            rows.append(
                {
                    "query": f"shortest path <=6 hops, {label}",
                    "p50_ms": pct(lat, 0.5),
                    "p95_ms": pct(lat, 0.95),
                    "cpu_p50_ms": pct(cpu, 0.5),
                    "mean_results": found / args.queries,
                }
            )
        # identical results from both engines (random related 1-3 hops and paths)
        checked = 0
        for _ in range(args.check):
            ctx, ref = start()
            t = int(ctx.tenant_id[1:])
            a, b = rng.sample(range(ENTITIES_PER_TENANT), 2)
            calls: list[Callable[[], Any]] = [
                *(lambda h=h, ctx=ctx, ref=ref: graph.related(ctx, ref, h, limit=50) for h in (1, 2, 3)),
                lambda ctx=ctx, t=t, a=a, b=b: graph.path(ctx, f"ent_t{t}_{a}", f"ent_t{t}_{b}", max_hops=6),
            ]
            for call in calls:
                queries.adjacency_cache = True
                fast = call()
                queries.adjacency_cache = False
                slow = call()
                if fast != slow:
                    raise SystemExit(f"engines disagree on {ctx.tenant_id}: {fast} != {slow}")
                checked += 1
        queries.adjacency_cache = True
        print(f"engines agree on {checked} random queries")
        graph.queries._cache = _LRU(4096)
        # snapshot load cost (first traversal of a tenant after a graph write); rows survive graph writes
        lat, cpu = [], []
        for t in range(min(args.tenants, 20)):
            graph.queries.generations.bump(f"t{t}")
            t1, c1 = time.perf_counter(), time.process_time()
            queries._snapshot(cur, f"t{t}")
            lat.append((time.perf_counter() - t1) * 1000)
            cpu.append((time.process_time() - c1) * 1000)
        rows.append(
            {
                "query": "snapshot load (per tenant, after a write)",
                "p50_ms": pct(lat, 0.5),
                "p95_ms": pct(lat, 0.95),
                "cpu_p50_ms": pct(cpu, 0.5),
                "mean_results": None,
            }
        )
        lat, cpu = [], []
        for t in range(min(args.tenants, 20)):
            queries._rows.put(f"t{t}", None)
            t1, c1 = time.perf_counter(), time.process_time()
            queries._rows_of(cur, f"t{t}", queries._snapshot(cur, f"t{t}"))
            lat.append((time.perf_counter() - t1) * 1000)
            cpu.append((time.process_time() - c1) * 1000)
        rows.append(
            {
                "query": "memory rows load (per tenant, first query)",
                "p50_ms": pct(lat, 0.5),
                "p95_ms": pct(lat, 0.95),
                "cpu_p50_ms": pct(cpu, 0.5),
                "mean_results": None,
            }
        )
        ctx, ref = start()
        graph.related(ctx, ref, 3)
        lat = timed(lambda: graph.related(ctx, ref, 3), args.queries)
        rows.append(
            {
                "query": "related 3-hop, cached",
                "p50_ms": pct(lat, 0.5),
                "p95_ms": pct(lat, 0.95),
                "cpu_p50_ms": None,
                "mean_results": None,
            }
        )
        mem.close()

    # -- extraction cost ------------------------------------------------------------------------
    extractor = RuleBasedExtractor()
    texts = [json.loads(line)["text"] for line in LABELLED.read_text(encoding="utf-8").splitlines() if line.strip()]
    texts += [
        f"{rng.choice(PEOPLE)} {rng.choice(VERBS)} {rng.choice(THINGS)}. {rng.choice(PEOPLE)} "
        f"{rng.choice(VERBS)} {rng.choice(THINGS)} after the outage."
        for _ in range(2000)
    ]
    t1 = time.perf_counter()
    for text in texts:
        extractor.extract(text)
    extract_ms = (time.perf_counter() - t1) * 1000 / len(texts)
    rows.append({"query": "offline extraction per memory", "p50_ms": extract_ms, "p95_ms": None, "mean_results": None})
    add_cost: dict[str, float] = {}
    for enabled in (True, False):
        with tempfile.TemporaryDirectory() as tmp, Memory.open(Path(tmp) / "a.duckdb", embedder="hashing") as m:
            ctx = TenantContext(tenant_id="bench")
            if not enabled:
                m.graph.set_enabled(ctx, False)
            for w in range(20):
                m.add(ctx, f"warm up {w}", layer="user", identifiers={"user_id": "u"})
            lat = timed(
                lambda m=m, ctx=ctx: m.add(ctx, rng.choice(texts[40:]), layer="user", identifiers={"user_id": "u"}), 300
            )
            add_cost["on" if enabled else "off"] = pct(lat, 0.5)
    rows.append({"query": "add() p50, graph on", "p50_ms": add_cost["on"], "p95_ms": None, "mean_results": None})
    rows.append({"query": "add() p50, graph off", "p50_ms": add_cost["off"], "p95_ms": None, "mean_results": None})

    print(f"graph: {counts}  built in {build_s:.1f}s  ({args.tenants} tenants)")
    print(f"{'query':<46}{'p50 ms':>10}{'p95 ms':>10}{'cpu p50 ms':>12}{'mean results':>14}")
    for r in rows:
        p95 = f"{r['p95_ms']:.3f}" if r["p95_ms"] is not None else "-"
        cpu50 = f"{r['cpu_p50_ms']:.3f}" if r.get("cpu_p50_ms") is not None else "-"
        mr = f"{r['mean_results']:.2f}" if r["mean_results"] is not None else "-"
        print(f"{r['query']:<46}{r['p50_ms']:>10.3f}{p95:>10}{cpu50:>12}{mr:>14}")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "graph_bench.json").write_text(
        json.dumps(
            {
                "counts": counts,
                "tenants": args.tenants,
                "queries": args.queries,
                "build_s": round(build_s, 2),
                "python": platform.python_version(),
                "machine": platform.machine(),
                "cpus": os.cpu_count(),
                "load_avg_at_end": os.getloadavg(),
                "rows": rows,
            },
            indent=2,
        ),
        encoding="utf-8",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
