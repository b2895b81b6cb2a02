"""The written contracts of a storage provider: one protocol per concern.

:class:`MemoryStore` is what every provider offers (the engine needs nothing else). The other
protocols are optional concerns a provider may meet:

* :class:`LifecycleStore`: access statistics, status, expiry and feedback (decay, pruning, TTL);
* :class:`KeyStore`: API key records of the server;
* :class:`GovernanceStore`: tenant policies, the ``memory_events`` log and per-user counts (hygiene);
* :class:`GraphBackend`: the SQL access the knowledge graph runs its tables and traversals on
  (DuckDB and PostgreSQL);
* :class:`SnapshotSource`: the SQL access S3 snapshots export from and import into.

Features check a provider against the protocol they need (:func:`implements`), never against a
concrete class, and call only the members written here. :class:`~stratamem.providers.base.MemoryProvider`
implements the optional concerns as methods that raise CONFIGURATION_ERROR; :func:`implements`
treats those defaults as "not met", and :func:`concern_flags` turns the result into the flags of
:class:`~stratamem.model.ProviderCapabilities`.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import date, datetime
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ..embeddings.base import Vector
from ..keys_model import ApiKeyRecord
from ..model import HealthCheckResult, MemoryEntry, ProviderCapabilities
from .base import (
    ACTIVE,
    UNSUPPORTED_MARK,
    ListPage,
    ListQuery,
    PreparedAdd,
    SearchPage,
    SearchQuery,
    StoreInfo,
    WriteHook,
)

__all__ = [
    "GovernanceStore",
    "GraphBackend",
    "KeyStore",
    "LifecycleStore",
    "MemoryStore",
    "SnapshotSource",
    "concern_flags",
    "implements",
]


@runtime_checkable
class MemoryStore(Protocol):
    """The core store: rows of memories, scoped vector search and the embedding cache."""

    name: str
    write_hooks: builtins.list[WriteHook]
    row_listeners: builtins.list[Callable[[str, Sequence[str]], None]]

    def initialize(self, embedding_model: str, dimensions: int) -> StoreInfo:
        """Open or create the store for this embedding model; CONFIGURATION_ERROR on a mismatch."""
        ...

    def shutdown(self) -> None:
        """Release the store (idempotent)."""
        ...

    def ping(self) -> None:
        """Cheapest round trip to storage; raises when it is unusable."""
        ...

    def health_check(self) -> HealthCheckResult: ...

    def capabilities(self) -> ProviderCapabilities: ...

    def add(
        self, entries: Sequence[MemoryEntry], *, cache_model: str | None = None, prepared: PreparedAdd | None = None
    ) -> None:
        """Insert entries (with embeddings) atomically, running write hooks in the same transaction."""
        ...

    def prepare_add(self, entries: Sequence[MemoryEntry]) -> PreparedAdd | None:
        """The work of ``add(entries)`` that needs neither the vectors nor the write transaction."""
        ...

    def grouped_appends(self) -> AbstractContextManager[None]:
        """Bookkeeping appends of one operation written together (see ``MemoryProvider``)."""
        ...

    def get(
        self,
        tenant_id: str,
        memory_id: str,
        now: datetime,
        *,
        include_embedding: bool = False,
        statuses: tuple[str, ...] = ACTIVE,
    ) -> MemoryEntry | None: ...

    def update(self, entry: MemoryEntry, previous: MemoryEntry) -> bool:
        """Replace ``previous`` with ``entry`` iff the stored version is still ``previous.version``."""
        ...

    def add_replacing(
        self,
        entries: Sequence[MemoryEntry],
        replacements: Sequence[tuple[MemoryEntry, MemoryEntry]],
        *,
        cache_model: str | None = None,
        prepared: PreparedAdd | None = None,
    ) -> builtins.list[bool]:
        """``add(entries)`` then ``update(new, previous)`` per replacement, in one transaction where
        the store has them; per replacement, whether it was applied."""
        ...

    def delete(self, tenant_id: str, ids: Sequence[str]) -> builtins.list[str]: ...

    def list(self, query: ListQuery) -> ListPage: ...

    def search(self, query: SearchQuery) -> SearchPage: ...

    def count_by_layer(self, tenant_id: str, now: datetime) -> dict[str, int]: ...

    def count_live_by_layer(self, now: datetime) -> dict[str, int]: ...

    def iter_entries(self, tenant_id: str, *, batch_size: int = 500) -> Iterator[MemoryEntry]: ...

    def tenants(self) -> builtins.list[str]: ...

    def cache_get(self, tenant_id: str, model_id: str, hashes: Sequence[str]) -> dict[str, Vector]: ...

    def cache_put(self, tenant_id: str, model_id: str, items: dict[str, Vector]) -> None: ...

    def configure_search_index(
        self, *, enabled: bool = True, ann_threshold: int | None = None, max_rows: int | None = None
    ) -> None: ...

    def rows_replaced(self, tenant_id: str) -> None: ...

    def search_index_stats(self) -> dict[str, Any] | None: ...

    def attach_embedder(self, embed_fn: Any) -> None: ...


@runtime_checkable
class LifecycleStore(Protocol):
    """Importance, access statistics, status, TTL and feedback of memories."""

    def record_access(
        self, tenant_id: str, importance: Mapping[str, float], now: datetime, *, counts: Mapping[str, int] | None = None
    ) -> int: ...

    def set_status(self, tenant_id: str, ids: Sequence[str], status: str, now: datetime) -> builtins.list[str]: ...

    def set_expiry(self, tenant_id: str, ids: Sequence[str], expires_at: datetime | None) -> int: ...

    def purge_candidates(
        self, tenant_id: str, *, expired_before: datetime, deleted_before: datetime, limit: int = 10_000
    ) -> builtins.list[str]: ...

    def add_feedback(
        self, tenant_id: str, ids: Sequence[str], reward: float, now: datetime
    ) -> dict[str, tuple[int, float]]: ...

    def feedback_stats(self, tenant_id: str) -> dict[str, tuple[int, float]]: ...

    def clear_feedback(self, tenant_id: str, ids: Sequence[str]) -> None: ...


@runtime_checkable
class KeyStore(Protocol):
    """API key records (hashes only) and the cross-tenant id audit."""

    def api_key_put(self, record: ApiKeyRecord) -> None: ...

    def api_key_get(self, key_id: str) -> ApiKeyRecord | None: ...

    def api_key_list(self, tenant_id: str) -> builtins.list[ApiKeyRecord]: ...

    def api_key_revoke(self, tenant_id: str, key_id: str, at: datetime) -> bool: ...

    def id_exists_in_other_tenant(self, tenant_id: str, memory_id: str) -> bool: ...


@runtime_checkable
class GovernanceStore(Protocol):
    """Tenant policies, the ``memory_events`` log and per-user memory counts."""

    def get_tenant_policy(self, tenant_id: str) -> dict[str, Any] | None: ...

    def put_tenant_policy(self, tenant_id: str, policy: Mapping[str, Any], updated_at: datetime) -> None: ...

    def append_memory_events(self, events: Sequence[Mapping[str, Any]]) -> None: ...

    def delete_memory_events(self, tenant_id: str, memory_ids: Sequence[str]) -> int: ...

    def prune_memory_events(self, tenant_id: str, events: Sequence[str], before: datetime) -> int: ...

    def count_memory_events(self, tenant_id: str, since: datetime | None = None) -> dict[str, int]: ...

    def list_memory_events(
        self, tenant_id: str, *, memory_id: str | None = None, events: Sequence[str] | None = None, limit: int = 50
    ) -> builtins.list[dict[str, Any]]: ...

    def daily_memory_events(self, tenant_id: str, since: datetime) -> builtins.list[tuple[date, str, int]]: ...

    def count_user_memories(
        self, tenant_id: str, user_id: str, now: datetime, *, exclude_ids: Sequence[str] = (), tx: Any = None
    ) -> int: ...


@runtime_checkable
class SqlStore(Protocol):
    """Direct SQL access to an embedded store's database, shared by the graph and snapshots."""

    name: str

    def read(self, *, appends: bool = True) -> AbstractContextManager[Any]:
        """A cursor for reads that sees every committed write and queued bookkeeping append
        (``appends=False``: tables those appends never touch, without waiting for them)."""
        ...

    def transaction(
        self, *, settle: bool = True, flush: bool = True, bookkeeping: bool = False
    ) -> AbstractContextManager[Any]:
        """A serialised write transaction: commit on success, roll back on any error."""
        ...

    def new_cursor(self) -> Any:
        """A cursor of its own on the store's database, outside the provider's locks; the caller closes it."""
        ...


