"""Versioned, additive schema migrations of the PostgreSQL store.

Same rules as :mod:`duckdb_schema`: each migration runs in its own transaction, is recorded in
``schema_version``, and the applied *set* (not the max) decides what runs, so features merged in
any order get every migration. Initialisation holds a transaction-level advisory lock, so several
processes opening one database at once migrate it exactly once.

Layout: ``tenant_id`` on every row and leading every index; an HNSW index (cosine) on the
embedding; a generated ``tsvector`` column with a GIN index for the lexical half of hybrid search.
JSON columns are ``json`` (text kept verbatim: numbers, key order) rather than ``jsonb``, because
filters run as compiled predicates in the provider, exactly as on DuckDB. ``content_hash`` is
indexed per (tenant_id, layer, scope) but **not unique**: the core engine
allows the same content twice in one scope (e.g. ``bulk_add`` of duplicates), and the hygiene layer
decides about duplicates, not the storage.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from psycopg import sql

#: Key of the advisory lock held while the ``vector`` extension is created (database-wide, brief):
#: "stratamem" in ASCII, truncated.
MIGRATION_LOCK_KEY = 0x7374726174616D


def migration_lock_key(schema: str | None) -> int:
    """The advisory-lock key held while the store in ``schema`` migrates or is repartitioned.

    Advisory locks are database-wide, so the key is derived from the schema: migrating (or
    partitioning) the store of one schema does not hold up opening the store of another schema in
    the same database.

    Args:
        schema: The store's schema; None is the ``public`` schema.

    Returns:
        A signed 64-bit key for ``pg_advisory_lock``.
    """
    digest = hashlib.blake2b(f"stratamem-migrate:{schema or 'public'}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


@dataclass(frozen=True)
class Migration:
    version: int
    description: str
    #: Receives the open connection and the embedding dimensions; runs inside the transaction.
    apply: Callable[[Any, int], None]


def _v1_core(conn: Any, dims: int) -> None:
    # ``dims`` is an int validated by the provider: the only value formatted into DDL (as a literal).
    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    conn.execute(
        sql.SQL(
            """
        CREATE TABLE memories (
            tenant_id        TEXT        NOT NULL,
            id               TEXT        NOT NULL,
            layer            TEXT        NOT NULL,
            scope            TEXT        NOT NULL,
            content          TEXT        NOT NULL,
            content_hash     TEXT        NOT NULL,
            identifiers      JSON        NOT NULL,
            metadata         JSON        NOT NULL,
            provenance       JSON        NOT NULL,
            tier             TEXT,
            status           TEXT        NOT NULL,
            version          INTEGER     NOT NULL,
            etag             TEXT        NOT NULL,
            importance       DOUBLE PRECISION NOT NULL,
            access_count     BIGINT      NOT NULL,
            created_at       TIMESTAMPTZ NOT NULL,
            updated_at       TIMESTAMPTZ NOT NULL,
            expires_at       TIMESTAMPTZ,
            last_accessed_at TIMESTAMPTZ,
            deleted_at       TIMESTAMPTZ,
            embedding        vector({dims}) NOT NULL,
            content_tsv      tsvector GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, content)) STORED,
            PRIMARY KEY (tenant_id, id)
        )
        """
        ).format(dims=sql.Literal(int(dims)))
    )
    conn.execute("CREATE INDEX memories_scope_idx ON memories (tenant_id, layer, scope, created_at, id)")
    conn.execute("CREATE INDEX memories_created_idx ON memories (tenant_id, created_at, id)")
    conn.execute("CREATE INDEX memories_hash_idx ON memories (tenant_id, content_hash)")
    conn.execute("CREATE INDEX memories_scope_hash_idx ON memories (tenant_id, layer, scope, content_hash)")
    conn.execute("CREATE INDEX memories_embedding_hnsw ON memories USING hnsw (embedding vector_cosine_ops)")
    conn.execute("CREATE INDEX memories_tsv_idx ON memories USING gin (content_tsv)")
    conn.execute(
        sql.SQL(
            """
        CREATE TABLE embedding_cache (
            tenant_id    TEXT        NOT NULL,
            model        TEXT        NOT NULL,
            content_hash TEXT        NOT NULL,
            embedding    vector({dims}) NOT NULL,
            created_at   TIMESTAMPTZ NOT NULL,
            PRIMARY KEY (tenant_id, model, content_hash)
        )
        """
        ).format(dims=sql.Literal(int(dims)))
    )


def _v2_server(conn: Any, dims: int) -> None:
    """The server feature's API keys (same columns as ``server/schema.py`` on DuckDB)."""
    conn.execute(
        """
        CREATE TABLE api_keys (
            key_id      TEXT        PRIMARY KEY,
            tenant_id   TEXT        NOT NULL,
            name        TEXT        NOT NULL,
            roles       JSON        NOT NULL,
            salt        TEXT        NOT NULL,
            key_hash    TEXT        NOT NULL,
            identifiers JSON        NOT NULL,
            created_at  TIMESTAMPTZ NOT NULL,
            revoked_at  TIMESTAMPTZ
        )
        """
    )
    conn.execute("CREATE INDEX api_keys_tenant_idx ON api_keys (tenant_id, created_at)")


