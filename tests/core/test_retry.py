"""Transient provider failures: retried 3x with backoff, then PROVIDER_ERROR (retryable)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from stratamem import ErrorCode, Memory, MemoryConfig, MemoryError, TenantContext
from stratamem.errors import TransientProviderError
from stratamem.model import MemoryEntry
from stratamem.providers import DuckDBProvider

U1 = {"user_id": "u1"}


class _FlakyDuckDB(DuckDBProvider):
    """A real DuckDB store whose add fails transiently ``failures`` times first."""

    def __init__(self, path: Path, failures: int) -> None:
        super().__init__(path)
        self.failures = failures
        self.attempts = 0

    def add(self, entries: Sequence[MemoryEntry], *, cache_model: str | None = None) -> None:
        self.attempts += 1
        if self.failures > 0:
            self.failures -= 1
            raise TransientProviderError("simulated lock contention")
        super().add(entries, cache_model=cache_model)


def test_transient_errors_are_retried(tmp_path: Path, open_mem: Callable[..., Memory], acme: TenantContext) -> None:
    provider = _FlakyDuckDB(tmp_path / "flaky.duckdb", failures=2)
    mem = open_mem(provider, config=MemoryConfig(retry_initial_delay=0.001))
    out = mem.add(acme, content="eventually stored", layer="user", identifiers=U1)
    assert provider.attempts == 3 and mem.get(acme, out.memory.id) is not None


def test_persistent_transient_errors_become_provider_error(tmp_path: Path, open_mem: Callable[..., Memory],
                                                           acme: TenantContext) -> None:
    provider = _FlakyDuckDB(tmp_path / "down.duckdb", failures=10)
    mem = open_mem(provider, config=MemoryConfig(retry_initial_delay=0.001))
    with pytest.raises(MemoryError) as err:
        mem.add(acme, content="never stored", layer="user", identifiers=U1)
    assert provider.attempts == 3
    assert err.value.code is ErrorCode.PROVIDER_ERROR and err.value.retryable is True
    assert err.value.operation == "add" and err.value.details["attempts"] == 3
    provider.failures = 0
    assert mem.list(acme).total_count == 0
