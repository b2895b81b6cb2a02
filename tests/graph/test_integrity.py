"""Seed 000 "Cascading Graph Deletion" and "Application-Level Referential Integrity"."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from stratamem import Memory, MemoryError, TenantContext

from .conftest import graph_counts, rows

ZERO = {"memory_nodes": 0, "memory_edges": 0, "entities": 0, "entity_edges": 0}


def test_hard_delete_cascades(mem: Memory, acme: TenantContext, add: Callable[..., str]) -> None:
    a = add(acme, "Alice works on Project A.")
    b = add(acme, "Alice found a memory leak.")
    mem.delete(acme, a)
    names = sorted(r[0] for r in rows(mem, "SELECT name FROM entities WHERE tenant_id = ?", ["acme"]))
    assert names == ["Alice", "memory leak"]  # Project A lost its only mention; Alice is still mentioned by b
    assert rows(mem, "SELECT count(*) FROM entity_edges WHERE tenant_id = ? AND memory_id = ?", ["acme", a]) == [(0,)]
    assert rows(mem, "SELECT count(*) FROM memory_edges WHERE tenant_id = ? AND source_id = ?", ["acme", a]) == [(0,)]
    mem.delete(acme, b)
    assert graph_counts(mem, "acme") == ZERO


def test_bulk_delete_cleans_graph_and_rolls_back_as_a_whole(
    mem: Memory, acme: TenantContext, add: Callable[..., str]
) -> None:
    ids = [add(acme, f"Person{i} works on Project Alpha.") for i in range(4)]

    class FailingHook:
        def after_add(self, tx: Any, entries: Sequence[Any]) -> None: ...

        def after_update(self, tx: Any, entry: Any, previous: Any) -> None: ...

        def after_delete(self, tx: Any, tenant_id: str, deleted: Sequence[str]) -> None:
            raise RuntimeError("late failure in the batch")

    hook = FailingHook()
    mem.engine.provider.write_hooks.append(hook)
    before = graph_counts(mem, "acme")
    with pytest.raises(MemoryError):
        mem.bulk_delete(acme, ids)
    mem.engine.provider.write_hooks.remove(hook)
    assert graph_counts(mem, "acme") == before
    assert rows(mem, "SELECT count(*) FROM memories WHERE tenant_id = ?", ["acme"]) == [(4,)]
    assert mem.bulk_delete(acme, ids).deleted == 4
    assert graph_counts(mem, "acme") == ZERO


def _soft_delete(mem: Memory, ctx: TenantContext, mid: str, at: datetime) -> None:
    provider = mem.engine.provider
    cur = provider.get(ctx.tenant_id, mid, datetime.now(UTC))
    assert cur is not None
    provider.update(cur.model_copy(update={"status": "deleted", "deleted_at": at, "version": cur.version + 1}), cur)


def test_soft_delete_marks_then_purge_removes(mem: Memory, acme: TenantContext, add: Callable[..., str]) -> None:
    a = add(acme, "Alice works on Project A.")
    b = add(acme, "Carol manages Project B.")
    at = datetime.now(UTC) - timedelta(days=10)
    _soft_delete(mem, acme, a, at)
    marked = rows(mem, "SELECT count(*) FROM memory_nodes WHERE tenant_id = ? AND deleted_at IS NOT NULL", ["acme"])
    assert marked == [(1,)]
    ents = rows(mem, "SELECT name FROM entities WHERE tenant_id = ? AND deleted_at IS NOT NULL ORDER BY 1", ["acme"])
    assert ents == [("Alice",), ("Project A",)]
    with pytest.raises(MemoryError):  # soft-deleted data is invisible to traversal
        mem.graph.related(acme, "Alice")
    assert mem.graph.related(acme, b, hops=3).items == []
    assert mem.graph.purge(retention=timedelta(days=30)) == 0  # inside retention: kept
    removed = mem.graph.purge(retention=timedelta(days=7))
    assert removed == 1 + 2 + 2 + 1  # node, 2 mention edges, 2 entities, 1 entity edge
    assert graph_counts(mem, "acme")["memory_nodes"] == 1


def test_restore_after_soft_delete_reindexes(mem: Memory, acme: TenantContext, add: Callable[..., str]) -> None:
    a = add(acme, "Alice works on Project A.")
    _soft_delete(mem, acme, a, datetime.now(UTC))
    provider = mem.engine.provider
    cur = provider.get("acme", a, datetime.now(UTC), statuses=("deleted",))
    assert cur is not None
    provider.update(cur.model_copy(update={"status": "active", "deleted_at": None, "version": cur.version + 1}), cur)
    assert mem.graph.path(acme, "Alice", "Project A").found


def test_edge_validation_names_the_missing_end(
    mem: Memory, acme: TenantContext, globex: TenantContext, add: Callable[..., str]
) -> None:
    a = add(acme, "Alice works on Project A.")
    b = add(acme, "Carol manages Project B.")
    with pytest.raises(MemoryError) as err:
        mem.graph.link(acme, "missing-id", b)
    assert err.value.code.value == "INVALID_PARAMS" and err.value.details == {"missing": "source", "id": "missing-id"}
    with pytest.raises(MemoryError) as err:
        mem.graph.link(acme, a, "missing-target")
    assert err.value.details["missing"] == "target"
    with pytest.raises(MemoryError) as err:  # another tenant's memory is missing, too
        mem.graph.link(globex, a, b)
    assert err.value.details["missing"] == "source"
    mem.graph.link(acme, a, b, "relates_to")
    assert mem.graph.path(acme, a, b).hops == 1
    alice = mem.graph.entity_id(acme, "Alice", "PERSON")
    carol = mem.graph.entity_id(acme, "Carol", "PERSON")
    with pytest.raises(MemoryError) as err:
        mem.graph.relate(acme, alice, "ent_nope", "KNOWS", memory_id=a)
    assert err.value.details == {"missing": "target", "id": "ent_nope"}
    mem.graph.relate(acme, alice, carol, "KNOWS", memory_id=a)
    assert mem.graph.path(acme, "Alice", "Carol").reasoning == "Alice —KNOWS→ Carol"


def test_integrity_scan_reports_to_audit_and_repairs(mem: Memory, acme: TenantContext, add: Callable[..., str]) -> None:
    a = add(acme, "Alice works on Project A.")
    add(acme, "Carol manages Project B.")
    assert mem.graph.check().ok
    # Simulate damage behind the application's back (e.g. an old build without cascades).
    with mem.engine.provider.graph_transaction() as tx:  # type: ignore[attr-defined]
        tx.execute("DELETE FROM memories WHERE tenant_id = ? AND id = ?", ["acme", a])
        tx.execute("DELETE FROM entities WHERE tenant_id = ? AND name = 'Carol'", ["acme"])
    report = mem.graph.check()
    assert not report.ok
    (acme_report,) = report.tenants
    assert acme_report.orphans["nodes_missing_memory"] == 1
    assert acme_report.orphans["memory_edges_missing_target"] == 1
    assert acme_report.orphans["entity_edges_missing_entity"] == 1
    audit = mem.engine.audit.recent(tenant_id="acme", action="graph.integrity_scan")
    assert audit and audit[-1].outcome == "error" and audit[-1].details["orphans"] == acme_report.orphans
    fixed = mem.graph.check(repair=True)
    assert fixed.tenants[0].repaired > 0
    assert mem.graph.check().ok
    assert rows(mem, "SELECT count(*) FROM memory_nodes WHERE tenant_id = ? AND node_id = ?", ["acme", a]) == [(0,)]