def _v3_hygiene(conn: Any, dims: int) -> None:
    """The hygiene feature's tenant policies and memory_events log (same columns as
    ``hygiene/schema.py`` on DuckDB, timestamps as ``timestamptz``, JSON as ``json``), plus an index
    for the per-user quota count (``identifiers->>'user_id'`` of one tenant)."""
    conn.execute(
        """
        CREATE TABLE IF NOT EXISTS tenant_policies (
            tenant_id  TEXT        NOT NULL PRIMARY KEY,
            policy     JSON        NOT NULL,
            updated_at TIMESTAMPTZ NOT NULL
        )
        """
    )
    conn.execute(
        """
        CREATE TABLE IF NOT EXISTS memory_events (
            tenant_id TEXT        NOT NULL,
            id        TEXT        NOT NULL,
            ts        TIMESTAMPTZ NOT NULL,
            event     TEXT        NOT NULL,
            memory_id TEXT,
            layer     TEXT,
            principal TEXT,
            code      TEXT,
            outcome   TEXT        NOT NULL,
            details   JSON        NOT NULL,
            PRIMARY KEY (tenant_id, id)
        )
        """
    )
    conn.execute("CREATE INDEX IF NOT EXISTS memory_events_ts_idx ON memory_events (tenant_id, ts)")
    conn.execute("CREATE INDEX IF NOT EXISTS memories_user_idx ON memories (tenant_id, (identifiers ->> 'user_id'))")


def _v4_lifecycle(conn: Any, dims: int) -> None:
    """The lifecycle feature's reward-feedback signals (same columns as ``lifecycle/schema.py`` on DuckDB)."""
    conn.execute(
        """
        CREATE TABLE IF NOT EXISTS memory_feedback (
            tenant_id   TEXT             NOT NULL,
            memory_id   TEXT             NOT NULL,
            signals     BIGINT           NOT NULL,
            reward_sum  DOUBLE PRECISION NOT NULL,
            last_reward DOUBLE PRECISION NOT NULL,
            updated_at  TIMESTAMPTZ      NOT NULL,
            PRIMARY KEY (tenant_id, memory_id)
        )
        """
    )


