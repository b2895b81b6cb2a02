"""Transient provider failures: retried 3x with backoff, then PROVIDER_ERROR (retryable)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from stratamem import ErrorCode, Memory, MemoryConfig, MemoryError, TenantContext
from stratamem.errors import TransientProviderError
from stratamem.model import MemoryEntry
from stratamem.providers import DuckDBProvider
from stratamem.providers.base import PreparedAdd

U1 = {"user_id": "u1"}


class _FlakyDuckDB(DuckDBProvider):
    """A real DuckDB store whose add fails transiently ``failures`` times first."""

    def __init__(self, path: Path, failures: int) -> None:
        super().__init__(path)
        self.failures = failures
        self.attempts = 0

    def add_replacing(
        self,
        entries: Sequence[MemoryEntry],
        replacements: Sequence[tuple[MemoryEntry, MemoryEntry]],
        *,
        cache_model: str | None = None,
        prepared: PreparedAdd | None = None,
    ) -> list[bool]:
        """The write of every add (its rows and the memories it replaces)."""
        self.attempts += 1
        if self.failures > 0:
            self.failures -= 1
            raise TransientProviderError("simulated lock contention")
        return super().add_replacing(entries, replacements, cache_model=cache_model, prepared=prepared)


def test_transient_errors_are_retried(tmp_path: Path, open_mem: Callable[..., Memory], acme: TenantContext) -> None:
    provider = _FlakyDuckDB(tmp_path / "flaky.duckdb", failures=2)
    mem = open_mem(provider, config=MemoryConfig(retry_initial_delay=0.001))
    out = mem.add(acme, content="eventually stored", layer="user", identifiers=U1)
    assert provider.attempts == 3 and mem.get(acme, out.memory.id) is not None


def test_a_retried_bulk_add_reuses_its_prepared_work(
    tmp_path: Path, open_mem: Callable[..., Memory], acme: TenantContext
) -> None:
    provider = _FlakyDuckDB(tmp_path / "flaky-bulk.duckdb", failures=1)
    mem = open_mem(provider, config=MemoryConfig(retry_initial_delay=0.001))
    n = mem.engine.prepare_ahead_min + 3  # prepared ahead (``provider.prepare_add``), then retried
    out = mem.bulk_add(
        acme,
        [
            {"content": f"Dana Park works on Project Kestrel, step {i}", "layer": "user", "identifiers": U1}
            for i in range(n)
        ],
    )
    assert provider.attempts == 2 and mem.list(acme, limit=100).total_count == n
    with provider._read() as cur:
        nodes = cur.execute("SELECT count(*) FROM memory_nodes WHERE tenant_id = ?", [acme.tenant_id]).fetchone()
        postings = cur.execute(
            "SELECT count(DISTINCT memory_id) FROM lexical_postings WHERE tenant_id = ?", [acme.tenant_id]
        ).fetchone()
    assert nodes == (n,) and postings == (n,)
    assert {r.memory.id for r in out.results} == {m.id for m in mem.list(acme, limit=100).memories}


def test_persistent_transient_errors_become_provider_error(
    tmp_path: Path, open_mem: Callable[..., Memory], acme: TenantContext
) -> None:
    provider = _FlakyDuckDB(tmp_path / "down.duckdb", failures=10)
    mem = open_mem(provider, config=MemoryConfig(retry_initial_delay=0.001))
    with pytest.raises(MemoryError) as err:
        mem.add(acme, content="never stored", layer="user", identifiers=U1)
    assert provider.attempts == 3
    assert err.value.code is ErrorCode.PROVIDER_ERROR and err.value.retryable is True
    assert err.value.operation == "add" and err.value.details["attempts"] == 3
    provider.failures = 0
    assert mem.list(acme).total_count == 0
