"""The graph contract where the two stores differ underneath: validity follows supersession,
``forget_user`` cascades, and on PostgreSQL the schema, the tenant-bound SQL and cache coherence
between servers (a second Memory with its own in-process counters stands for another server)."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from stratamem import Memory, TenantContext
from stratamem.providers.graph_sql import translate

from .conftest import graph_counts, rows

U = {"user_id": "u1"}


def test_edges_follow_supersession(mem: Memory, acme: TenantContext) -> None:
    old = mem.add(acme, "Dana lives in Hamburg", layer="user", identifiers=U).memory
    mem.add(acme, "Dana works with Alice", layer="user", identifiers=U)
    assert old.id in {i.node.id for i in mem.graph.related(acme, "Dana", hops=1).items}
    new = mem.add(acme, "Dana lives in Berlin", layer="user", identifiers=U, supersedes=[old.id])
    assert new.superseded == [old.id]
    reached = {i.node.id for i in mem.graph.related(acme, "Dana", hops=1).items}
    assert old.id not in reached and new.memory.id in reached
    # the superseded memory's graph rows are marked, not removed (history), and purged later
    marked = rows(
        mem,
        "SELECT count(*) FROM memory_nodes WHERE tenant_id = ? AND node_id = ? AND deleted_at IS NOT NULL",
        ["acme", old.id],
    )
    assert marked[0][0] == 1
    assert mem.graph.check().ok


def test_forget_user_removes_graph_rows(mem: Memory, acme: TenantContext) -> None:
    mine = [
        mem.add(acme, text, layer="user", identifiers={"user_id": "alice"}).memory.id
        for text in ("Alice works on Project Zephyr", "Alice met Quentin in Lisbon")
    ]
    mem.add(acme, "Bob works on Project Zephyr", layer="user", identifiers={"user_id": "bob"})
    report = mem.forget_user(acme, "alice")
    assert report.memories == 2 and report.graph_memory_nodes == 2 and report.graph_edges >= 2
    for table, column in (("memory_nodes", "node_id"), ("memory_edges", "memory_id"), ("entity_edges", "memory_id")):
        for mid in mine:
            assert (
                rows(mem, f"SELECT count(*) FROM {table} WHERE tenant_id = ? AND {column} = ?", ["acme", mid])[0][0]
                == 0
            )
    names = {r[0] for r in rows(mem, "SELECT name FROM entities WHERE tenant_id = ?", ["acme"])}
    assert "Quentin" not in names and "Lisbon" not in names and "Project Zephyr" in names
    assert mem.graph.check().ok and graph_counts(mem, "acme")["memory_nodes"] == 1


@pytest.fixture()
def pg(store_kind: str) -> None:
    if store_kind != "postgres":
        pytest.skip("PostgreSQL only")


@pytest.mark.usefixtures("pg")
def test_postgres_schema(mem: Memory) -> None:
    cols = rows(
        mem,
        "SELECT table_name, column_name, collation_name FROM information_schema.columns "
        "WHERE table_schema = current_schema() AND table_name IN "
        "('memory_nodes', 'entities', 'memory_edges', 'entity_edges', 'graph_settings')",
        [],
    )
    tables = {r[0] for r in cols}
    assert tables == {"memory_nodes", "entities", "memory_edges", "entity_edges", "graph_settings"}
    assert all("tenant_id" in {c for t2, c, _ in cols if t2 == t} for t in tables)
    assert all(coll == "C" for _, c, coll in cols if c.endswith("_id"))  # ids order bytewise, as on DuckDB
    indexes = {
        r[0]: r[1]
        for r in rows(mem, "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema()", [])
    }
    assert "(tenant_id, source_id)" in indexes["idx_edges_tenant_source"]
    assert "(tenant_id, target_id)" in indexes["idx_edges_tenant_target"]
    assert 5 in {r[0] for r in rows(mem, "SELECT version FROM schema_version", [])}
    health = mem.graph.health()  # type: ignore[union-attr]
    assert health.status == "healthy" and "postgres" in str(health.components["graph"].message)
    assert mem.graph.ready() and mem.capabilities().graph  # type: ignore[union-attr]


@pytest.mark.usefixtures("pg")
def test_a_write_on_another_server_reaches_this_servers_cache(
    open_mem: Callable[..., Memory], mem: Memory, acme: TenantContext
) -> None:
    conninfo: str = mem.engine.provider.conninfo  # type: ignore[attr-defined]
    schema = mem.engine.provider.schema  # type: ignore[attr-defined]
    other = open_mem(f"{conninfo}{'&' if '?' in conninfo else '?'}application_name=server-b&schema={schema}")
    assert other.engine.provider.database_key() != mem.engine.provider.database_key()  # type: ignore[attr-defined]
    a = mem.add(acme, "Alice works on Project A", layer="user", identifiers=U).memory.id
    assert [i.node.id for i in mem.graph.related(acme, "Alice", hops=1).items] == [a]
    assert mem.graph.related(acme, "Alice", hops=1).cached  # served from this server's cache now
    b = other.add(acme, "Alice fixed the memory leak", layer="user", identifiers=U).memory.id
    assert {i.node.id for i in mem.graph.related(acme, "Alice", hops=1).items} == {a, b}
    other.delete(acme, b)
    assert [i.node.id for i in mem.graph.related(acme, "Alice", hops=1).items] == [a]
    path = mem.graph.path(acme, "Alice", "Project A")
    assert path.found and not path.cached


def test_every_graph_statement_binds_the_tenant() -> None:
    """The dialect rewrite keeps values out of the SQL text: only placeholders remain."""
    from stratamem.graph import integrity, traverse

    for sql in (
        traverse.BFS_SQL_POSTGRES,
        traverse.NEIGHBORS_SQL,
        traverse.NODES_SQL,
        traverse.ADJACENCY_SQL,
        traverse.ALL_NODES_SQL,
        *integrity._CHECKS.values(),
    ):
        text = translate(sql)
        assert "tenant_id = %(tenant)s" in text or "tenant_id = %s" in text
        assert not re.search(r"\$[a-z]", text) and "?" not in text
