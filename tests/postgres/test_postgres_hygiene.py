"""PostgreSQL specifics of the hygiene feature: migration 3 (tenant policies, memory_events, the
per-user quota index) and the quota under concurrent writers. The behaviour shared with the other
providers is tests/conformance/test_hygiene_contract.py."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone

import pytest
from psycopg import sql

from stratamem import Memory, MemoryError, TenantContext
from stratamem.providers import postgres_schema

from .conftest import admin

HYGIENE_TABLES = ("tenant_policies", "memory_events")


def _tenant() -> TenantContext:
    return TenantContext(tenant_id=f"hyg-{uuid.uuid4().hex[:12]}", principal="u1")


def test_hygiene_migration_creates_tenant_leading_tables(pg_mem: Memory, pg_url: str, pg_schema: str) -> None:
    assert 3 in {m.version for m in postgres_schema.all_migrations()}
    with admin(pg_url) as conn:
        versions = dict(
            conn.execute(
                sql.SQL("SELECT version, description FROM {}.schema_version").format(sql.Identifier(pg_schema))
            ).fetchall()
        )
        columns = conn.execute(
            "SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns "
            "WHERE table_schema = %s AND table_name = ANY(%s) ORDER BY table_name, ordinal_position",
            [pg_schema, list(HYGIENE_TABLES)],
        ).fetchall()
        indexes = dict(
            conn.execute(
                "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = %s AND "
                "(tablename = ANY(%s) OR indexname = 'memories_user_idx')",
                [pg_schema, list(HYGIENE_TABLES)],
            ).fetchall()
        )
    assert versions[3] == "hygiene: tenant policies, memory events"
    by_table: dict[str, list[tuple[str, str, str]]] = {}
    for table, column, dtype, nullable in columns:
        by_table.setdefault(table, []).append((column, dtype, nullable))
    assert by_table["tenant_policies"] == [
        ("tenant_id", "text", "NO"),
        ("policy", "json", "NO"),
        ("updated_at", "timestamp with time zone", "NO"),
    ]
    assert [c[0] for c in by_table["memory_events"]] == [
        "tenant_id",
        "id",
        "ts",
        "event",
        "memory_id",
        "layer",
        "principal",
        "code",
        "outcome",
        "details",
    ]
    assert dict((c[0], c[1]) for c in by_table["memory_events"])["ts"] == "timestamp with time zone"
    assert set(indexes) == {
        "tenant_policies_pkey",
        "memory_events_pkey",
        "memory_events_ts_idx",
        "memories_user_idx",
        "memory_events_memory_idx",
    }  # the last one: migration 9
    for name, ddl in indexes.items():
        assert "USING btree (tenant_id" in ddl, (name, ddl)
    assert "(tenant_id, id)" in indexes["memory_events_pkey"]
    assert "(tenant_id, ts)" in indexes["memory_events_ts_idx"]
    assert "user_id" in indexes["memories_user_idx"]


def test_existing_store_gets_the_hygiene_migration_on_open(
    open_pg: Callable[..., Memory], pg_url: str, pg_schema: str
) -> None:
    """A store created before migration 3 existed (tables missing, version not recorded) is upgraded."""
    t = _tenant()
    old = open_pg()
    kept = old.add(t, "User likes tea", layer="user", identifiers={"user_id": "u1"}).memory
    old.close()
    with admin(pg_url) as conn:
        for table in HYGIENE_TABLES:
            conn.execute(sql.SQL("DROP TABLE {}.{}").format(sql.Identifier(pg_schema), sql.Identifier(table)))
        conn.execute(sql.SQL("DROP INDEX {}.memories_user_idx").format(sql.Identifier(pg_schema)))
        conn.execute(sql.SQL("DELETE FROM {}.schema_version WHERE version = 3").format(sql.Identifier(pg_schema)))
    mem = open_pg()
    assert mem.get(t, kept.id) is not None
    mem.policies.set(t, max_memories=1)
    with pytest.raises(MemoryError) as err:
        mem.add(t, "User likes coffee", layer="user", identifiers={"user_id": "u1"})
    assert err.value.code.value == "QUOTA_EXCEEDED"
    # the get above is an access (logged into the recreated table), the quota refusal a reject
    assert mem.engine.provider.count_memory_events(t.tenant_id) == {
        "access": 1,
        "access.ok": 1,
        "reject": 1,
        "reject.denied": 1,
    }
    with admin(pg_url) as conn:
        row = conn.execute(
            sql.SQL("SELECT count(*) FROM {}.schema_version WHERE version = 3").format(sql.Identifier(pg_schema))
        ).fetchone()
    assert row is not None and row[0] == 1


def test_event_and_policy_timestamps_are_timestamptz(pg_mem: Memory, pg_url: str, pg_schema: str) -> None:
    t = _tenant()
    p = pg_mem.engine.provider
    at = datetime(2030, 1, 2, 3, 4, 5, 678000, tzinfo=timezone(timedelta(hours=-5)))
    p.append_memory_events(
        [
            {
                "tenant_id": t.tenant_id,
                "id": "e1",
                "ts": at,
                "event": "search",
                "outcome": "hit",
                "details": {"results": 2},
            }
        ]
    )
    p.put_tenant_policy(t.tenant_id, {"pii_mode": "redact"}, at)
    with admin(pg_url) as conn:
        ev = conn.execute(
            sql.SQL("SELECT ts, details::text, memory_id FROM {}.memory_events WHERE tenant_id = %s").format(
                sql.Identifier(pg_schema)
            ),
            [t.tenant_id],
        ).fetchone()
        pol = conn.execute(
            sql.SQL("SELECT updated_at FROM {}.tenant_policies WHERE tenant_id = %s").format(sql.Identifier(pg_schema)),
            [t.tenant_id],
        ).fetchone()
    assert ev is not None and ev[0] == at and ev[0].astimezone(UTC).hour == 8
    assert ev[1] == '{"results":2}' and ev[2] is None
    assert pol is not None and pol[0] == at
    assert p.count_memory_events(t.tenant_id, since=at) == {"search": 1, "search.hit": 1}
    assert p.count_memory_events(t.tenant_id, since=at + timedelta(microseconds=1)) == {}


def test_quota_holds_under_concurrent_writers(open_pg: Callable[..., Memory]) -> None:
    """Eight threads (each with its own store and pool) add for one user with max_memories=3:
    the advisory lock taken by the quota count lets exactly three commit."""
    t = _tenant()
    stores = [open_pg() for _ in range(8)]
    stores[0].policies.set(t, max_memories=3)
    barrier = threading.Barrier(len(stores))
    outcomes: list[str] = []
    lock = threading.Lock()

    def writer(i: int) -> None:
        barrier.wait()
        try:
            stores[i].add(t, f"User fact number {i}", layer="user", identifiers={"user_id": "u1"})
            result = "ok"
        except MemoryError as exc:
            result = exc.code.value
        with lock:
            outcomes.append(result)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(len(stores))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert sorted(outcomes) == ["QUOTA_EXCEEDED"] * 5 + ["ok"] * 3
    assert stores[0].list(t, "user", identifiers={"user_id": "u1"}).total_count == 3


def test_memory_events_of_one_memory_use_the_migration_9_index(pg_mem: Memory, pg_url: str, pg_schema: str) -> None:
    assert 9 in {m.version for m in postgres_schema.all_migrations()}
    with admin(pg_url) as conn:
        indexdef = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE schemaname = %s AND indexname = 'memory_events_memory_idx'",
            [pg_schema],
        ).fetchone()
    assert indexdef is not None and "(tenant_id, memory_id, ts)" in indexdef[0]
    assert "memory_id IS NOT NULL" in indexdef[0]
    t = _tenant()
    added = pg_mem.add(t, "the user prefers tea", layer="user", identifiers={"user_id": "u1"})
    assert [e.event for e in pg_mem.memory_events(t, added.memory.id).events] == ["create"]