#: The knowledge graph (version 5, as on DuckDB): the same tables, columns and indexes as
#: ``graph/schema.py``. Timestamps are ``TIMESTAMP`` (naive UTC) there and here, so rows copy as they are.
#: Text columns compare bytewise (``COLLATE "C"``) as on DuckDB, so ties and orders match.
#: ``graph_generation`` is a per-tenant counter that triggers bump whenever a graph row or a memory
#: row a traversal depends on (status, expiry, content, scope) changes, in the same transaction: a
#: server keys its traversal caches on it, so a write committed by another server is seen.
_GRAPH_DDL = (
    """CREATE TABLE IF NOT EXISTS memory_nodes (
        tenant_id TEXT COLLATE "C" NOT NULL,
        node_id TEXT COLLATE "C" NOT NULL,
        memory_id TEXT COLLATE "C" NOT NULL,
        layer TEXT COLLATE "C" NOT NULL,
        label TEXT COLLATE "C" NOT NULL,
        created_at TIMESTAMP NOT NULL,
        updated_at TIMESTAMP NOT NULL,
        deleted_at TIMESTAMP,
        PRIMARY KEY (tenant_id, node_id))""",
    """CREATE TABLE IF NOT EXISTS entities (
        tenant_id TEXT COLLATE "C" NOT NULL,
        entity_id TEXT COLLATE "C" NOT NULL,
        name TEXT COLLATE "C" NOT NULL,
        norm_name TEXT COLLATE "C" NOT NULL,
        type TEXT COLLATE "C" NOT NULL,
        created_at TIMESTAMP NOT NULL,
        updated_at TIMESTAMP NOT NULL,
        deleted_at TIMESTAMP,
        PRIMARY KEY (tenant_id, entity_id))""",
    """CREATE TABLE IF NOT EXISTS memory_edges (
        tenant_id TEXT COLLATE "C" NOT NULL,
        edge_id TEXT COLLATE "C" NOT NULL,
        source_id TEXT COLLATE "C" NOT NULL,
        target_id TEXT COLLATE "C" NOT NULL,
        target_kind TEXT COLLATE "C" NOT NULL,
        rel_type TEXT COLLATE "C" NOT NULL,
        memory_id TEXT COLLATE "C" NOT NULL,
        weight DOUBLE PRECISION NOT NULL DEFAULT 1.0,
        created_at TIMESTAMP NOT NULL,
        deleted_at TIMESTAMP,
        PRIMARY KEY (tenant_id, edge_id))""",
    """CREATE TABLE IF NOT EXISTS entity_edges (
        tenant_id TEXT COLLATE "C" NOT NULL,
        edge_id TEXT COLLATE "C" NOT NULL,
        source_id TEXT COLLATE "C" NOT NULL,
        target_id TEXT COLLATE "C" NOT NULL,
        rel_type TEXT COLLATE "C" NOT NULL,
        memory_id TEXT COLLATE "C" NOT NULL,
        created_at TIMESTAMP NOT NULL,
        deleted_at TIMESTAMP,
        PRIMARY KEY (tenant_id, edge_id))""",
    """CREATE TABLE IF NOT EXISTS graph_settings (
        tenant_id TEXT COLLATE "C" NOT NULL PRIMARY KEY,
        enabled BOOLEAN NOT NULL,
        updated_at TIMESTAMP NOT NULL)""",
    "CREATE TABLE IF NOT EXISTS graph_generation (tenant_id TEXT NOT NULL PRIMARY KEY, generation BIGINT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS idx_edges_tenant_source ON memory_edges (tenant_id, source_id)",
    "CREATE INDEX IF NOT EXISTS idx_edges_tenant_target ON memory_edges (tenant_id, target_id)",
    "CREATE INDEX IF NOT EXISTS idx_edges_tenant_memory ON memory_edges (tenant_id, memory_id)",
    "CREATE INDEX IF NOT EXISTS idx_nodes_tenant ON memory_nodes (tenant_id)",
    "CREATE INDEX IF NOT EXISTS idx_entities_tenant ON entities (tenant_id)",
    "CREATE INDEX IF NOT EXISTS idx_entities_tenant_name ON entities (tenant_id, norm_name)",
    "CREATE INDEX IF NOT EXISTS idx_entity_edges_tenant_source ON entity_edges (tenant_id, source_id)",
    "CREATE INDEX IF NOT EXISTS idx_entity_edges_tenant_target ON entity_edges (tenant_id, target_id)",
    "CREATE INDEX IF NOT EXISTS idx_entity_edges_tenant_memory ON entity_edges (tenant_id, memory_id)",
    # One bump per tenant per statement (transition tables), whatever the number of rows.
    """CREATE OR REPLACE FUNCTION stratamem_graph_bump() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP IN ('INSERT', 'UPDATE') THEN
            INSERT INTO graph_generation AS g SELECT DISTINCT tenant_id, 1 FROM changed_new
            ON CONFLICT (tenant_id) DO UPDATE SET generation = g.generation + 1;
        END IF;
        IF TG_OP IN ('DELETE', 'UPDATE') THEN
            INSERT INTO graph_generation AS g SELECT DISTINCT tenant_id, 1 FROM changed_old
            ON CONFLICT (tenant_id) DO UPDATE SET generation = g.generation + 1;
        END IF;
        RETURN NULL;
    END $$""",
    # Memory rows: only the columns a traversal reads (record_access does not bump).
    """CREATE OR REPLACE FUNCTION stratamem_graph_bump_row() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO graph_generation AS g VALUES (OLD.tenant_id, 1)
        ON CONFLICT (tenant_id) DO UPDATE SET generation = g.generation + 1;
        RETURN NULL;
    END $$""",
    """CREATE TRIGGER stratamem_memories_graph AFTER UPDATE OF status, expires_at, content, layer, scope,
        identifiers, metadata, deleted_at OR DELETE ON memories
        FOR EACH ROW EXECUTE FUNCTION stratamem_graph_bump_row()""",
)
_GRAPH_TABLES = ("memory_nodes", "entities", "memory_edges", "entity_edges", "graph_settings")


