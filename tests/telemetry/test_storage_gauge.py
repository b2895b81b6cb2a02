"""The storage-size gauge (``memory_storage_size``) of a metrics scrape, on a real DuckDB file."""

from __future__ import annotations

import threading
from pathlib import Path

from stratamem import Memory, TenantContext
from stratamem.providers.duckdb import DuckDBProvider
from stratamem.telemetry.metrics import live_counts

from ..core.locks import writer_held

WHO = {"user_id": "u1"}


def test_the_gauge_counts_every_tenant_without_waiting_for_the_write_lock(tmp_path: Path) -> None:
    """A scrape counts live memories of every tenant in one read that neither writes the queued
    appends nor folds the access log: while an add holds the write lock (and searches left accesses
    to fold), the count still comes back. Counting tenant by tenant through reads that fold the log
    waited for the lock once per tenant, and a scrape under load ran past its timeout."""
    with Memory.open(tmp_path / "g.duckdb", embedder="hashing") as mem:
        for t in range(5):
            ctx = TenantContext(tenant_id=f"t{t}", principal="p")
            for i in range(t + 1):
                mem.add(ctx, f"tenant {t} fact {i}", layer="user", identifiers=WHO)
            mem.add(ctx, f"tenant {t} project fact", layer="project", identifiers={"project_id": "p"})
        first = TenantContext(tenant_id="t0", principal="p")
        gone = mem.add(first, "to be deleted", layer="user", identifiers=WHO).memory.id
        mem.delete(first, gone)
        provider = mem.engine.provider
        assert isinstance(provider, DuckDBProvider)
        mem.search(first, "tenant fact", identifiers=WHO, threshold=0.0)  # leaves accesses to fold
        provider.flush_appends()
        assert provider.db.access_pending
        got: list[dict[str, int]] = []
        with writer_held(provider):
            reader = threading.Thread(target=lambda: got.append(live_counts(mem.engine, min_interval_s=0.0)))
            reader.start()
            reader.join(5)
            assert not reader.is_alive(), "the scrape waited for the write lock"
        assert got == [{"project": 5, "user": 1 + 2 + 3 + 4 + 5}]
