"""``Provider.memory_usage``: the embedded store reports DuckDB's own memory by tag; a store that
does not know its memory (in-memory provider) reports nothing."""

from __future__ import annotations

from pathlib import Path

from stratamem import Memory, TenantContext
from stratamem.providers.inmemory import InMemoryProvider

CTX = TenantContext(tenant_id="acme")
WHO = {"user_id": "u1"}


def test_duckdb_reports_its_memory_by_tag(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "m.duckdb", embedder="hashing") as mem:
        mem.bulk_add(
            CTX, [{"content": f"fact {i} about topic {i}", "layer": "user", "identifiers": WHO} for i in range(300)]
        )
        usage = mem.engine.provider.memory_usage()
        assert usage and all(isinstance(tag, str) and size > 0 for tag, size in usage.items())
        assert sum(usage.values()) > 300 * 384 * 4 / 2  # holds at least part of the stored vectors
    assert mem.engine.provider.memory_usage() == {}  # closed: nothing held


def test_a_store_without_accounting_reports_nothing() -> None:
    with Memory.open(InMemoryProvider(), embedder="hashing") as mem:
        mem.add(CTX, "a fact", layer="user", identifiers=WHO)
        assert mem.engine.provider.memory_usage() == {}
