"""A tenant's graph copied DuckDB → PostgreSQL → DuckDB with ``graph.portable`` (what
``stratamem migrate`` uses): the same rows, the same traversals, idempotent re-import."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from stratamem import Memory, TenantContext
from stratamem.graph.portable import (
    GRAPH_TABLES_IN_ORDER,
    delete_graph,
    export_graph_rows,
    graph_row_counts,
    import_graph_rows,
)


@pytest.fixture()
def store_kind() -> str:
    return "postgres"  # ``open_mem()`` opens PostgreSQL; DuckDB files are opened by path


def _dump(mem: Memory, tenant: str) -> dict[str, list[dict[str, Any]]]:
    provider: Any = mem.engine.provider
    return {
        t: [r for batch in export_graph_rows(provider, tenant, t, batch_size=7) for r in batch]
        for t in GRAPH_TABLES_IN_ORDER
    }


def _copy(src: Memory, dst: Memory, tenant: str) -> None:
    for entry in src.engine.provider.iter_entries(tenant):
        dst.engine.provider.add([entry])
    provider: Any = dst.engine.provider
    delete_graph(provider, tenant)  # the write hook indexed the copied memories: take the source's rows
    for table in GRAPH_TABLES_IN_ORDER:
        for batch in export_graph_rows(src.engine.provider, tenant, table, batch_size=5):  # type: ignore[arg-type]
            import_graph_rows(provider, tenant, table, batch)


def _views(mem: Memory, ctx: TenantContext) -> tuple[Any, ...]:
    related = mem.graph.related(ctx, "Alice", hops=3, include_entities=True)
    path = mem.graph.path(ctx, "Project A", "memory leak")
    return (
        [(i.node.id, i.hops, i.reasoning) for i in related.items],
        path.reasoning,
        [n.node.id for n in mem.graph.neighbors(ctx, "Alice")],
    )


def test_graph_round_trips_duckdb_postgres_duckdb(
    open_mem: Callable[..., Memory], tmp_path: Path, acme: TenantContext
) -> None:
    first = open_mem(tmp_path / "a.duckdb")
    a = first.add(acme, "Alice works on Project A", layer="user", identifiers={"user_id": "u1"}).memory.id
    first.add(acme, "Alice found a memory leak", layer="user", identifiers={"user_id": "u1"})
    first.add(acme, "Bob reviews Project A with Alice", layer="user", identifiers={"user_id": "u2"})
    first.delete(acme, a)  # soft-deleted / removed rows travel as they are
    first.add(acme, "Alice works on Project A again", layer="user", identifiers={"user_id": "u1"})
    first.graph.set_enabled(acme, True)
    pg = open_mem()
    _copy(first, pg, "acme")
    assert _dump(pg, "acme") == _dump(first, "acme")
    assert graph_row_counts(pg.engine.provider, "acme") == graph_row_counts(  # type: ignore[arg-type]
        first.engine.provider, "acme"
    )  # type: ignore[arg-type]
    assert _views(pg, acme) == _views(first, acme)
    assert pg.graph.check().ok
    # re-sending a batch (a resumed copy) changes nothing
    for table in GRAPH_TABLES_IN_ORDER:
        for batch in export_graph_rows(first.engine.provider, "acme", table):  # type: ignore[arg-type]
            import_graph_rows(pg.engine.provider, "acme", table, batch)  # type: ignore[arg-type]
    assert _dump(pg, "acme") == _dump(first, "acme")
    back = open_mem(tmp_path / "b.duckdb")
    _copy(pg, back, "acme")
    assert _dump(back, "acme") == _dump(first, "acme")
    assert _views(back, acme) == _views(first, acme)


def test_import_refuses_rows_of_another_tenant(mem: Memory, add: Callable[..., str], acme: TenantContext) -> None:
    add(acme, "Alice works on Project A")
    rows = _dump(mem, "acme")["entities"]
    with pytest.raises(Exception, match="belong to the tenant"):
        import_graph_rows(mem.engine.provider, "globex", "entities", rows)  # type: ignore[arg-type]
