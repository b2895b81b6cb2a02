"""DuckDB migration 4 (lifecycle): reward-feedback signals per memory (additive only)."""

from __future__ import annotations

from typing import Any

from ..providers.duckdb import schema as duckdb_schema


def _v4_lifecycle(cur: Any, dims: int) -> None:
    cur.execute(
        """
        CREATE TABLE IF NOT EXISTS memory_feedback (
            tenant_id   VARCHAR   NOT NULL,
            memory_id   VARCHAR   NOT NULL,
            signals     BIGINT    NOT NULL,
            reward_sum  DOUBLE    NOT NULL,
            last_reward DOUBLE    NOT NULL,
            updated_at  TIMESTAMP NOT NULL,
            PRIMARY KEY (tenant_id, memory_id)
        )
        """
    )


MIGRATION = duckdb_schema.Migration(4, "lifecycle: memory_feedback", _v4_lifecycle)
if all(m.version != 4 for m in duckdb_schema.MIGRATIONS):
    duckdb_schema.MIGRATIONS.append(MIGRATION)
