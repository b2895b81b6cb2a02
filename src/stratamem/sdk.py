"""The Python SDK: :class:`Memory` (sync) and :class:`AsyncMemory` (same methods, as coroutines).

Thin by design: every method hands its arguments to the :class:`~stratamem.engine.MemoryEngine`.
"""

from __future__ import annotations

import asyncio
import builtins
import functools
import itertools
import os
import re
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any, ParamSpec, Self, TypeVar

from .agent.budget import FitContextResult, fit_context
from .agent.loop import ConversationResult, MemoryLike, Message, format_context, process_conversation, system_contract
from .arguments import check_text
from .assembly import build_engine, graph_of, hygiene_of
from .config import MemoryConfig
from .crud.skill import handle_memory_crud
from .embeddings import Embedder, make_embedder
from .engine import Clock, MemoryEngine
from .erasure import forget_user
from .errors import ErrorCode, MemoryError
from .graph.service import AsyncGraph, GraphService, GraphUnavailable
from .layers import get_accessible_layers
from .lifecycle.manager import Lifecycle
from .lifecycle.reflection import ReflectionResult
from .model import (
    AddMemoryOutput,
    BulkAddOutput,
    BulkDeleteOutput,
    DeleteMemoryOutput,
    HealthCheckResult,
    Layer,
    ListMemoriesOutput,
    MemoryEntry,
    ProviderCapabilities,
    SearchMemoryOutput,
    StoreStats,
    TenantContext,
    UpdateMemoryOutput,
)
from .persistence.snapshots import AsyncSnapshotManager, SnapshotManager, open_from_snapshot
from .providers import MemoryProvider, open_provider

if TYPE_CHECKING:
    from .erasure import ForgetUserReport
    from .hygiene.gate import ProcessResult
    from .hygiene.health import MemoryHealth
    from .hygiene.policies import PolicyManager
    from .hygiene.service import Hygiene
    from .persistence.snapshots import AsyncSnapshotManager, SnapshotManager

P = ParamSpec("P")
R = TypeVar("R")

#: The default store of ``Memory.open()`` and of every CLI command (``STRATAMEM_DB`` overrides it).
DEFAULT_STORE = "data/stratamem.duckdb"


def _lock_error(exc: MemoryError) -> MemoryError:
    """A DuckDB file held by another process: not retryable (the holder keeps it until it exits), and
    the message names the holder when DuckDB reports it and says what to do."""
    holder = re.search(r"held in (.+?) \(PID (\d+)\)", str(exc.__cause__ or ""))
    path = exc.details.get("path", "")
    who = f"another process (process {holder.group(2)}, {holder.group(1)})" if holder else "another process"
    return MemoryError(
        ErrorCode.PROVIDER_ERROR,
        f"DuckDB file {path} is locked by {who}; one process owns an embedded store at a time: stop that "
        "process, or go through it (a running `stratamem serve`: use its REST API, e.g. `stratamem keys "
        "create --server URL --admin-key KEY`)",
        operation=exc.operation or "open",
        details={**exc.details, **({"pid": int(holder.group(2))} if holder else {})},
        retryable=False,
    )


