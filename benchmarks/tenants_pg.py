"""Search latency on PostgreSQL with many tenants, plain ``memories`` and hash-partitioned by tenant.

    python benchmarks/tenants_pg.py --memories 50000 --tenants 100 --partitions 16 [--queries 200] [--fill copy]

Fills a fresh schema with ``--memories`` memories spread evenly over ``--tenants`` tenants (one user
scope each, *hashing* embedder so only storage is measured), runs ``--queries`` searches of random
tenants (exact and HNSW ``ann`` mode), then hash-partitions ``memories`` by ``tenant_id``
(:mod:`stratamem.providers.postgres_partition`) and runs the same searches again. Prints a table
and writes ``benchmarks/results/tenants_pg.json``.

Two ways to fill (``--fill``): ``sdk`` adds every memory through ``Memory.bulk_add`` (the whole
pipeline: events, knowledge graph, hooks), ``copy`` writes only what the PostgreSQL provider itself
writes for a memory (the ``memories`` row, the ``lexical_postings`` rows of hybrid search, the
``embedding_cache`` row) through :meth:`PostgresProvider.add`, i.e. binary ``COPY``, with the
secondary indexes of ``memories`` and ``lexical_postings`` dropped during the load and recreated
from their own definitions afterwards (same names, same definitions as the migrations create).
Searches read only those tables, so they see the same data either way; ``copy`` leaves out the
events and the graph, which no search here reads. ``auto`` (default) copies from 50,000 memories on.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from backends import pct, pg_url_default, sentence
from stratamem import Memory, TenantContext
from stratamem.embeddings.base import content_hash
from stratamem.embeddings.hashing import HashingEmbedder
from stratamem.engine import _etag
from stratamem.layers import scoped_identifiers
from stratamem.model import Layer, LayerIdentifiers, MemoryEntry
from stratamem.providers.postgres import PostgresProvider, split_url
from stratamem.providers.postgres_partition import partition_memories

ROOT = Path(__file__).resolve().parent.parent
IDS = {"user_id": "u1"}
#: Tables whose secondary indexes the ``copy`` fill drops during the load and recreates afterwards.
DEFERRED_TABLES = ("memories", "lexical_postings")
COPY_FROM = 50_000


def contents(rng: random.Random, memories: int, tenants: int) -> Iterator[tuple[str, list[str]]]:
    """``(tenant_id, contents)`` per tenant, the same sequence for both fill modes."""
    per_tenant = memories // tenants
    for t in range(tenants):
        yield f"tenant-{t}", [f"{sentence(rng)} #{j}" for j in range(per_tenant)]


def fill_sdk(store: str, memories: int, tenants: int, rng: random.Random) -> dict[str, float]:
    """Every memory through ``Memory.bulk_add`` (batches of 500)."""
    t0 = time.perf_counter()
    with Memory.open(store, embedder="hashing") as mem:
        for tenant, texts in contents(rng, memories, tenants):
            ctx = TenantContext(tenant_id=tenant)
            for start in range(0, len(texts), 500):
                mem.bulk_add(
                    ctx,
                    [{"content": c, "layer": "user", "identifiers": IDS} for c in texts[start : start + 500]],
                )
    return {"fill_s": time.perf_counter() - t0}


def _entries(tenant: str, texts: list[str], vectors: Any, now: datetime) -> list[MemoryEntry]:
    """The entries ``Memory.add`` would build for these contents (user layer, no metadata)."""
    idents = scoped_identifiers(Layer.USER, LayerIdentifiers(**IDS))
    out = []
    for text, vector in zip(texts, vectors, strict=True):
        memory_id, chash = str(uuid.uuid4()), content_hash(text)
        out.append(
            MemoryEntry(
                id=memory_id,
                tenant_id=tenant,
                content=text,
                layer=Layer.USER,
                identifiers=idents,
                created_at=now,
                updated_at=now,
                etag=_etag(memory_id, 1, chash, {}),
                content_hash=chash,
                embedding=vector.tolist(),
            )
        )
    return out


def _deferred_ddl(conn: psycopg.Connection[Any]) -> tuple[list[sql.Composed | sql.SQL], list[sql.Composed | sql.SQL]]:
    """``(drop, create)`` statements of the secondary indexes (and the ``lexical_postings`` primary
    key) of :data:`DEFERRED_TABLES`, read from the catalog so the recreated ones are the migrations'."""
    drop: list[sql.Composed | sql.SQL] = []
    create: list[sql.Composed | sql.SQL] = []
    for table, name, definition in conn.execute(
        "SELECT c.relname, i.relname, pg_get_constraintdef(k.oid) FROM pg_constraint k "
        "JOIN pg_class c ON c.oid = k.conrelid JOIN pg_class i ON i.oid = k.conindid "
        "WHERE c.relnamespace = current_schema()::regnamespace AND k.contype = 'p' AND c.relname = 'lexical_postings'"
    ).fetchall():
        drop.append(sql.SQL("ALTER TABLE {} DROP CONSTRAINT {}").format(sql.Identifier(table), sql.Identifier(name)))
        create.append(
            sql.SQL("ALTER TABLE {} ADD CONSTRAINT {} ").format(sql.Identifier(table), sql.Identifier(name))
            + sql.SQL(definition)
        )
    for name, definition in conn.execute(
        "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema() AND tablename = ANY(%s) "
        "AND indexname NOT IN (SELECT conname FROM pg_constraint WHERE connamespace = current_schema()::regnamespace)",
        [list(DEFERRED_TABLES)],
    ).fetchall():
        drop.append(sql.SQL("DROP INDEX {}").format(sql.Identifier(name)))
        create.append(sql.SQL(definition))
    return drop, create


