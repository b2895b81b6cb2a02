"""Storage backends side by side: the same ingest + search workload on DuckDB and PostgreSQL.

    python benchmarks/backends.py [--sizes 10000 100000] [--queries 200] [--pg-url postgresql://…]

Uses the deterministic *hashing* embedder on purpose: embedding costs next to nothing, so the
numbers isolate storage (insert, index maintenance, scoped vector scan, merge). Memories are spread
over three layers (user/project/team) of one tenant; every search queries all three (the SDK's
layered search), threshold 0, limit 10. Backends:

* ``duckdb`` — a fresh DuckDB file (exact scan of each scope);
* ``postgres`` — a fresh schema on the PostgreSQL server (``STRATAMEM_TEST_PG_URL``, or the URL in
  ``.services.env`` written by ``scripts/start_postgres.sh``), exact search;
* ``postgres-ann`` — the same PostgreSQL data searched through the HNSW index (``search_mode="ann"``).

Prints a table and writes ``benchmarks/results/backends.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from stratamem import Memory, TenantContext

ROOT = Path(__file__).resolve().parent.parent
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
IDS = {"user_id": "u1", "project_id": "p1", "team_id": "t1"}
LAYERS = ["user", "project", "team"]


def sentence(rng: random.Random) -> str:
    return f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} {rng.choice(CONTEXT)}."


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def pg_url_default() -> str | None:
    if os.environ.get("STRATAMEM_TEST_PG_URL"):
        return os.environ["STRATAMEM_TEST_PG_URL"]
    env = ROOT / ".services.env"
    if env.is_file():
        for line in env.read_text().splitlines():
            if line.startswith("STRATAMEM_TEST_PG_URL="):
                return line.split("=", 1)[1].strip()
    return None


def ingest(mem: Memory, ctx: TenantContext, size: int, rng: random.Random) -> dict[str, float]:
    start = time.perf_counter()
    batch = 500
    for i in range(0, size, batch):
        items = [
            {"content": f"{sentence(rng)} #{i + j}", "layer": LAYERS[(i + j) % 3], "identifiers": IDS}
            for j in range(min(batch, size - i))
        ]
        mem.bulk_add(ctx, items)
    ingest_s = time.perf_counter() - start
    add_ms = []
    for i in range(50):
        t0 = time.perf_counter()
        mem.add(ctx, content=f"single add {i}: {sentence(rng)}", layer="user", identifiers=IDS)
        add_ms.append((time.perf_counter() - t0) * 1000)
    return {"ingest_s": ingest_s, "ingest_per_s": size / ingest_s, "add_p50_ms": pct(add_ms, 0.5)}


def searches(mem: Memory, ctx: TenantContext, queries: int, rng: random.Random) -> dict[str, float]:
    texts = [sentence(rng) for _ in range(queries)]
    for q in texts[:5]:  # warm-up (connections, caches)
        mem.search(ctx, q, identifiers=IDS, threshold=0.0, limit=10)
    lat = []
    for q in texts:
        t0 = time.perf_counter()
        res = mem.search(ctx, q, identifiers=IDS, threshold=0.0, limit=10)
        lat.append((time.perf_counter() - t0) * 1000)
        assert res.results, "search returned nothing"
    return {"search_p50_ms": pct(lat, 0.5), "search_p95_ms": pct(lat, 0.95)}


def run_duckdb(size: int, queries: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    ctx = TenantContext(tenant_id="bench")
    with tempfile.TemporaryDirectory() as tmp, Memory.open(Path(tmp) / "bench.duckdb", embedder="hashing") as mem:
        out: dict[str, Any] = {"backend": "duckdb", "size": size, **ingest(mem, ctx, size, rng)}
        out.update(searches(mem, ctx, queries, rng))
    return out


def run_postgres(size: int, queries: int, seed: int, url: str) -> list[dict[str, Any]]:
    import psycopg
    from psycopg import sql

    from stratamem.providers.postgres import PostgresProvider

    rng = random.Random(seed)
    ctx = TenantContext(tenant_id="bench")
    schema = f"bench_{uuid.uuid4().hex[:10]}"
    store = f"{url}{'&' if '?' in url else '?'}schema={schema}"
    try:
        with Memory.open(store, embedder="hashing") as mem:
            exact: dict[str, Any] = {"backend": "postgres", "size": size, **ingest(mem, ctx, size, rng)}
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(sql.SQL("ANALYZE {}.memories").format(sql.Identifier(schema)))
            exact.update(searches(mem, ctx, queries, random.Random(seed + 1)))
        with Memory.open(PostgresProvider(store, search_mode="ann"), embedder="hashing") as mem:
            ann: dict[str, Any] = {
                "backend": "postgres-ann",
                "size": size,
                "ingest_s": None,
                "ingest_per_s": None,
                "add_p50_ms": None,
            }
            ann.update(searches(mem, ctx, queries, random.Random(seed + 1)))
        return [exact, ann]
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def fmt(value: Any, digits: int = 2) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--pg-url", default=pg_url_default())
    parser.add_argument("--backends", nargs="+", default=["duckdb", "postgres"], choices=["duckdb", "postgres"])
    args = parser.parse_args()
    rows: list[dict[str, Any]] = []
    for size in args.sizes:
        if "duckdb" in args.backends:
            rows.append(run_duckdb(size, args.queries, args.seed))
            print(f"done duckdb {size}", flush=True)
        if "postgres" in args.backends:
            if not args.pg_url:
                print("PostgreSQL skipped: no --pg-url / STRATAMEM_TEST_PG_URL (run scripts/start_postgres.sh)")
            else:
                rows += run_postgres(size, args.queries, args.seed, args.pg_url)
                print(f"done postgres {size}", flush=True)
    header = f"{'backend':<14}{'memories':>10}{'ingest/s':>12}{'add p50 ms':>12}{'search p50 ms':>15}{'p95 ms':>10}"
    print("\nembedder: hashing (storage cost only); search = 3 layers, limit 10, threshold 0")
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r['backend']:<14}{r['size']:>10,}{fmt(r['ingest_per_s'], 0):>12}{fmt(r['add_p50_ms']):>12}"
            f"{fmt(r['search_p50_ms']):>15}{fmt(r['search_p95_ms']):>10}"
        )
    out = ROOT / "benchmarks" / "results" / "backends.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "embedder": "hashing",
                "queries": args.queries,
                "machine": platform.platform(),
                "cpus": os.cpu_count(),
                "results": rows,
            },
            indent=2,
        )
    )
    print(f"\nwrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
