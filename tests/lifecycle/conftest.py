"""Lifecycle fixtures: an injected, manually advanced clock; every store on a real DuckDB file, on the
in-memory provider and on PostgreSQL (the conformance suite's factory: skipped locally without
``STRATAMEM_TEST_PG_URL``, failing under ``CI=true``).

The PostgreSQL database is shared by every test and run, so the ``acme``/``globex`` tenants here get a
fresh id per test (for every provider), and tests name their tenants in ``maintain([...])``."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from stratamem import Memory, TenantContext

from ..conformance.conftest import PROVIDER_FACTORIES

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **kwargs: float) -> None:
        self.now += timedelta(**kwargs)


@pytest.fixture()
def clock() -> Clock:
    return Clock()


@pytest.fixture()
def acme() -> TenantContext:
    return TenantContext(tenant_id=f"acme-{uuid.uuid4().hex[:12]}", principal="u1")


@pytest.fixture()
def globex() -> TenantContext:
    return TenantContext(tenant_id=f"globex-{uuid.uuid4().hex[:12]}", principal="u9")


def _open(name: str, tmp_path: Path, clock: Clock) -> Memory:
    if name == "duckdb":
        return Memory.open(str(tmp_path / "life.duckdb"), embedder="hashing", clock=clock)
    if name == "inmemory":
        return Memory.open("memory://", embedder="hashing", clock=clock)
    return Memory.open(PROVIDER_FACTORIES[name](tmp_path), embedder="hashing", clock=clock)


@pytest.fixture(params=["duckdb", "inmemory", "postgres"])
def lmem(request: pytest.FixtureRequest, tmp_path: Path, clock: Clock) -> Iterator[Memory]:
    mem = _open(str(request.param), tmp_path, clock)
    yield mem
    mem.close()


@pytest.fixture(params=["duckdb", "inmemory"])
def local_lmem(request: pytest.FixtureRequest, tmp_path: Path, clock: Clock) -> Iterator[Memory]:
    """Only stores private to the test (for sweeps over every tenant of the store, e.g. the scheduler)."""
    mem = _open(str(request.param), tmp_path, clock)
    yield mem
    mem.close()


@pytest.fixture()
def dmem(tmp_path: Path, clock: Clock) -> Iterator[Memory]:
    """DuckDB-file-only store (for CLI and persistence checks)."""
    mem = Memory.open(tmp_path / "life.duckdb", embedder="hashing", clock=clock)
    yield mem
    mem.close()


def access(mem: Memory, ctx: object, memory_id: str, times: int) -> None:
    for _ in range(times):
        assert mem.get(ctx, memory_id) is not None  # type: ignore[arg-type]


AccessFn = Callable[[Memory, object, str, int], None]