def _v5_graph(conn: Any, dims: int) -> None:
    del dims  # the graph stores no vectors
    for statement in _GRAPH_DDL:
        conn.execute(statement)
    for table in _GRAPH_TABLES:
        ident = sql.Identifier(table)
        for op, old, new in (
            ("INSERT", "", "NEW TABLE AS changed_new"),
            ("UPDATE", "OLD TABLE AS changed_old", "NEW TABLE AS changed_new"),
            ("DELETE", "OLD TABLE AS changed_old", ""),
        ):
            conn.execute(
                sql.SQL(
                    "CREATE TRIGGER {} AFTER "
                    + op
                    + " ON {} REFERENCING "
                    + old
                    + " "
                    + new
                    + " FOR EACH STATEMENT EXECUTE FUNCTION stratamem_graph_bump()"
                ).format(sql.Identifier(f"stratamem_{table}_{op.lower()}"), ident)
            )


def _v9_memory_event_index(conn: Any, dims: int) -> None:
    """One memory's events (``list_memory_events(memory_id=…)``, the console's detail pane) read
    through this index instead of scanning the tenant's whole log by time. PostgreSQL only: DuckDB
    reads the columnar table with its zone maps and keeps its appends index-free."""
    conn.execute(
        "CREATE INDEX IF NOT EXISTS memory_events_memory_idx ON memory_events (tenant_id, memory_id, ts) "
        "WHERE memory_id IS NOT NULL"
    )


#: Versions are reserved per feature exactly as in ``duckdb_schema`` (1 core, 2 server, …); features
#: that need PostgreSQL tables append their ``Migration`` here.
MIGRATIONS: list[Migration] = [
    Migration(1, "memories (HNSW + tsvector), embedding cache", _v1_core),
    Migration(2, "server: api keys", _v2_server),
    Migration(3, "hygiene: tenant policies, memory events", _v3_hygiene),
    Migration(4, "lifecycle: memory_feedback", _v4_lifecycle),
    Migration(5, "knowledge graph: nodes, edges, entities, entity edges", _v5_graph),
    Migration(9, "hygiene: memory_events index by memory", _v9_memory_event_index),
]


def all_migrations() -> list[Migration]:
    seen: dict[int, Migration] = {}
    for migration in MIGRATIONS:
        other = seen.setdefault(migration.version, migration)
        if other is not migration and other.description != migration.description:
            raise RuntimeError(f"two migrations claim version {migration.version}")
    return sorted(seen.values(), key=lambda m: m.version)


def ensure_bookkeeping(conn: Any) -> None:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_version ("
        " version INTEGER PRIMARY KEY, description TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
    )
    conn.execute("CREATE TABLE IF NOT EXISTS store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")


def applied_versions(conn: Any) -> set[int]:
    return {int(row[0]) for row in conn.execute("SELECT version FROM schema_version").fetchall()}


def current_version(conn: Any) -> int:
    row = conn.execute("SELECT coalesce(max(version), 0) FROM schema_version").fetchone()
    return int(row[0]) if row else 0


def record(conn: Any, migration: Migration) -> None:
    conn.execute(
        "INSERT INTO schema_version (version, description) VALUES (%s, %s)", [migration.version, migration.description]
    )
