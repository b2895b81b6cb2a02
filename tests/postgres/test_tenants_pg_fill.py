"""The ``copy`` fill of ``benchmarks/tenants_pg.py`` writes the rows the SDK would write.

Both fills run at a tiny size on the real PostgreSQL, each into its own schema, from the same
contents: the ``memories``, ``lexical_postings`` and ``embedding_cache`` rows match column by
column (ids and timestamps aside), the recreated indexes are the migrations' own, and the SDK
searches, gets and lists the copied rows exactly as it does the SDK-written ones.
"""

from __future__ import annotations

import random
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import psycopg
import pytest
from psycopg import sql

from stratamem import Memory, TenantContext
from stratamem.engine import _etag

ROOT = Path(__file__).resolve().parents[2]
MEMORIES, TENANTS = 60, 3
QUERIES = ["billing flow", "the team uses Rust for the parser", "mobile app since March"]


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import tenants_pg
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return tenants_pg


@pytest.fixture()
def sdk_store(pg_url: str) -> Iterator[str]:
    name = f"t_{uuid.uuid4().hex[:16]}"
    yield f"{pg_url}{'&' if '?' in pg_url else '?'}schema={name}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name)))


def _rows(pg_url: str, schema: str, query: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(sql.SQL("SET search_path = {}, public").format(sql.Identifier(schema)))
        return sorted(conn.execute(query).fetchall(), key=repr)


def _schema(store: str) -> str:
    return store.rsplit("schema=", 1)[1]


def test_copy_fill_matches_sdk_fill(bench: ModuleType, pg_url: str, pg_store_url: str, sdk_store: str) -> None:
    timing = bench.fill_copy(pg_store_url, MEMORIES, TENANTS, random.Random(3))
    assert timing["load_s"] >= 0 and timing["index_s"] >= 0
    bench.fill_sdk(sdk_store, MEMORIES, TENANTS, random.Random(3))
    copied, added = _schema(pg_store_url), _schema(sdk_store)

    memory_cols = (
        "SELECT tenant_id, layer, scope, content, content_hash, identifiers::text, metadata::text, "
        "provenance::text, tier, status, version, importance, access_count, expires_at, last_accessed_at, "
        "deleted_at, embedding::text, content_tsv::text, created_at = updated_at FROM memories"
    )
    rows = _rows(pg_url, copied, memory_cols)
    assert len(rows) == MEMORIES
    assert rows == _rows(pg_url, added, memory_cols)
    postings = (
        "SELECT m.content, p.layer, p.scope, p.term, p.tf, p.length FROM lexical_postings p "
        "JOIN memories m ON m.tenant_id = p.tenant_id AND m.id = p.memory_id"
    )
    assert _rows(pg_url, copied, postings) == _rows(pg_url, added, postings)
    assert len(_rows(pg_url, copied, postings)) > MEMORIES
    cache = "SELECT tenant_id, model, content_hash, embedding::text FROM embedding_cache"
    assert _rows(pg_url, copied, cache) == _rows(pg_url, added, cache)
    for memory_id, version, chash, etag in _rows(
        pg_url, copied, "SELECT id, version, content_hash, etag FROM memories"
    ):
        assert etag == _etag(memory_id, version, chash, {})

    # the indexes dropped for the load are back, under the migrations' names and definitions
    indexes = (
        "SELECT tablename, indexname, replace(indexdef, current_schema() || '.', '') FROM pg_indexes "
        "WHERE schemaname = current_schema()"
    )
    copied_indexes = _rows(pg_url, copied, indexes)
    assert copied_indexes == _rows(pg_url, added, indexes)
    assert {"memories_embedding_hnsw", "memories_tsv_idx", "lexical_postings_pkey"} <= {r[1] for r in copied_indexes}

    with (
        Memory.open(pg_store_url, embedder="hashing") as on_copy,
        Memory.open(sdk_store, embedder="hashing") as on_sdk,
    ):
        for t in range(TENANTS):
            ctx = TenantContext(tenant_id=f"tenant-{t}")
            listed = on_copy.list(ctx, layer="user", identifiers=bench.IDS, limit=100)
            assert len(listed.memories) == MEMORIES // TENANTS
            got = on_copy.get(ctx, listed.memories[0].id)
            assert got is not None and got.content == listed.memories[0].content
            for q in QUERIES:
                for weight in (None, 0.5):  # dense, then hybrid (the lexical postings)
                    a = on_copy.search(ctx, q, identifiers=bench.IDS, threshold=0.0, limit=5, hybrid_weight=weight)
                    b = on_sdk.search(ctx, q, identifiers=bench.IDS, threshold=0.0, limit=5, hybrid_weight=weight)
                    assert a.results
                    assert [(r.memory.content, round(r.score, 6)) for r in a.results] == [
                        (r.memory.content, round(r.score, 6)) for r in b.results
                    ]
