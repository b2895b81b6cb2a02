"""The shared embedding cache on Redis: every process pointing at one Redis reuses the others' vectors.

Key: ``{prefix}:emb:{model_id}:{sha256(tenant_id)[:32]}:{sha256(content)}`` (the two hashes are
fixed-length hex, so the key is unambiguous whatever the model id contains); value: the vector as
little-endian float32 bytes; every entry expires after ``ttl_s`` (``SET … EX``).

**Tenant in the key.** The embedding of a text does not depend on who stored it, so a
tenant-neutral key would save model calls. It is per tenant anyway: a shared entry would make
``embedding_generated`` (and the latency of an add) an oracle telling tenant B that *some* tenant
already stored exactly this text — the same reason the provider's ``embedding_cache`` table and the
in-process LRU are keyed by tenant. The tenant id is hashed, so Redis holds no tenant names and no
content, only vectors.

Deleting a memory (``delete``, ``bulk_delete``, the write gate's forget) removes the vector of its
content from Redis at once (:meth:`RedisEmbeddingCache.delete_many`, called by
``EmbeddingService.forget``); if Redis is unreachable then, the TTL still bounds how long it stays.

Redis errors never fail an embedding: lookups count as ``error`` and miss, writes are skipped, and
Redis is left alone for a cooldown (see :class:`stratamem.coordination.redisconn.Breaker`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..coordination.redisconn import Breaker, connect, redis_errors
from . import metrics
from .base import Vector

if TYPE_CHECKING:
    from redis import Redis

DEFAULT_TTL_S = 86_400


class RedisEmbeddingCache:
    """``get_many``/``put_many`` of content-hash → vector, per tenant and model."""

    def __init__(
        self, client: Redis, prefix: str = "stratamem", *, ttl_s: int = DEFAULT_TTL_S, cooldown: float = 5.0
    ) -> None:
        self.client = client
        self.prefix = prefix
        self.ttl_s = ttl_s
        self.breaker = Breaker("embedding cache", cooldown=cooldown)
        self._errors = redis_errors()
        #: Distinct hashes found in Redis by this instance (tests read it).
        self.hits = 0

    @classmethod
    def from_url(cls, url: str, prefix: str = "stratamem", *, ttl_s: int = DEFAULT_TTL_S) -> RedisEmbeddingCache:
        return cls(connect(url), prefix, ttl_s=ttl_s)

    def key(self, tenant_id: str, model_id: str, chash: str) -> str:
        tenant = hashlib.sha256(tenant_id.encode("utf-8")).hexdigest()[:32]
        digest = chash.removeprefix("sha256:")
        return f"{self.prefix}:emb:{model_id}:{tenant}:{digest}"

    def get_many(self, tenant_id: str, model_id: str, hashes: Sequence[str], dimensions: int) -> dict[str, Vector]:
        """Vectors found for ``hashes`` (content hashes as :func:`~.base.content_hash` makes them)."""
        if not hashes:
            return {}
        if not self.breaker.available():
            metrics.CACHE_LOOKUPS.labels("redis", "error").inc(len(hashes))
            return {}
        try:
            raw: list[Any] = self.client.mget([self.key(tenant_id, model_id, h) for h in hashes])
        except self._errors as exc:
            self.breaker.failed(exc)
            metrics.CACHE_LOOKUPS.labels("redis", "error").inc(len(hashes))
            return {}
        self.breaker.succeeded()
        found: dict[str, Vector] = {}
        for h, value in zip(hashes, raw, strict=True):
            if isinstance(value, bytes) and len(value) == 4 * dimensions:  # anything else: a miss
                found[h] = np.frombuffer(value, dtype="<f4").astype(np.float32)
        self.hits += len(found)
        metrics.CACHE_LOOKUPS.labels("redis", "hit").inc(len(found))
        metrics.CACHE_LOOKUPS.labels("redis", "miss").inc(len(hashes) - len(found))
        return found

    def delete_many(self, tenant_id: str, model_id: str, hashes: Sequence[str]) -> None:
        """Drop the vectors of these content hashes (content that was deleted)."""
        if not hashes or not self.breaker.available():
            return
        try:
            self.client.delete(*[self.key(tenant_id, model_id, h) for h in hashes])
        except self._errors as exc:
            self.breaker.failed(exc)
            return
        self.breaker.succeeded()

    def put_many(self, tenant_id: str, model_id: str, items: Mapping[str, Vector]) -> None:
        if not items or not self.breaker.available():
            return
        try:
            pipe = self.client.pipeline(transaction=False)
            for h, vec in items.items():
                pipe.set(self.key(tenant_id, model_id, h), np.asarray(vec, dtype="<f4").tobytes(), ex=self.ttl_s)
            pipe.execute()
        except self._errors as exc:
            self.breaker.failed(exc)
            return
        self.breaker.succeeded()
