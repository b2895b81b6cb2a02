"""Property: the CSR snapshot traversal returns exactly what the recursive SQL returns.

Random small graphs for three tenants are written straight into the graph tables (duplicate and
parallel edges, self-loops, edges to missing or soft-deleted nodes, soft-deleted edges, archived and
expired memories), with the same entity ids in every tenant, so a missing tenant filter anywhere
would walk into another tenant's graph. ``related`` (every node, random hops/limit/entities),
``path`` and the raw BFS tree must match between ``adjacency_cache=True`` and ``False``, and never
name another tenant's node. Memory rows are then changed without any graph write (archive, expiry,
restore) and the comparison is repeated: the snapshot's cached rows must follow.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stratamem import Memory, MemoryError, TenantContext
from stratamem.graph.traverse import _LRU

from .conftest import STORES, _pg_url, drop_schema

MEM_RELS = ["MENTIONS", "RELATES_TO"]
ENT_RELS = ["CAUSED_BY", "USES", "WORKS_ON"]
N_ENT = 5

tenant_graph = st.fixed_dictionaries(
    {
        "memories": st.integers(min_value=1, max_value=6),
        "deleted_entities": st.sets(st.integers(min_value=0, max_value=N_ENT - 1), max_size=2),
        # (memory index, target index, target is a memory, rel, deleted edge); index N_ENT = a ghost entity
        "memory_edges": st.lists(
            st.tuples(
                st.integers(0, 5), st.integers(0, N_ENT), st.booleans(), st.sampled_from(MEM_RELS), st.booleans()
            ),
            max_size=12,
        ),
        "entity_edges": st.lists(
            st.tuples(st.integers(0, N_ENT), st.integers(0, N_ENT - 1), st.sampled_from(ENT_RELS), st.booleans()),
            max_size=10,
        ),
        "archived": st.sets(st.integers(0, 5), max_size=2),
        "expired": st.sets(st.integers(0, 5), max_size=2),
    }
)
queries = st.fixed_dictionaries(
    {
        "hops": st.integers(min_value=1, max_value=5),
        "limit": st.sampled_from([1, 2, 3, 50]),
        "include_entities": st.booleans(),
        "max_hops": st.integers(min_value=1, max_value=6),
    }
)

_counter = itertools.count()


@pytest.fixture(scope="module", params=STORES)
def shared(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Memory]:
    """One store per kind for the module (on PostgreSQL: the recursive CTE of ``BFS_SQL_POSTGRES``)."""
    schema = ""
    if request.param == "postgres":
        url = _pg_url()
        schema = f"g_{uuid.uuid4().hex[:16]}"
        location: Any = f"{url}{'&' if '?' in url else '?'}schema={schema}"
    else:
        location = Path(tmp_path_factory.mktemp("eq")) / "eq.duckdb"
    mem = Memory.open(location, embedder="hashing")
    mem.graph.queries._cache = _LRU(0)  # type: ignore[union-attr]  # compare traversals, not the cache
    yield mem
    mem.close()
    if schema:
        drop_schema(_pg_url(), schema)


def _ent(j: int) -> str:
    return f"ent_{j}"  # the same ids in every tenant


def _build(mem: Memory, tenant: str, spec: dict[str, Any]) -> list[str]:
    ctx = TenantContext(tenant_id=tenant)
    mem.graph.set_enabled(ctx, False)  # the graph below is written by hand
    ids = [
        mem.add(ctx, f"{tenant} memory {i}", layer="user", identifiers={"user_id": "u"}).memory.id
        for i in range(spec["memories"])
    ]
    provider: Any = mem.engine.provider
    ts = "2025-01-01 00:00:00"
    with provider.graph_transaction() as tx:
        for i, mid in enumerate(ids):
            tx.execute(
                "INSERT INTO memory_nodes VALUES (?, ?, ?, 'user', ?, ?, ?, NULL)",
                [tenant, mid, mid, f"{tenant} memory {i}", ts, ts],
            )
        for j in range(N_ENT):
            deleted = ts if j in spec["deleted_entities"] else None
            tx.execute(
                "INSERT INTO entities VALUES (?, ?, ?, ?, 'ENTITY', ?, ?, ?)",
                [tenant, _ent(j), f"{tenant} thing {j}", f"{tenant} thing {j}", ts, ts, deleted],
            )
        for k, (src, dst, to_memory, rel, deleted) in enumerate(spec["memory_edges"]):
            target = ids[dst % len(ids)] if to_memory else _ent(dst)
            tx.execute(
                "INSERT INTO memory_edges VALUES (?, ?, ?, ?, ?, ?, ?, 1.0, ?, ?)",
                [
                    tenant,
                    f"me{k}",
                    ids[src % len(ids)],
                    target,
                    "memory" if to_memory else "entity",
                    rel,
                    ids[0],
                    ts,
                    ts if deleted else None,
                ],
            )
        for k, (src, dst, rel, deleted) in enumerate(spec["entity_edges"]):
            tx.execute(
                "INSERT INTO entity_edges VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [tenant, f"ee{k}", _ent(src), _ent(dst), rel, ids[0], ts, ts if deleted else None],
            )
    mem.graph.queries.generations.bump(tenant)  # type: ignore[union-attr]
    return ids


def _both(mem: Memory, call: Any) -> tuple[Any, Any]:
    queries: Any = mem.graph.queries  # type: ignore[union-attr]
    out = []
    for fast in (True, False):
        queries.adjacency_cache = fast
        try:
            value = call()
            out.append(value.model_dump(exclude={"cached"}) if hasattr(value, "model_dump") else value)
        except MemoryError as exc:
            out.append(("error", exc.code.value))
        finally:
            queries.adjacency_cache = True
    return out[0], out[1]


def _nodes_of(result: dict[str, Any]) -> list[dict[str, Any]]:
    nodes = list(result.get("start", [])) + list(result.get("nodes", []))
    for item in result.get("items", []):
        nodes += [item["node"], *item["nodes"]]
    return nodes


def _compare(mem: Memory, tenants: dict[str, list[str]], q: dict[str, Any]) -> int:
    checked = 0
    for tenant, ids in tenants.items():
        ctx = TenantContext(tenant_id=tenant)
        refs = [*ids, *(_ent(j) for j in range(N_ENT + 1)), f"{tenant} thing 1", "no such node"]
        for ref in refs:
            fast, sql = _both(
                mem,
                lambda ref=ref, ctx=ctx: mem.graph.related(
                    ctx, ref, q["hops"], limit=q["limit"], include_entities=q["include_entities"]
                ),
            )
            assert fast == sql, (tenant, ref, q)
            if isinstance(fast, dict):
                checked += 1
                assert all(n["label"].startswith(f"{tenant} ") for n in _nodes_of(fast)), (tenant, ref)
                assert all(i["memory"] is None or i["memory"]["tenant_id"] == tenant for i in fast["items"])
        for a, b in itertools.combinations(refs[: len(ids) + 3], 2):
            fast, sql = _both(mem, lambda a=a, b=b, ctx=ctx: mem.graph.path(ctx, a, b, max_hops=q["max_hops"]))
            assert fast == sql, (tenant, a, b, q)
            if isinstance(fast, dict):
                assert all(n["label"].startswith(f"{tenant} ") for n in _nodes_of(fast))
        queries: Any = mem.graph.queries  # type: ignore[union-attr]
        provider: Any = mem.engine.provider
        with provider.graph_read() as cur:
            for start in refs[: len(ids) + N_ENT]:
                for hops in (1, q["hops"]):
                    queries.adjacency_cache = False
                    sql_tree = queries._bfs(cur, tenant, [start], hops, None)
                    queries.adjacency_cache = True
                    assert queries._bfs(cur, tenant, [start], hops, None) == sql_tree
    return checked


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(specs=st.lists(tenant_graph, min_size=3, max_size=3), q=queries)
def test_snapshot_traversal_equals_recursive_sql(
    shared: Memory, specs: list[dict[str, Any]], q: dict[str, Any]
) -> None:
    mem = shared
    run = next(_counter)
    tenants = {f"r{run}t{k}": _build(mem, f"r{run}t{k}", spec) for k, spec in enumerate(specs)}
    assert _compare(mem, tenants, q) > 0
    # Memory rows change with no graph write: the cached rows of the snapshot must follow.
    provider: Any = mem.engine.provider
    now = mem.engine.now()
    for (tenant, ids), spec in zip(tenants.items(), specs, strict=True):
        archived = [ids[i] for i in spec["archived"] if i < len(ids)]
        expired = [ids[i] for i in spec["expired"] if i < len(ids)]
        provider.set_status(tenant, archived, "archived", now)
        provider.set_expiry(tenant, expired, now - timedelta(seconds=1))
    _compare(mem, tenants, q)
    for tenant, ids in tenants.items():
        provider.set_status(tenant, ids, "active", now)
        provider.set_expiry(tenant, ids, None)
    _compare(mem, tenants, q)


def test_hub_entity_limit_and_order(shared: Memory) -> None:
    """A hub entity mentioned by every memory: the snapshot stops at the level that fills ``limit``
    and returns the same nearest-first, id-ordered rows as the recursive SQL."""
    tenant = f"hub{next(_counter)}"
    ids = _build(
        shared,
        tenant,
        {
            "memories": 6,
            "deleted_entities": set(),
            "memory_edges": [],
            "entity_edges": [(0, 1, "USES", False)],
            "archived": set(),
            "expired": set(),
        },
    )
    ctx = TenantContext(tenant_id=tenant)
    more = [
        shared.add(ctx, f"{tenant} memory {i}", layer="user", identifiers={"user_id": "u"}).memory.id
        for i in range(6, 80)
    ]
    provider: Any = shared.engine.provider
    with provider.graph_transaction() as tx:
        for k, mid in enumerate([*ids, *more]):
            if k >= len(ids):
                tx.execute(
                    "INSERT INTO memory_nodes VALUES (?, ?, ?, 'user', ?, now()::TIMESTAMP, now()::TIMESTAMP, NULL)",
                    [tenant, mid, mid, f"{tenant} memory {k}"],
                )
            tx.execute(
                "INSERT INTO memory_edges VALUES (?, ?, ?, ?, 'entity', 'MENTIONS', ?, 1.0, now()::TIMESTAMP, NULL)",
                [tenant, f"hub{k}", mid, _ent(k % 2), mid],
            )
    shared.graph.queries.generations.bump(tenant)  # type: ignore[union-attr]
    # memory 0 -MENTIONS-> ent_0 (hop 1) <- 39 more memories (hop 2); ent_0 -USES-> ent_1 (hop 2) <- 40 (hop 3)
    for hops, limit, entities, expected in [
        (1, 5, True, 1),
        (2, 7, False, 7),
        (3, 50, False, 50),
        (3, 500, True, 81),
        (2, 1, True, 1),
        (2, 500, False, 39),
    ]:
        fast, sql = _both(
            shared,
            lambda h=hops, n=limit, e=entities: shared.graph.related(ctx, ids[0], h, limit=n, include_entities=e),
        )
        assert fast == sql and len(fast["items"]) == expected, (hops, limit, entities)
        assert [i["hops"] for i in fast["items"]] == sorted(i["hops"] for i in fast["items"])
    fast, sql = _both(shared, lambda: shared.graph.path(ctx, more[-1], ids[1]))
    assert fast == sql and fast["found"]
