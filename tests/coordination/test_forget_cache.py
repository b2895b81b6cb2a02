"""Forgetting reaches the shared embedding cache: after ``forget`` (the write gate) or ``delete``,
the vector of the deleted content is gone from Redis at once, not at its TTL."""

from __future__ import annotations

from pathlib import Path

import redis

from stratamem import Memory, MemoryConfig, TenantContext
from stratamem.embeddings.redis_cache import RedisEmbeddingCache

U1 = {"user_id": "u1"}


def _key(mem: Memory, tenant: str, content_hash: str) -> str:
    shared = mem.engine.embeddings.shared
    assert isinstance(shared, RedisEmbeddingCache)
    return shared.key(tenant, mem.engine.embeddings.model_id, content_hash)


def test_forget_and_delete_drop_the_redis_vector(
    tmp_path: Path, redis_url: str, prefix: str, rclient: redis.Redis
) -> None:
    acme = TenantContext(tenant_id="acme", principal="u1")
    config = MemoryConfig(redis_url=redis_url, redis_prefix=prefix)
    with Memory.open(tmp_path / "store.duckdb", embedder="hashing", config=config) as mem:
        dog = mem.add(acme, "User's dog's name is Rex", layer="user", identifiers=U1).memory
        tea = mem.add(acme, "User prefers green tea", layer="user", identifiers=U1).memory
        kept = mem.add(acme, "User lives in Lisbon", layer="user", identifiers=U1).memory
        keys = {m.id: _key(mem, "acme", m.content_hash) for m in (dog, tea, kept)}
        assert all(rclient.exists(k) for k in keys.values())

        out = mem.forget(acme, "forget my dog's name", identifiers=U1)
        assert out.memory_ids == [dog.id]
        assert not rclient.exists(keys[dog.id])

        assert mem.delete(acme, tea.id).success
        assert not rclient.exists(keys[tea.id])
        assert rclient.exists(keys[kept.id])  # other content keeps its cached vector
        assert mem.bulk_delete(acme, [kept.id]).deleted == 1
        assert not rclient.exists(keys[kept.id])