@runtime_checkable
class GraphBackend(Protocol):
    """What the knowledge graph needs of a store (DuckDB and PostgreSQL meet it).

    The graph's statements are written once in DuckDB's SQL dialect; ``graph_dialect`` tells the
    few places that differ (bulk inserts, the recursive search, the catalogue) which to use, and the
    cursors handed out here accept that dialect (``providers/graph_sql.py`` rewrites it for
    PostgreSQL). Graph rows are written with the memory rows through ``write_hooks``, in the
    memory's transaction; every statement binds ``tenant_id``.
    """

    name: str
    #: ``"duckdb"`` or ``"postgres"``.
    graph_dialect: str
    write_hooks: builtins.list[WriteHook]
    row_listeners: builtins.list[Callable[[str, Sequence[str]], None]]

    def graph_read(self) -> AbstractContextManager[Any]:
        """A cursor (``execute(sql, params).fetchall()``) that sees every committed write."""
        ...

    def graph_transaction(self) -> AbstractContextManager[Any]:
        """A write transaction's cursor: commit on success, roll back on any error."""
        ...

    def graph_cursor(self, tx: Any) -> Any:
        """The ``tx`` a write hook receives (or a ``PreparingWriteHook`` reader) as such a cursor."""
        ...

    def graph_generation(self, tenant_id: str, cur: Any = None) -> int | None:
        """A per-tenant counter kept by the database and bumped in every transaction that changes the
        tenant's graph or the memory rows a traversal reads, read on ``cur`` (a :meth:`graph_read`
        cursor) when given; None when the in-process counters see every writer (an embedded store)."""
        ...

    def database_key(self) -> Hashable:
        """Identity of the database (its resolved path; an object id in memory): providers opened on
        one database share the graph's generation counters."""
        ...

    def writer_lock(self) -> threading.RLock:
        """The lock every write transaction of the database holds (a reader may test it to know
        that no write is in flight)."""
        ...

    def flush_appends(self) -> None:
        """Write every queued bookkeeping append now."""
        ...

    def select_sql(self, with_embedding: bool) -> str:
        """``SELECT <memory columns> FROM memories`` (a WHERE clause may follow); rows decode with
        :meth:`entry_from_row`."""
        ...

    def entry_from_row(self, row: Sequence[Any], with_embedding: bool) -> MemoryEntry:
        """The memory of one row selected by :meth:`select_sql`."""
        ...

    def fetch_entries(
        self, cur: Any, tenant_id: str, ids: Sequence[str], with_embedding: bool
    ) -> builtins.list[MemoryEntry]:
        """The tenant's memories with these ids (any status), in the order of ``ids``, read on ``cur``."""
        ...

    def iter_entries(self, tenant_id: str, *, batch_size: int = 500) -> Iterator[MemoryEntry]: ...


