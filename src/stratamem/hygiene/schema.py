"""DuckDB migration 3 (hygiene): per-tenant governance policies and the memory_events log."""

from __future__ import annotations

from typing import Any

from ..providers.duckdb import schema as duckdb_schema
from ..providers.duckdb.schema import Migration


def _v3_hygiene(cur: Any, dims: int) -> None:
    cur.execute(
        """
        CREATE TABLE tenant_policies (
            tenant_id  VARCHAR   NOT NULL PRIMARY KEY,
            policy     VARCHAR   NOT NULL,
            updated_at TIMESTAMP NOT NULL
        )
        """
    )
    cur.execute(
        """
        CREATE TABLE memory_events (
            tenant_id VARCHAR   NOT NULL,
            id        VARCHAR   NOT NULL,
            ts        TIMESTAMP NOT NULL,
            event     VARCHAR   NOT NULL,
            memory_id VARCHAR,
            layer     VARCHAR,
            principal VARCHAR,
            code      VARCHAR,
            outcome   VARCHAR   NOT NULL,
            details   VARCHAR   NOT NULL,
            PRIMARY KEY (tenant_id, id)
        )
        """
    )
    cur.execute("CREATE INDEX idx_memory_events_ts ON memory_events (tenant_id, ts)")


MIGRATION = Migration(3, "hygiene: tenant policies, memory events", _v3_hygiene)

if MIGRATION not in duckdb_schema.MIGRATIONS:
    duckdb_schema.MIGRATIONS.append(MIGRATION)
