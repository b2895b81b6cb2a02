"""The Redis embedding cache shared by Memory instances and processes (real Redis, real DuckDB files)."""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import numpy as np
import redis
from prometheus_client import REGISTRY

from stratamem import Memory, TenantContext
from stratamem.config import MemoryConfig
from stratamem.embeddings import content_hash
from stratamem.embeddings.redis_cache import RedisEmbeddingCache

SRC = str(Path(__file__).resolve().parents[2] / "src")
ACME = TenantContext(tenant_id="acme", principal="u1")
GLOBEX = TenantContext(tenant_id="globex", principal="u1")
U1 = {"user_id": "u1"}
TEXT = "The deploy pipeline runs on Fridays at 16:00 UTC"


def lookups(level: str, result: str) -> float:
    return (
        REGISTRY.get_sample_value("stratamem_embedding_cache_lookups_total", {"level": level, "result": result}) or 0.0
    )


def shared_of(mem: Memory) -> RedisEmbeddingCache:
    shared = mem.engine.embeddings.shared
    assert isinstance(shared, RedisEmbeddingCache)
    return shared


def test_second_instance_gets_a_redis_hit(
    tmp_path: Path, open_mem: Callable[..., Memory], redis_url: str, prefix: str, rclient: redis.Redis
) -> None:
    cfg = MemoryConfig(redis_url=redis_url, redis_prefix=prefix, embedding_cache_ttl_s=600)
    first = open_mem(tmp_path / "a.duckdb", config=cfg)
    second = open_mem(tmp_path / "b.duckdb", config=cfg)  # another store: only Redis is shared
    assert first.add(ACME, TEXT, layer="user", identifiers=U1).embedding_generated is True
    assert first.engine.embeddings.model_calls == 1

    hits, misses = lookups("redis", "hit"), lookups("redis", "miss")
    out = second.add(ACME, TEXT, layer="user", identifiers=U1)
    assert out.embedding_generated is False
    assert second.engine.embeddings.model_calls == 0 and shared_of(second).hits == 1
    assert lookups("redis", "hit") == hits + 1 and lookups("redis", "miss") == misses

    # the stored vector is the model's, byte for byte; key = prefix + model + tenant hash + content hash
    key = shared_of(first).key("acme", first.engine.embeddings.model_id, content_hash(TEXT))
    tenant_digest = hashlib.sha256(b"acme").hexdigest()[:32]
    assert (
        key == f"{prefix}:emb:{first.engine.embeddings.model_id}:{tenant_digest}:"
        f"{hashlib.sha256(TEXT.encode()).hexdigest()}"
    )
    raw = rclient.get(key)
    assert isinstance(raw, bytes)
    expected = first.engine.embeddings.embedder.embed([TEXT])[0]
    assert np.array_equal(np.frombuffer(raw, dtype="<f4"), expected)
    assert 0 < int(rclient.ttl(key)) <= 600
    model = second.engine.embeddings.model_id  # the second store recorded the cached vector with its row
    stored = second.engine.provider.cache_get("acme", model, [content_hash(TEXT)])
    assert np.allclose(stored[content_hash(TEXT)], expected)
    # search in the second store finds it (the cached vector is a real one)
    assert [r.memory.id for r in second.search(ACME, TEXT, identifiers=U1).results] == [out.memory.id]


def test_cache_keys_are_per_tenant(
    tmp_path: Path, open_mem: Callable[..., Memory], redis_url: str, prefix: str, rclient: redis.Redis
) -> None:
    cfg = MemoryConfig(redis_url=redis_url, redis_prefix=prefix)
    first = open_mem(tmp_path / "a.duckdb", config=cfg)
    second = open_mem(tmp_path / "b.duckdb", config=cfg)
    first.add(ACME, TEXT, layer="user", identifiers=U1)
    # globex storing the same text learns nothing about acme: the model runs again
    assert second.add(GLOBEX, TEXT, layer="user", identifiers=U1).embedding_generated is True
    assert second.engine.embeddings.model_calls == 1
    keys = [k.decode() for k in rclient.scan_iter(match=f"{prefix}:emb:*")]
    assert len(keys) == 2 and not any("acme" in k or "globex" in k for k in keys)


