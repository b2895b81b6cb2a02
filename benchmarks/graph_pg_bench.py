"""Knowledge graph on PostgreSQL: recursive SQL against the CSR snapshot built from PostgreSQL.

    STRATAMEM_TEST_PG_URL=postgresql://... python benchmarks/graph_pg_bench.py [--memories 10000]
        [--tenants 10] [--queries 100]

The same synthetic graph as ``graph_bench.py`` (each memory mentions two entities of its tenant's
pool of 600 and contributes one typed entity relation), written with bulk SQL into a schema of its
own (dropped at the end). ``related`` at 1-3 hops and ``path`` go through the SDK with the result
cache off, once with the recursive CTE (``adjacency_cache=False``) and once over the per-tenant CSR
snapshot (warm: loaded before timing; its load after a write is its own row). Every query also
reads the tenant's ``graph_generation`` counter (the cache key shared by several servers).
Prints a table and writes benchmarks/results/graph_pg_bench.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from stratamem import Memory, TenantContext
from stratamem.graph.traverse import _LRU
from stratamem.layers import scope_key
from stratamem.model import Layer, LayerIdentifiers

RESULTS = Path(__file__).resolve().parent / "results"
ENTITIES_PER_TENANT = 600  # as in graph_bench.py


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


BUILD = (
    """INSERT INTO memories (tenant_id, id, layer, scope, content, content_hash, identifiers, metadata, provenance,
        tier, status, version, etag, importance, access_count, created_at, updated_at, embedding)
       SELECT 't' || (i % $T), 'm' || i, 'user', $scope, 'synthetic memory ' || i, 'h' || i, '{"user_id":"u"}',
              '{}', '{}', NULL, 'active', 1, 'e' || i, 0.0, 0, now(), now(),
              array_fill(0.1::real, ARRAY[$dims])::vector
         FROM generate_series(0, $N - 1) i""",
    """INSERT INTO memory_nodes SELECT 't' || (i % $T), 'm' || i, 'm' || i, 'user', 'synthetic memory ' || i,
              now()::TIMESTAMP, now()::TIMESTAMP, NULL FROM generate_series(0, $N - 1) i""",
    """INSERT INTO entities SELECT 't' || t, 'ent_t' || t || '_' || k, 'Entity ' || k, 'entity ' || k, 'ENTITY',
              now()::TIMESTAMP, now()::TIMESTAMP, NULL
         FROM generate_series(0, $T - 1) t, generate_series(0, $E - 1) k""",
    """INSERT INTO memory_edges SELECT 't' || (i % $T), 'me' || i || '_' || j, 'm' || i,
              'ent_t' || (i % $T) || '_' || ((i::bigint * (2654435761 + j * 40503)) % $E), 'entity', 'MENTIONS',
              'm' || i, 1.0, now()::TIMESTAMP, NULL FROM generate_series(0, $N - 1) i, generate_series(0, 1) j
       ON CONFLICT DO NOTHING""",
    """INSERT INTO entity_edges SELECT 't' || (i % $T), 'ee' || i,
              'ent_t' || (i % $T) || '_' || ((i::bigint * 2654435761) % $E),
              'ent_t' || (i % $T) || '_' || ((i::bigint * 40503 + 7) % $E),
              (ARRAY['WORKS_ON', 'CAUSED_BY', 'RELATES_TO', 'USES', 'DEPENDS_ON'])[(i % 5) + 1],
              'm' || i, now()::TIMESTAMP, NULL FROM generate_series(0, $N - 1) i""",
)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--memories", type=int, default=10_000)
    ap.add_argument("--tenants", type=int, default=10)
    ap.add_argument("--queries", type=int, default=100)
    args = ap.parse_args()
    url = os.environ["STRATAMEM_TEST_PG_URL"]
    schema = f"gbench_{uuid.uuid4().hex[:10]}"
    rng = random.Random(7)
    rows: list[dict[str, Any]] = []
    try:
        mem = Memory.open(f"{url}{'&' if '?' in url else '?'}schema={schema}", embedder="hashing")
        provider: Any = mem.engine.provider
        params = {
            "T": args.tenants,
            "N": args.memories,
            "E": ENTITIES_PER_TENANT,
            "scope": scope_key(Layer.USER, LayerIdentifiers(user_id="u")),
            "dims": mem.engine.store_info.dimensions,
        }
        t0 = time.perf_counter()
        with provider.graph_transaction() as tx:
            for statement in BUILD:
                tx.execute(statement, params)
        with provider.graph_transaction() as tx:
            tx.execute("ANALYZE")
        build_s = time.perf_counter() - t0
        graph: Any = mem.graph
        graph.queries._cache = _LRU(0)  # no result cache: every query traverses
        queries = graph.queries

        def start() -> tuple[TenantContext, str]:
            i = rng.randrange(args.memories)
            return TenantContext(tenant_id=f"t{i % args.tenants}"), f"m{i}"

        for engine, hops in [("sql", 1), ("sql", 2), ("sql", 3), ("adj", 1), ("adj", 2), ("adj", 3)]:
            queries.adjacency_cache = engine == "adj"
            if engine == "adj" and hops == 1:
                for t in range(args.tenants):
                    graph.related(TenantContext(tenant_id=f"t{t}"), f"m{t}", 1)
            lat: list[float] = []
            for _ in range(args.queries):
                ctx, ref = start()
                t1 = time.perf_counter()
                graph.related(ctx, ref, hops, limit=50)
                lat.append((time.perf_counter() - t1) * 1000)
            label = "recursive SQL" if engine == "sql" else "CSR snapshot (warm)"
            rows.append({"query": f"related {hops}-hop, {label}", "p50_ms": pct(lat, 0.5), "p95_ms": pct(lat, 0.95)})
        for engine in ("sql", "adj"):
            queries.adjacency_cache = engine == "adj"
            lat = []
            for _ in range(args.queries):
                t = rng.randrange(args.tenants)
                a, b = rng.sample(range(ENTITIES_PER_TENANT), 2)
                t1 = time.perf_counter()
                graph.path(TenantContext(tenant_id=f"t{t}"), f"ent_t{t}_{a}", f"ent_t{t}_{b}", max_hops=6)
                lat.append((time.perf_counter() - t1) * 1000)
            label = "recursive SQL" if engine == "sql" else "CSR snapshot (warm)"
            rows.append(
                {"query": f"shortest path <=6 hops, {label}", "p50_ms": pct(lat, 0.5), "p95_ms": pct(lat, 0.95)}
            )
        queries.adjacency_cache = True
        lat = []
        for t in range(args.tenants):
            queries.generations.bump(f"t{t}")
            t1 = time.perf_counter()
            graph.related(TenantContext(tenant_id=f"t{t}"), f"m{t}", 1)
            lat.append((time.perf_counter() - t1) * 1000)
        rows.append(
            {
                "query": "related 1-hop right after a write (snapshot load)",
                "p50_ms": pct(lat, 0.5),
                "p95_ms": pct(lat, 0.95),
            }
        )
        mem.close()
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
    per_tenant = args.memories // args.tenants
    print(
        f"PostgreSQL graph: {args.memories} memories, {args.tenants} tenants ({per_tenant} memories, "
        f"~{3 * per_tenant} edges per tenant), built in {build_s:.1f}s"
    )
    print(f"{'query':<52}{'p50 ms':>10}{'p95 ms':>10}")
    for r in rows:
        print(f"{r['query']:<52}{r['p50_ms']:>10.2f}{r['p95_ms']:>10.2f}")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "graph_pg_bench.json").write_text(
        json.dumps(
            {
                "memories": args.memories,
                "tenants": args.tenants,
                "queries": args.queries,
                "build_s": round(build_s, 2),
                "python": platform.python_version(),
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
