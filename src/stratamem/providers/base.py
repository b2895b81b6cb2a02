"""The provider trait: what every storage backend implements.

A provider is storage and nothing else: it persists fully-built entries, answers scoped vector
queries and keeps the embedding cache. Validation, governance, embedding and merging live in the
engine, so every provider behaves the same and one conformance suite covers them all.

Scores are similarities in [0, 1]: ``(1 + cosine) / 2`` of unit vectors (see :func:`cosine_to_score`).

Hybrid search (lexical contract). When ``SearchQuery.lexical_weight`` ``w`` > 0, a provider fuses
the dense score with a lexical one, ``score = dense + w · lex · (1 - dense)`` (so the score stays in
[0, 1] and is never below the dense score), where ``lex`` ∈ [0, 1) is the square root of the BM25
of the memory for the distinct terms of ``SearchQuery.text`` divided by ``Σ idf · (k1 + 1)`` over the
query terms present in the scope. Terms, BM25 constants and the fusion are defined once in
``stratamem.retrieval.lexical`` (``tokenize``, ``query_terms``, ``bm25_normalized``, ``fuse_scores``);
a provider with a native full-text engine (e.g. PostgreSQL ``tsvector``) may compute ``lex`` with it as long as it is in
[0, 1], grows with rare matched terms and is maintained in the write transaction (a memory is
lexically searchable as soon as its add commits). Tenant/layer/scope and the metadata filter apply
before the top-k, as for dense search. A provider without lexical support ignores the weight and
reports ``keyword_search=False`` in its capabilities.
"""

from __future__ import annotations

import builtins
import json
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any, Protocol, TypeVar

import numpy as np
import numpy.typing as npt
from pydantic import TypeAdapter

from ..embeddings.base import Vector
from ..errors import ErrorCode, MemoryError
from ..filters import Predicate
from ..keys_model import ApiKeyRecord
from ..model import (
    HealthCheckResult,
    Layer,
    LayerIdentifiers,
    MemoryEntry,
    Provenance,
    ProviderCapabilities,
)
from ..retrieval.centering import Centroid

ACTIVE: tuple[str, ...] = ("active",)

_DATETIME: TypeAdapter[datetime] = TypeAdapter(datetime)

#: Set on the defaults of optional concerns that only raise "not supported": ``contracts.implements``
#: does not count a provider that keeps such a default as meeting the concern's protocol.
UNSUPPORTED_MARK = "__stratamem_unsupported__"

_F = TypeVar("_F", bound=Callable[..., Any])


def _unsupported_default(fn: _F) -> _F:
    setattr(fn, UNSUPPORTED_MARK, True)
    return fn


def cosine_to_score(cosine: float) -> float:
    """Map a cosine similarity in [-1, 1] to the score in [0, 1] used everywhere in stratamem."""
    return min(1.0, max(0.0, (1.0 + cosine) / 2.0))


def score_to_cosine(score: float) -> float:
    return 2.0 * score - 1.0


@dataclass(frozen=True)
class Scope:
    """One layer scope: the layer plus its canonical identifier key (see ``layers.scope_key``)."""

    layer: Layer
    key: str


@dataclass
class SearchQuery:
    tenant_id: str
    scope: Scope
    vector: Vector
    text: str
    limit: int
    min_score: float
    now: datetime
    predicate: Predicate | None = None
    include_embedding: bool = False
    #: With ``include_embedding``: the caller reads the hits' vectors only (search ranks with them
    #: and returns the entries without). A provider holding them as float32 rows may give each hit
    #: its row as ``ScoredEntry.vector`` and leave ``entry.embedding`` empty, rather than build a
    #: list of floats per hit that the caller converts back; any other provider fills the entries.
    vectors_only: bool = False
    #: Weight ``w`` of the lexical (BM25) half of the fused score; 0 = dense only (see module doc).
    lexical_weight: float = 0.0
    #: Force an exact scan where the provider would use an approximate (ANN) index.
    exact: bool = False
    #: Statuses a hit may have: current memories only by default; ``("active", "superseded")`` for history.
    statuses: tuple[str, ...] = ACTIVE


@dataclass
class ScoredEntry:
    entry: MemoryEntry
    score: float
    #: The entry's embedding as a float32 vector, when the provider gave it so
    #: (``SearchQuery.vectors_only``); ``entry.embedding`` is then empty.
    vector: npt.NDArray[np.float32] | None = field(default=None, repr=False, compare=False)
    #: The relevance before query-time boosts (``retrieval/boosts.py``) when they changed ``score``;
    #: None when ``score`` is the relevance.
    relevance: float | None = field(default=None, repr=False, compare=False)


