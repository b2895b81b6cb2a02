"""Versioned, additive schema migrations of the DuckDB store.

Each migration runs in its own transaction and is recorded in ``schema_version``; a failing one
rolls back and the store refuses to open (CONFIGURATION_ERROR), so a half-migrated file never
serves traffic. New features (the knowledge graph, snapshots) append migrations here; existing
ones are never edited.
"""

from __future__ import annotations

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


MIGRATIONS: list[Migration] = [
    Migration(1, "memories, embedding cache", _v1_core),
]


def ensure_bookkeeping(cur: Any) -> None:
    cur.execute(
        "CREATE TABLE IF NOT EXISTS schema_version ("
        " version INTEGER PRIMARY KEY, description VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL)"
    )
    cur.execute("CREATE TABLE IF NOT EXISTS store_meta (key VARCHAR PRIMARY KEY, value VARCHAR NOT NULL)")


def current_version(cur: Any) -> int:
    row = cur.execute("SELECT coalesce(max(version), 0) FROM schema_version").fetchone()
    return int(row[0]) if row else 0


def record(cur: Any, migration: Migration) -> None:
    cur.execute(
        "INSERT INTO schema_version VALUES (?, ?, ?)",
        [migration.version, migration.description, datetime.now(UTC).replace(tzinfo=None)],
    )
