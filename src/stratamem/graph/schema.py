"""Knowledge-graph tables of the DuckDB store, kept in the same file as the memories.

Migration version 5 (reserved for the graph). Every table carries ``tenant_id``; four
composite indexes (tenant first) are created here, plus lookups used by cascades and entity
de-duplication.

Model: a memory is a node (``memory_nodes``, node_id = memory id); entities are nodes
(``entities``, id derived from tenant + normalised name + type, so de-duplication is by key).
``memory_edges`` link a memory node to an entity (``MENTIONS``) or to another memory;
``entity_edges`` are typed relations between entities, each row derived from one memory
(``memory_id``) so that deleting the memory removes exactly what it contributed.
Rows are soft-deleted with ``deleted_at`` and purged later (see ``integrity.py``).
"""

from __future__ import annotations

from typing import Any

from ..providers.duckdb.schema import MIGRATIONS, Migration

GRAPH_SCHEMA_VERSION = 5

_DDL = (
    """
    CREATE TABLE IF NOT EXISTS memory_nodes (
        tenant_id  VARCHAR   NOT NULL,
        node_id    VARCHAR   NOT NULL,
        memory_id  VARCHAR   NOT NULL,
        layer      VARCHAR   NOT NULL,
        label      VARCHAR   NOT NULL,
        created_at TIMESTAMP NOT NULL,
        updated_at TIMESTAMP NOT NULL,
        deleted_at TIMESTAMP,
        PRIMARY KEY (tenant_id, node_id)
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS entities (
        tenant_id  VARCHAR   NOT NULL,
        entity_id  VARCHAR   NOT NULL,
        name       VARCHAR   NOT NULL,
        norm_name  VARCHAR   NOT NULL,
        type       VARCHAR   NOT NULL,
        created_at TIMESTAMP NOT NULL,
        updated_at TIMESTAMP NOT NULL,
        deleted_at TIMESTAMP,
        PRIMARY KEY (tenant_id, entity_id)
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS memory_edges (
        tenant_id   VARCHAR   NOT NULL,
        edge_id     VARCHAR   NOT NULL,
        source_id   VARCHAR   NOT NULL,
        target_id   VARCHAR   NOT NULL,
        target_kind VARCHAR   NOT NULL,
        rel_type    VARCHAR   NOT NULL,
        memory_id   VARCHAR   NOT NULL,
        weight      DOUBLE    NOT NULL DEFAULT 1.0,
        created_at  TIMESTAMP NOT NULL,
        deleted_at  TIMESTAMP,
        PRIMARY KEY (tenant_id, edge_id)
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS entity_edges (
        tenant_id  VARCHAR   NOT NULL,
        edge_id    VARCHAR   NOT NULL,
        source_id  VARCHAR   NOT NULL,
        target_id  VARCHAR   NOT NULL,
        rel_type   VARCHAR   NOT NULL,
        memory_id  VARCHAR   NOT NULL,
        created_at TIMESTAMP NOT NULL,
        deleted_at TIMESTAMP,
        PRIMARY KEY (tenant_id, edge_id)
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS graph_settings (
        tenant_id  VARCHAR   NOT NULL PRIMARY KEY,
        enabled    BOOLEAN   NOT NULL,
        updated_at TIMESTAMP NOT NULL
    )
    """,
    # Composite indexes with the tenant first: every graph query filters by tenant.
    "CREATE INDEX IF NOT EXISTS idx_edges_tenant_source ON memory_edges (tenant_id, source_id)",
    "CREATE INDEX IF NOT EXISTS idx_edges_tenant_target ON memory_edges (tenant_id, target_id)",
    "CREATE INDEX IF NOT EXISTS idx_nodes_tenant ON memory_nodes (tenant_id)",
    "CREATE INDEX IF NOT EXISTS idx_entities_tenant ON entities (tenant_id)",
    # Point lookups: entity by name (resolve, de-duplication), relations of one entity (neighbors).
    "CREATE INDEX IF NOT EXISTS idx_entities_tenant_name ON entities (tenant_id, norm_name)",
    "CREATE INDEX IF NOT EXISTS idx_entity_edges_tenant_source ON entity_edges (tenant_id, source_id)",
    "CREATE INDEX IF NOT EXISTS idx_entity_edges_tenant_target ON entity_edges (tenant_id, target_id)",
)

GRAPH_TABLES: tuple[str, ...] = ("memory_nodes", "memory_edges", "entities", "entity_edges")
GRAPH_INDEXES: tuple[str, ...] = (
    "idx_edges_tenant_source",
    "idx_edges_tenant_target",
    "idx_nodes_tenant",
    "idx_entities_tenant",
)


def _v5_graph(cur: Any, dims: int) -> None:
    del dims  # the graph stores no vectors
    for statement in _DDL:
        cur.execute(statement)


MIGRATION = Migration(GRAPH_SCHEMA_VERSION, "knowledge graph: nodes, edges, entities, entity edges", _v5_graph)

if not any(m.version == GRAPH_SCHEMA_VERSION for m in MIGRATIONS):
    MIGRATIONS.append(MIGRATION)
