"""The provider conformance suite: every test here runs against every provider, unchanged.

A backend joins by adding one factory to ``PROVIDER_FACTORIES``. Factories receive a per-test
directory and return a fresh, uninitialised provider; tests use a unique tenant id per test, so a
shared server database (PostgreSQL) needs no per-test schema. A factory that needs a service calls
``require_service`` (skip locally, fail under ``CI=true``).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from stratamem import Memory, TenantContext
from stratamem.embeddings import Embedder
from stratamem.providers import DuckDBProvider, InMemoryProvider, MemoryProvider

from ..conftest import require_service

ProviderFactory = Callable[[Path], MemoryProvider]


def _duckdb(tmp: Path) -> MemoryProvider:
    return DuckDBProvider(tmp / "conformance.duckdb")


def _inmemory(tmp: Path) -> MemoryProvider:
    return InMemoryProvider()


def _postgres(tmp: Path) -> MemoryProvider:
    url = os.environ.get("STRATAMEM_TEST_PG_URL")
    require_service("PostgreSQL", bool(url), "STRATAMEM_TEST_PG_URL is not set (run `make services`)")
    try:
        from stratamem.providers.postgres import PostgresProvider  # type: ignore[import-not-found,unused-ignore]
    except ImportError as exc:  # the provider module is not part of this build yet
        require_service("PostgreSQL provider", False, f"stratamem.providers.postgres: {exc}")
        raise
    provider: MemoryProvider = PostgresProvider(url)
    return provider


PROVIDER_FACTORIES: dict[str, ProviderFactory] = {
    "duckdb": _duckdb,
    "inmemory": _inmemory,
    "postgres": _postgres,
}


@pytest.fixture(params=sorted(PROVIDER_FACTORIES))
def provider_name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture()
def make_provider(provider_name: str, tmp_path: Path) -> ProviderFactory:
    """A factory of providers of this parametrisation that share one backing store (tmp_path)."""
    factory = PROVIDER_FACTORIES[provider_name]
    shared: dict[str, MemoryProvider] = {}

    def make(_: Path = tmp_path) -> MemoryProvider:
        if provider_name == "inmemory":  # nothing to reopen: the same object is the store
            return shared.setdefault("p", factory(tmp_path))
        return factory(tmp_path)

    return make


@pytest.fixture()
def open_store(make_provider: ProviderFactory) -> Iterator[Callable[..., Memory]]:
    opened: list[Memory] = []

    def factory(**kwargs: object) -> Memory:
        kwargs.setdefault("embedder", "hashing")
        mem = Memory.open(make_provider(), **kwargs)  # type: ignore[arg-type]
        opened.append(mem)
        return mem

    yield factory
    for mem in opened:
        mem.close()


@pytest.fixture()
def store(open_store: Callable[..., Memory]) -> Memory:
    return open_store()


@pytest.fixture()
def tenant() -> TenantContext:
    return TenantContext(tenant_id=f"conf-{uuid.uuid4().hex[:12]}", principal="u1")


@pytest.fixture()
def other_tenant() -> TenantContext:
    return TenantContext(tenant_id=f"conf-{uuid.uuid4().hex[:12]}", principal="u9")


@pytest.fixture()
def model_store(provider_name: str, tmp_path: Path, minilm: Embedder) -> Iterator[Memory]:
    """A store of this provider with the real embedder. The shared PostgreSQL test database is bound
    to the hashing embedder's vectors, so PostgreSQL gets a database of its own, dropped afterwards."""
    if provider_name != "postgres":
        with Memory.open(PROVIDER_FACTORIES[provider_name](tmp_path), embedder=minilm) as mem:
            yield mem
        return
    url = os.environ.get("STRATAMEM_TEST_PG_URL")
    require_service("PostgreSQL", bool(url), "STRATAMEM_TEST_PG_URL is not set (run `make services`)")
    assert url is not None
    import psycopg

    from stratamem.providers.postgres import PostgresProvider

    name = f"stratamem_rank_{uuid.uuid4().hex[:12]}"
    base, _, _ = url.rpartition("/")
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        provider: MemoryProvider = PostgresProvider(f"{base}/{name}")
        with Memory.open(provider, embedder=minilm) as mem:
            yield mem
    finally:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
