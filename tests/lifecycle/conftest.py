"""Lifecycle fixtures: an injected, manually advanced clock; every store on a real DuckDB file and
on the in-memory provider."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from stratamem import Memory

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


@pytest.fixture(params=["duckdb", "inmemory"])
def lmem(request: pytest.FixtureRequest, tmp_path: Path, clock: Clock) -> Iterator[Memory]:
    location = str(tmp_path / "life.duckdb") if request.param == "duckdb" else "memory://"
    mem = Memory.open(location, embedder="hashing", clock=clock)
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
