"""AsyncMemory: the same operations as coroutines."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from stratamem import AsyncMemory, ErrorCode, MemoryError, TenantContext


def test_async_round_trip(db_path: Path, acme: TenantContext) -> None:
    async def scenario() -> None:
        async with await AsyncMemory.open(db_path, embedder="hashing") as mem:
            outs = await asyncio.gather(
                *[
                    mem.add(acme, content=f"async fact {i}", layer="user", identifiers={"userId": "u1"})
                    for i in range(5)
                ]
            )
            mid = outs[0].memory.id
            res = await mem.search(acme, "async fact", identifiers={"userId": "u1"}, threshold=0.0)
            assert res.total_count == 5
            assert (await mem.get(acme, mid)) is not None
            upd = await mem.update(acme, mid, metadata={"seen": True})
            assert upd.memory.version == 2
            page = await mem.list(acme, layer="user", identifiers={"userId": "u1"}, limit=2)
            assert len(page.memories) == 2 and page.next_cursor
            bulk = await mem.bulk_add(acme, [{"content": "b", "layer": "user", "identifiers": {"userId": "u1"}}])
            assert len(bulk.results) == 1
            assert (await mem.bulk_delete(acme, [bulk.results[0].memory.id])).deleted == 1
            assert (await mem.delete(acme, mid)).success
            assert (await mem.stats(acme)).total == 4
            assert (await mem.health_check()).status == "healthy"
            with pytest.raises(MemoryError) as err:
                await mem.get(None, mid)
            assert err.value.code is ErrorCode.MISSING_TENANT_CONTEXT

    asyncio.run(scenario())
