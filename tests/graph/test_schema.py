"""Seed 000 "Embedded Graph Storage", "Composite Index Optimization", "Schema Migration Support"."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from stratamem import Memory, MemoryError
from stratamem.graph.schema import GRAPH_INDEXES, GRAPH_SCHEMA_VERSION, GRAPH_TABLES
from stratamem.providers.duckdb import schema as duckdb_schema
from stratamem.providers.duckdb.schema import Migration

from .conftest import rows


@pytest.fixture()
def store_kind() -> str:
    """The DuckDB migration itself is under test here (PostgreSQL's: test_postgres_graph_schema)."""
    return "duckdb"


def test_tables_have_tenant_id_and_indexes_exist(mem: Memory, db_path: Path) -> None:
    assert db_path.exists()  # one local file, no server
    for table in GRAPH_TABLES:
        cols = [r[0] for r in rows(mem, "SELECT column_name FROM duckdb_columns() WHERE table_name = ?", [table])]
        assert "tenant_id" in cols, table
    indexes = {r[0]: r[1] for r in rows(mem, "SELECT index_name, sql FROM duckdb_indexes()", [])}
    for name in GRAPH_INDEXES:
        assert name in indexes
    assert "(tenant_id, source_id)" in indexes["idx_edges_tenant_source"]
    assert "(tenant_id, target_id)" in indexes["idx_edges_tenant_target"]
    versions = [r[0] for r in rows(mem, "SELECT version FROM schema_version ORDER BY version", [])]
    assert GRAPH_SCHEMA_VERSION in versions and versions == sorted(versions)


def test_reopen_does_not_reapply(open_mem: Callable[..., Memory], db_path: Path) -> None:
    m1 = open_mem()
    m1.close()
    m2 = open_mem()
    count = rows(m2, "SELECT count(*) FROM schema_version WHERE version = ?", [GRAPH_SCHEMA_VERSION])[0][0]
    assert count == 1


def test_failing_graph_migration_rolls_back_and_refuses_to_open(tmp_path: Path) -> None:
    def broken(cur: object, dims: int) -> None:
        cur.execute("CREATE TABLE graph_half_done (x INTEGER)")  # type: ignore[attr-defined]
        raise RuntimeError("step 2 failed")

    bad = Migration(52, "broken graph step", broken)
    duckdb_schema.MIGRATIONS.append(bad)
    try:
        with pytest.raises(MemoryError) as err:
            Memory.open(tmp_path / "s.duckdb", embedder="hashing")
        assert err.value.code.value == "CONFIGURATION_ERROR"
        assert err.value.details["migration"] == 52
    finally:
        duckdb_schema.MIGRATIONS.remove(bad)
    mem = Memory.open(tmp_path / "s.duckdb", embedder="hashing")
    try:
        names = {r[0] for r in rows(mem, "SELECT table_name FROM duckdb_tables()", [])}
        assert "graph_half_done" not in names
        assert set(GRAPH_TABLES) <= names
    finally:
        mem.close()