def hit_vector(hit: ScoredEntry) -> npt.NDArray[np.float32] | Sequence[float] | None:
    """A hit's embedding: its float32 ``vector`` when the provider gave one, else the entry's list."""
    return hit.vector if hit.vector is not None else hit.entry.embedding


@dataclass
class SearchPage:
    hits: list[ScoredEntry]
    #: Matches at or above ``min_score`` that pass the filter, before the limit.
    total: int


@dataclass(frozen=True, slots=True)
class ThreadTurn:
    """A memory read around search candidates (``MemoryProvider.thread_turns``): what the lexical
    context of ``retrieval/context.py`` and the search's filters need, and no whole entry."""

    id: str
    #: Its place in its conversation (:func:`thread_place`).
    thread: str
    position: int
    content: str
    #: Dense score ``(1 + cos) / 2`` to the query vector.
    score: float
    #: Aware UTC timestamps (time windows, ``as_of``).
    created_at: datetime
    updated_at: datetime
    #: ``provenance.valid_to`` (``as_of``), aware UTC.
    valid_to: datetime | None
    #: ``provenance.occurred_at`` (the dates a question names), aware UTC.
    occurred_at: datetime | None = None

    @property
    def place(self) -> tuple[str, int]:
        return (self.thread, self.position)


@dataclass
class ListQuery:
    tenant_id: str
    now: datetime
    scope: Scope | None = None
    predicate: Predicate | None = None
    #: Keyset position: return entries strictly after (created_at, id).
    after: tuple[datetime, str] | None = None
    limit: int = 50
    statuses: tuple[str, ...] = ACTIVE
    include_expired: bool = False
    #: Newest first: order by (created_at, id) descending; ``after`` then means "strictly before".
    descending: bool = False
    #: Time window on ``time_field`` (``created_at`` or ``updated_at``): since inclusive, until exclusive.
    since: datetime | None = None
    until: datetime | None = None
    time_field: str = "created_at"
    #: Only entries with an expiry strictly before this (timezone-aware) time; entries that never
    #: expire are left out.
    expires_before: datetime | None = None

    def in_window(self, entry: MemoryEntry) -> bool:
        """True when the entry's ``time_field`` lies in ``[since, until)``."""
        value: datetime = getattr(entry, self.time_field)
        return (self.since is None or value >= self.since) and (self.until is None or value < self.until)

    def expiring(self, entry: MemoryEntry) -> bool:
        """True when there is no ``expires_before`` bound, or the entry expires before it."""
        if self.expires_before is None:
            return True
        expiry = entry.expires_at
        if expiry is None:
            return False
        return (expiry if expiry.tzinfo else expiry.replace(tzinfo=UTC)) < self.expires_before

    def past(self, position: tuple[datetime, str]) -> bool:
        """True when ``position`` comes after the keyset ``after`` in this query's order."""
        if self.after is None:
            return True
        return position < self.after if self.descending else position > self.after


@dataclass
class ListPage:
    entries: list[MemoryEntry]
    total: int
    has_more: bool


@dataclass
class StoreInfo:
    embedding_model: str
    dimensions: int
    schema_version: int
    extras: dict[str, Any] = field(default_factory=dict)


class WriteHook(Protocol):
    """Extra writes that must commit or roll back with the memory rows (e.g. the knowledge graph).

    ``tx`` is the provider's open transaction handle (a DuckDB cursor, a psycopg connection, or
    None for the in-memory provider). Raising aborts the whole write.
    """

    def after_add(self, tx: Any, entries: Sequence[MemoryEntry]) -> None: ...

    def after_update(self, tx: Any, entry: MemoryEntry, previous: MemoryEntry) -> None: ...

    def after_delete(self, tx: Any, tenant_id: str, ids: Sequence[str]) -> None: ...


class PreparingWriteHook(WriteHook, Protocol):
    """A write hook that can do the part of its add work needing neither vectors nor the write
    transaction ahead of time, while the engine embeds the batch (see :meth:`MemoryProvider.prepare_add`).

    ``prepare_add`` gets a read handle (a DuckDB cursor; None where the provider has none) and
    returns opaque data, or None to do everything in ``after_add``. ``after_add_prepared`` then runs
    in the transaction instead of ``after_add``, and must write exactly what ``after_add`` would
    have written, re-checking whatever it read outside the transaction, unless ``unchanged``: no
    write was committed to the store since before those reads, so they still hold.
    """

    def prepare_add(self, reader: Any, entries: Sequence[MemoryEntry]) -> Any: ...

    def after_add_prepared(
        self, tx: Any, entries: Sequence[MemoryEntry], prepared: Any, *, unchanged: bool = False
    ) -> None: ...


