"""Cascades of a deleted memory: exactly the rows of the given ids, on both graph stores.

``GraphStore.soft_delete`` and ``hard_delete`` address the rows of the ids they are given (and the
entities only those memories mentioned), with one id or with more than ``INLINE_IDS`` of them (bound
differently on DuckDB), and leave every other memory's and tenant's rows as they were. Relations of
an entity deleted in an earlier call are not touched again by a later, unrelated call.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import pytest

from stratamem import Memory, TenantContext
from stratamem.graph.store import INLINE_IDS, now_naive

from .conftest import rows

GraphRows = dict[str, list[tuple[Any, ...]]]


def _snapshot(mem: Memory, tenant_id: str) -> GraphRows:
    """Every graph row of the tenant with its key and ``deleted_at``."""
    keys = {"memory_nodes": "node_id", "memory_edges": "edge_id", "entities": "entity_id", "entity_edges": "edge_id"}
    return {
        table: sorted(rows(mem, f"SELECT {key}, deleted_at FROM {table} WHERE tenant_id = ?", [tenant_id]))
        for table, key in keys.items()
    }


def _store(mem: Memory) -> Any:
    return mem.graph.store  # type: ignore[union-attr]


def _soft_delete(mem: Memory, tenant_id: str, ids: list[str], at: datetime) -> None:
    with mem.engine.provider.graph_transaction() as tx:  # type: ignore[attr-defined]
        _store(mem).soft_delete(tx, tenant_id, ids, at)


def _changed(before: GraphRows, after: GraphRows) -> dict[str, set[Any]]:
    """Per table, the keys whose row was removed or whose ``deleted_at`` changed."""
    out: dict[str, set[Any]] = {}
    for table, old in before.items():
        new = dict(after[table])
        out[table] = {key for key, deleted_at in old if key not in new or new[key] != deleted_at}
    return out


def test_soft_delete_marks_only_the_rows_of_the_ids(
    mem: Memory, acme: TenantContext, globex: TenantContext, add: Callable[..., str]
) -> None:
    gone = add(acme, "Alice works on Project Phoenix.")
    kept = add(acme, "Alice reviewed the Kafka rollout.")  # shares Alice with the deleted memory
    mem.graph.link(acme, kept, gone, "relates_to")  # an edge of another memory pointing at it
    add(globex, "Alice works on Project Phoenix.")  # the same names in another tenant
    acme_before, globex_before = _snapshot(mem, "acme"), _snapshot(mem, "globex")
    at = now_naive().replace(microsecond=0) - timedelta(days=3)
    _soft_delete(mem, "acme", [gone], at)

    assert _snapshot(mem, "globex") == globex_before
    after = _snapshot(mem, "acme")
    changed = _changed(acme_before, after)
    assert changed["memory_nodes"] == {gone}
    edges = rows(
        mem,
        "SELECT edge_id FROM memory_edges WHERE tenant_id = ? AND (source_id = ? OR target_id = ?)",
        ["acme", gone, gone],
    )
    assert changed["memory_edges"] == {r[0] for r in edges} and len(edges) == 3  # 2 mentions + the link
    names = dict(rows(mem, "SELECT entity_id, name FROM entities WHERE tenant_id = ?", ["acme"]))
    assert {names[e] for e in changed["entities"]} == {"Project Phoenix"}  # Alice is still mentioned
    assert len(changed["entity_edges"]) == 1  # Alice -WORKS_ON-> Project Phoenix
    for table, keys in changed.items():  # every changed row is marked with this call's time, none removed
        marked = dict(after[table])
        assert all(marked[key] == at for key in keys), table


def test_entity_deleted_earlier_keeps_its_relations_untouched(
    mem: Memory, acme: TenantContext, add: Callable[..., str]
) -> None:
    first = add(acme, "Carol manages Project Orion.")
    other = add(acme, "Dave fixed the billing service.")
    earlier = now_naive().replace(microsecond=0) - timedelta(days=5)
    _soft_delete(mem, "acme", [first], earlier)
    carol, orion = (
        rows(mem, "SELECT entity_id FROM entities WHERE tenant_id = ? AND name = ?", ["acme", name])[0][0]
        for name in ("Carol", "Project Orion")
    )
    marked = rows(mem, "SELECT deleted_at FROM entities WHERE tenant_id = ? AND entity_id = ?", ["acme", carol])
    assert marked == [(earlier,)]
    # A relation between the two entities deleted in that call that is still live (as a writer that
    # raced the deletion, or an imported graph, can leave one): later calls about other memories do
    # not touch it, nor the relations marked in the earlier call.
    with mem.engine.provider.graph_transaction() as tx:  # type: ignore[attr-defined]
        tx.execute(
            "INSERT INTO entity_edges VALUES (?, ?, ?, ?, ?, ?, ?, NULL)",
            ["acme", "edg_raced", carol, orion, "KNOWS", first, now_naive()],
        )
    before = _snapshot(mem, "acme")
    _soft_delete(mem, "acme", [other], now_naive())
    after = dict(_snapshot(mem, "acme")["entity_edges"])
    assert after["edg_raced"] is None
    earlier_edges = [key for key, deleted_at in before["entity_edges"] if deleted_at == earlier]
    assert earlier_edges and all(after[key] == earlier for key in earlier_edges)
    entities = dict(_snapshot(mem, "acme")["entities"])
    assert entities[carol] == entities[orion] == earlier


@pytest.mark.parametrize("count", [1, INLINE_IDS + 6])
def test_many_ids_soft_and_hard(mem: Memory, acme: TenantContext, add: Callable[..., str], count: int) -> None:
    ids = [add(acme, f"Erin{i} works on Project Vega{i}.") for i in range(count)]
    kept = add(acme, "Frank works on Project Vega0.")
    _soft_delete(mem, "acme", ids, now_naive())
    live = dict(rows(mem, "SELECT name, deleted_at IS NULL FROM entities WHERE tenant_id = ?", ["acme"]))
    assert live.pop("Frank") and live.pop("Project Vega0")  # still mentioned by the kept memory
    assert set(live.values()) == {False} and len(live) == 2 * count - 1
    nodes = rows(mem, "SELECT node_id FROM memory_nodes WHERE tenant_id = ? AND deleted_at IS NULL", ["acme"])
    assert nodes == [(kept,)]
    with mem.engine.provider.graph_transaction() as tx:  # type: ignore[attr-defined]
        _store(mem).hard_delete(tx, "acme", ids)
    left = rows(mem, "SELECT name FROM entities WHERE tenant_id = ? ORDER BY 1", ["acme"])
    assert left == [("Frank",), ("Project Vega0",)]
    assert rows(mem, "SELECT count(*) FROM memory_edges WHERE tenant_id = ?", ["acme"]) == [(2,)]
    assert rows(mem, "SELECT count(*) FROM entity_edges WHERE tenant_id = ?", ["acme"]) == [(1,)]
    assert rows(mem, "SELECT node_id FROM memory_nodes WHERE tenant_id = ?", ["acme"]) == [(kept,)]


def test_rows_written_in_the_same_transaction_are_marked(
    mem: Memory, acme: TenantContext, add: Callable[..., str]
) -> None:
    """DuckDB gives rows appended by the open transaction row ids of their own: they are found too."""
    old = add(acme, "Grace manages Project Lyra.")
    at = now_naive()
    store = _store(mem)
    entry = mem.get(acme, old)
    assert entry is not None
    with mem.engine.provider.graph_transaction() as tx:  # type: ignore[attr-defined]
        store.hard_delete(tx, "acme", [old])
        store.index_entries(tx, [entry])  # the same graph again, appended in this transaction
        store.soft_delete(tx, "acme", [old], at)
    snap = _snapshot(mem, "acme")
    assert {deleted_at for table in snap.values() for _, deleted_at in table} == {at}
    assert [len(snap[t]) for t in ("memory_nodes", "memory_edges", "entities", "entity_edges")] == [1, 2, 2, 1]
