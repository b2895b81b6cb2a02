from __future__ import annotations

import asyncio
from pathlib import Path

from stratamem import AsyncMemory, MemoryEntry, TenantContext

from .conftest import Clock


def test_async_lifecycle_surface(tmp_path: Path, clock: Clock) -> None:
    async def scenario() -> None:
        t = TenantContext(tenant_id="acme", principal="agent-1")
        s = {"user_id": "u1", "session_id": "s1"}
        async with await AsyncMemory.open(tmp_path / "a.duckdb", embedder="hashing", clock=clock) as mem:
            a = (await mem.add(t, "call 123-456-7890 tomorrow", layer="session", identifiers=s, importance=0.85)).memory
            closed = await mem.close_session(t, "u1", "s1", project_id="p1")
            promoted = await mem.get(t, closed.promoted[0].promoted_id)
            assert promoted is not None and promoted.content == "call [REDACTED_PHONE] tomorrow"
            b = (await mem.add(t, "fact b", layer="user", identifiers={"user_id": "u1"})).memory

            def join(entries: list[MemoryEntry]) -> str:
                return "+".join(e.content for e in entries)

            c = await mem.compact(t, [b.id], join)
            assert c.provenance.compacted_from_ids == [b.id]
            fb = await mem.feedback(t, [c.id], 0.5)
            assert fb.items[0].signals == 1
            assert (await mem.prune(t)).candidates == []
            assert await mem.delete_by_scope(t, "session", s) == 1
            assert a.id not in {e.id for e in (await mem.list(t, "session", identifiers=s)).memories}
            res = await mem.crud(t, {"action": "list", "scope": "agent"})
            assert res.errors == [] and res.items == []
            report = await mem.maintain()
            assert report.tenants[0].tenant_id == "acme"

    asyncio.run(scenario())
