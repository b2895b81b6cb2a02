"""Compatibility name of :mod:`stratamem.providers.duckdb.schema` (features append migrations here).

The lists are the same objects as in the schema module, so a migration appended through either
name is seen by both.
"""

from __future__ import annotations

from .duckdb.schema import (
    ACCESS_LOG_TABLE,
    FEATURE_SCHEMA_MODULES,
    MIGRATIONS,
    Migration,
    all_migrations,
    applied_versions,
    current_version,
    ensure_bookkeeping,
    record,
)

__all__ = [
    "ACCESS_LOG_TABLE",
    "FEATURE_SCHEMA_MODULES",
    "MIGRATIONS",
    "Migration",
    "all_migrations",
    "applied_versions",
    "current_version",
    "ensure_bookkeeping",
    "record",
]
