"""memory_events written off the request path (HygieneConfig.events_write="background"), and bulk
event rows (one Arrow insert for a bulk_add's create events)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from stratamem import Memory, TenantContext
from stratamem.providers.duckdb import DuckDBProvider

U1 = {"user_id": "u1"}


def test_background_events_are_counted_flushed_and_kept(
    db_path: Path, acme: TenantContext, globex: TenantContext
) -> None:
    with Memory.open(db_path, embedder="hashing") as mem:
        mem.engine.hygiene.configure(events_write="background")
        assert mem.engine.hygiene.events.background
        mem.add(acme, content="User prefers dark mode", layer="user", identifiers=U1)
        for _ in range(5):
            mem.search(acme, "dark mode", identifiers=U1, threshold=0.5)  # hits
        mem.search(acme, "quantum chromodynamics", identifiers=U1, threshold=0.99)  # miss
        mem.search(globex, "dark mode", identifiers=U1, threshold=0.5)  # another tenant: miss
        h = mem.health(acme)  # flushes the queue first
        assert h.events["create"] == 1 and h.events["search"] == 6
        assert h.search_hit_rate == round(5 / 6, 4)
        assert mem.health(globex).events.get("search") == 1 and mem.health(globex).search_hit_rate == 0.0
        for _ in range(3):  # queued, then written by close()
            mem.search(acme, "dark mode", identifiers=U1, threshold=0.5)
    with Memory.open(db_path, embedder="hashing") as mem:
        assert mem.health(acme).events["search"] == 9
        mem.engine.hygiene.configure(events_write="sync")
        assert not mem.engine.hygiene.events.background
        mem.search(acme, "dark mode", identifiers=U1, threshold=0.5)
        provider = mem.engine.provider
        assert isinstance(provider, DuckDBProvider)
        assert provider.count_memory_events("acme")["search"] == 10  # written before search returned


def test_bulk_add_writes_one_create_event_per_memory(open_mem: Callable[..., Memory], acme: TenantContext) -> None:
    mem = open_mem()
    mem.bulk_add(
        acme,
        [
            {"content": f"fact number {i} about the billing flow", "layer": "user", "identifiers": U1}
            for i in range(1000)
        ],
    )
    provider = mem.engine.provider
    assert isinstance(provider, DuckDBProvider)
    assert provider.count_memory_events("acme")["create"] == 1000
    with provider._read() as cur:
        rows = cur.execute(
            "SELECT count(DISTINCT id), min(outcome), max(details) FROM memory_events "
            "WHERE tenant_id = ? AND event = 'create'",
            ["acme"],
        ).fetchone()
    assert rows == (1000, "ok", "{}")
