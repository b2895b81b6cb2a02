"""In-memory provider for tests and notebooks: same contract as DuckDB, nothing persisted."""

from __future__ import annotations

import builtins
import copy
import dataclasses
import threading
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, date, datetime
from typing import Any

import numpy as np

from ..embeddings.base import Vector
from ..errors import ErrorCode, MemoryError
from ..filters import Predicate
from ..layers import scope_key
from ..model import MemoryEntry, ProviderCapabilities
from ..retrieval.centering import Centroid, mean_of_unit_rows
from ..retrieval.lexical import bm25_normalized, fuse_scores, query_terms, term_counts
from .base import (
    ACTIVE,
    ListPage,
    ListQuery,
    MemoryProvider,
    PreparedAdd,
    Scope,
    ScoredEntry,
    SearchPage,
    SearchQuery,
    StoreInfo,
    ThreadTurn,
    dense_score,
    thread_place,
    thread_turn,
)
from .contracts import concern_flags

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
        #: Lexical index: term counts per (tenant, id), updated with the rows (hybrid search).
        self._terms: dict[tuple[str, str], dict[str, int]] = {}
        self._lock = threading.RLock()
        self._dims = 0
        self._model = ""
        self._feedback: dict[tuple[str, str], tuple[int, float]] = {}

    def initialize(self, embedding_model: str, dimensions: int) -> StoreInfo:
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
            keyword_search=True,
            embedding_dimensions=self._dims,
            distance_metrics=["cosine"],
            bulk_operations=True,
            transactions=True,
            max_content_length=self.max_content_length,
            persistent=False,
            **concern_flags(self),
        )

    @staticmethod
    def _live(
        entry: MemoryEntry, now: datetime, statuses: tuple[str, ...] = ACTIVE, include_expired: bool = False
    ) -> bool:
        if entry.status not in statuses:
            return False
        return include_expired or entry.expires_at is None or entry.expires_at > now

    def _public(self, entry: MemoryEntry, with_embedding: bool) -> MemoryEntry:
        vec = self._vectors[(entry.tenant_id, entry.id)]
        return entry.model_copy(update={"embedding": [float(x) for x in vec] if with_embedding else None}, deep=True)

    def add(
        self, entries: Sequence[MemoryEntry], *, cache_model: str | None = None, prepared: PreparedAdd | None = None
    ) -> None:
        with self._lock:
            staged = {(e.tenant_id, e.id): e for e in entries}
            self._run_add_hooks(None, entries, prepared)
            for key, e in staged.items():
                self._vectors[key] = np.asarray(e.embedding, dtype=np.float32)
                self._rows[key] = e.model_copy(update={"embedding": None}, deep=True)
                self._terms[key] = dict(term_counts(e.content))
                if cache_model is not None:
                    self._cache.setdefault((e.tenant_id, cache_model, e.content_hash), self._vectors[key])

    def add_replacing(
        self,
        entries: Sequence[MemoryEntry],
        replacements: Sequence[tuple[MemoryEntry, MemoryEntry]],
        *,
        cache_model: str | None = None,
        prepared: PreparedAdd | None = None,
    ) -> builtins.list[bool]:
        with self._lock:  # one step for every reader: the lock is re-entrant
            keys = [(e.tenant_id, e.id) for e in entries] + [(n.tenant_id, n.id) for n, _ in replacements]
            saved = {key: (self._rows.get(key), self._vectors.get(key), self._terms.get(key)) for key in keys}
            try:
                self.add(entries, cache_model=cache_model, prepared=prepared)
                return [self._replace(new, previous) for new, previous in replacements]
            except BaseException:  # as a rolled-back transaction: the rows as they were
                for key, (row, vector, terms) in saved.items():
                    if row is None or vector is None:
                        self._rows.pop(key, None)
                        self._vectors.pop(key, None)
                        self._terms.pop(key, None)
                    else:
                        self._rows[key], self._vectors[key] = row, vector
                        self._terms[key] = terms if terms is not None else {}
                raise

    def _replace(self, entry: MemoryEntry, previous: MemoryEntry) -> bool:
        """A replacement of :meth:`add_replacing`: the stored row's status, provenance, version,
        etag, update and deletion times become ``entry``'s, the rest stays as stored."""
        key = (entry.tenant_id, entry.id)
        current = self._rows.get(key)
        if current is None or current.version != previous.version:
            return False
        for hook in self.write_hooks:
            hook.after_update(None, entry, previous)
        fields = ("status", "provenance", "version", "etag", "updated_at", "deleted_at")
        self._rows[key] = current.model_copy(update={f: getattr(entry, f) for f in fields}, deep=True)
        return True

    def get(
        self,
        tenant_id: str,
        memory_id: str,
        now: datetime,
        *,
        include_embedding: bool = False,
        statuses: tuple[str, ...] = ACTIVE,
    ) -> MemoryEntry | None:
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
            self._terms[key] = dict(term_counts(entry.content))
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
                self._terms.pop((tenant_id, i), None)
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
                e
                for e in self._scoped(query.tenant_id, layer, key)
                if self._live(e, query.now, query.statuses, query.include_expired)
                and query.in_window(e)
                and query.expiring(e)
                and (query.predicate is None or query.predicate(e.metadata))
            ]
            rows.sort(key=lambda e: (e.created_at, e.id), reverse=query.descending)
            rows_after = [e for e in rows if query.past((e.created_at, e.id))]
            page = [self._public(e, False) for e in rows_after[: query.limit]]
            return ListPage(entries=page, total=len(rows), has_more=len(rows_after) > query.limit)

    def scope_centroid(self, tenant_id: str, scope: Scope, now: datetime) -> Centroid | None:
        with self._lock:
            rows = [
                self._vectors[(e.tenant_id, e.id)]
                for e in self._scoped(tenant_id, scope.layer.value, scope.key)
                if self._live(e, now, ACTIVE) and (e.tenant_id, e.id) in self._vectors
            ]
        return mean_of_unit_rows(np.vstack(rows)) if rows else None

    def thread_turns(
        self,
        tenant_id: str,
        scope: Scope,
        places: Sequence[tuple[str, int]],
        vector: Vector,
        now: datetime,
        *,
        statuses: tuple[str, ...] = ACTIVE,
        predicate: Predicate | None = None,
    ) -> builtins.list[ThreadTurn]:
        """See ``Provider.thread_turns``: one pass over the scope, as a search makes."""
        wanted = set(places)
        if not wanted:
            return []
        with self._lock:
            return [
                turn
                for e in self._scoped(tenant_id, scope.layer.value, scope.key)
                if thread_place(e) in wanted
                and self._live(e, now, statuses)
                and (e.tenant_id, e.id) in self._vectors
                and (predicate is None or predicate(e.metadata))
                and (turn := thread_turn(e, dense_score(vector, self._vectors[(e.tenant_id, e.id)]))) is not None
            ]

    def scope_entries(
        self,
        tenant_id: str,
        scope: Scope,
        ids: Sequence[str],
        now: datetime,
        *,
        statuses: tuple[str, ...] = ACTIVE,
    ) -> builtins.list[MemoryEntry]:
        """See ``Provider.scope_entries``."""
        with self._lock:
            found = [self._rows.get((tenant_id, i)) for i in dict.fromkeys(ids)]
            return [
                self._public(e, False)
                for e in found
                if e is not None
                and self._live(e, now, statuses)
                and e.layer == scope.layer
                and scope_key(e.layer, e.identifiers) == scope.key
            ]

    def search(self, query: SearchQuery) -> SearchPage:
        with self._lock:
            rows = [
                e
                for e in self._scoped(query.tenant_id, query.scope.layer.value, query.scope.key)
                if self._live(e, query.now, query.statuses)
            ]
            if not rows:
                return SearchPage(hits=[], total=0)
            matrix = np.vstack([self._vectors[(e.tenant_id, e.id)] for e in rows])
            cos = matrix @ np.asarray(query.vector, dtype=np.float32)
            scores = np.clip((1.0 + cos) / 2.0, 0.0, 1.0)
            terms = query_terms(query.text) if query.lexical_weight > 0 else []
            if terms:  # BM25 statistics over the whole scope, as in the DuckDB postings table
                docs = {}
                for e in self._scoped(query.tenant_id, query.scope.layer.value, query.scope.key):
                    counts = self._terms.get((e.tenant_id, e.id), {})
                    if counts:
                        docs[e.id] = (counts, sum(counts.values()))
                lex = bm25_normalized(terms, docs)
                scores = np.asarray(
                    [
                        fuse_scores(float(scores[i]), lex.get(e.id, 0.0), query.lexical_weight)
                        for i, e in enumerate(rows)
                    ],
                    dtype=np.float64,
                )
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

    # ---------------------------------------------------------------------------- lifecycle
    def record_access(
        self, tenant_id: str, importance: Mapping[str, float], now: datetime, *, counts: Mapping[str, int] | None = None
    ) -> int:
        with self._lock:
            n = 0
            for mid, value in importance.items():
                e = self._rows.get((tenant_id, mid))
                if e is not None:
                    step = 1 if counts is None else int(counts.get(mid, 1))
                    self._rows[(tenant_id, mid)] = e.model_copy(
                        update={
                            "access_count": e.access_count + step,
                            "last_accessed_at": now,
                            "importance": float(value),
                        }
                    )
                    n += 1
            return n

    def set_status(self, tenant_id: str, ids: Sequence[str], status: str, now: datetime) -> builtins.list[str]:
        with self._lock:
            found = [i for i in dict.fromkeys(ids) if (tenant_id, i) in self._rows]
            for i in found:
                e = self._rows[(tenant_id, i)]
                self._rows[(tenant_id, i)] = e.model_copy(
                    update={"status": status, "deleted_at": now if status == "deleted" else None}
                )
            return found

    def set_expiry(self, tenant_id: str, ids: Sequence[str], expires_at: datetime | None) -> int:
        with self._lock:
            found = [i for i in dict.fromkeys(ids) if (tenant_id, i) in self._rows]
            for i in found:
                self._rows[(tenant_id, i)] = self._rows[(tenant_id, i)].model_copy(update={"expires_at": expires_at})
            return len(found)

    def purge_candidates(
        self, tenant_id: str, *, expired_before: datetime, deleted_before: datetime, limit: int = 10_000
    ) -> builtins.list[str]:
        with self._lock:
            out = sorted(
                e.id
                for e in self._scoped(tenant_id, None, None)
                if (e.expires_at is not None and e.expires_at <= expired_before)
                or (e.status == "deleted" and e.deleted_at is not None and e.deleted_at <= deleted_before)
            )
            return out[:limit]

    def add_feedback(
        self, tenant_id: str, ids: Sequence[str], reward: float, now: datetime
    ) -> dict[str, tuple[int, float]]:
        with self._lock:
            out: dict[str, tuple[int, float]] = {}
            for i in dict.fromkeys(ids):
                n, total = self._feedback.get((tenant_id, i), (0, 0.0))
                out[i] = self._feedback[(tenant_id, i)] = (n + 1, total + float(reward))
            return out

    def feedback_stats(self, tenant_id: str) -> dict[str, tuple[int, float]]:
        with self._lock:
            return {i: v for (t, i), v in sorted(self._feedback.items()) if t == tenant_id}

    def clear_feedback(self, tenant_id: str, ids: Sequence[str]) -> None:
        with self._lock:
            for i in ids:
                self._feedback.pop((tenant_id, i), None)

    # ------------------------------------------------------------------------- server: API keys
    def _keys(self) -> dict[str, Any]:
        keys: dict[str, Any] = self.__dict__.setdefault("_api_keys", {})
        return keys

    def api_key_put(self, record: Any) -> None:
        with self._lock:
            self._keys()[record.key_id] = record

    def api_key_get(self, key_id: str) -> Any:
        with self._lock:
            return self._keys().get(key_id)

    def api_key_list(self, tenant_id: str) -> builtins.list[Any]:
        with self._lock:
            return sorted((r for r in self._keys().values() if r.tenant_id == tenant_id), key=lambda r: r.created_at)

    def api_key_revoke(self, tenant_id: str, key_id: str, at: datetime) -> bool:
        with self._lock:
            rec = self._keys().get(key_id)
            if rec is None or rec.tenant_id != tenant_id or rec.revoked_at is not None:
                return False
            self._keys()[key_id] = dataclasses.replace(rec, revoked_at=at)
            return True

    def id_exists_in_other_tenant(self, tenant_id: str, memory_id: str) -> bool:
        with self._lock:
            return any(mid == memory_id and t != tenant_id for t, mid in self._rows)

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

    def delete_memory_events(self, tenant_id: str, memory_ids: Sequence[str]) -> int:
        wanted = set(memory_ids)
        with self._lock:
            self._hygiene_state()
            kept = [e for e in self._events if not (e["tenant_id"] == tenant_id and e.get("memory_id") in wanted)]
            removed = len(self._events) - len(kept)
            self._events[:] = kept
        return removed

    def prune_memory_events(self, tenant_id: str, events: Sequence[str], before: datetime) -> int:
        kinds = set(events)
        with self._lock:
            self._hygiene_state()
            kept = [
                e
                for e in self._events
                if not (e["tenant_id"] == tenant_id and e["event"] in kinds and e["ts"] < before)
            ]
            removed = len(self._events) - len(kept)
            self._events[:] = kept
        return removed

    def count_memory_events(self, tenant_id: str, since: datetime | None = None) -> dict[str, int]:
        with self._lock:
            self._hygiene_state()
            counts: dict[str, int] = {}
            for e in self._events:
                if e["tenant_id"] == tenant_id and (since is None or e["ts"] >= since):
                    for key in (e["event"], f"{e['event']}.{e.get('outcome') or 'ok'}"):
                        counts[key] = counts.get(key, 0) + 1
            return counts

    def list_memory_events(
        self, tenant_id: str, *, memory_id: str | None = None, events: Sequence[str] | None = None, limit: int = 50
    ) -> builtins.list[dict[str, Any]]:
        with self._lock:
            self._hygiene_state()
            kinds = set(events) if events is not None else None
            rows = [
                e
                for e in self._events
                if e["tenant_id"] == tenant_id
                and (memory_id is None or e.get("memory_id") == memory_id)
                and (kinds is None or e["event"] in kinds)
            ]
            rows.sort(key=lambda e: (e["ts"], e["id"]), reverse=True)
            return [copy.deepcopy(e) for e in rows[:limit]]

    def daily_memory_events(self, tenant_id: str, since: datetime) -> builtins.list[tuple[date, str, int]]:
        with self._lock:
            self._hygiene_state()
            counts: dict[tuple[date, str], int] = {}
            for e in self._events:
                if e["tenant_id"] == tenant_id and e["ts"] >= since:
                    key = (e["ts"].astimezone(UTC).date(), str(e["event"]))
                    counts[key] = counts.get(key, 0) + 1
            return sorted((day, event, n) for (day, event), n in counts.items())

    def count_user_memories(
        self, tenant_id: str, user_id: str, now: datetime, *, exclude_ids: Sequence[str] = (), tx: Any = None
    ) -> int:
        with self._lock:
            skip = set(exclude_ids)
            return sum(
                1
                for e in self._scoped(tenant_id, None, None)
                if e.identifiers.user_id == user_id and e.id not in skip and self._live(e, now)
            )
