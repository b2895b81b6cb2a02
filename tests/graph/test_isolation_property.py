"""Property: no traversal ever returns (or passes through) another tenant's node."""

from __future__ import annotations

import itertools
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stratamem import Memory, MemoryError, TenantContext

NAMES = ["Alice", "Bob", "Carol", "Project A", "Project B", "Redis", "Acme Corp"]
VERBS = ["works on", "manages", "depends on", "mentioned", "joined", "uses"]
TENANTS = ["t1", "t2", "t3"]

sentence = st.tuples(st.sampled_from(NAMES), st.sampled_from(VERBS), st.sampled_from(NAMES)).map(
    lambda t: f"{t[0]} {t[1]} {t[2]}."
)
memories = st.lists(st.tuples(st.sampled_from(TENANTS), sentence), min_size=2, max_size=10)

_counter = itertools.count()


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=memories, hops=st.integers(min_value=1, max_value=4))
def test_no_traversal_crosses_tenants(tmp_path: Path, data: list[tuple[str, str]], hops: int) -> None:
    mem = Memory.open(tmp_path / f"p{next(_counter)}.duckdb", embedder="hashing")
    try:
        mem.graph.queries.adjacency_cache = bool(hops % 2)  # type: ignore[union-attr]  # both engines
        owner: dict[str, str] = {}
        for tenant, content in data:
            mid = mem.add(
                TenantContext(tenant_id=tenant), content, layer="user", identifiers={"user_id": "u"}
            ).memory.id
            owner[mid] = tenant
        with mem.engine.provider.graph_read() as cur:  # type: ignore[attr-defined]
            for eid, tenant in cur.execute("SELECT entity_id, tenant_id FROM entities").fetchall():
                owner[eid] = tenant
        for tenant in TENANTS:
            ctx = TenantContext(tenant_id=tenant)
            for ref in [*NAMES, *owner]:
                try:
                    related = mem.graph.related(ctx, ref, hops, include_entities=True)
                except MemoryError as exc:
                    assert exc.code.value == "MEMORY_NOT_FOUND"
                    assert ref not in owner or owner[ref] != tenant
                    continue
                for item in related.items:
                    assert all(owner[n.id] == tenant for n in item.nodes), (tenant, ref, item.reasoning)
                    if item.memory is not None:
                        assert item.memory.tenant_id == tenant
                assert all(owner[n.id] == tenant for n in related.start)
            for a, b in itertools.combinations(NAMES[:4], 2):
                try:
                    path = mem.graph.path(ctx, a, b, max_hops=hops)
                except MemoryError:
                    continue
                assert all(owner[n.id] == tenant for n in path.nodes)
    finally:
        mem.close()