def fill_copy(
    store: str, memories: int, tenants: int, rng: random.Random, *, maintenance_work_mem: str = "2GB"
) -> dict[str, float]:
    """The provider's own rows through :meth:`PostgresProvider.add` (binary ``COPY``), one
    transaction per tenant, indexes built after the load. Returns the load and index-build times."""
    t0 = time.perf_counter()
    Memory.open(store, embedder="hashing").close()  # every migration (features included) runs once
    embedder = HashingEmbedder()
    conninfo, schema = split_url(store)
    options = f"-c search_path={schema},public" if schema else ""
    with psycopg.connect(conninfo, autocommit=True, options=options) as conn:
        drop, create = _deferred_ddl(conn)
        for statement in drop:
            conn.execute(statement)
    provider = PostgresProvider(store, max_size=2)
    provider.initialize(embedder.model_id, embedder.dimensions)
    try:
        for i, (tenant, texts) in enumerate(contents(rng, memories, tenants)):
            if i and i % 100 == 0:
                print(f"  {i} tenants loaded, {time.perf_counter() - t0:.0f} s", flush=True)
            for start in range(0, len(texts), 2000):
                chunk = texts[start : start + 2000]
                now = datetime.now(UTC)
                provider.add(_entries(tenant, chunk, embedder.embed(chunk), now), cache_model=embedder.model_id)
    finally:
        provider.shutdown()
    load_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    with psycopg.connect(conninfo, autocommit=True, options=options) as conn:
        conn.execute("SELECT set_config('maintenance_work_mem', %s, false)", [maintenance_work_mem])
        for statement in create:
            conn.execute(statement)
    return {"fill_s": time.perf_counter() - t0, "load_s": load_s, "index_s": time.perf_counter() - t1}


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
    parser.add_argument(
        "--fill", choices=("auto", "sdk", "copy"), default="auto", help=f"auto: copy from {COPY_FROM:,} memories"
    )
    parser.add_argument("--maintenance-work-mem", default="2GB", help="for the index builds (HNSW, GIN)")
    args = parser.parse_args()
    if not args.pg_url:
        raise SystemExit("no --pg-url / STRATAMEM_TEST_PG_URL")
    schema = f"bench_{uuid.uuid4().hex[:10]}"
    store = f"{args.pg_url}{'&' if '?' in args.pg_url else '?'}schema={schema}"
    rng = random.Random(args.seed)
    per_tenant = args.memories // args.tenants
    fill = args.fill if args.fill != "auto" else ("copy" if args.memories >= COPY_FROM else "sdk")
    # libpq reads PGOPTIONS on connections without their own options: the partitioning's index builds
    os.environ["PGOPTIONS"] = f"-c maintenance_work_mem={args.maintenance_work_mem}"
    rows: list[dict[str, Any]] = []
    try:
        if fill == "copy":
            timing = fill_copy(store, args.memories, args.tenants, rng, maintenance_work_mem=args.maintenance_work_mem)
        else:
            timing = fill_sdk(store, args.memories, args.tenants, rng)
        ingest_s = timing["fill_s"]
        print(f"filled {per_tenant * args.tenants} memories ({fill}) in {ingest_s:.0f} s {timing}", flush=True)
        with psycopg.connect(args.pg_url, autocommit=True) as conn:
            for table in DEFERRED_TABLES:
                conn.execute(sql.SQL("VACUUM ANALYZE {}.{}").format(sql.Identifier(schema), sql.Identifier(table)))
        for mode in ("exact", "ann"):
            rows.append({"layout": "plain", "mode": mode, **searches(store, mode, args.tenants, args.queries, 1)})
        t0 = time.perf_counter()
        partition_memories(store, args.partitions)
        partition_s = time.perf_counter() - t0
        with psycopg.connect(args.pg_url, autocommit=True) as conn:
            for table in DEFERRED_TABLES:
                conn.execute(sql.SQL("VACUUM ANALYZE {}.{}").format(sql.Identifier(schema), sql.Identifier(table)))
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
        f"{args.queries} searches of random tenants (limit 10); filled ({fill}) in {ingest_s:.0f} s, "
        f"partitioning took {partition_s:.0f} s"
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
                "fill": fill,
                "ingest_s": ingest_s,
                **{k: v for k, v in timing.items() if k != "fill_s"},
                "maintenance_work_mem": args.maintenance_work_mem,
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