def _add_key(entries: Sequence[MemoryEntry]) -> tuple[tuple[str, str, str], ...]:
    return tuple((e.tenant_id, e.id, e.content_hash) for e in entries)


@dataclass(frozen=True)
class PreparedAdd:
    """Work of one :meth:`MemoryProvider.add` done ahead by :meth:`MemoryProvider.prepare_add`.

    It is used only for the very entries it was made for (same tenants, ids and content, in the same
    order); anything else is computed in the transaction as usual.
    """

    key: tuple[tuple[str, str, str], ...]
    hooks: dict[int, Any] = field(default_factory=dict)  # id(hook) -> the hook's prepared data
    rows: Any = None  # provider-specific row data without the vectors
    #: the provider's write generation before the hooks read (None: the provider keeps none)
    generation: int | None = None

    def matches(self, entries: Sequence[MemoryEntry]) -> bool:
        return self.key == _add_key(entries)


class MemoryProvider(ABC):
    """Storage backend. Implementations: DuckDB (embedded default), in-memory, PostgreSQL."""

    name: str = "provider"
    version: str = "1"

    def __init__(self) -> None:
        self.write_hooks: list[WriteHook] = []
        #: Called as ``(tenant_id, ids)`` inside the write transaction when memory rows change
        #: outside add/update/delete (access counts, status, expiry): lets read caches (the
        #: knowledge-graph snapshot) forget exactly those rows.
        self.row_listeners: list[Callable[[str, Sequence[str]], None]] = []

    def configure_search_index(
        self, *, enabled: bool = True, ann_threshold: int | None = None, max_rows: int | None = None
    ) -> None:
        """Tune an in-process search index, where the provider keeps one (the embedded DuckDB store)."""
        return None

    def rows_replaced(self, tenant_id: str) -> None:
        """A tenant's ``memories`` rows were rewritten by SQL outside the provider's methods (snapshot
        restore): in-process mirrors of them must be rebuilt."""
        return None

    def search_index_stats(self) -> dict[str, Any] | None:
        """Partitions and rows of the in-process search index, None where the provider has none."""
        return None

    def warm_search_index(self, timeout: float | None = None) -> int:
        """Load the largest scopes into the in-process search index (as many rows as it keeps) and
        wait up to ``timeout`` seconds for their HNSW graphs, so a server's first searches are as
        fast as later ones; returns the rows loaded (0 where the provider has no such index)."""
        return 0

    def _rows_changed(self, tenant_id: str, ids: Sequence[str]) -> None:
        for listener in self.row_listeners:
            listener(tenant_id, ids)

    # -- lifecycle -------------------------------------------------------------------------------
    @abstractmethod
    def initialize(self, embedding_model: str, dimensions: int) -> StoreInfo:
        """Open/create the store for this embedding model; CONFIGURATION_ERROR on a mismatch."""

    @abstractmethod
    def shutdown(self) -> None: ...

    def memory_usage(self) -> dict[str, int]:
        """Bytes of memory the store's database engine holds in this process, by the engine's own
        tags (DuckDB: ``duckdb_memory()``, its buffer pool by use); empty when the store does not say
        (a server database: its memory is not this process's)."""
        return {}

    def health_check(self) -> HealthCheckResult:
        start = time.perf_counter()
        try:
            self.ping()
            status: Any = "healthy"
            message = None
        except Exception as exc:
            status, message = "unhealthy", f"{type(exc).__name__}: {exc}"
        latency = (time.perf_counter() - start) * 1000
        return HealthCheckResult.model_validate(
            {
                "status": status,
                "latency_ms": round(latency, 3),
                "components": {"storage": {"status": status, "message": message}},
            }
        )

    @abstractmethod
    def ping(self) -> None:
        """Cheapest round trip to storage; raises when it is unusable."""

    @abstractmethod
    def capabilities(self) -> ProviderCapabilities: ...

    # -- memory rows -----------------------------------------------------------------------------
    @abstractmethod
    def add(
        self, entries: Sequence[MemoryEntry], *, cache_model: str | None = None, prepared: PreparedAdd | None = None
    ) -> None:
        """Insert entries (with embeddings) atomically, running write hooks in the same transaction.

        With ``cache_model``, each entry's vector becomes findable by :meth:`cache_get` under that
        model from the same transaction on (one commit per add instead of two): recorded in the
        embedding cache, or, where the provider's ``cache_get`` reads stored memories' vectors for
        the store's own model (DuckDB), kept once in the memory row. ``prepared`` is what
        :meth:`prepare_add` returned for these entries; it only saves work, never changes the result.
        """

    def prepare_add(self, entries: Sequence[MemoryEntry]) -> PreparedAdd | None:
        """Do the work of ``add(entries)`` that needs neither the vectors nor the write transaction.

        The engine calls it while the batch is being embedded (on another thread), so that work
        overlaps with the model. The entries must then reach :meth:`add` unchanged apart from their
        embedding. None when there is nothing to prepare.
        """
        hooks = [h for h in self.write_hooks if hasattr(h, "prepare_add") and hasattr(h, "after_add_prepared")]
        rows = self._prepare_rows(entries)
        if not hooks and rows is None:
            return None
        data: dict[int, Any] = {}
        generation = self._write_generation()  # before the reads: a commit after it shows as a change
        with self._prepare_reader() as reader:
            for hook in hooks:
                value = hook.prepare_add(reader, entries)
                if value is not None:
                    data[id(hook)] = value
        return PreparedAdd(key=_add_key(entries), hooks=data, rows=rows, generation=generation)

    def _write_generation(self) -> int | None:
        """A counter of the committed writes of the store (all but bookkeeping appends), where the
        provider sees every one of them (an embedded store); None otherwise. Equal values before a
        read and in a later transaction mean the read still holds."""
        return None

    def _prepare_rows(self, entries: Sequence[MemoryEntry]) -> Any:
        """Provider row data of ``entries`` without their vectors (None: built in ``add``)."""
        return None

    @contextmanager
    def grouped_appends(self) -> Iterator[None]:
        """Within this block (on this thread), the small bookkeeping appends of one operation (access
        statistics, ``memory_events`` rows) may be written together, in one transaction, when it
        ends or right after (DuckDB: by its append worker), instead of one transaction each; every
        later read or write of stored rows sees them. Nested blocks join the outermost. A provider
        without such appends ignores it."""
        yield

    @contextmanager
    def _prepare_reader(self) -> Iterator[Any]:
        """The read handle given to ``PreparingWriteHook.prepare_add`` (None: the provider has none)."""
        yield None

    def _run_add_hooks(self, tx: Any, entries: Sequence[MemoryEntry], prepared: PreparedAdd | None) -> None:
        """Every write hook's add work, in the open transaction, using what was prepared for it."""
        ready = prepared.hooks if prepared is not None and prepared.matches(entries) else {}
        unchanged = (
            prepared is not None and prepared.generation is not None and prepared.generation == self._write_generation()
        )
        for hook in self.write_hooks:
            data = ready.get(id(hook))
            if data is not None:
                hook.after_add_prepared(tx, entries, data, unchanged=unchanged)  # type: ignore[attr-defined]
            else:
                hook.after_add(tx, entries)

    @abstractmethod
    def get(
        self,
        tenant_id: str,
        memory_id: str,
        now: datetime,
        *,
        include_embedding: bool = False,
        statuses: tuple[str, ...] = ACTIVE,
    ) -> MemoryEntry | None:
        """One live entry of this tenant, or None (missing, other tenant, expired, wrong status)."""

    @abstractmethod
    def update(self, entry: MemoryEntry, previous: MemoryEntry) -> bool:
        """Replace ``previous`` with ``entry`` iff the stored version is still ``previous.version``.

        Returns False when another writer got there first (the caller decides: CONFLICT or retry).
        ``entry.embedding`` None means "keep the stored vector".
        """

    def add_replacing(
        self,
        entries: Sequence[MemoryEntry],
        replacements: Sequence[tuple[MemoryEntry, MemoryEntry]],
        *,
        cache_model: str | None = None,
        prepared: PreparedAdd | None = None,
    ) -> builtins.list[bool]:
        """:meth:`add` the entries, then :meth:`update` each ``(new, previous)`` of ``replacements``
        (the older memories the new ones make out of date, marked superseded), in that order.

        ``new`` differs from ``previous`` in its status, provenance, version, etag, update and
        deletion times only; a store may write just those (DuckDB does, so that the accesses it
        logged since ``previous`` was read are not overwritten).

        A store with transactions (DuckDB, PostgreSQL) does both in one: a new memory is never
        stored without its replacements, nor a replacement without it, and the write pays one
        commit. A replacement may name an entry of the same call (added first). This default, for a
        store without transactions, calls the two in turn.

        Returns:
            Per replacement, whether it was applied (False: its stored version is no longer
            ``previous.version``, another writer changed it).
        """
        self.add(entries, cache_model=cache_model, prepared=prepared)
        return [self.update(new, previous) for new, previous in replacements]

    @abstractmethod
    def delete(self, tenant_id: str, ids: Sequence[str]) -> builtins.list[str]:
        """Hard-delete these ids of this tenant atomically; returns the ids that existed."""

    @abstractmethod
    def list(self, query: ListQuery) -> ListPage: ...

    @abstractmethod
    def search(self, query: SearchQuery) -> SearchPage:
        """Top ``limit`` entries of one scope by score, filter applied before the cut."""

    def scope_centroid(self, tenant_id: str, scope: Scope, now: datetime) -> Centroid | None:
        """The centroid of the unit vectors of the scope's current memories
        (``retrieval/centering.py``); None when the store cannot tell (the relevance floor is then
        not applied) or the scope is empty."""
        return None

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
        """The live memories of one scope at these ``(thread, position)`` places (see
        :func:`thread_place`), each as a :class:`ThreadTurn` with its dense score ``(1 + cos) / 2``
        to ``vector``, in no particular order.

        Search reads the turns around its candidates with this (``retrieval/context.py``), many per
        search: only the columns the lexical context and the search's filters need are read, no
        whole entry is built (:meth:`scope_entries` reads the few that reach a page). Only what a
        search of ``scope`` could return is read: the same statuses, unexpired rows, the metadata
        ``predicate`` (the search's filter) applied; a deleted or erased memory is never returned.
        Like the search it serves, the read need not wait for queued bookkeeping writes (access
        statistics, events). This default pages through the scope with :meth:`list` and reads the
        vectors with :meth:`get`; the providers select the places directly.

        Args:
            tenant_id: The tenant.
            scope: Layer and scope key searched.
            places: ``(thread, position)`` pairs wanted.
            vector: The query embedding.
            now: The search's clock (expired rows are left out).
            statuses: Statuses a returned memory may have (the search's).
            predicate: The search's metadata filter (None: every memory).

        Returns:
            The turns found with their dense scores; places with no memory are absent.
        """
        wanted = set(places)
        if not wanted:
            return []
        ids: builtins.list[str] = []
        after: tuple[datetime, str] | None = None
        while True:
            page = self.list(
                ListQuery(
                    tenant_id=tenant_id,
                    now=now,
                    scope=scope,
                    after=after,
                    limit=500,
                    statuses=statuses,
                    predicate=predicate,
                )
            )
            ids += [e.id for e in page.entries if thread_place(e) in wanted]
            if not page.has_more or not page.entries:
                break
            after = (page.entries[-1].created_at, page.entries[-1].id)
        found = [self.get(tenant_id, i, now, include_embedding=True, statuses=statuses) for i in ids]
        return [
            turn
            for e in found
            if e is not None and e.embedding and (turn := thread_turn(e, dense_score(vector, e.embedding))) is not None
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
        """The live memories of one scope with these ids, without their embedding, in the order of
        ``ids`` (absent ones left out): the same statuses and expiry as :meth:`thread_turns`, and,
        like it, a read that need not wait for queued bookkeeping writes. Search reads with this
        the turns of :meth:`thread_turns` that reach its page. This default pages through the scope
        with :meth:`list`; the providers select the ids directly.
        """
        wanted = set(ids)
        if not wanted:
            return []
        found: dict[str, MemoryEntry] = {}
        after: tuple[datetime, str] | None = None
        while True:
            page = self.list(
                ListQuery(tenant_id=tenant_id, now=now, scope=scope, after=after, limit=500, statuses=statuses)
            )
            found |= {e.id: e for e in page.entries if e.id in wanted}
            if not page.has_more or not page.entries:
                break
            after = (page.entries[-1].created_at, page.entries[-1].id)
        return [found[i] for i in dict.fromkeys(ids) if i in found]

    @abstractmethod
    def count_by_layer(self, tenant_id: str, now: datetime) -> dict[str, int]: ...

    def count_live_by_layer(self, now: datetime) -> dict[str, int]:
        """Live memories per layer summed over every tenant (the operator's storage-size gauge).

        The default counts tenant by tenant; a provider may answer in one query."""
        totals: dict[str, int] = {}
        for tenant_id in self.tenants():
            for layer, n in self.count_by_layer(tenant_id, now).items():
                totals[layer] = totals.get(layer, 0) + n
        return dict(sorted(totals.items()))

    @abstractmethod
    def iter_entries(self, tenant_id: str, *, batch_size: int = 500) -> Iterator[MemoryEntry]:
        """Every stored entry of a tenant (any status), oldest first, for export."""

    @abstractmethod
    def tenants(self) -> builtins.list[str]: ...

    # -- embedding cache -------------------------------------------------------------------------
    @abstractmethod
    def cache_get(self, tenant_id: str, model_id: str, hashes: Sequence[str]) -> dict[str, Vector]: ...

    @abstractmethod
    def cache_put(self, tenant_id: str, model_id: str, items: dict[str, Vector]) -> None: ...

    # -- optional concerns (providers/contracts.py): defaults that raise "not supported" ----------
    def _unsupported(self, feature: str, operation: str = "", *, plural: bool = False) -> MemoryError:
        """CONFIGURATION_ERROR for an optional concern this provider does not implement."""
        verb = "are" if plural else "is"
        return MemoryError(
            ErrorCode.CONFIGURATION_ERROR,
            f"{feature} {verb} not supported by provider {self.name}",
            operation=operation,
        )

    # -- lifecycle (importance, status, TTL, feedback) --------------------------------------------
    @_unsupported_default
    def record_access(
        self, tenant_id: str, importance: Mapping[str, float], now: datetime, *, counts: Mapping[str, int] | None = None
    ) -> int:
        """One batched write: ``access_count += counts[id]`` (1 when ``counts`` is None),
        ``last_accessed_at = now``, ``importance = value`` for each id of ``importance``. Does not bump
        version/etag (an access is not an edit)."""
        raise self._unsupported("lifecycle")

    @_unsupported_default
    def set_status(self, tenant_id: str, ids: Sequence[str], status: str, now: datetime) -> builtins.list[str]:
        """Set ``status`` (active|archived|deleted) of these ids; ``deleted_at`` = now for deleted, else
        NULL. Returns the ids that exist. Does not bump version/etag."""
        raise self._unsupported("lifecycle")

    @_unsupported_default
    def set_expiry(self, tenant_id: str, ids: Sequence[str], expires_at: datetime | None) -> int:
        """Set ``expires_at`` of these ids (any status); returns the number of rows changed."""
        raise self._unsupported("lifecycle")

    @_unsupported_default
    def purge_candidates(
        self, tenant_id: str, *, expired_before: datetime, deleted_before: datetime, limit: int = 10_000
    ) -> builtins.list[str]:
        """Ids expired before ``expired_before`` or soft-deleted before ``deleted_before``."""
        raise self._unsupported("lifecycle")

    @_unsupported_default
    def add_feedback(
        self, tenant_id: str, ids: Sequence[str], reward: float, now: datetime
    ) -> dict[str, tuple[int, float]]:
        """Record one reward signal per id; returns ``{id: (signals, reward_sum)}`` after the write."""
        raise self._unsupported("lifecycle")

    @_unsupported_default
    def feedback_stats(self, tenant_id: str) -> dict[str, tuple[int, float]]:
        """``{memory_id: (signals, reward_sum)}`` of every memory of the tenant with feedback."""
        raise self._unsupported("lifecycle")

    @_unsupported_default
    def clear_feedback(self, tenant_id: str, ids: Sequence[str]) -> None:
        raise self._unsupported("lifecycle")

    # -- server feature: API keys and cross-tenant audit (non-abstract; see stratamem.server) ----
    @_unsupported_default
    def api_key_put(self, record: ApiKeyRecord) -> None:
        """Store a new API key record (hash only, never the key)."""
        raise self._unsupported("API keys", "auth", plural=True)

    @_unsupported_default
    def api_key_get(self, key_id: str) -> ApiKeyRecord | None:
        """The key with this public id (any tenant: the credential names the tenant), or None."""
        raise self._unsupported("API keys", "auth", plural=True)

    @_unsupported_default
    def api_key_list(self, tenant_id: str) -> builtins.list[ApiKeyRecord]:
        raise self._unsupported("API keys", "auth", plural=True)

    @_unsupported_default
    def api_key_revoke(self, tenant_id: str, key_id: str, at: datetime) -> bool:
        """Mark a key of this tenant revoked; False when the tenant has no such live key."""
        raise self._unsupported("API keys", "auth", plural=True)

    @_unsupported_default
    def id_exists_in_other_tenant(self, tenant_id: str, memory_id: str) -> bool:
        """Audit only: does ``memory_id`` exist under a tenant other than ``tenant_id``? Never exposed."""
        raise self._unsupported("API keys", "auth", plural=True)

    # -- hygiene and governance (optional; DuckDB, in-memory and PostgreSQL implement them) -------
    @_unsupported_default
    def get_tenant_policy(self, tenant_id: str) -> dict[str, Any] | None:
        """The tenant's stored governance policy (a JSON object), or None."""
        raise self._unsupported("hygiene", "hygiene")

    @_unsupported_default
    def put_tenant_policy(self, tenant_id: str, policy: Mapping[str, Any], updated_at: datetime) -> None:
        raise self._unsupported("hygiene", "hygiene")

    @_unsupported_default
    def append_memory_events(self, events: Sequence[Mapping[str, Any]]) -> None:
        """Append rows to the memory_events log (keys: tenant_id, id, ts, event, memory_id, layer,
        principal, code, outcome, details)."""
        raise self._unsupported("hygiene", "hygiene")

    @_unsupported_default
    def delete_memory_events(self, tenant_id: str, memory_ids: Sequence[str]) -> int:
        """Delete the tenant's memory_events rows of these memories (the right to be forgotten); the
        number deleted."""
        raise self._unsupported("hygiene", "hygiene")

    @_unsupported_default
    def prune_memory_events(self, tenant_id: str, events: Sequence[str], before: datetime) -> int:
        """Delete the tenant's memory_events rows of these ``events`` kinds logged before ``before``
        (retention of the ``access`` history, run by maintenance); the number deleted."""
        raise self._unsupported("hygiene", "hygiene")

    @_unsupported_default
    def count_memory_events(self, tenant_id: str, since: datetime | None = None) -> dict[str, int]:
        """Logged events of a tenant (optionally since a time) counted per ``event`` and per
        ``event.outcome`` (e.g. ``search`` and ``search.hit``)."""
        raise self._unsupported("hygiene", "hygiene")

    @_unsupported_default
    def list_memory_events(
        self, tenant_id: str, *, memory_id: str | None = None, events: Sequence[str] | None = None, limit: int = 50
    ) -> builtins.list[dict[str, Any]]:
        """The tenant's newest memory_events rows (same keys as appended; ``details`` a dict), newest
        first; only rows of ``memory_id`` and/or of these ``events`` kinds when given."""
        raise self._unsupported("hygiene", "hygiene")

    @_unsupported_default
    def daily_memory_events(self, tenant_id: str, since: datetime) -> builtins.list[tuple[date, str, int]]:
        """``(UTC day, event, count)`` of the tenant's events logged at or after ``since``."""
        raise self._unsupported("hygiene", "hygiene")

    @_unsupported_default
    def count_user_memories(
        self, tenant_id: str, user_id: str, now: datetime, *, exclude_ids: Sequence[str] = (), tx: Any = None
    ) -> int:
        """Live memories whose identifiers carry this user_id (any layer); ``tx`` = open write transaction."""
        raise self._unsupported("hygiene", "hygiene")

    # -- embedding (the provider's hook to turn text into vectors) ----------------------------------
    _embed_fn: Any = None

    def attach_embedder(self, embed_fn: Any) -> None:
        """The engine hands the provider its embedding function (``text -> vector``)."""
        self._embed_fn = embed_fn

    def generate_embedding(self, text: str) -> builtins.list[float]:
        if self._embed_fn is None:
            raise RuntimeError("no embedder attached; open the store through stratamem.Memory")
        return [float(x) for x in self._embed_fn(text)]


# --------------------------------------------------------------------------------- shared helpers


def dense_score(query: Vector | Sequence[float], vector: Vector | Sequence[float]) -> float:
    """``(1 + cos) / 2`` of two vectors, clamped to [0, 1] (the dense score of every provider)."""
    q = np.asarray(query, dtype=np.float32)
    m = np.asarray(vector, dtype=np.float32)
    # norms as sqrt(v @ v), not np.linalg.norm: the same float without releasing the GIL (centering._row_dots)
    cosine = float(q @ m) / max(float(np.sqrt(q @ q) * np.sqrt(m @ m)), 1e-12)
    return min(1.0, max(0.0, (1.0 + cosine) / 2.0))


def thread_place(entry: MemoryEntry) -> tuple[str, int] | None:
    """A memory's place in a conversation: ``(provenance.thread_id or "", provenance.position)``,
    or None when it carries no integer position (``retrieval/context.py``)."""
    prov = entry.provenance
    position = getattr(prov, "position", None)
    thread = getattr(prov, "thread_id", None)
    if isinstance(position, int) and not isinstance(position, bool):
        return (str(thread or ""), position)
    return None


def thread_turn(entry: MemoryEntry, score: float) -> ThreadTurn | None:
    """The :class:`ThreadTurn` of an entry with its dense score (None without a place)."""
    place = thread_place(entry)
    if place is None:
        return None
    valid_to = entry.provenance.valid_to
    occurred_at = entry.provenance.occurred_at
    return ThreadTurn(
        id=entry.id,
        thread=place[0],
        position=place[1],
        content=entry.content,
        score=score,
        created_at=aware_utc(entry.created_at),
        updated_at=aware_utc(entry.updated_at),
        valid_to=aware_utc(valid_to) if valid_to is not None else None,
        occurred_at=aware_utc(occurred_at) if occurred_at is not None else None,
    )


def provenance_time(value: str | datetime | None) -> datetime | None:
    """A timestamp of a stored provenance (``valid_to``, ``occurred_at``), read as :class:`Provenance` reads it,
    aware UTC (a naive one is UTC)."""
    return None if value is None else aware_utc(_DATETIME.validate_python(value))


def place_keys(places: Iterable[tuple[str, int]]) -> list[str]:
    """``thread + chr(31) + position`` of each place, sorted: the key a provider's select of
    ``thread_turns`` compares with the provenance's ``coalesce(thread_id, '') || chr(31) || position``
    (a superset of the places when a thread id holds chr(31); the rows are then checked with
    :func:`thread_place`)."""
    return sorted({f"{thread}\x1f{position}" for thread, position in places})


def to_utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def to_naive_utc(value: datetime | None) -> datetime | None:
    """Storage form of timestamps: naive UTC (DuckDB TIMESTAMP)."""
    if value is None:
        return None
    return value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value


def aware_utc(value: datetime) -> datetime:
    """A stored timestamp as an aware UTC datetime (a naive one is UTC)."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def dump_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def entry_from_parts(
    *,
    id: str,
    tenant_id: str,
    layer: str,
    content: str,
    content_hash: str,
    identifiers: Mapping[str, Any] | str,
    metadata: Mapping[str, Any] | str,
    provenance: Mapping[str, Any] | str,
    tier: str | None,
    status: str,
    version: int,
    etag: str,
    importance: float,
    access_count: int,
    created_at: datetime,
    updated_at: datetime,
    expires_at: datetime | None,
    last_accessed_at: datetime | None,
    deleted_at: datetime | None,
    embedding: Sequence[float] | None,
) -> MemoryEntry:
    """Build an entry from stored columns without re-running validation on trusted data."""

    def load(v: Mapping[str, Any] | str) -> dict[str, Any]:
        return dict(json.loads(v)) if isinstance(v, str) else dict(v)

    return MemoryEntry.model_construct(
        id=id,
        tenant_id=tenant_id,
        content=content,
        layer=Layer(layer),
        identifiers=LayerIdentifiers.model_construct(**load(identifiers)),
        metadata=load(metadata),
        tier=tier,
        created_at=aware_utc(created_at),
        updated_at=aware_utc(updated_at),
        expires_at=to_utc(expires_at),
        version=int(version),
        etag=etag,
        importance=float(importance),
        access_count=int(access_count),
        last_accessed_at=to_utc(last_accessed_at),
        status=status,  # type: ignore[arg-type]  # trusted: written by the provider
        deleted_at=to_utc(deleted_at),
        provenance=Provenance.model_validate(load(provenance)),
        content_hash=content_hash,
        embedding=[float(x) for x in embedding] if embedding is not None else None,
    )


def identifiers_json(entry: MemoryEntry) -> str:
    return dump_json(entry.identifiers.model_dump(exclude_none=True))


def provenance_json(entry: MemoryEntry) -> str:
    return dump_json(entry.provenance.model_dump(exclude_none=True))
