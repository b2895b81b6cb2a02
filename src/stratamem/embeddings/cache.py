"""Content-hash embedding cache: the same content never reaches the model twice.

Levels, looked up in order: a small in-process LRU, then Redis shared by every process when
configured (:mod:`.redis_cache`), then the persistent store (the provider's ``embedding_cache``
table) that survives restarts; the model only for what none of them has. A hit at a later level
fills the earlier ones; new vectors go to all of them. Keys are (tenant, model, content hash): a
cache shared across tenants would reveal through ``embedding_generated`` that another tenant stored
the same text. Lookups are counted in ``stratamem_embedding_cache_lookups_total{level, result}``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

import numpy as np

from ..retry import RetryConfig, call_with_retry
from . import metrics
from .base import Embedder, Matrix, Vector, content_hash

K = TypeVar("K")


class EmbeddingCacheStore(Protocol):
    def cache_get(self, tenant_id: str, model_id: str, hashes: Sequence[str]) -> dict[str, Vector]: ...

    def cache_put(self, tenant_id: str, model_id: str, items: dict[str, Vector]) -> None: ...


class SharedEmbeddingCache(Protocol):
    """A cache shared between processes (Redis): never raises, a failure is a miss."""

    def get_many(self, tenant_id: str, model_id: str, hashes: Sequence[str], dimensions: int) -> dict[str, Vector]: ...

    def put_many(self, tenant_id: str, model_id: str, items: dict[str, Vector]) -> None: ...

    def delete_many(self, tenant_id: str, model_id: str, hashes: Sequence[str]) -> None: ...


class _LRU:
    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._data: OrderedDict[tuple[str, ...], Vector] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, ...]) -> Vector | None:
        with self._lock:
            value = self._data.get(key)
            if value is not None:
                self._data.move_to_end(key)
            return value

    def put(self, key: tuple[str, ...], value: Vector) -> None:
        if self._capacity <= 0:
            return
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self._capacity:
                self._data.popitem(last=False)

    def discard(self, predicate: Callable[[tuple[str, ...]], bool]) -> None:
        with self._lock:
            for key in [k for k in self._data if predicate(k)]:
                del self._data[key]


class EmbeddingService:
    """Embeds contents through the cache and queries through an LRU, with retries."""

    def __init__(
        self,
        embedder: Embedder,
        store: EmbeddingCacheStore | None,
        retry: RetryConfig,
        *,
        lru_size: int = 4096,
        shared: SharedEmbeddingCache | None = None,
    ) -> None:
        self.embedder = embedder
        self.store = store
        #: Cache shared with other processes (Redis), consulted before the store.
        self.shared = shared
        self.retry = retry
        self._contents = _LRU(lru_size)
        self._queries = _LRU(lru_size)
        #: Number of texts actually sent to the model (tests and metrics read it).
        self.model_calls = 0

    @property
    def model_id(self) -> str:
        return self.embedder.model_id

    def _embed(self, texts: list[str], operation: str, *, queries: bool = False) -> Matrix:
        def run() -> Matrix:
            return self.embedder.embed_queries(texts) if queries else self.embedder.embed(texts)

        matrix = call_with_retry(run, operation, self.retry)
        self.model_calls += len(texts)
        return matrix

    def embed_contents(
        self,
        tenant_id: str,
        texts: Sequence[str],
        operation: str = "add",
        *,
        persist: bool = True,
        before_model: Callable[[], object] | None = None,
    ) -> tuple[Matrix, list[bool]]:
        """Vectors for ``texts`` and, per text, whether the model had to be called.

        ``persist=False`` leaves writing new vectors to the persistent store to the caller (the add
        path records them in the same transaction as the memory rows). ``before_model`` is called
        once the caches have been read, right before the model runs (or before returning, when
        every vector was cached): the add path starts the work it overlaps with the model there, so
        that work does not compete with the cache lookups.
        """
        model = self.model_id
        hashes = [content_hash(t) for t in texts]
        found: dict[str, Vector] = {}
        for h in set(hashes):
            hit = self._contents.get((tenant_id, model, h))
            if hit is not None:
                found[h] = hit
        distinct = list(dict.fromkeys(hashes))
        missing = [h for h in distinct if h not in found]
        metrics.CACHE_LOOKUPS.labels("lru", "hit").inc(len(distinct) - len(missing))
        metrics.CACHE_LOOKUPS.labels("lru", "miss").inc(len(missing))
        if missing and self.shared is not None:
            for h, vec in self.shared.get_many(tenant_id, model, missing, self.embedder.dimensions).items():
                found[h] = vec
                self._contents.put((tenant_id, model, h), vec)
            missing = [h for h in missing if h not in found]
        if missing and self.store is not None:
            from_store = self.store.cache_get(tenant_id, model, missing)
            metrics.CACHE_LOOKUPS.labels("store", "hit").inc(len(from_store))
            metrics.CACHE_LOOKUPS.labels("store", "miss").inc(len(missing) - len(from_store))
            for h, vec in from_store.items():
                found[h] = vec
                self._contents.put((tenant_id, model, h), vec)
            if from_store and self.shared is not None:
                self.shared.put_many(tenant_id, model, from_store)
        to_embed: dict[str, str] = {}
        for h, text in zip(hashes, texts, strict=True):
            if h not in found and h not in to_embed:
                to_embed[h] = text
        generated_hashes: set[str] = set()
        if before_model is not None:
            before_model()
        if to_embed:
            matrix = self._embed(list(to_embed.values()), operation)
            new = {h: matrix[i] for i, h in enumerate(to_embed)}
            if self.store is not None and persist:
                self.store.cache_put(tenant_id, model, new)
            if self.shared is not None:
                self.shared.put_many(tenant_id, model, new)
            for h, vec in new.items():
                self._contents.put((tenant_id, model, h), vec)
            found.update(new)
            generated_hashes = set(new)
        dims = self.embedder.dimensions
        out = np.vstack([found[h] for h in hashes]) if hashes else np.zeros((0, dims), dtype=np.float32)
        seen: set[str] = set()
        flags: list[bool] = []
        for h in hashes:  # only the first occurrence of a new text counts as generated
            flags.append(h in generated_hashes and h not in seen)
            seen.add(h)
        return out.astype(np.float32, copy=False), flags

    def embed_query(self, text: str, operation: str = "search") -> Vector:
        key = (self.model_id, text)
        hit = self._queries.get(key)
        if hit is not None:
            return hit
        vec: Vector = self._embed([text], operation, queries=True)[0]
        self._queries.put(key, vec)
        return vec

    def embed_queries(self, texts: Sequence[str], operation: str = "search") -> list[Vector]:
        """Query vectors of ``texts`` (``embed_query`` of each), the ones not cached embedded in one call."""
        found = {text: self._queries.get((self.model_id, text)) for text in texts}
        missing = [text for text, vec in found.items() if vec is None]
        if missing:
            for text, vec in zip(missing, self._embed(missing, operation, queries=True), strict=True):
                self._queries.put((self.model_id, text), vec)
                found[text] = vec
        return [vec for text in texts if (vec := found[text]) is not None]

    def embed_text(self, text: str, operation: str = "generate_embedding") -> Vector:
        """The vector a memory of ``text`` is stored with (``Embedder.embed``, not a query's vector); LRU-cached."""
        key = ("text", self.model_id, text)
        hit = self._queries.get(key)
        if hit is not None:
            return hit
        vec: Vector = self._embed([text], operation)[0]
        self._queries.put(key, vec)
        return vec

    def forget(self, tenant_id: str, hashes: Sequence[str]) -> None:
        """Drop cache entries of deleted content: in this process and in the shared (Redis) cache."""
        gone = set(hashes)
        self._contents.discard(lambda key: key[0] == tenant_id and key[2] in gone)
        if self.shared is not None and gone:
            self.shared.delete_many(tenant_id, self.model_id, sorted(gone))