class Memory:
    """Layered, multi-tenant semantic memory.

    >>> mem = Memory.open("data/stratamem.duckdb")            # doctest: +SKIP
    >>> t = TenantContext(tenant_id="acme", principal="u1")   # doctest: +SKIP
    >>> mem.add(t, content="User prefers dark mode", layer="user", identifiers={"user_id": "u1"})  # doctest: +SKIP
    """

    def __init__(self, engine: MemoryEngine) -> None:
        self.engine = engine

        #: Lifecycle features (importance tracking, promotion, TTL, decay, pruning, conflicts);
        #: configure with ``mem.lifecycle.config = LifecycleConfig(...)``.
        self.lifecycle = Lifecycle(engine, llm=lambda: hygiene_of(engine).llm,
                                   prompts=lambda: hygiene_of(engine).config.prompts)

    @classmethod
    def open(
        cls,
        location: str | os.PathLike[str] | MemoryProvider | None = None,
        *,
        embedder: str | Embedder | None = None,
        config: MemoryConfig | None = None,
        clock: Clock | None = None,
    ) -> Self:
        """Open (or create) a store.

        ``location``: a DuckDB file path (default ``data/stratamem.duckdb``, or ``STRATAMEM_DB``), ``memory://``,
        ``duckdb:///:memory:``, ``postgresql://…`` or a provider instance. ``embedder``: ``"onnx"``
        (default, offline all-MiniLM-L6-v2 on ONNX Runtime), ``"local"`` (the same on torch),
        ``"hashing"``, ``"openai"`` or an :class:`Embedder`;
        ``STRATAMEM_EMBEDDER`` sets the default. ``STRATAMEM_REDIS_URL`` / ``STRATAMEM_REDIS_PREFIX`` set
        ``config.redis_url`` / ``redis_prefix`` (shared embedding cache and memory_crud rate limiter)
        unless the config sets them.
        """
        if location is None:
            location = os.environ.get("STRATAMEM_DB") or os.environ.get("STRATAMEM_STORE") or DEFAULT_STORE
        env = {f: os.environ.get(f"STRATAMEM_{f.upper()}") for f in ("redis_url", "redis_prefix")}
        update = {f: v for f, v in env.items() if v and (config is None or f not in config.model_fields_set)}
        if update:
            config = MemoryConfig.model_validate({**(config or MemoryConfig()).model_dump(exclude_unset=True),
                                                  **update})
        provider = open_provider(location)
        try:
            engine = build_engine(provider, make_embedder(embedder), config, clock=clock)
        except MemoryError as exc:
            if exc.details.get("reason") == "locked":
                raise _lock_error(exc) from exc.__cause__
            raise
        return cls(engine)

    # -- operations --------------------------------------------------------------------------
    def add(self, ctx: TenantContext | None = None, content: str | None = None, layer: str | Layer | None = None,
            identifiers: Any = None, metadata: dict[str, Any] | None = None, *, tier: str | None = None,
            expires_at: datetime | str | None = None, importance: float | None = None,
            provenance: Any = None, supersedes: Sequence[str] | None = None) -> AddMemoryOutput:
        return self.engine.add(ctx, content, layer, identifiers, metadata, tier=tier, expires_at=expires_at,
                               importance=importance, provenance=provenance, supersedes=supersedes)

    def search(self, ctx: TenantContext | None = None, query: str | None = None, identifiers: Any = None,
               layers: Sequence[str | Layer] | None = None, limit: int | None = None,
               threshold: float | None = None, filter: Any = None, *,
               expand_graph: bool = False, hybrid_weight: float | None = None,
               recency_boost: float | None = None, importance_boost: float | None = None,
               include_superseded: bool = False, as_of: datetime | str | None = None) -> SearchMemoryOutput:
        return self.engine.search(ctx, query, identifiers, layers, limit, threshold, filter,
                                  expand_graph=expand_graph, hybrid_weight=hybrid_weight,
                                  recency_boost=recency_boost, importance_boost=importance_boost,
                                  include_superseded=include_superseded, as_of=as_of)

    def get(self, ctx: TenantContext | None = None, memory_id: str | None = None) -> MemoryEntry | None:
        return self.engine.get(ctx, memory_id)

    def update(self, ctx: TenantContext | None = None, memory_id: str | None = None, content: str | None = None,
               metadata: dict[str, Any] | None = None, if_match: str | None = None, *,
               expires_at: datetime | str | None = None, tier: str | None = None,
               record_conflict: bool = True) -> UpdateMemoryOutput:
        return self.engine.update(ctx, memory_id, content, metadata, if_match, expires_at=expires_at, tier=tier,
                                  record_conflict=record_conflict)

    def delete(self, ctx: TenantContext | None = None, memory_id: str | None = None,
               if_match: str | None = None) -> DeleteMemoryOutput:
        return self.engine.delete(ctx, memory_id, if_match)

    def list(self, ctx: TenantContext | None = None, layer: str | Layer | None = None, identifiers: Any = None,
             cursor: str | None = None, limit: int | None = None, filter: Any = None, *,
             include_superseded: bool = False, as_of: datetime | str | None = None) -> ListMemoriesOutput:
        return self.engine.list(ctx, layer, identifiers, cursor, limit, filter, include_superseded=include_superseded,
                                as_of=as_of)

    def bulk_add(self, ctx: TenantContext | None = None, items: Sequence[Any] = ()) -> BulkAddOutput:
        return self.engine.bulk_add(ctx, items)

    def bulk_delete(self, ctx: TenantContext | None = None, ids: Sequence[str] = ()) -> BulkDeleteOutput:
        return self.engine.bulk_delete(ctx, ids)

    def stats(self, ctx: TenantContext | None = None) -> StoreStats:
        return self.engine.stats(ctx)

    def export(self, ctx: TenantContext | None = None, *, include_embeddings: bool = False) -> Iterator[MemoryEntry]:
        return self.engine.export(ctx, include_embeddings=include_embeddings)

    def generate_embedding(self, text: str) -> builtins.list[float]:
        return self.engine.provider.generate_embedding(check_text(text, "text", "generate_embedding"))

    @staticmethod
    def get_accessible_layers(identifiers: Any) -> builtins.list[Layer]:
        return get_accessible_layers(identifiers)

    def health_check(self) -> HealthCheckResult:
        return self.engine.health()

    def capabilities(self) -> ProviderCapabilities:
        return self.engine.provider.capabilities()

    @property
    def graph(self) -> GraphService | GraphUnavailable:
        """Knowledge graph: ``related``, ``path``, ``neighbors``, ``check`` … (DuckDB store only)."""
        return graph_of(self.engine)

    # -- snapshots to S3-compatible storage (persistence/snapshots.py) --------------------------
    @property
    def snapshots(self) -> SnapshotManager:
        """Parquet snapshots on S3: ``push``/``pull``/``list``/``restore`` (settings from the env)."""
        mgr: SnapshotManager | None = getattr(self, "_snapshots", None)
        if mgr is None:
            mgr = self.configure_snapshots()
        return mgr

    def configure_snapshots(self, settings: Any = None, **kwargs: Any) -> SnapshotManager:
        """Explicit snapshot settings (an ``S3Settings`` and/or ``SnapshotManager`` keyword args)."""

        self._snapshots: SnapshotManager = SnapshotManager(self, settings, **kwargs)
        return self._snapshots

    @classmethod
    def open_from_snapshot(cls, tenants: Any = None, location: str | None = None, **kwargs: Any) -> Memory:
        """A store (default in-memory DuckDB) hydrated from S3 snapshots; reports in
        ``mem.snapshots.last_reports``."""

        mem, _ = open_from_snapshot(tenants, location, open_memory=cls.open, **kwargs)
        return mem

    # -- memory lifecycle (stratamem.lifecycle; thin delegation) ----------------------------------
    def close_session(self, ctx: TenantContext | None, user_id: str, session_id: str,
                      project_id: str | None = None, *, agent_id: str | None = None) -> Any:
        return self.lifecycle.close_session(ctx, user_id, session_id, project_id, agent_id=agent_id)

    def reflect(self, ctx: TenantContext | None, user_id: str, session_id: str,
                agent_id: str | None = None) -> ReflectionResult:
        """Distil a session's memories into agent-layer summaries and rules with provenance (with the
        configured LLM, else by rules); idempotent (``lifecycle/reflection.py``)."""
        return self.lifecycle.reflect(ctx, user_id, session_id, agent_id)

    def promote(self, ctx: TenantContext | None, source_id: str, target_layer: str | Layer, identifiers: Any = None,
                delete_original: bool = False, content: str | None = None,
                tags: builtins.list[str] | None = None) -> MemoryEntry:
        return self.lifecycle.promote(ctx, source_id, target_layer, identifiers, delete_original=delete_original,
                                      content=content, tags=tags)

    def compact(self, ctx: TenantContext | None, source_ids: Sequence[str], callback: Callable[..., Any],
                delete_sources: bool = False, *, target_layer: str | Layer | None = None,
                tags: builtins.list[str] | None = None, metadata: dict[str, Any] | None = None) -> MemoryEntry:
        return self.lifecycle.compact(ctx, source_ids, callback, delete_sources=delete_sources,
                                      target_layer=target_layer, tags=tags, metadata=metadata)

    def delete_by_scope(self, ctx: TenantContext | None, layer: str | Layer, identifiers: Any) -> int:
        return self.lifecycle.delete_by_scope(ctx, layer, identifiers)

    def soft_delete(self, ctx: TenantContext | None, ids: Sequence[str]) -> builtins.list[str]:
        return self.lifecycle.soft_delete(ctx, ids)

    def restore(self, ctx: TenantContext | None, ids: Sequence[str]) -> builtins.list[str]:
        return self.lifecycle.restore(ctx, ids)

    def feedback(self, ctx: TenantContext | None, memory_ids: Sequence[str], reward: float) -> Any:
        return self.lifecycle.feedback(ctx, memory_ids, reward)

    def prune(self, ctx: TenantContext | None, *, dry_run: bool = True) -> Any:
        return self.lifecycle.prune(ctx, dry_run=dry_run)

    def conflicts(self, ctx: TenantContext | None, memory_id: str | None = None, *, layer: str | Layer | None = None,
                  identifiers: Any = None, cursor: str | None = None, limit: int | None = None) -> ListMemoriesOutput:
        return self.lifecycle.conflicts(ctx, memory_id, layer=layer, identifiers=identifiers, cursor=cursor,
                                        limit=limit)

    def maintain(self, tenants: Sequence[str] | None = None) -> Any:
        return self.lifecycle.maintain(tenants)

    def crud(self, ctx: TenantContext | None, request: Any) -> Any:
        """The ``memory_crud`` skill: one request dict/model in, ``{items, next_cursor, has_more,
        errors}`` out."""

        return handle_memory_crud(self.engine, self.lifecycle, ctx, request)

    # -- hygiene and governance (stratamem.hygiene) ---------------------------------------------
    def process(self, ctx: TenantContext | None = None, text: str | None = None, intent: str = "none",
                identifiers: Any = None, recent_messages: Sequence[str] | None = None, *,
                layer: str | Layer | None = None) -> ProcessResult:
        """Write gate: decide, dedupe, format, then create/update/delete/ignore."""
        return hygiene_of(self.engine).process(ctx, text, intent, identifiers, recent_messages, layer=layer)

    def remember(self, ctx: TenantContext | None = None, text: str | None = None, identifiers: Any = None, *,
                 layer: str | Layer | None = None) -> ProcessResult:
        return hygiene_of(self.engine).process(ctx, text, "remember", identifiers, layer=layer)

    def forget(self, ctx: TenantContext | None = None, text: str | None = None, identifiers: Any = None, *,
               layer: str | Layer | None = None) -> ProcessResult:
        return hygiene_of(self.engine).process(ctx, text, "forget", identifiers, layer=layer)

    def forget_user(self, ctx: TenantContext | None = None, user_id: str | None = None) -> ForgetUserReport:
        """Right to be forgotten: remove every memory, graph node/edge, event row and cached vector of
        ``user_id`` in the tenant and revoke the user's API keys (:mod:`stratamem.erasure`)."""
        return forget_user(self.engine, ctx, user_id)

    def health(self, ctx: TenantContext | None = None, *, since: datetime | None = None) -> MemoryHealth:
        """Memory health report of the tenant; ``health_check()`` is the provider's liveness."""
        return hygiene_of(self.engine).health(ctx, since=since)

    @property
    def policies(self) -> PolicyManager:
        """Per-tenant governance policies: ``mem.policies.set(t, deny_patterns=[...])``, ``.get(t)``."""
        return hygiene_of(self.engine).policies

    @property
    def hygiene(self) -> Hygiene:
        return hygiene_of(self.engine)

    # -- agent loop utilities (stratamem.agent.loop) -------------------------------------------
    def system_contract(self) -> str:
        """The system-prompt text telling a model how to use its memory tools (the hygiene prompts)."""
        return system_contract(self.hygiene.config.prompts)

    def format_context(self, memories: SearchMemoryOutput | Iterable[MemoryLike], max_tokens: int = 1000) -> str:
        """A compact layer-labelled block of memories within ``max_tokens`` (see ``agent.loop.format_context``)."""
        return format_context(memories, max_tokens)

    def process_conversation(self, ctx: TenantContext | None, messages: Sequence[Message],
                             response: Message | None = None, identifiers: Any = None) -> ConversationResult:
        """Run the write gate over the user messages of a turn; returns what was created/updated/ignored."""
        return process_conversation(self, ctx, messages, response, identifiers)

    def fit_context(self, ctx: TenantContext | None, messages: Sequence[Message], max_tokens: int,
                    identifiers: Any = None, *, layer: str | Layer = "session", keep_recent: int = 4,
                    compact_at: float = 0.8, max_tool_tokens: int = 500) -> FitContextResult:
        """The messages to send within ``max_tokens``: large tool outputs stored and replaced by a
        pointer, the oldest turns compacted into a summary memory near the limit (``agent.budget``)."""
        hygiene = self.hygiene
        return fit_context(self, ctx, messages, max_tokens, identifiers=identifiers, layer=layer, llm=hygiene.llm,
                           prompts=hygiene.config.prompts, keep_recent=keep_recent, compact_at=compact_at,
                           max_tool_tokens=max_tool_tokens)

    # -- lifecycle ---------------------------------------------------------------------------
    def close(self) -> None:
        self.lifecycle.close()
        self.engine.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def _to_thread(fn: Callable[P, R]) -> Callable[P, Any]:
    @functools.wraps(fn)
    async def run(*args: P.args, **kwargs: P.kwargs) -> R:
        return await asyncio.to_thread(fn, *args, **kwargs)

    return run


