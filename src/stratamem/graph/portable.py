"""Copy one tenant's knowledge graph between stores (``stratamem migrate``, DuckDB ↔ PostgreSQL).

Works on any :class:`~stratamem.providers.contracts.GraphBackend`: the rows of the five graph
tables are read in primary-key order in batches and upserted by primary key on the target, so a
batch sent twice (a resumed copy) changes nothing. Soft-deleted rows travel too (they are purged
on schedule like any other). Timestamps are naive UTC on both stores. Copy the memories first:
the integrity scan reports graph nodes whose memory row is missing.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ..errors import ErrorCode, MemoryError
from ..providers.contracts import GraphBackend
from .store import generations_for

#: Import order (entities before the edges that name them, nodes before their edges).
GRAPH_TABLES_IN_ORDER: tuple[str, ...] = ("graph_settings", "entities", "memory_nodes", "memory_edges", "entity_edges")

#: Columns of each table in schema order, and its primary key.
COLUMNS: dict[str, tuple[str, ...]] = {
    "graph_settings": ("tenant_id", "enabled", "updated_at"),
    "entities": ("tenant_id", "entity_id", "name", "norm_name", "type", "created_at", "updated_at", "deleted_at"),
    "memory_nodes": ("tenant_id", "node_id", "memory_id", "layer", "label", "created_at", "updated_at", "deleted_at"),
    "memory_edges": (
        "tenant_id",
        "edge_id",
        "source_id",
        "target_id",
        "target_kind",
        "rel_type",
        "memory_id",
        "weight",
        "created_at",
        "deleted_at",
    ),
    "entity_edges": (
        "tenant_id",
        "edge_id",
        "source_id",
        "target_id",
        "rel_type",
        "memory_id",
        "created_at",
        "deleted_at",
    ),
}
KEYS: dict[str, tuple[str, ...]] = {
    "graph_settings": ("tenant_id",),
    "entities": ("tenant_id", "entity_id"),
    "memory_nodes": ("tenant_id", "node_id"),
    "memory_edges": ("tenant_id", "edge_id"),
    "entity_edges": ("tenant_id", "edge_id"),
}


def _table(table: str) -> str:
    if table not in COLUMNS:
        raise MemoryError(
            ErrorCode.INVALID_PARAMS,
            f"unknown graph table {table!r}",
            details={"field": "table", "allowed": list(GRAPH_TABLES_IN_ORDER)},
        )
    return table


def export_graph_rows(
    provider: GraphBackend, tenant_id: str, table: str, *, batch_size: int = 1000
) -> Iterator[list[dict[str, Any]]]:
    """Batches of the tenant's rows of ``table`` (soft-deleted ones included), in primary-key order."""
    cols = COLUMNS[_table(table)]
    key = KEYS[table][-1]
    select = f"SELECT {', '.join(cols)} FROM {table} WHERE tenant_id = ?"  # noqa: S608 - names are constants above
    after: str | None = None
    while True:
        with provider.graph_read() as cur:
            if after is None:
                rows = cur.execute(f"{select} ORDER BY {key} LIMIT ?", [tenant_id, batch_size]).fetchall()
            else:
                rows = cur.execute(
                    f"{select} AND {key} > ? ORDER BY {key} LIMIT ?", [tenant_id, after, batch_size]
                ).fetchall()
        if not rows:
            return
        batch = [dict(zip(cols, row, strict=True)) for row in rows]
        for row in batch:
            if table == "memory_edges":
                row["weight"] = float(row["weight"])
            if table == "graph_settings":
                row["enabled"] = bool(row["enabled"])
        yield batch
        if len(rows) < batch_size:
            return
        after = str(batch[-1][key])


def import_graph_rows(provider: GraphBackend, tenant_id: str, table: str, rows: Sequence[Mapping[str, Any]]) -> int:
    """Upsert ``rows`` (as :func:`export_graph_rows` yields them) in one transaction of the target;
    the number written. Every row must belong to ``tenant_id``."""
    cols = COLUMNS[_table(table)]
    if not rows:
        return 0
    for row in rows:
        if row.get("tenant_id") != tenant_id:
            raise MemoryError(
                ErrorCode.INVALID_PARAMS, "every imported graph row must belong to the tenant", details={"table": table}
            )
    keys = KEYS[table]
    updates = ", ".join(f"{c} = excluded.{c}" for c in cols if c not in keys and _updatable(table, c))
    # table and column names are the constants above; every value is a bound parameter
    sql = (
        f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)}) "  # noqa: S608
        f"ON CONFLICT ({', '.join(keys)}) DO UPDATE SET {updates}"
    )
    with provider.graph_transaction() as tx:
        tx.executemany(sql, [[row.get(c) for c in cols] for row in rows])
    generations_for(provider.database_key()).invalidate(tenant_id)
    return len(rows)


def _updatable(table: str, column: str) -> bool:
    """DuckDB refuses ``DO UPDATE`` of an indexed column; those are part of the id's hash anyway."""
    indexed = {
        "memory_edges": {"source_id", "target_id"},
        "entity_edges": {"source_id", "target_id"},
        "entities": {"norm_name"},
    }
    return column not in indexed.get(table, set())


def delete_graph(provider: GraphBackend, tenant_id: str) -> None:
    """Remove every graph row of the tenant, in one transaction."""
    with provider.graph_transaction() as tx:
        for table in reversed(GRAPH_TABLES_IN_ORDER):
            tx.execute(f"DELETE FROM {table} WHERE tenant_id = ?", [tenant_id])  # noqa: S608 - constant names
    generations_for(provider.database_key()).invalidate(tenant_id)


def graph_row_counts(provider: GraphBackend, tenant_id: str) -> dict[str, int]:
    """Rows per graph table of the tenant, soft-deleted ones included (for a verification report)."""
    out: dict[str, int] = {}
    with provider.graph_read() as cur:
        for table in GRAPH_TABLES_IN_ORDER:
            row = cur.execute(f"SELECT count(*) FROM {table} WHERE tenant_id = ?", [tenant_id]).fetchone()  # noqa: S608
            out[table] = int(row[0]) if row else 0
    return out


__all__ = [
    "COLUMNS",
    "GRAPH_TABLES_IN_ORDER",
    "KEYS",
    "delete_graph",
    "export_graph_rows",
    "graph_row_counts",
    "import_graph_rows",
]
