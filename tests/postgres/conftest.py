"""PostgreSQL fixtures: the server from ``scripts/start_postgres.sh`` (``STRATAMEM_TEST_PG_URL``).

Each test gets its own PostgreSQL schema (``?schema=…`` in the store URL), dropped afterwards, so
runs never interfere and a test may open the store with any embedder.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql

from stratamem import Memory

from ..conftest import require_service


@pytest.fixture(scope="session")
def pg_url() -> str:
    url = os.environ.get("STRATAMEM_TEST_PG_URL", "")
    require_service("PostgreSQL", bool(url), "STRATAMEM_TEST_PG_URL is not set (run `make services`)")
    try:
        with psycopg.connect(url, connect_timeout=5) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        require_service("PostgreSQL", False, f"cannot connect: {exc}")
    return url


def admin(pg_url: str) -> psycopg.Connection[Any]:
    return psycopg.connect(pg_url, autocommit=True)


@pytest.fixture()
def pg_schema(pg_url: str) -> Iterator[str]:
    name = f"t_{uuid.uuid4().hex[:16]}"
    yield name
    with admin(pg_url) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name)))


@pytest.fixture()
def pg_store_url(pg_url: str, pg_schema: str) -> str:
    sep = "&" if "?" in pg_url else "?"
    return f"{pg_url}{sep}schema={pg_schema}"


@pytest.fixture()
def open_pg(pg_store_url: str) -> Iterator[Callable[..., Memory]]:
    opened: list[Memory] = []

    def factory(url: str | None = None, **kwargs: object) -> Memory:
        kwargs.setdefault("embedder", "hashing")
        mem = Memory.open(url or pg_store_url, **kwargs)  # type: ignore[arg-type]
        opened.append(mem)
        return mem

    yield factory
    for mem in opened:
        mem.close()


@pytest.fixture()
def pg_mem(open_pg: Callable[..., Memory]) -> Memory:
    return open_pg()
