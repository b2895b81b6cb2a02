"""Write path: one transaction for memory + graph, de-duplication, per-tenant switch, LLM hook."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from stratamem import Memory, MemoryError, TenantContext
from stratamem.graph.extract import ExtractedEntity, ExtractionResult

from .conftest import graph_counts, rows


def test_add_writes_node_entities_and_edges(mem: Memory, acme: TenantContext, add: Callable[..., str]) -> None:
    mid = add(acme, "Alice works on Project A.")
    node = rows(mem, "SELECT node_id, memory_id, layer FROM memory_nodes WHERE tenant_id = ?", ["acme"])
    assert node == [(mid, mid, "user")]
    ents = sorted(rows(mem, "SELECT name, type FROM entities WHERE tenant_id = ?", ["acme"]))
    assert ents == [("Alice", "PERSON"), ("Project A", "PROJECT")]
    mentions = rows(mem, "SELECT source_id, rel_type FROM memory_edges WHERE tenant_id = ?", ["acme"])
    assert sorted(mentions) == [(mid, "MENTIONS"), (mid, "MENTIONS")]
    rel = rows(
        mem,
        "SELECT e1.name, x.rel_type, e2.name, x.memory_id FROM entity_edges x "
        "JOIN entities e1 ON e1.entity_id = x.source_id JOIN entities e2 ON e2.entity_id = x.target_id "
        "WHERE x.tenant_id = ?",
        ["acme"],
    )
    assert rel == [("Alice", "WORKS_ON", "Project A", mid)]


def test_entities_deduplicated_per_tenant(
    mem: Memory, acme: TenantContext, globex: TenantContext, add: Callable[..., str]
) -> None:
    add(acme, "Alice works on Project A.")
    add(acme, "alice reported a bug in project a")  # lower-case: found through the tenant dictionary
    add(globex, "Alice works on Project A.")
    acme_ents = rows(
        mem, "SELECT norm_name, count(*) FROM entities WHERE tenant_id = ? GROUP BY 1 ORDER BY 1", ["acme"]
    )
    assert ("alice", 1) in acme_ents and ("project a", 1) in acme_ents
    mentions = rows(
        mem,
        "SELECT count(DISTINCT source_id) FROM memory_edges x JOIN entities e "
        "ON e.tenant_id = x.tenant_id AND e.entity_id = x.target_id "
        "WHERE x.tenant_id = ? AND e.norm_name = 'alice'",
        ["acme"],
    )
    assert mentions == [(2,)]
    ids = rows(mem, "SELECT tenant_id, entity_id FROM entities WHERE norm_name = 'alice' ORDER BY 1", [])
    assert len(ids) == 2 and ids[0][1] != ids[1][1]  # one per tenant, never shared


def test_bulk_add_batches_and_sees_earlier_entities(mem: Memory, acme: TenantContext) -> None:
    items = [
        {"content": "Project Phoenix depends on Redis.", "layer": "user", "identifiers": {"user_id": "u1"}},
        {"content": "we benchmarked project phoenix yesterday", "layer": "user", "identifiers": {"user_id": "u1"}},
    ]
    out = mem.bulk_add(acme, items)
    second = out.results[1].memory.id
    linked = rows(
        mem,
        "SELECT e.name FROM memory_edges x JOIN entities e ON e.entity_id = x.target_id "
        "WHERE x.tenant_id = ? AND x.source_id = ?",
        ["acme", second],
    )
    assert linked == [("Project Phoenix",)]  # lower-case mention found through the batch's own entities
    assert graph_counts(mem, "acme")["memory_nodes"] == 2


class _Boom(RuntimeError):
    pass


@pytest.mark.parametrize("stage", ["node", "entities", "edges"])
def test_failure_between_inserts_leaves_no_trace(mem: Memory, acme: TenantContext, stage: str) -> None:
    graph = mem.graph
    assert graph.available

    def fail(at: str, tenant_id: str) -> None:
        if at == stage:
            raise _Boom(f"injected at {at}")

    graph.store.stage_listeners.append(fail)  # type: ignore[union-attr]
    with pytest.raises(MemoryError) as err:
        mem.add(acme, "Alice works on Project A.", layer="user", identifiers={"user_id": "u1"})
    assert err.value.code.value == "PROVIDER_ERROR"
    graph.store.stage_listeners.remove(fail)  # type: ignore[union-attr]
    assert rows(mem, "SELECT count(*) FROM memories WHERE tenant_id = ?", ["acme"]) == [(0,)]
    assert graph_counts(mem, "acme") == {"memory_nodes": 0, "memory_edges": 0, "entities": 0, "entity_edges": 0}
    # the store still works afterwards
    mem.add(acme, "Alice works on Project A.", layer="user", identifiers={"user_id": "u1"})
    assert graph_counts(mem, "acme")["entity_edges"] == 1


def test_update_reextracts_and_metadata_update_keeps_graph(
    mem: Memory, acme: TenantContext, add: Callable[..., str]
) -> None:
    mid = add(acme, "Alice works on Project A.")
    mem.update(acme, mid, metadata={"tags": ["x"]})
    assert graph_counts(mem, "acme")["entity_edges"] == 1
    mem.update(acme, mid, content="Carol manages Project B.")
    names = sorted(r[0] for r in rows(mem, "SELECT name FROM entities WHERE tenant_id = ?", ["acme"]))
    assert names == ["Carol", "Project B"]  # Alice and Project A had no other mention
    rel = rows(mem, "SELECT rel_type FROM entity_edges WHERE tenant_id = ?", ["acme"])
    assert rel == [("MANAGES",)]


def test_per_tenant_switch(mem: Memory, acme: TenantContext, globex: TenantContext, add: Callable[..., str]) -> None:
    mem.graph.set_enabled(globex, False)
    assert mem.graph.is_enabled(globex) is False and mem.graph.is_enabled(acme) is True
    add(globex, "Alice works on Project A.")
    add(acme, "Alice works on Project A.")
    assert graph_counts(mem, "globex")["memory_nodes"] == 0
    assert graph_counts(mem, "acme")["memory_nodes"] == 1
    mem.graph.set_enabled(globex, True)
    assert mem.graph.reindex(globex) == 1
    assert graph_counts(mem, "globex")["entity_edges"] == 1


def test_setting_persists_across_reopen(open_mem: Callable[..., Memory], acme: TenantContext) -> None:
    m1 = open_mem()
    m1.graph.set_enabled(acme, False)
    m1.close()
    m2 = open_mem()
    assert m2.graph.is_enabled(acme) is False


class _LLM:
    def extract_graph(
        self, text: str, *, known_entities: Sequence[str], relation_types: Sequence[str]
    ) -> ExtractionResult:
        return ExtractionResult(entities=[ExtractedEntity(name="Quasar", type="PROJECT")])


def test_llm_extractor_plugs_in(mem: Memory, acme: TenantContext, add: Callable[..., str]) -> None:
    mem.graph.set_extractor(_LLM())
    add(acme, "text the rules would not understand")
    assert rows(mem, "SELECT name, type FROM entities WHERE tenant_id = ?", ["acme"]) == [("Quasar", "PROJECT")]


def test_in_memory_provider_has_no_graph(open_mem: Callable[..., Memory], acme: TenantContext) -> None:
    mem = open_mem("memory://")
    mem.add(acme, "Alice works on Project A.", layer="user", identifiers={"user_id": "u1"})  # core path unaffected
    assert mem.graph.available is False
    with pytest.raises(MemoryError) as err:
        mem.graph.related(acme, "Alice")
    assert err.value.code.value == "CONFIGURATION_ERROR"
    with pytest.raises(MemoryError) as err:
        mem.search(acme, "Alice", identifiers={"user_id": "u1"}, expand_graph=True)
    assert err.value.code.value == "CONFIGURATION_ERROR"
    assert mem.search(acme, "Alice works on Project A.", identifiers={"user_id": "u1"}).results
    assert mem.graph.health().status == "degraded" and mem.graph.ready() is False
