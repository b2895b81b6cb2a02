"""Traversal (seed 000 "Dynamic Graph Reasoning", "SQL/PGQ Query Interface", observability)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from prometheus_client import REGISTRY

from stratamem import Memory, MemoryError, TenantContext
from stratamem.graph.traverse import BFS_SQL


@pytest.fixture()
def story(mem: Memory, acme: TenantContext, add: Callable[..., str]) -> dict[str, str]:
    return {
        "a": add(acme, "Alice works on Project A."),
        "b": add(acme, "Alice found a memory leak in the cache."),
        "c": add(acme, "The outage was caused by a memory leak."),
        "d": add(acme, "Bob prefers tea."),
    }


def test_entity_relation_traversal_reasoning_path(mem: Memory, acme: TenantContext, story: dict[str, str]) -> None:
    out = mem.graph.path(acme, "Project A", "Memory Leak")
    assert out.found and out.hops == 2
    assert [n.label for n in out.nodes] == ["Project A", "Alice", "memory leak"]
    assert out.reasoning == "Project A ←WORKS_ON— Alice —MENTIONS→ memory leak"
    assert [e.rel_type for e in out.edges] == ["WORKS_ON", "MENTIONS"]


def test_path_between_memories_and_no_path(mem: Memory, acme: TenantContext, story: dict[str, str]) -> None:
    out = mem.graph.path(acme, story["a"], story["c"])
    assert out.found and out.nodes[0].id == story["a"] and out.nodes[-1].id == story["c"]
    assert out.hops is not None and out.hops >= 3
    assert all(n.kind in ("memory", "entity") for n in out.nodes[1:-1])
    none = mem.graph.path(acme, "Project A", "Bob")
    assert none.found is False and none.reasoning is None


def test_related_ordered_by_hop_distance(mem: Memory, acme: TenantContext, story: dict[str, str]) -> None:
    out = mem.graph.related(acme, story["a"], hops=3)
    hops = [i.hops for i in out.items]
    assert hops == sorted(hops)
    found = {i.node.id: i.hops for i in out.items}
    assert found[story["b"]] == 2  # via Alice
    assert found[story["c"]] == 3  # via Alice → memory leak
    assert story["d"] not in found and story["a"] not in found
    assert all(i.memory is not None and i.node.kind == "memory" for i in out.items)
    near = mem.graph.related(acme, story["a"], hops=2)
    assert {i.node.id for i in near.items} == {story["b"]}
    with_entities = mem.graph.related(acme, "Alice", hops=1, include_entities=True)
    assert {i.node.label for i in with_entities.items if i.node.kind == "entity"} == {"Project A", "memory leak"}


def test_neighbors(mem: Memory, acme: TenantContext, story: dict[str, str]) -> None:
    out = mem.graph.neighbors(acme, "Alice")
    rels = {(n.node.label, n.rel_type, n.direction) for n in out}
    assert ("Project A", "WORKS_ON", "out") in rels and ("memory leak", "MENTIONS", "out") in rels
    assert {n.node.id for n in out if n.direction == "in"} == {story["a"], story["b"]}
    only = mem.graph.neighbors(acme, "Alice", rel_type="works_on", direction="out")
    assert [n.node.label for n in only] == ["Project A"]


def test_errors_and_tenant_isolation(
    mem: Memory, acme: TenantContext, globex: TenantContext, story: dict[str, str]
) -> None:
    with pytest.raises(MemoryError) as err:
        mem.graph.related(acme, story["a"], hops=0)
    assert err.value.code.value == "INVALID_PARAMS"
    with pytest.raises(MemoryError) as err:
        mem.graph.related(acme, "no such thing")
    assert err.value.code.value == "MEMORY_NOT_FOUND"
    for ref in (story["a"], "Alice"):  # another tenant's id or entity behaves like a missing one
        with pytest.raises(MemoryError) as err:
            mem.graph.related(globex, ref)
        assert err.value.code.value == "MEMORY_NOT_FOUND"
    with pytest.raises(MemoryError) as err:
        mem.graph.related(None, "Alice")  # type: ignore[arg-type]
    assert err.value.code.value == "MISSING_TENANT_CONTEXT"


def test_cache_is_invalidated_by_writes(
    mem: Memory, acme: TenantContext, story: dict[str, str], add: Callable[..., str]
) -> None:
    first = mem.graph.related(acme, "Alice", hops=1)
    assert not first.cached
    # a result computed while a write is in flight (a background append of the writes above, under
    # load) is not stored; the next one computed without one is, and served from then on
    for _ in range(5):
        again = mem.graph.related(acme, "Alice", hops=1)
        if again.cached:
            break
    assert again.cached and again.items == first.items
    new = add(acme, "Alice fixed the login bug.")
    after = mem.graph.related(acme, "Alice", hops=1)
    assert not after.cached and new in {i.node.id for i in after.items}


def test_recursive_cte_uses_key_and_tenant_parameter() -> None:
    assert "USING KEY (node)" in BFS_SQL and "recurring.bfs" in BFS_SQL
    assert BFS_SQL.count("tenant_id = $tenant") == 4


def test_metrics_exported(mem: Memory, acme: TenantContext, story: dict[str, str]) -> None:
    before = REGISTRY.get_sample_value("graph_query_duration_seconds_count", {"query_type": "shortest_path"}) or 0
    mem.graph.path(acme, "Alice", "outage")
    after = REGISTRY.get_sample_value("graph_query_duration_seconds_count", {"query_type": "shortest_path"})
    assert after == before + 1
    for name in ("graph_query_result_count_count", "graph_traversal_depth_count"):
        assert (REGISTRY.get_sample_value(name, {"query_type": "shortest_path"}) or 0) >= 1
    ratio = REGISTRY.get_sample_value("graph_cache_hit_ratio")
    assert ratio is not None and 0.0 <= ratio <= 1.0


def test_health_and_ready(mem: Memory) -> None:
    health = mem.graph.health()
    assert health.status == "healthy" and "graph" in health.components
    assert mem.graph.ready() is True


def test_sql_and_in_memory_bfs_agree(
    mem: Memory, acme: TenantContext, story: dict[str, str], add: Callable[..., str]
) -> None:
    add(acme, "Bob Smith joined Acme Corp. Alice manages Bob Smith.")
    add(acme, "Acme Corp uses Redis. The outage was caused by Redis.")
    queries = mem.graph.queries  # type: ignore[union-attr]
    provider = mem.engine.provider
    with provider.graph_read() as cur:  # type: ignore[attr-defined]
        nodes = [
            r[0]
            for r in cur.execute(
                "SELECT node_id FROM memory_nodes WHERE tenant_id = 'acme' UNION ALL "
                "SELECT entity_id FROM entities WHERE tenant_id = 'acme'"
            ).fetchall()
        ]
        for start in nodes:
            for hops in (1, 2, 3, 5):
                sql = queries._bfs_sql(cur, "acme", [start], hops, None)
                memo = queries._bfs(cur, "acme", [start], hops, None)
                assert list(sql) == list(memo)  # same nodes, same order (distance, id)
                assert {k: v[:2] for k, v in sql.items()} == {k: v[:2] for k, v in memo.items()}
            target = nodes[-1]
            sql = queries._bfs_sql(cur, "acme", [start], 6, target)
            memo = queries._bfs(cur, "acme", [start], 6, target)
            assert (target in sql) == (target in memo)
            if target in sql:
                assert sql[target][0] == memo[target][0]
    queries.adjacency_cache = False
    try:
        assert mem.graph.path(acme, "Project A", "Memory Leak").reasoning == (
            "Project A ←WORKS_ON— Alice —MENTIONS→ memory leak"
        )
    finally:
        queries.adjacency_cache = True


def test_row_changes_without_graph_writes_are_seen(mem: Memory, acme: TenantContext, story: dict[str, str]) -> None:
    """Status, expiry and access counts change memory rows without touching the graph: neither the
    result cache nor the snapshot's cached rows may serve the old row."""
    provider = mem.engine.provider
    first = mem.graph.related(acme, story["a"], hops=3)
    assert story["b"] in {i.node.id for i in first.items}
    provider.set_status("acme", [story["b"]], "archived", mem.engine.now())
    archived = mem.graph.related(acme, story["a"], hops=3)
    assert not archived.cached and story["b"] not in {i.node.id for i in archived.items}
    provider.set_status("acme", [story["b"]], "active", mem.engine.now())
    provider.record_access("acme", {story["b"]: 0.9}, mem.engine.now())
    back = {i.node.id: i.memory for i in mem.graph.related(acme, story["a"], hops=3).items}
    assert back[story["b"]] is not None and back[story["b"]].access_count == 1
    provider.set_expiry("acme", [story["c"]], mem.engine.now() - timedelta(seconds=1))
    assert story["c"] not in {i.node.id for i in mem.graph.related(acme, story["a"], hops=3).items}


def test_invalidate_forgets_snapshot_and_rows(mem: Memory, acme: TenantContext, story: dict[str, str]) -> None:
    """A bulk replace behind the engine's back (what a restore does) + ``Generations.invalidate``."""
    queries = mem.graph.queries  # type: ignore[union-attr]
    assert story["b"] in {i.node.id for i in mem.graph.related(acme, story["a"], hops=3).items}
    with mem.engine.provider.graph_transaction() as cur:  # type: ignore[attr-defined]
        cur.execute("UPDATE memories SET status = 'archived' WHERE tenant_id = 'acme' AND id = ?", [story["b"]])
    queries.generations.invalidate("acme")
    assert story["b"] not in {i.node.id for i in mem.graph.related(acme, story["a"], hops=3).items}
