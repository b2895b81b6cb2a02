"""Versioned, additive schema migrations of the DuckDB store.

Each migration runs in its own transaction and is recorded in ``schema_version``; a failing one
rolls back and the store refuses to open (CONFIGURATION_ERROR), so a half-migrated file never
serves traffic. New features (the knowledge graph, snapshots) append migrations here; existing
ones are never edited.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any


@dataclass(frozen=True)
class Migration:
    version: int
    description: str
    #: Receives the open cursor and the embedding dimensions; runs inside the transaction.
    apply: Callable[[Any, int], None]


def _v1_core(cur: Any, dims: int) -> None:
    # ``dims`` is an int validated by the provider: the only value formatted into DDL.
    cur.execute(
        f"""
        CREATE TABLE memories (
            tenant_id        VARCHAR   NOT NULL,
            id               VARCHAR   NOT NULL,
            layer            VARCHAR   NOT NULL,
            scope            VARCHAR   NOT NULL,
            content          VARCHAR   NOT NULL,
            content_hash     VARCHAR   NOT NULL,
            identifiers      VARCHAR   NOT NULL,
            metadata         VARCHAR   NOT NULL,
            provenance       VARCHAR   NOT NULL,
            tier             VARCHAR,
            status           VARCHAR   NOT NULL,
            version          INTEGER   NOT NULL,
            etag             VARCHAR   NOT NULL,
            importance       DOUBLE    NOT NULL,
            access_count     BIGINT    NOT NULL,
            created_at       TIMESTAMP NOT NULL,
            updated_at       TIMESTAMP NOT NULL,
            expires_at       TIMESTAMP,
            last_accessed_at TIMESTAMP,
            deleted_at       TIMESTAMP,
            embedding        FLOAT[{int(dims)}] NOT NULL,
            PRIMARY KEY (tenant_id, id)
        )
        """
    )
    cur.execute("CREATE INDEX idx_memories_scope ON memories (tenant_id, layer, scope)")
    cur.execute("CREATE INDEX idx_memories_hash ON memories (tenant_id, content_hash)")
    cur.execute(
        f"""
        CREATE TABLE embedding_cache (
            tenant_id    VARCHAR   NOT NULL,
            model        VARCHAR   NOT NULL,
            content_hash VARCHAR   NOT NULL,
            embedding    FLOAT[{int(dims)}] NOT NULL,
            created_at   TIMESTAMP NOT NULL,
            PRIMARY KEY (tenant_id, model, content_hash)
        )
        """
    )


#: Name of the DuckDB access log (migration 8): ``record_access`` appends here, and the next read or
#: transaction that changes stored rows folds them into ``memories`` (``DuckDBProvider.settle_access``;
#: an add of new rows does not).
ACCESS_LOG_TABLE = "memory_access_log"


def _v8_access_log(cur: Any, dims: int) -> None:
    # Appending a row is cheap; the UPDATE it replaces scanned ``memories`` and grew with the store.
    cur.execute("CREATE SEQUENCE IF NOT EXISTS memory_access_seq")
    cur.execute(
        f"""
        CREATE TABLE {ACCESS_LOG_TABLE} (
            tenant_id   VARCHAR   NOT NULL,
            memory_id   VARCHAR   NOT NULL,
            n           INTEGER   NOT NULL,
            accessed_at TIMESTAMP NOT NULL,
            importance  DOUBLE    NOT NULL,
            seq         BIGINT    NOT NULL DEFAULT nextval('memory_access_seq')
        )
        """
    )


def _v2_api_keys(cur: Any, dims: int) -> None:
    # The key store's table (the server reads and writes it through the provider).
    cur.execute(
        """
        CREATE TABLE api_keys (
            key_id      VARCHAR   PRIMARY KEY,
            tenant_id   VARCHAR   NOT NULL,
            name        VARCHAR   NOT NULL,
            roles       VARCHAR   NOT NULL,
            salt        VARCHAR   NOT NULL,
            key_hash    VARCHAR   NOT NULL,
            identifiers VARCHAR   NOT NULL,
            created_at  TIMESTAMP NOT NULL,
            revoked_at  TIMESTAMP
        )
        """
    )
    cur.execute("CREATE INDEX idx_api_keys_tenant ON api_keys (tenant_id)")


def _v10_memory_ids(cur: Any, dims: int) -> None:
    # Reads and writes of memories by id find their rows through this index (rows.py ``by_ids``):
    # the primary key (tenant_id, id) is an index DuckDB does not use for lookups.
    cur.execute("CREATE INDEX idx_memories_id ON memories (id)")


#: The API keys table: part of the store (``providers/duckdb/keys.py``); version 2 keeps the number
#: the server feature reserved for it, so stores created before it moved here stay as they are.
API_KEYS_MIGRATION = Migration(2, "server: api keys", _v2_api_keys)


#: Version numbers are reserved per feature so that features can land in any order:
#: 1 core · 2 server (api keys, audit) · 3 hygiene · 4 lifecycle · 5 graph · 6 retrieval · 7 snapshots
#: · 8 core (access log) · 10 core (memories by id).
#: A feature keeps its DDL in its own module, which appends its ``Migration`` to ``MIGRATIONS`` at
#: import time and is listed in ``FEATURE_SCHEMA_MODULES``; the provider applies every version not
#: yet recorded in ``schema_version``, in version order.
MIGRATIONS: list[Migration] = [
    Migration(1, "memories, embedding cache", _v1_core),
    API_KEYS_MIGRATION,
    Migration(8, "access log", _v8_access_log),
    Migration(10, "memories by id", _v10_memory_ids),
]

#: Modules (absolute names) that register feature migrations; imported before migrating.
FEATURE_SCHEMA_MODULES: list[str] = [
    "stratamem.graph.schema",
    "stratamem.lifecycle.schema",
    "stratamem.retrieval.duckdb_lexical",
    "stratamem.hygiene.schema",
]


def all_migrations() -> list[Migration]:
    for name in FEATURE_SCHEMA_MODULES:
        importlib.import_module(name)
    seen: dict[int, Migration] = {}
    for migration in MIGRATIONS:
        other = seen.setdefault(migration.version, migration)
        if other is not migration and other.description != migration.description:
            raise RuntimeError(f"two migrations claim version {migration.version}")
    return sorted(seen.values(), key=lambda m: m.version)


def ensure_bookkeeping(cur: Any) -> None:
    cur.execute(
        "CREATE TABLE IF NOT EXISTS schema_version ("
        " version INTEGER PRIMARY KEY, description VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL)"
    )
    cur.execute("CREATE TABLE IF NOT EXISTS store_meta (key VARCHAR PRIMARY KEY, value VARCHAR NOT NULL)")


def current_version(cur: Any) -> int:
    rows = cur.execute("SELECT coalesce(max(version), 0) FROM schema_version").fetchall()  # read to the end
    return int(rows[0][0]) if rows else 0


def applied_versions(cur: Any) -> set[int]:
    return {int(row[0]) for row in cur.execute("SELECT version FROM schema_version").fetchall()}


def record(cur: Any, migration: Migration) -> None:
    cur.execute(
        "INSERT INTO schema_version VALUES (?, ?, ?)",
        [migration.version, migration.description, datetime.now(UTC).replace(tzinfo=None)],
    )
