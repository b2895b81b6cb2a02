"""``memories`` hash-partitioned by tenant on the real PostgreSQL: the store works unchanged
(search, get, conditional update, delete, graph trigger), rows and indexes survive, and a
single-tenant query reads one partition."""

from __future__ import annotations

import re
from typing import Any

import psycopg
import pytest
from psycopg import sql

from stratamem import Memory, TenantContext
from stratamem.errors import ErrorCode, MemoryError
from stratamem.providers.postgres_partition import main, partition_memories

IDS = {"user_id": "u1"}


def _search(url: str) -> dict[str, list[tuple[str, float]]]:
    out: dict[str, list[tuple[str, float]]] = {}
    with Memory.open(url, embedder="hashing") as mem:
        for tenant in ("acme", "globex", "initech"):
            res = mem.search(TenantContext(tenant_id=tenant), "coffee in the morning", identifiers=IDS, threshold=0)
            out[tenant] = [(r.memory.id, round(r.score, 6)) for r in res.results]
    return out


def _plan(pg_url: str, schema: str, query: str, params: list[Any]) -> str:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(sql.SQL("SET search_path = {}, public").format(sql.Identifier(schema)))
        return "\n".join(r[0] for r in conn.execute("EXPLAIN " + query, params).fetchall())


def test_partitioned_store_works_unchanged(pg_url: str, pg_schema: str, pg_store_url: str) -> None:
    with Memory.open(pg_store_url, embedder="hashing") as mem:
        for tenant in ("acme", "globex", "initech"):
            ctx = TenantContext(tenant_id=tenant)
            mem.bulk_add(
                ctx,
                [
                    {"content": f"{tenant} note {i}: coffee, tea or juice {i % 7}", "layer": "user", "identifiers": IDS}
                    for i in range(20)
                ],
            )
    before = _search(pg_store_url)

    assert partition_memories(pg_store_url, partitions=4) == 60
    assert partition_memories(pg_store_url, partitions=4) == 0  # already partitioned: left as it is

    with psycopg.connect(pg_url, autocommit=True) as conn:
        parts = conn.execute(
            "SELECT count(*) FROM pg_inherits WHERE inhparent = %s::regclass", [f"{pg_schema}.memories"]
        ).fetchone()
        assert parts == (4,)
        names = {
            r[0]
            for r in conn.execute(
                "SELECT indexname FROM pg_indexes WHERE schemaname = %s AND tablename = 'memories'", [pg_schema]
            )
        }
        assert {"memories_pkey", "memories_scope_idx", "memories_embedding_hnsw", "memories_tsv_idx"} <= names
    assert _search(pg_store_url) == before

    plan = _plan(pg_url, pg_schema, "SELECT id FROM memories WHERE tenant_id = %s AND layer = 'user'", ["acme"])
    assert len(set(re.findall(r" on (memories_p\d+)", plan))) == 1, plan  # pruned to the tenant's partition

    with Memory.open(pg_store_url, embedder="hashing") as mem:
        ctx = TenantContext(tenant_id="acme")
        added = mem.add(ctx, content="a new note after partitioning", layer="user", identifiers=IDS).memory
        updated = mem.update(ctx, added.id, content="an updated note", if_match=added.etag).memory
        assert mem.get(ctx, added.id).content == "an updated note"
        with pytest.raises(MemoryError) as refused:  # a stale etag is refused, as before
            mem.update(ctx, added.id, content="lost", if_match=added.etag)
        assert refused.value.code == ErrorCode.CONFLICT
        assert mem.delete(ctx, added.id, if_match=updated.etag).success
        assert len(mem.list(TenantContext(tenant_id="globex")).memories) == 20


def test_command_line(pg_store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    Memory.open(pg_store_url, embedder="hashing").close()
    main([pg_store_url, "--partitions", "2"])
    assert "2 partitions (0 rows copied)" in capsys.readouterr().out


def test_migration_lock_is_per_schema(pg_url: str, pg_schema: str, pg_store_url: str) -> None:
    """Migrating or partitioning the store of one schema holds that schema's advisory lock only:
    a store in another schema of the same database opens meanwhile, the same schema's store waits."""
    import threading

    from stratamem.providers.postgres_schema import migration_lock_key

    other = f"{pg_schema}_other"
    other_url = pg_store_url.replace(f"schema={pg_schema}", f"schema={other}")
    assert migration_lock_key(pg_schema) != migration_lock_key(other)
    opened = threading.Event()

    def open_same() -> None:
        with Memory.open(pg_store_url, embedder="hashing"):
            opened.set()

    holder = psycopg.connect(pg_url, autocommit=True)
    try:
        holder.execute("SELECT pg_advisory_lock(%s)", [migration_lock_key(pg_schema)])
        with Memory.open(other_url, embedder="hashing") as mem:  # another schema: not held up
            assert mem.add(TenantContext(tenant_id="acme"), "tea at noon", layer="user", identifiers=IDS).memory.id
        waiter = threading.Thread(target=open_same, daemon=True)
        waiter.start()
        assert not opened.wait(2.0), "the store opened while its schema's migration lock was held"
        holder.execute("SELECT pg_advisory_unlock(%s)", [migration_lock_key(pg_schema)])
        waiter.join(60)
        assert opened.is_set()
    finally:
        holder.close()
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(other)))
