"""Graph fixtures: ``mem`` (and ``open_mem``) run every graph contract test on both stores that
carry the knowledge graph, a DuckDB file and a PostgreSQL schema of its own (dropped afterwards;
skipped without ``STRATAMEM_TEST_PG_URL``, failing under CI=true). Raw SQL in these tests is in the
graph's dialect and goes through ``graph_read`` / ``graph_transaction``, which accept it on both."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from stratamem import Memory, TenantContext

from ..conftest import require_service

STORES = ("duckdb", "postgres")


def _pg_url() -> str:
    url = os.environ.get("STRATAMEM_TEST_PG_URL", "")
    require_service("PostgreSQL", bool(url), "STRATAMEM_TEST_PG_URL is not set (run `make services`)")
    return url


@pytest.fixture(params=STORES)
def store_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture()
def open_mem(store_kind: str, db_path: Path) -> Iterator[Callable[..., Memory]]:
    """Memory objects on the parametrised store (hashing embedder unless given); an explicit
    ``location`` opens that store instead."""
    opened: list[Memory] = []
    schemas: list[str] = []
    pg_url = _pg_url() if store_kind == "postgres" else ""

    def factory(location: str | Path | None = None, **kwargs: object) -> Memory:
        kwargs.setdefault("embedder", "hashing")
        if location is None:
            if store_kind == "postgres":
                if not schemas:
                    schemas.append(f"g_{uuid.uuid4().hex[:16]}")
                sep = "&" if "?" in pg_url else "?"
                location = f"{pg_url}{sep}schema={schemas[0]}"
            else:
                location = db_path
        mem = Memory.open(location, **kwargs)  # type: ignore[arg-type]
        opened.append(mem)
        return mem

    yield factory
    for mem in opened:
        mem.close()
    for name in schemas:
        drop_schema(pg_url, name)


def drop_schema(pg_url: str, name: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name)))


@pytest.fixture()
def mem(open_mem: Callable[..., Memory]) -> Memory:
    return open_mem()


@pytest.fixture()
def add(mem: Memory) -> Callable[..., str]:
    def _add(ctx: TenantContext, content: str, user: str = "u1", **kwargs: Any) -> str:
        return mem.add(ctx, content, layer="user", identifiers={"user_id": user}, **kwargs).memory.id

    return _add


def rows(mem: Memory, sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
    with mem.engine.provider.graph_read() as cur:  # type: ignore[attr-defined]
        return list(cur.execute(sql, params).fetchall())


def graph_counts(mem: Memory, tenant_id: str) -> dict[str, int]:
    out = {}
    for table in ("memory_nodes", "memory_edges", "entities", "entity_edges"):
        out[table] = rows(mem, f"SELECT count(*) FROM {table} WHERE tenant_id = ?", [tenant_id])[0][0]
    return out
