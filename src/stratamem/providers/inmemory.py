"""In-memory provider for tests and notebooks: same contract as DuckDB, nothing persisted."""

from __future__ import annotations

import builtins
import copy
import threading
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from ..embeddings.base import Vector
from ..layers import scope_key
from ..model import MemoryEntry, ProviderCapabilities
from .base import (
    ACTIVE,
    ListPage,
    ListQuery,
    MemoryProvider,
    ScoredEntry,
    SearchPage,
    SearchQuery,
    StoreInfo,
)

MAX_CONTENT_LENGTH = 32_000


class InMemoryProvider(MemoryProvider):
    name = "inmemory"
    version = "1"

    def __init__(self, *, max_content_length: int = MAX_CONTENT_LENGTH) -> None:
        super().__init__()
        self.max_content_length = max_content_length
        self._rows: dict[tuple[str, str], MemoryEntry] = {}
        self._vectors: dict[tuple[str, str], Vector] = {}
        self._cache: dict[tuple[str, str, str], Vector] = {}
        self._lock = threading.RLock()
        self._dims = 0
        self._model = ""

    def initialize(self, embedding_model: str, dimensions: int) -> StoreInfo:
        from ..errors import ErrorCode, MemoryError

        with self._lock:
            if self._model and (self._model, self._dims) != (embedding_model, dimensions):
                raise MemoryError(
                    ErrorCode.CONFIGURATION_ERROR,
                    f"store holds {self._dims}-dimensional embeddings of {self._model!r}; the embedder "
                    f"{embedding_model!r} produces {dimensions}",
                    operation="open",
                    details={"store_dimensions": self._dims, "embedder_dimensions": dimensions},
                )
            self._model, self._dims = embedding_model, dimensions
        return StoreInfo(embedding_model=embedding_model, dimensions=dimensions, schema_version=1)

    def shutdown(self) -> None:
        return None

    def ping(self) -> None:
        return None

    def capabilities(self) -> ProviderCapabilities:
        return ProviderCapabilities(
            vector_search=True,
            keyword_search=False,
            embedding_dimensions=self._dims,
            distance_metrics=["cosine"],
            bulk_operations=True,
            transactions=True,
            max_content_length=self.max_content_length,
            persistent=False,
        )

    @staticmethod
    def _live(entry: MemoryEntry, now: datetime, statuses: tuple[str, ...] = ACTIVE,
              include_expired: bool = False) -> bool:
        if entry.status not in statuses:
            return False
        return include_expired or entry.expires_at is None or entry.expires_at > now

    def _public(self, entry: MemoryEntry, with_embedding: bool) -> MemoryEntry:
        vec = self._vectors[(entry.tenant_id, entry.id)]
        return entry.model_copy(update={"embedding": [float(x) for x in vec] if with_embedding else None}, deep=True)

    def add(self, entries: Sequence[MemoryEntry], *, cache_model: str | None = None) -> None:
        with self._lock:
            staged = {(e.tenant_id, e.id): e for e in entries}
            for hook in self.write_hooks:
                hook.after_add(None, entries)
            for key, e in staged.items():
                self._vectors[key] = np.asarray(e.embedding, dtype=np.float32)
                self._rows[key] = e.model_copy(update={"embedding": None}, deep=True)
                if cache_model is not None:
                    self._cache.setdefault((e.tenant_id, cache_model, e.content_hash), self._vectors[key])

    def get(self, tenant_id: str, memory_id: str, now: datetime, *, include_embedding: bool = False,
            statuses: tuple[str, ...] = ACTIVE) -> MemoryEntry | None:
        with self._lock:
            entry = self._rows.get((tenant_id, memory_id))
            if entry is None or not self._live(entry, now, statuses):
                return None
            return self._public(entry, include_embedding)

    def update(self, entry: MemoryEntry, previous: MemoryEntry) -> bool:
        key = (entry.tenant_id, entry.id)
        with self._lock:
            current = self._rows.get(key)
            if current is None or current.version != previous.version:
                return False
            for hook in self.write_hooks:
                hook.after_update(None, entry, previous)
            if entry.embedding is not None:
                self._vectors[key] = np.asarray(entry.embedding, dtype=np.float32)
            self._rows[key] = entry.model_copy(update={"embedding": None}, deep=True)
            return True

    def delete(self, tenant_id: str, ids: Sequence[str]) -> builtins.list[str]:
        with self._lock:
            existing = [i for i in dict.fromkeys(ids) if (tenant_id, i) in self._rows]
            if not existing:
                return []
            for hook in self.write_hooks:
                hook.after_delete(None, tenant_id, existing)
            hashes = {self._rows[(tenant_id, i)].content_hash for i in existing}
            for i in existing:
                del self._rows[(tenant_id, i)]
                del self._vectors[(tenant_id, i)]
            still = {e.content_hash for (t, _), e in self._rows.items() if t == tenant_id}
            for key in [k for k in self._cache if k[0] == tenant_id and k[2] in hashes - still]:
                del self._cache[key]
            return existing

    def _scoped(self, tenant_id: str, scope_layer: str | None, scope: str | None) -> builtins.list[MemoryEntry]:
        out = []
        for (t, _), e in self._rows.items():
            if t != tenant_id:
                continue
            if scope_layer is not None and (e.layer.value != scope_layer or scope_key(e.layer, e.identifiers) != scope):
                continue
            out.append(e)
        return out

    def list(self, query: ListQuery) -> ListPage:
        with self._lock:
            layer = query.scope.layer.value if query.scope else None
            key = query.scope.key if query.scope else None
            rows = [
                e for e in self._scoped(query.tenant_id, layer, key)
                if self._live(e, query.now, query.statuses, query.include_expired)
                and (query.predicate is None or query.predicate(e.metadata))
            ]
            rows.sort(key=lambda e: (e.created_at, e.id))
            after = query.after
            rows_after = rows if after is None else [e for e in rows if (e.created_at, e.id) > after]
            page = [self._public(e, False) for e in rows_after[: query.limit]]
            return ListPage(entries=page, total=len(rows), has_more=len(rows_after) > query.limit)

    def search(self, query: SearchQuery) -> SearchPage:
        with self._lock:
            rows = [
                e for e in self._scoped(query.tenant_id, query.scope.layer.value, query.scope.key)
                if self._live(e, query.now)
            ]
            if not rows:
                return SearchPage(hits=[], total=0)
            matrix = np.vstack([self._vectors[(e.tenant_id, e.id)] for e in rows])
            cos = matrix @ np.asarray(query.vector, dtype=np.float32)
            scores = np.clip((1.0 + cos) / 2.0, 0.0, 1.0)
            order = sorted(range(len(rows)), key=lambda i: (-float(scores[i]), rows[i].id))
            hits: list[ScoredEntry] = []
            total = 0
            for i in order:
                if scores[i] < query.min_score:
                    break
                if query.predicate is not None and not query.predicate(rows[i].metadata):
                    continue
                total += 1
                if len(hits) < query.limit:
                    hits.append(ScoredEntry(self._public(rows[i], query.include_embedding), float(scores[i])))
            return SearchPage(hits=hits, total=total)

    def count_by_layer(self, tenant_id: str, now: datetime) -> dict[str, int]:
        with self._lock:
            counts: dict[str, int] = {}
            for e in self._scoped(tenant_id, None, None):
                if self._live(e, now):
                    counts[e.layer.value] = counts.get(e.layer.value, 0) + 1
            return dict(sorted(counts.items()))

    def iter_entries(self, tenant_id: str, *, batch_size: int = 500) -> Iterator[MemoryEntry]:
        with self._lock:
            rows = sorted(self._scoped(tenant_id, None, None), key=lambda e: (e.created_at, e.id))
            out = [self._public(e, True) for e in rows]
        yield from out

    def tenants(self) -> builtins.list[str]:
        with self._lock:
            return sorted({t for t, _ in self._rows})

    def cache_get(self, tenant_id: str, model_id: str, hashes: Sequence[str]) -> dict[str, Vector]:
        with self._lock:
            return {h: self._cache[(tenant_id, model_id, h)] for h in hashes if (tenant_id, model_id, h) in self._cache}

    def cache_put(self, tenant_id: str, model_id: str, items: dict[str, Vector]) -> None:
        with self._lock:
            for h, v in items.items():
                self._cache.setdefault((tenant_id, model_id, h), np.asarray(v, dtype=np.float32))

    # -------------------------------------------------------------------- hygiene and governance
    _policies: dict[str, dict[str, Any]]
    _events: builtins.list[dict[str, Any]]

    def _hygiene_state(self) -> None:
        if "_policies" not in self.__dict__:
            self._policies = {}
            self._events = []

    def get_tenant_policy(self, tenant_id: str) -> dict[str, Any] | None:
        with self._lock:
            self._hygiene_state()
            policy = self._policies.get(tenant_id)
            return copy.deepcopy(policy) if policy is not None else None

    def put_tenant_policy(self, tenant_id: str, policy: Mapping[str, Any], updated_at: datetime) -> None:
        with self._lock:
            self._hygiene_state()
            self._policies[tenant_id] = copy.deepcopy(dict(policy))

    def append_memory_events(self, events: Sequence[Mapping[str, Any]]) -> None:
        with self._lock:
            self._hygiene_state()
            self._events.extend(copy.deepcopy(dict(e)) for e in events)

    def count_memory_events(self, tenant_id: str, since: datetime | None = None) -> dict[str, int]:
        with self._lock:
            self._hygiene_state()
            counts: dict[str, int] = {}
            for e in self._events:
                if e["tenant_id"] == tenant_id and (since is None or e["ts"] >= since):
                    for key in (e["event"], f"{e['event']}.{e.get('outcome') or 'ok'}"):
                        counts[key] = counts.get(key, 0) + 1
            return counts

    def count_user_memories(self, tenant_id: str, user_id: str, now: datetime, *,
                            exclude_ids: Sequence[str] = (), tx: Any = None) -> int:
        with self._lock:
            skip = set(exclude_ids)
            return sum(1 for e in self._scoped(tenant_id, None, None)
                       if e.identifiers.user_id == user_id and e.id not in skip and self._live(e, now))