@runtime_checkable
class SnapshotSource(SqlStore, Protocol):
    """What S3 snapshots need of a store: a consistent read of every table, bulk imports, and the
    in-process search index kept in step with rows replaced by SQL."""

    def consistent_read(self) -> AbstractContextManager[Any]:
        """A cursor inside one read transaction (every table read at the same point in time), with
        logged accesses folded in first."""
        ...

    def bulk_import(self) -> AbstractContextManager[None]:
        """Run a bulk import of Parquet files (tuned for it; see the DuckDB provider)."""
        ...

    def partitions_from_files(
        self, tenant_id: str, memories: Sequence[Path], postings: Sequence[Path], *, min_rows: int | None = None
    ) -> dict[Any, Any]:
        """Search-index partitions built from a snapshot's Parquet files of the tenant."""
        ...

    def replace_index_partitions(self, tenant_id: str, partitions: Mapping[Any, Any]) -> None:
        """Inside the write transaction that replaced the tenant's rows: the index takes these partitions."""
        ...

    def rows_replaced(self, tenant_id: str) -> None:
        """The tenant's rows were rewritten by SQL outside the provider: rebuild in-process mirrors."""
        ...


def _members(contract: type) -> builtins.list[str]:
    names: dict[str, None] = {}
    for cls in reversed(contract.__mro__):
        if cls is object or cls is Protocol or not getattr(cls, "_is_protocol", False):
            continue
        for name in [*cls.__dict__, *getattr(cls, "__annotations__", {})]:
            if not name.startswith("_"):
                names[name] = None
    return builtins.list(names)


def implements(provider: object, contract: type) -> bool:
    """Does ``provider`` meet ``contract`` (a protocol of this module)? Every member must be present
    and none may be a default of ``MemoryProvider`` that only raises "not supported"."""
    if not isinstance(provider, contract):
        return False
    cls = type(provider)
    return not any(getattr(getattr(cls, name, None), UNSUPPORTED_MARK, False) for name in _members(contract))


_FLAGS: dict[type, dict[str, bool]] = {}
_FLAGS_LOCK = threading.Lock()


def concern_flags(provider: object) -> dict[str, bool]:
    """The concern flags of ``ProviderCapabilities`` (graph, lifecycle, keys, governance, snapshots),
    derived from the protocols; computed once per provider class."""
    cls = type(provider)
    flags = _FLAGS.get(cls)
    if flags is None:
        flags = {
            "graph": implements(provider, GraphBackend),
            "lifecycle": implements(provider, LifecycleStore),
            "keys": implements(provider, KeyStore),
            "governance": implements(provider, GovernanceStore),
            "snapshots": implements(provider, SnapshotSource),
        }
        with _FLAGS_LOCK:
            _FLAGS[cls] = flags
    return dict(flags)