def test_store_hit_fills_redis_and_lru_comes_first(
    tmp_path: Path, open_mem: Callable[..., Memory], redis_url: str, prefix: str, rclient: redis.Redis
) -> None:
    plain = open_mem(tmp_path / "a.duckdb")  # no Redis: the vector is in the store's cache only
    plain.add(ACME, TEXT, layer="user", identifiers=U1)
    plain.close()
    reopened = open_mem(tmp_path / "a.duckdb", config=MemoryConfig(redis_url=redis_url, redis_prefix=prefix))
    store_hits = lookups("store", "hit")
    assert reopened.add(ACME, TEXT, layer="user", identifiers={"user_id": "u2"}).embedding_generated is False
    assert lookups("store", "hit") == store_hits + 1 and reopened.engine.embeddings.model_calls == 0
    assert len(list(rclient.scan_iter(match=f"{prefix}:emb:*"))) == 1  # promoted to Redis for the others
    redis_lookups = lookups("redis", "hit") + lookups("redis", "miss")
    lru_hits = lookups("lru", "hit")
    reopened.add(ACME, TEXT, layer="user", identifiers={"user_id": "u3"})
    assert lookups("lru", "hit") == lru_hits + 1
    assert lookups("redis", "hit") + lookups("redis", "miss") == redis_lookups  # the LRU answered first


def test_second_process_gets_a_redis_hit(
    tmp_path: Path, redis_url: str, prefix: str, open_mem: Callable[..., Memory]
) -> None:
    script = textwrap.dedent(f"""
        import json, sys
        from stratamem import Memory, TenantContext
        mem = Memory.open(sys.argv[1], embedder="hashing")  # Redis from STRATAMEM_REDIS_URL / _PREFIX
        t = TenantContext(tenant_id="acme", principal="u1")
        out = mem.add(t, {TEXT!r}, layer="user", identifiers={{"user_id": "u1"}})
        print(json.dumps({{"generated": out.embedding_generated, "calls": mem.engine.embeddings.model_calls,
                          "hits": mem.engine.embeddings.shared.hits}}))
        mem.close()
    """)
    env = dict(os.environ)
    env.update(
        {
            "PYTHONPATH": SRC + os.pathsep + env.get("PYTHONPATH", ""),
            "STRATAMEM_REDIS_URL": redis_url,
            "STRATAMEM_REDIS_PREFIX": prefix,
        }
    )

    def run(db: str) -> str:
        res = subprocess.run(
            [sys.executable, "-c", script, db], env=env, capture_output=True, text=True, timeout=120, check=False
        )
        assert res.returncode == 0, res.stderr
        return res.stdout.strip().splitlines()[-1]

    assert run(str(tmp_path / "p1.duckdb")) == '{"generated": true, "calls": 1, "hits": 0}'
    assert run(str(tmp_path / "p2.duckdb")) == '{"generated": false, "calls": 0, "hits": 1}'
    # and this process, a third one, too
    mem = open_mem(tmp_path / "p3.duckdb", config=MemoryConfig(redis_url=redis_url, redis_prefix=prefix))
    assert mem.add(ACME, TEXT, layer="user", identifiers=U1).embedding_generated is False


def test_redis_down_embeds_anyway(open_mem: Callable[..., Memory]) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mem = open_mem(config=MemoryConfig(redis_url=f"redis://127.0.0.1:{port}/0"))
    errors = lookups("redis", "error")
    out = mem.add(ACME, TEXT, layer="user", identifiers=U1)
    assert out.embedding_generated is True and mem.engine.embeddings.model_calls == 1
    assert lookups("redis", "error") == errors + 1 and shared_of(mem).breaker.is_open
    assert [r.memory.id for r in mem.search(ACME, TEXT, identifiers=U1).results] == [out.memory.id]
    # the store's own cache still works while Redis is down
    assert mem.add(ACME, TEXT, layer="user", identifiers={"user_id": "u2"}).embedding_generated is False
