"""Search latency on PostgreSQL with many tenants, plain ``memories`` and hash-partitioned by tenant.

    python benchmarks/tenants_pg.py --memories 50000 --tenants 100 --partitions 16 [--queries 200]

Fills a fresh schema with ``--memories`` memories spread evenly over ``--tenants`` tenants (one user
scope each, *hashing* embedder so only storage is measured), runs ``--queries`` searches of random
tenants (exact and HNSW ``ann`` mode), then hash-partitions ``memories`` by ``tenant_id``
(:mod:`stratamem.providers.postgres_partition`) and runs the same searches again. Prints a table
and writes ``benchmarks/results/tenants_pg.json``.
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

from backends import pct, pg_url_default, sentence
from stratamem import Memory, TenantContext
from stratamem.providers.postgres import PostgresProvider
from stratamem.providers.postgres_partition import partition_memories

ROOT = Path(__file__).resolve().parent.parent
IDS = {"user_id": "u1"}


def searches(store: str, mode: str, tenants: int, queries: int, seed: int) -> dict[str, float]:
    rng = random.Random(seed)
    work = [(f"tenant-{rng.randrange(tenants)}", sentence(rng)) for _ in range(queries)]
    lat = []
    with Memory.open(PostgresProvider(store, search_mode=mode), embedder="hashing") as mem:
        for tenant, q in work[:5]:  # warm-up
            mem.search(TenantContext(tenant_id=tenant), q, identifiers=IDS, threshold=0.0, limit=10)
        for tenant, q in work:
            t0 = time.perf_counter()
            res = mem.search(TenantContext(tenant_id=tenant), q, identifiers=IDS, threshold=0.0, limit=10)
            lat.append((time.perf_counter() - t0) * 1000)
            assert res.results, "search returned nothing"
    return {"p50_ms": pct(lat, 0.5), "p95_ms": pct(lat, 0.95)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=50_000)
    parser.add_argument("--tenants", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=16)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--pg-url", default=pg_url_default())
    args = parser.parse_args()
    if not args.pg_url:
        raise SystemExit("no --pg-url / STRATAMEM_TEST_PG_URL")
    schema = f"bench_{uuid.uuid4().hex[:10]}"
    store = f"{args.pg_url}{'&' if '?' in args.pg_url else '?'}schema={schema}"
    rng = random.Random(args.seed)
    per_tenant = args.memories // args.tenants
    rows: list[dict[str, Any]] = []
    try:
        t0 = time.perf_counter()
        with Memory.open(store, embedder="hashing") as mem:
            for t in range(args.tenants):
                ctx = TenantContext(tenant_id=f"tenant-{t}")
                for start in range(0, per_tenant, 500):
                    mem.bulk_add(
                        ctx,
                        [
                            {"content": f"{sentence(rng)} #{start + j}", "layer": "user", "identifiers": IDS}
                            for j in range(min(500, per_tenant - start))
                        ],
                    )
        ingest_s = time.perf_counter() - t0
        print(f"ingested {per_tenant * args.tenants} memories in {ingest_s:.0f} s", flush=True)
        with psycopg.connect(args.pg_url, autocommit=True) as conn:
            conn.execute(sql.SQL("ANALYZE {}.memories").format(sql.Identifier(schema)))
        for mode in ("exact", "ann"):
            rows.append({"layout": "plain", "mode": mode, **searches(store, mode, args.tenants, args.queries, 1)})
        t0 = time.perf_counter()
        partition_memories(store, args.partitions)
        partition_s = time.perf_counter() - t0
        with psycopg.connect(args.pg_url, autocommit=True) as conn:
            conn.execute(sql.SQL("ANALYZE {}.memories").format(sql.Identifier(schema)))
        for mode in ("exact", "ann"):
            rows.append(
                {
                    "layout": f"hash x{args.partitions}",
                    "mode": mode,
                    **searches(store, mode, args.tenants, args.queries, 1),
                }
            )
    finally:
        with psycopg.connect(args.pg_url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
    print(
        f"\n{per_tenant * args.tenants:,} memories over {args.tenants} tenants, hashing embedder, "
        f"{args.queries} searches of random tenants (limit 10); partitioning took {partition_s:.0f} s"
    )
    print(f"{'layout':<12}{'mode':<8}{'p50 ms':>9}{'p95 ms':>9}")
    for r in rows:
        print(f"{r['layout']:<12}{r['mode']:<8}{r['p50_ms']:>9.2f}{r['p95_ms']:>9.2f}")
    out = ROOT / "benchmarks" / "results" / "tenants_pg.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "memories": per_tenant * args.tenants,
                "tenants": args.tenants,
                "partitions": args.partitions,
                "ingest_s": ingest_s,
                "partition_s": partition_s,
                "machine": platform.platform(),
                "cpus": os.cpu_count(),
                "results": rows,
            },
            indent=2,
        )
    )
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