#: Entries one worker-thread call of ``AsyncMemory.export`` fetches.
_EXPORT_BATCH = 500


class AsyncProxy:
    """An object's public methods as coroutines run in worker threads; other attributes (read and
    assigned) are the object's own. Used for ``AsyncMemory.lifecycle``, ``.policies``, ``.hygiene``."""

    def __init__(self, target: Any) -> None:
        object.__setattr__(self, "_target", target)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if callable(value) and not name.startswith("_") and not isinstance(value, type):
            return _to_thread(value)
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._target, name, value)


class AsyncMemory:
    """``Memory`` with coroutine methods; blocking work runs in worker threads."""

    def __init__(self, memory: Memory) -> None:
        self.sync = memory

    @classmethod
    async def open(
        cls,
        location: str | os.PathLike[str] | MemoryProvider | None = None,
        *,
        embedder: str | Embedder | None = None,
        config: MemoryConfig | None = None,
        clock: Clock | None = None,
    ) -> Self:
        return cls(await asyncio.to_thread(Memory.open, location, embedder=embedder, config=config, clock=clock))

    @property
    def engine(self) -> MemoryEngine:
        return self.sync.engine

    async def add(self, ctx: TenantContext | None = None, content: str | None = None, layer: str | Layer | None = None,
                  identifiers: Any = None, metadata: dict[str, Any] | None = None, *, tier: str | None = None,
                  expires_at: datetime | str | None = None, importance: float | None = None,
                  provenance: Any = None, supersedes: Sequence[str] | None = None) -> AddMemoryOutput:
        return await asyncio.to_thread(self.sync.add, ctx, content, layer, identifiers, metadata, tier=tier,
                                       expires_at=expires_at, importance=importance, provenance=provenance,
                                       supersedes=supersedes)

    async def search(self, ctx: TenantContext | None = None, query: str | None = None, identifiers: Any = None,
                     layers: Sequence[str | Layer] | None = None, limit: int | None = None,
                     threshold: float | None = None, filter: Any = None, *,
                     expand_graph: bool = False, hybrid_weight: float | None = None,
                     recency_boost: float | None = None, importance_boost: float | None = None,
                     include_superseded: bool = False, as_of: datetime | str | None = None) -> SearchMemoryOutput:
        return await asyncio.to_thread(self.sync.search, ctx, query, identifiers, layers, limit, threshold, filter,
                                       expand_graph=expand_graph, hybrid_weight=hybrid_weight,
                                       recency_boost=recency_boost, importance_boost=importance_boost,
                                       include_superseded=include_superseded, as_of=as_of)

    async def get(self, ctx: TenantContext | None = None, memory_id: str | None = None) -> MemoryEntry | None:
        return await asyncio.to_thread(self.sync.get, ctx, memory_id)

    async def update(self, ctx: TenantContext | None = None, memory_id: str | None = None, content: str | None = None,
                     metadata: dict[str, Any] | None = None, if_match: str | None = None, *,
                     expires_at: datetime | str | None = None, tier: str | None = None,
                     record_conflict: bool = True) -> UpdateMemoryOutput:
        return await asyncio.to_thread(self.sync.update, ctx, memory_id, content, metadata, if_match,
                                       expires_at=expires_at, tier=tier, record_conflict=record_conflict)

    async def delete(self, ctx: TenantContext | None = None, memory_id: str | None = None,
                     if_match: str | None = None) -> DeleteMemoryOutput:
        return await asyncio.to_thread(self.sync.delete, ctx, memory_id, if_match)

    async def list(self, ctx: TenantContext | None = None, layer: str | Layer | None = None,
                   identifiers: Any = None, cursor: str | None = None, limit: int | None = None,
                   filter: Any = None, *, include_superseded: bool = False,
                   as_of: datetime | str | None = None) -> ListMemoriesOutput:
        return await asyncio.to_thread(self.sync.list, ctx, layer, identifiers, cursor, limit, filter,
                                       include_superseded=include_superseded, as_of=as_of)

    async def bulk_add(self, ctx: TenantContext | None = None, items: Sequence[Any] = ()) -> BulkAddOutput:
        return await asyncio.to_thread(self.sync.bulk_add, ctx, items)

    async def bulk_delete(self, ctx: TenantContext | None = None, ids: Sequence[str] = ()) -> BulkDeleteOutput:
        return await asyncio.to_thread(self.sync.bulk_delete, ctx, ids)

    async def stats(self, ctx: TenantContext | None = None) -> StoreStats:
        return await asyncio.to_thread(self.sync.stats, ctx)

    async def export(self, ctx: TenantContext | None = None, *,
                     include_embeddings: bool = False) -> AsyncIterator[MemoryEntry]:
        """The tenant's memories, oldest first, fetched in batches off the event loop."""
        entries = await asyncio.to_thread(self.sync.export, ctx, include_embeddings=include_embeddings)
        while True:
            batch = await asyncio.to_thread(builtins.list, itertools.islice(entries, _EXPORT_BATCH))
            for entry in batch:
                yield entry
            if len(batch) < _EXPORT_BATCH:
                return

    async def generate_embedding(self, text: str) -> builtins.list[float]:
        return await asyncio.to_thread(self.sync.generate_embedding, text)

    @staticmethod
    def get_accessible_layers(identifiers: Any) -> builtins.list[Layer]:
        return get_accessible_layers(identifiers)

    async def health_check(self) -> HealthCheckResult:
        return await asyncio.to_thread(self.sync.health_check)

    async def capabilities(self) -> ProviderCapabilities:
        return await asyncio.to_thread(self.sync.capabilities)

    @property
    def graph(self) -> AsyncGraph:
        """``Memory.graph`` with coroutine methods."""
        return AsyncGraph(graph_of(self.sync.engine))

    @property
    def snapshots(self) -> AsyncSnapshotManager:
        """``Memory.snapshots`` as coroutines (push/pull/list/restore)."""

        return AsyncSnapshotManager(self.sync.snapshots)

    async def configure_snapshots(self, settings: Any = None, **kwargs: Any) -> AsyncSnapshotManager:
        """``Memory.configure_snapshots``; returns the manager with coroutine methods."""
        return AsyncSnapshotManager(await asyncio.to_thread(self.sync.configure_snapshots, settings, **kwargs))

    @classmethod
    async def open_from_snapshot(cls, tenants: Any = None, location: str | None = None,
                                 **kwargs: Any) -> AsyncMemory:
        return cls(await asyncio.to_thread(Memory.open_from_snapshot, tenants, location, **kwargs))

    @property
    def lifecycle(self) -> Any:
        """``Memory.lifecycle`` with coroutine methods (attributes such as ``config`` read and set as is)."""
        return AsyncProxy(self.sync.lifecycle)

    @property
    def policies(self) -> Any:
        """``Memory.policies`` with coroutine methods: ``await mem.policies.set(t, deny_patterns=[...])``."""
        return AsyncProxy(self.sync.policies)

    @property
    def hygiene(self) -> Any:
        """``Memory.hygiene`` with coroutine methods."""
        return AsyncProxy(self.sync.hygiene)

    async def close_session(self, ctx: TenantContext | None, user_id: str, session_id: str,
                            project_id: str | None = None, *, agent_id: str | None = None) -> Any:
        return await asyncio.to_thread(lambda: self.sync.close_session(ctx, user_id, session_id, project_id,
                                                                       agent_id=agent_id))

    async def reflect(self, ctx: TenantContext | None, user_id: str, session_id: str,
                      agent_id: str | None = None) -> ReflectionResult:
        return await asyncio.to_thread(self.sync.reflect, ctx, user_id, session_id, agent_id)

    async def promote(self, ctx: TenantContext | None, source_id: str, target_layer: str | Layer,
                      identifiers: Any = None, delete_original: bool = False, content: str | None = None,
                      tags: builtins.list[str] | None = None) -> MemoryEntry:
        return await asyncio.to_thread(self.sync.promote, ctx, source_id, target_layer, identifiers,
                                       delete_original, content, tags)

    async def compact(self, ctx: TenantContext | None, source_ids: Sequence[str], callback: Callable[..., Any],
                      delete_sources: bool = False, *, target_layer: str | Layer | None = None,
                      tags: builtins.list[str] | None = None,
                      metadata: dict[str, Any] | None = None) -> MemoryEntry:
        return await asyncio.to_thread(self.sync.compact, ctx, source_ids, callback, delete_sources,
                                       target_layer=target_layer, tags=tags, metadata=metadata)

    async def delete_by_scope(self, ctx: TenantContext | None, layer: str | Layer, identifiers: Any) -> int:
        return await asyncio.to_thread(self.sync.delete_by_scope, ctx, layer, identifiers)

    async def feedback(self, ctx: TenantContext | None, memory_ids: Sequence[str], reward: float) -> Any:
        return await asyncio.to_thread(self.sync.feedback, ctx, memory_ids, reward)

    async def conflicts(self, ctx: TenantContext | None, memory_id: str | None = None, *,
                        layer: str | Layer | None = None, identifiers: Any = None, cursor: str | None = None,
                        limit: int | None = None) -> ListMemoriesOutput:
        return await asyncio.to_thread(lambda: self.sync.conflicts(ctx, memory_id, layer=layer, identifiers=identifiers,
                                                                   cursor=cursor, limit=limit))

    async def crud(self, ctx: TenantContext | None, request: Any) -> Any:
        return await asyncio.to_thread(self.sync.crud, ctx, request)

    async def soft_delete(self, ctx: TenantContext | None, ids: Sequence[str]) -> builtins.list[str]:
        return await asyncio.to_thread(self.sync.soft_delete, ctx, ids)

    async def restore(self, ctx: TenantContext | None, ids: Sequence[str]) -> builtins.list[str]:
        return await asyncio.to_thread(self.sync.restore, ctx, ids)

    async def prune(self, ctx: TenantContext | None, *, dry_run: bool = True) -> Any:
        return await asyncio.to_thread(lambda: self.sync.prune(ctx, dry_run=dry_run))

    async def maintain(self, tenants: Sequence[str] | None = None) -> Any:
        return await asyncio.to_thread(self.sync.maintain, tenants)

    async def process(self, ctx: TenantContext | None = None, text: str | None = None, intent: str = "none",
                      identifiers: Any = None, recent_messages: Sequence[str] | None = None, *,
                      layer: str | Layer | None = None) -> ProcessResult:
        return await asyncio.to_thread(self.sync.process, ctx, text, intent, identifiers, recent_messages,
                                       layer=layer)

    async def remember(self, ctx: TenantContext | None = None, text: str | None = None, identifiers: Any = None,
                       *, layer: str | Layer | None = None) -> ProcessResult:
        return await asyncio.to_thread(self.sync.remember, ctx, text, identifiers, layer=layer)

    async def forget(self, ctx: TenantContext | None = None, text: str | None = None, identifiers: Any = None,
                     *, layer: str | Layer | None = None) -> ProcessResult:
        return await asyncio.to_thread(self.sync.forget, ctx, text, identifiers, layer=layer)

    async def forget_user(self, ctx: TenantContext | None = None, user_id: str | None = None) -> ForgetUserReport:
        return await asyncio.to_thread(self.sync.forget_user, ctx, user_id)

    async def health(self, ctx: TenantContext | None = None, *, since: datetime | None = None) -> MemoryHealth:
        return await asyncio.to_thread(self.sync.health, ctx, since=since)

    async def system_contract(self) -> str:
        return self.sync.system_contract()


    async def format_context(self, memories: SearchMemoryOutput | Iterable[MemoryLike], max_tokens: int = 1000) -> str:
        return self.sync.format_context(memories, max_tokens)

    async def process_conversation(self, ctx: TenantContext | None, messages: Sequence[Message],
                                   response: Message | None = None, identifiers: Any = None) -> ConversationResult:
        return await asyncio.to_thread(self.sync.process_conversation, ctx, messages, response, identifiers)

    async def fit_context(self, ctx: TenantContext | None, messages: Sequence[Message], max_tokens: int,
                          identifiers: Any = None, *, layer: str | Layer = "session", keep_recent: int = 4,
                          compact_at: float = 0.8, max_tool_tokens: int = 500) -> FitContextResult:
        return await asyncio.to_thread(lambda: self.sync.fit_context(
            ctx, messages, max_tokens, identifiers, layer=layer, keep_recent=keep_recent, compact_at=compact_at,
            max_tool_tokens=max_tool_tokens))

    async def close(self) -> None:
        await asyncio.to_thread(self.sync.close)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()
