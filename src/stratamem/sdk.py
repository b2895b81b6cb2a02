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
from .assembly import assemble, build_lifecycle, build_snapshots, graph_of, hygiene_of
from .config import MemoryConfig
from .crud.skill import handle_memory_crud
from .embeddings import Embedder, make_embedder
from .encryption import EncryptionKey, resolve_key
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
from .query import UNSET, Order, TagsMatch, TimeField, Unset
from .settings import DEFAULT_STORE, Settings
from .telemetry import observe as telemetry
from .telemetry.observe import Observation, ObserveConfig

if TYPE_CHECKING:
    from .crud.skill import MemoryCrudResponse
    from .erasure import ForgetUserReport
    from .hygiene.gate import ProcessResult
    from .hygiene.health import MemoryHealth
    from .hygiene.history import EventTrends, MaintenanceRunsOutput, MemoryEventsOutput
    from .hygiene.policies import PolicyManager
    from .hygiene.service import Hygiene
    from .lifecycle.feedback import FeedbackResult
    from .lifecycle.maintenance import MaintenanceReport
    from .lifecycle.manager import CloseSessionResult
    from .lifecycle.pruning import PruneReport
    from .persistence.snapshots import AsyncSnapshotManager, SnapshotManager

P = ParamSpec("P")
R = TypeVar("R")


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

    def __init__(
        self, engine: MemoryEngine, *, lifecycle: Lifecycle | None = None, observe: bool | ObserveConfig | None = False
    ) -> None:
        self.engine = engine
        #: Key of encryption at rest (the DuckDB file, snapshots); None: nothing is encrypted.
        self.encryption_key: EncryptionKey | None = None
        config = telemetry.resolve(observe)
        self._observation = telemetry.install(engine, config) if config is not None else None

        #: Lifecycle features (importance tracking, promotion, TTL, decay, pruning, conflicts);
        #: configure with ``mem.lifecycle.config = LifecycleConfig(...)``. Built by the assembly.
        self.lifecycle = lifecycle if lifecycle is not None else build_lifecycle(engine)

    @classmethod
    def open(
        cls,
        location: str | os.PathLike[str] | MemoryProvider | None = None,
        *,
        embedder: str | Embedder | None = None,
        config: MemoryConfig | None = None,
        clock: Clock | None = None,
        settings: Settings | None = None,
        encryption_key: EncryptionKey | str | None = None,
        observe: bool | ObserveConfig | None = None,
    ) -> Self:
        """Open (or create) a store.

        Args:
            location: A DuckDB file path (default ``data/stratamem.duckdb``, or
                ``STRATAMEM_DB``), ``memory://``, ``duckdb:///:memory:``, ``postgresql://…`` or
                a provider instance.
            embedder: ``"onnx"`` (default, offline all-MiniLM-L6-v2 on ONNX Runtime),
                ``"local"`` (the same on torch), ``"hashing"``, ``"openai"`` or an
                :class:`Embedder`; ``STRATAMEM_EMBEDDER`` sets the default.
            config: Store-level tuning; ``STRATAMEM_REDIS_URL`` / ``STRATAMEM_REDIS_PREFIX`` set
                ``redis_url`` / ``redis_prefix`` unless the config sets them.
            clock: The time source (tests pass a fixed clock).
            settings: The environment settings; None reads the environment now.
            encryption_key: Key of encryption at rest (default: ``STRATAMEM_ENCRYPTION_KEY`` or the
                file named by ``STRATAMEM_ENCRYPTION_KEY_FILE``): a DuckDB file is encrypted with
                it and snapshots are encrypted before upload (docs/security.md).
            observe: Metrics, per-operation spans and the audit of writes, denials and
                cross-tenant attempts, as under ``stratamem serve`` (True, or an ``ObserveConfig``);
                None reads ``STRATAMEM_OBSERVE`` / ``STRATAMEM_METRICS_PORT``, off when unset.

        Returns:
            The opened store.

        Raises:
            MemoryError: ``PROVIDER_ERROR`` when the store cannot be opened (a DuckDB file
                locked by another process names the holder); ``CONFIGURATION_ERROR`` for an
                unknown embedder or an incomplete ``openai`` configuration, a missing or wrong
                encryption key, or a metrics port already taken.
        """
        settings = settings or Settings()
        if location is None:
            location = settings.store_location() or DEFAULT_STORE
        env = {"redis_url": settings.redis_url, "redis_prefix": settings.redis_prefix}
        update = {f: v for f, v in env.items() if v and (config is None or f not in config.model_fields_set)}
        if update:
            config = MemoryConfig.model_validate(
                {**(config or MemoryConfig()).model_dump(exclude_unset=True), **update}
            )
        key = resolve_key(encryption_key, settings)
        provider = open_provider(location, encryption_key=key)
        try:
            system = assemble(provider, make_embedder(embedder, settings=settings), config, clock=clock)
        except MemoryError as exc:
            if exc.details.get("reason") == "locked":
                raise _lock_error(exc) from exc.__cause__
            raise
        try:
            # the settings decide when ``observe`` is None; off stays off
            mem = cls(system.engine, lifecycle=system.lifecycle, observe=telemetry.resolve(observe, settings) or False)
        except BaseException:  # e.g. the metrics port is taken: do not leave the store open
            system.engine.close()
            raise
        mem.encryption_key = key
        return mem

    # -- operations --------------------------------------------------------------------------
    def add(
        self,
        ctx: TenantContext | None = None,
        content: str | None = None,
        *,
        layer: str | Layer | None = None,
        identifiers: Any = None,
        metadata: dict[str, Any] | None = None,
        tier: str | None = None,
        expires_at: datetime | str | None = None,
        importance: float | None = None,
        provenance: Any = None,
        supersedes: Sequence[str] | None = None,
    ) -> AddMemoryOutput:
        """Store one memory in a layer (embedded, checked by the write guards, superseding older facts).

        Args:
            ctx: The caller's tenant context; every row read or written belongs to its tenant.
            content: The text to remember.
            layer: ``user``, ``session``, ``project``, ``agent``, ``team``, ``org``, … (see
                ``get_accessible_layers``).
            identifiers: The scope identifiers (``user_id``, ``session_id``, ``project_id``,
                ``agent_id``, …) as a dict or ``ScopeIdentifiers``. The layer's own identifier
                is required.
            metadata: Free-form JSON metadata (``tags`` is indexed).
            tier: Optional storage tier label.
            expires_at: Expiry time (datetime or ISO 8601); the row is purged after it.
            importance: Initial importance in [0, 1].
            provenance: Where the memory came from (source, actor, …).
            supersedes: Ids of memories this one replaces.

        Returns:
            The new memory's id, version and any superseded ids.

        Raises:
            MemoryError: ``MISSING_TENANT_CONTEXT`` / ``INVALID_TENANT_CONTEXT`` without a valid
                tenant context; ``INVALID_LAYER``, ``MISSING_IDENTIFIER``, ``CONTENT_TOO_LONG``
                or ``INVALID_PARAMS`` for bad input; ``POLICY_VIOLATION`` / ``UNSAFE_CONTENT`` /
                ``QUOTA_EXCEEDED`` from the write guards; ``EMBEDDING_FAILED`` or
                ``PROVIDER_ERROR`` from the backends.
        """
        return self.engine.add(
            ctx,
            content,
            layer,
            identifiers,
            metadata,
            tier=tier,
            expires_at=expires_at,
            importance=importance,
            provenance=provenance,
            supersedes=supersedes,
        )

    def search(
        self,
        ctx: TenantContext | None = None,
        query: str | None = None,
        *,
        identifiers: Any = None,
        layers: Sequence[str | Layer] | None = None,
        limit: int | None = None,
        threshold: float | None = None,
        filter: Any = None,
        expand_graph: bool = False,
        hybrid_weight: float | None = None,
        recency_boost: float | None = None,
        importance_boost: float | None = None,
        include_superseded: bool = False,
        as_of: datetime | str | None = None,
        order: Order | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        time_field: TimeField | None = None,
        tags_match: TagsMatch | None = None,
        include_narrower: bool = False,
    ) -> SearchMemoryOutput:
        """Semantic (and optionally hybrid) search over the layers the identifiers can see.

        Args:
            ctx: The caller's tenant context; every row read or written belongs to its tenant.
            query: The text to search for.
            identifiers: The scope identifiers (``user_id``, ``session_id``, ``project_id``,
                ``agent_id``, …) as a dict or ``ScopeIdentifiers``.
            layers: Restrict the search to these layers (default: every accessible one).
            limit: Most results to return.
            threshold: Lowest score kept; None: the default threshold and the relevance floor
                (``MemoryConfig.relevance_floor``).
            filter: A metadata filter (``MemoryFilter`` or its dict form).
            expand_graph: Add memories linked through the knowledge graph.
            hybrid_weight: Weight of the keyword (BM25) score against the vector score.
            recency_boost: Boost of recent memories.
            importance_boost: Boost of important memories.
            include_superseded: Also return memories replaced by newer ones.
            as_of: Answer as the store was at this time.
            order: ``relevance`` (default), ``newest`` or ``oldest`` first among the best matches.
            since: Only memories created (or updated, see ``time_field``) at or after this time.
            until: Only memories created (or updated) before this time.
            time_field: ``created`` (default) or ``updated``: the time ``since``/``until`` compare.
            tags_match: ``any`` (default) or ``all`` of the filter's tags.
            include_narrower: Also search the narrower layers whose identifiers are given
                (a user's sessions with ``session_id``, an agent's with ``agent_id``).

        Returns:
            The ranked results with their scores and layers.

        Raises:
            MemoryError: ``MISSING_TENANT_CONTEXT`` / ``INVALID_TENANT_CONTEXT`` without a valid
                tenant context; ``QUERY_TOO_LONG``, ``INVALID_LAYER`` or ``INVALID_PARAMS`` for
                bad input; ``EMBEDDING_FAILED`` or ``PROVIDER_ERROR`` from the backends.
        """
        return self.engine.search(
            ctx,
            query,
            identifiers,
            layers,
            limit,
            threshold,
            filter,
            expand_graph=expand_graph,
            hybrid_weight=hybrid_weight,
            recency_boost=recency_boost,
            importance_boost=importance_boost,
            include_superseded=include_superseded,
            as_of=as_of,
            order=order,
            since=since,
            until=until,
            time_field=time_field,
            tags_match=tags_match,
            include_narrower=include_narrower,
        )

    def get(self, ctx: TenantContext | None = None, memory_id: str | None = None) -> MemoryEntry | None:
        """One memory by id, within the tenant.

        Args:
            ctx: The caller's tenant context; every row read or written belongs to its tenant.
            memory_id: The memory's id.

        Returns:
            The memory, or None when the tenant has no such memory.

        Raises:
            MemoryError: ``MISSING_TENANT_CONTEXT`` / ``INVALID_TENANT_CONTEXT`` without a valid
                tenant context; ``INVALID_PARAMS`` for a malformed id.
        """
        return self.engine.get(ctx, memory_id)

    def update(
        self,
        ctx: TenantContext | None = None,
        memory_id: str | None = None,
        *,
        content: str | None = None,
        metadata: dict[str, Any] | None = None,
        if_match: str | None = None,
        expires_at: datetime | str | Unset | None = UNSET,
        tier: str | None = None,
        record_conflict: bool = True,
    ) -> UpdateMemoryOutput:
        """Change a memory's content, metadata, expiry or tier (re-embedded when the content changes).

        Args:
            ctx: The caller's tenant context; every row read or written belongs to its tenant.
            memory_id: The memory's id.
            content: New text (None keeps it).
            metadata: New metadata (None keeps it).
            if_match: The version the caller read; a different current version is a conflict.
            expires_at: New expiry time; left out keeps the expiry, None clears it.
            tier: New tier label.
            record_conflict: Record a version conflict in the conflict log.

        Returns:
            The memory's id and new version.

        Raises:
            MemoryError: ``MISSING_TENANT_CONTEXT`` / ``INVALID_TENANT_CONTEXT`` without a valid
                tenant context; ``MEMORY_NOT_FOUND``; ``CONFLICT`` when ``if_match`` is stale;
                ``CONTENT_TOO_LONG`` / ``INVALID_PARAMS`` for bad input; ``POLICY_VIOLATION``
                from the write guards.
        """
        return self.engine.update(
            ctx,
            memory_id,
            content,
            metadata,
            if_match,
            expires_at=expires_at,
            tier=tier,
            record_conflict=record_conflict,
        )

    def delete(
        self, ctx: TenantContext | None = None, memory_id: str | None = None, *, if_match: str | None = None
    ) -> DeleteMemoryOutput:
        """Delete one memory.

        Args:
            ctx: The caller's tenant context; every row read or written belongs to its tenant.
            memory_id: The memory's id.
            if_match: The version the caller read (optional optimistic check).

        Returns:
            Whether a memory was deleted.

        Raises:
            MemoryError: ``MISSING_TENANT_CONTEXT`` / ``INVALID_TENANT_CONTEXT`` without a valid
                tenant context; ``MEMORY_NOT_FOUND``; ``CONFLICT`` when ``if_match`` is stale.
        """
        return self.engine.delete(ctx, memory_id, if_match)

    def list(
        self,
        ctx: TenantContext | None = None,
        layer: str | Layer | None = None,
        *,
        identifiers: Any = None,
        cursor: str | None = None,
        limit: int | None = None,
        filter: Any = None,
        include_superseded: bool = False,
        as_of: datetime | str | None = None,
        order: Order | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        time_field: TimeField | None = None,
        tags_match: TagsMatch | None = None,
        include_narrower: bool = False,
        expires_before: datetime | str | None = None,
    ) -> ListMemoriesOutput:
        """List a layer's memories in a scope, oldest first by default, one page at a time.

        Args:
            ctx: The caller's tenant context; every row read or written belongs to its tenant.
            layer: The layer to list.
            identifiers: The scope identifiers (``user_id``, ``session_id``, ``project_id``,
                ``agent_id``, …) as a dict or ``ScopeIdentifiers``.
            cursor: The ``next_cursor`` of the previous page.
            limit: Page size.
            filter: A metadata filter.
            include_superseded: Also list memories replaced by newer ones.
            as_of: List the store as it was at this time.
            order: ``oldest`` (default) or ``newest`` first.
            since: Only memories created (or updated, see ``time_field``) at or after this time.
            until: Only memories created (or updated) before this time.
            time_field: ``created`` (default) or ``updated``.
            tags_match: ``any`` (default) or ``all`` of the filter's tags.
            include_narrower: Also list the narrower layers whose identifiers are given.
            expires_before: Only memories with an expiry (``expires_at``) before this time, e.g.
                ``now + 7 days`` for the ones expiring within a week; memories that never expire are
                left out, and expired ones are never listed.

        Returns:
            One page of memories and the cursor of the next.

        Raises:
            MemoryError: ``MISSING_TENANT_CONTEXT`` / ``INVALID_TENANT_CONTEXT`` without a valid
                tenant context; ``INVALID_LAYER``, ``MISSING_IDENTIFIER`` or ``INVALID_PARAMS``
                for bad input.
        """
        return self.engine.list(
            ctx,
            layer,
            identifiers,
            cursor,
            limit,
            filter,
            include_superseded=include_superseded,
            as_of=as_of,
            order=order,
            since=since,
            until=until,
            time_field=time_field,
            tags_match=tags_match,
            include_narrower=include_narrower,
            expires_before=expires_before,
        )

    def bulk_add(self, ctx: TenantContext | None = None, items: Sequence[Any] = ()) -> BulkAddOutput:
        """Store many memories in one call; each item is validated on its own.

        Args:
            ctx: The caller's tenant context; every row read or written belongs to its tenant.
            items: ``AddMemoryInput`` models or their dict form.

        Returns:
            Per item: the new id or the item's coded error.

        Raises:
            MemoryError: ``MISSING_TENANT_CONTEXT`` / ``INVALID_TENANT_CONTEXT`` without a valid
                tenant context; ``INVALID_PARAMS`` when ``items`` is not a sequence or exceeds
                the bulk limit.
        """
        return self.engine.bulk_add(ctx, items)

    def bulk_delete(self, ctx: TenantContext | None = None, ids: Sequence[str] = ()) -> BulkDeleteOutput:
        """Delete many memories by id.

        Args:
            ctx: The caller's tenant context; every row read or written belongs to its tenant.
            ids: The memory ids.

        Returns:
            The deleted ids and the ids not found (or outside a grant).

        Raises:
            MemoryError: ``MISSING_TENANT_CONTEXT`` / ``INVALID_TENANT_CONTEXT`` without a valid
                tenant context; ``INVALID_PARAMS`` for malformed ids or too many.
        """
        return self.engine.bulk_delete(ctx, ids)

    def stats(self, ctx: TenantContext | None = None) -> StoreStats:
        """Counts of the tenant's memories per layer and status.

        Args:
            ctx: The caller's tenant context; every row read or written belongs to its tenant.

        Returns:
            The tenant's store statistics.

        Raises:
            MemoryError: ``MISSING_TENANT_CONTEXT`` / ``INVALID_TENANT_CONTEXT`` without a valid
                tenant context.
        """
        return self.engine.stats(ctx)

    def export(self, ctx: TenantContext | None = None, *, include_embeddings: bool = False) -> Iterator[MemoryEntry]:
        """Every memory of the tenant, oldest first (streamed).

        Args:
            ctx: The caller's tenant context; every row read or written belongs to its tenant.
            include_embeddings: Include each memory's vector.

        Returns:
            An iterator of memories.

        Raises:
            MemoryError: ``MISSING_TENANT_CONTEXT`` / ``INVALID_TENANT_CONTEXT`` without a valid
                tenant context.
        """
        return self.engine.export(ctx, include_embeddings=include_embeddings)

    def generate_embedding(self, text: str) -> builtins.list[float]:
        """The embedding vector of a text, from the store's embedder.

        Args:
            text: The text to embed.

        Returns:
            The vector (its length is the embedder's dimension).

        Raises:
            MemoryError: ``INVALID_PARAMS`` / ``CONTENT_TOO_LONG`` for bad text;
                ``EMBEDDING_FAILED`` from the embedder.
        """
        return self.engine.provider.generate_embedding(check_text(text, "text", "generate_embedding"))

    @staticmethod
    def get_accessible_layers(identifiers: Any) -> builtins.list[Layer]:
        """The layers a set of identifiers can read (a session sees session, user, project, …).

        Args:
            identifiers: The scope identifiers (``user_id``, ``session_id``, ``project_id``,
                ``agent_id``, …) as a dict or ``ScopeIdentifiers``.

        Returns:
            The accessible layers, narrowest first.

        Raises:
            MemoryError: ``INVALID_PARAMS`` for malformed identifiers.
        """
        return get_accessible_layers(identifiers)

    def health_check(self) -> HealthCheckResult:
        """Liveness of the provider and the embedder.

        Returns:
            Component statuses.

        Raises:
            Nothing: failures are reported in the result.
        """
        return self.engine.health()

    def capabilities(self) -> ProviderCapabilities:
        """What the provider supports (hybrid search, graph, lifecycle, keys, …).

        Returns:
            The provider's capability flags.

        Raises:
            Nothing.
        """
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
        """Set explicit snapshot settings instead of the environment's.

        Args:
            settings: An ``S3Settings`` (None: from the environment).
            **kwargs: ``SnapshotManager`` keyword arguments (retention, compression, …).

        Returns:
            The snapshot manager now used by ``snapshots``.

        Raises:
            MemoryError: ``CONFIGURATION_ERROR`` when the S3 extra is missing or the settings
                are invalid.
        """

        kwargs.setdefault("encryption_key", self.encryption_key)
        self._snapshots: SnapshotManager = build_snapshots(self.engine, settings, **kwargs)
        return self._snapshots

    @classmethod
    def open_from_snapshot(cls, tenants: Any = None, *, location: str | None = None, **kwargs: Any) -> Memory:
        """A store (default in-memory DuckDB) hydrated from S3 snapshots; reports in ``mem.snapshots.last_reports``.

        Args:
            tenants: Tenant id(s) to load (None: every tenant in the bucket).
            location: Where to open the store (default in-memory).
            **kwargs: Snapshot settings and ``Memory.open`` arguments.

        Returns:
            The hydrated store.

        Raises:
            MemoryError: ``PROVIDER_ERROR`` when a snapshot cannot be read or fails its
                checksum; ``CONFIGURATION_ERROR`` without S3 settings.
        """

        mem, _ = open_from_snapshot(tenants, location, open_memory=cls.open, **kwargs)
        return mem

    # -- memory lifecycle (stratamem.lifecycle; thin delegation) ----------------------------------
    def close_session(
        self,
        ctx: TenantContext | None,
        user_id: str,
        session_id: str,
        *,
        project_id: str | None = None,
        agent_id: str | None = None,
    ) -> CloseSessionResult:
        """End a session: summarise its memories into the user (or project) layer and expire the session's rows.

        Args:
            ctx: The caller's tenant context; every row read or written belongs to its tenant.
            user_id: The session's user.
            session_id: The session.
            project_id: Also promote into this project.
            agent_id: The agent of the session.

        Returns:
            What was summarised, promoted and expired.

        Raises:
            MemoryError: ``MISSING_TENANT_CONTEXT`` / ``INVALID_TENANT_CONTEXT`` without a valid
                tenant context; ``MISSING_IDENTIFIER`` / ``INVALID_PARAMS`` for bad input.
        """
        return self.lifecycle.close_session(ctx, user_id, session_id, project_id, agent_id=agent_id)

    def reflect(
        self, ctx: TenantContext | None, user_id: str, session_id: str, *, agent_id: str | None = None
    ) -> ReflectionResult:
        """Distil a session's memories into agent-layer summaries and rules with provenance (with the
        configured LLM, else by rules); idempotent (``lifecycle/reflection.py``).

        Args:
            ctx: The caller's tenant context; every row read or written belongs to its tenant.
            user_id: The user whose session is reflected.
            session_id: The session to reflect.
            agent_id: The agent whose layer receives the reflection (None: the agent named most often
                in the sources' provenance).

        Returns:
            What was written (summary and rule ids), left unchanged or skipped, and why.

        Raises:
            MemoryError: ``MISSING_TENANT_CONTEXT`` / ``INVALID_TENANT_CONTEXT`` without a valid
                tenant context; ``INVALID_PARAMS`` for bad input; ``PROVIDER_ERROR`` from the store.
        """
        return self.lifecycle.reflect(ctx, user_id, session_id, agent_id)

    def promote(
        self,
        ctx: TenantContext | None,
        source_id: str,
        target_layer: str | Layer,
        *,
        identifiers: Any = None,
        delete_original: bool = False,
        content: str | None = None,
        tags: builtins.list[str] | None = None,
    ) -> MemoryEntry:
        """Copy (or move) a memory into a broader layer.

        Args:
            ctx: The caller's tenant context; every row read or written belongs to its tenant.
            source_id: The memory to promote.
            target_layer: The broader layer.
            identifiers: The scope identifiers (``user_id``, ``session_id``, ``project_id``,
                ``agent_id``, …) as a dict or ``ScopeIdentifiers``. Those of the target scope.
            delete_original: Delete the source after copying.
            content: Replacement text for the copy.
            tags: Tags of the copy.

        Returns:
            The new memory in the target layer.

        Raises:
            MemoryError: ``MISSING_TENANT_CONTEXT`` / ``INVALID_TENANT_CONTEXT`` without a valid
                tenant context; ``MEMORY_NOT_FOUND``; ``INVALID_SCOPE_PROMOTION`` when the
                target is not broader; ``INVALID_LAYER`` / ``MISSING_IDENTIFIER``.
        """
        return self.lifecycle.promote(
            ctx, source_id, target_layer, identifiers, delete_original=delete_original, content=content, tags=tags
        )

    def compact(
        self,
        ctx: TenantContext | None,
        source_ids: Sequence[str],
        callback: Callable[..., Any],
        *,
        delete_sources: bool = False,
        target_layer: str | Layer | None = None,
        tags: builtins.list[str] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> MemoryEntry:
        """Merge several memories into one written by ``callback``.

        Args:
            ctx: The caller's tenant context; every row read or written belongs to its tenant.
            source_ids: The memories to merge.
            callback: Receives the source entries and returns the merged text.
            delete_sources: Delete the sources afterwards.
            target_layer: Layer of the merged memory (default the sources').
            tags: Tags of the merged memory.
            metadata: Metadata of the merged memory.

        Returns:
            The merged memory.

        Raises:
            MemoryError: ``MISSING_TENANT_CONTEXT`` / ``INVALID_TENANT_CONTEXT`` without a valid
                tenant context; ``MEMORY_NOT_FOUND``; ``COMPACTION_FAILED`` when the callback
                fails or returns no text.
        """
        return self.lifecycle.compact(
            ctx,
            source_ids,
            callback,
            delete_sources=delete_sources,
            target_layer=target_layer,
            tags=tags,
            metadata=metadata,
        )

    def delete_by_scope(self, ctx: TenantContext | None, layer: str | Layer, identifiers: Any) -> int:
        """Delete every memory of a layer in one scope.

        Args:
            ctx: The caller's tenant context; every row read or written belongs to its tenant.
            layer: The layer.
            identifiers: The scope identifiers (``user_id``, ``session_id``, ``project_id``,
                ``agent_id``, …) as a dict or ``ScopeIdentifiers``.

        Returns:
            How many memories were deleted.

        Raises:
            MemoryError: ``MISSING_TENANT_CONTEXT`` / ``INVALID_TENANT_CONTEXT`` without a valid
                tenant context; ``INVALID_LAYER`` / ``MISSING_IDENTIFIER``.
        """
        return self.lifecycle.delete_by_scope(ctx, layer, identifiers)

    def soft_delete(self, ctx: TenantContext | None, ids: Sequence[str]) -> builtins.list[str]:
        """Hide memories without erasing them (``restore`` brings them back).

        Args:
            ctx: The caller's tenant context; every row read or written belongs to its tenant.
            ids: The memory ids.

        Returns:
            The ids that were hidden.

        Raises:
            MemoryError: ``MISSING_TENANT_CONTEXT`` / ``INVALID_TENANT_CONTEXT`` without a valid
                tenant context; ``INVALID_PARAMS`` for malformed ids.
        """
        return self.lifecycle.soft_delete(ctx, ids)

    def restore(self, ctx: TenantContext | None, ids: Sequence[str]) -> builtins.list[str]:
        """Bring soft-deleted memories back.

        Args:
            ctx: The caller's tenant context; every row read or written belongs to its tenant.
            ids: The memory ids.

        Returns:
            The ids that were restored.

        Raises:
            MemoryError: ``MISSING_TENANT_CONTEXT`` / ``INVALID_TENANT_CONTEXT`` without a valid
                tenant context; ``INVALID_PARAMS`` for malformed ids.
        """
        return self.lifecycle.restore(ctx, ids)

    def feedback(self, ctx: TenantContext | None, memory_ids: Sequence[str], reward: float) -> FeedbackResult:
        """Reward (or penalise) memories that helped (or misled) an answer; adjusts their importance.

        Args:
            ctx: The caller's tenant context; every row read or written belongs to its tenant.
            memory_ids: The memories concerned.
            reward: In [-1, 1].

        Returns:
            The new importance of each memory.

        Raises:
            MemoryError: ``MISSING_TENANT_CONTEXT`` / ``INVALID_TENANT_CONTEXT`` without a valid
                tenant context; ``INVALID_PARAMS`` for a reward outside [-1, 1] or malformed
                ids.
        """
        return self.lifecycle.feedback(ctx, memory_ids, reward)

    def prune(self, ctx: TenantContext | None, *, dry_run: bool = True) -> PruneReport:
        """Remove (or, in a dry run, list) low-value memories under the pruning policy.

        Args:
            ctx: The caller's tenant context; every row read or written belongs to its tenant.
            dry_run: Only report what would be removed.

        Returns:
            What was (or would be) pruned.

        Raises:
            MemoryError: ``MISSING_TENANT_CONTEXT`` / ``INVALID_TENANT_CONTEXT`` without a valid
                tenant context.
        """
        return self.lifecycle.prune(ctx, dry_run=dry_run)

    def conflicts(
        self,
        ctx: TenantContext | None,
        *,
        memory_id: str | None = None,
        layer: str | Layer | None = None,
        identifiers: Any = None,
        cursor: str | None = None,
        limit: int | None = None,
    ) -> ListMemoriesOutput:
        """Memories with recorded version conflicts.

        Args:
            ctx: The caller's tenant context; every row read or written belongs to its tenant.
            memory_id: Only this memory's conflicts.
            layer: Only this layer.
            identifiers: The scope identifiers (``user_id``, ``session_id``, ``project_id``,
                ``agent_id``, …) as a dict or ``ScopeIdentifiers``.
            cursor: The ``next_cursor`` of the previous page.
            limit: Page size.

        Returns:
            One page of conflicting memories.

        Raises:
            MemoryError: ``MISSING_TENANT_CONTEXT`` / ``INVALID_TENANT_CONTEXT`` without a valid
                tenant context; ``INVALID_LAYER`` / ``INVALID_PARAMS``.
        """
        return self.lifecycle.conflicts(
            ctx, memory_id, layer=layer, identifiers=identifiers, cursor=cursor, limit=limit
        )

    def maintain(self, *, tenants: Sequence[str] | None = None) -> MaintenanceReport:
        """Run maintenance once: TTL purge, decay, consolidation, pruning and integrity checks.

        Args:
            tenants: Only these tenants (None: every tenant).

        Returns:
            What each step did, per tenant.

        Raises:
            MemoryError: ``PROVIDER_ERROR`` from the store (other steps still run and the error
                is reported).
        """
        return self.lifecycle.maintain(tenants)

    def crud(self, ctx: TenantContext | None, request: Any) -> MemoryCrudResponse:
        """The ``memory_crud`` skill: one request dict/model in, ``{items, next_cursor, has_more, errors}`` out.

        Args:
            ctx: The caller's tenant context; every row read or written belongs to its tenant.
            request: A ``MemoryCrudRequest`` or its dict form (``operation`` and its arguments).

        Returns:
            The items and per-item errors.

        Raises:
            MemoryError: ``MISSING_TENANT_CONTEXT`` / ``INVALID_TENANT_CONTEXT`` without a valid
                tenant context; ``INVALID_PARAMS`` for a malformed request (errors of single
                items are returned, not raised).
        """

        return handle_memory_crud(self.engine, self.lifecycle, ctx, request)

    # -- hygiene and governance (stratamem.hygiene) ---------------------------------------------
    def process(
        self,
        ctx: TenantContext | None = None,
        text: str | None = None,
        *,
        intent: str = "none",
        identifiers: Any = None,
        recent_messages: Sequence[str] | None = None,
        layer: str | Layer | None = None,
    ) -> ProcessResult:
        """Write gate: decide, dedupe, format, then create/update/delete/ignore.

        Args:
            ctx: The caller's tenant context; every row read or written belongs to its tenant.
            text: What the user said.
            intent: ``none``, ``remember`` or ``forget``.
            identifiers: The scope identifiers (``user_id``, ``session_id``, ``project_id``,
                ``agent_id``, …) as a dict or ``ScopeIdentifiers``.
            recent_messages: Recent turns used as context.
            layer: Force the layer (default: decided).

        Returns:
            The decision and the memories written.

        Raises:
            MemoryError: ``MISSING_TENANT_CONTEXT`` / ``INVALID_TENANT_CONTEXT`` without a valid
                tenant context; ``INVALID_PARAMS`` / ``CONTENT_TOO_LONG`` for bad input;
                ``POLICY_VIOLATION`` / ``UNSAFE_CONTENT`` / ``QUOTA_EXCEEDED`` from the guards.
        """
        return hygiene_of(self.engine).process(ctx, text, intent, identifiers, recent_messages, layer=layer)

    def remember(
        self,
        ctx: TenantContext | None = None,
        text: str | None = None,
        *,
        identifiers: Any = None,
        layer: str | Layer | None = None,
    ) -> ProcessResult:
        """``process`` with the ``remember`` intent: store what the text says (deduplicated).

        Args:
            ctx: The caller's tenant context; every row read or written belongs to its tenant.
            text: What to remember.
            identifiers: The scope identifiers (``user_id``, ``session_id``, ``project_id``,
                ``agent_id``, …) as a dict or ``ScopeIdentifiers``.
            layer: Force the layer.

        Returns:
            The decision and the memories written.

        Raises:
            MemoryError: ``MISSING_TENANT_CONTEXT`` / ``INVALID_TENANT_CONTEXT`` without a valid
                tenant context; ``INVALID_PARAMS`` / ``CONTENT_TOO_LONG``; ``POLICY_VIOLATION``
                / ``UNSAFE_CONTENT`` / ``QUOTA_EXCEEDED``.
        """
        return hygiene_of(self.engine).process(ctx, text, "remember", identifiers, layer=layer)

    def forget(
        self,
        ctx: TenantContext | None = None,
        text: str | None = None,
        *,
        identifiers: Any = None,
        layer: str | Layer | None = None,
    ) -> ProcessResult:
        """``process`` with the ``forget`` intent: delete the memories the text describes.

        Args:
            ctx: The caller's tenant context; every row read or written belongs to its tenant.
            text: What to forget.
            identifiers: The scope identifiers (``user_id``, ``session_id``, ``project_id``,
                ``agent_id``, …) as a dict or ``ScopeIdentifiers``.
            layer: Only this layer.

        Returns:
            The decision and the memories deleted.

        Raises:
            MemoryError: ``MISSING_TENANT_CONTEXT`` / ``INVALID_TENANT_CONTEXT`` without a valid
                tenant context; ``INVALID_PARAMS``.
        """
        return hygiene_of(self.engine).process(ctx, text, "forget", identifiers, layer=layer)

    def forget_user(self, ctx: TenantContext | None = None, user_id: str | None = None) -> ForgetUserReport:
        """Right to be forgotten: erase everything of ``user_id`` in the tenant.

        Every memory, graph node/edge, event row and cached vector of the user is removed and the
        user's API keys are revoked.

        Args:
            ctx: The caller's tenant context; every row read or written belongs to its tenant.
            user_id: The user to erase.

        Returns:
            What was removed, per store.

        Raises:
            MemoryError: ``MISSING_TENANT_CONTEXT`` / ``INVALID_TENANT_CONTEXT`` without a valid
                tenant context; ``INVALID_PARAMS`` without a user id.
        """
        return forget_user(self.engine, ctx, user_id)

    def health(self, ctx: TenantContext | None = None, *, since: datetime | None = None) -> MemoryHealth:
        """Memory health report of the tenant; ``health_check()`` is the provider's liveness.

        Args:
            ctx: The caller's tenant context; every row read or written belongs to its tenant.
            since: Only events after this time.

        Returns:
            Duplicates, stale and conflicting memories, guard events.

        Raises:
            MemoryError: ``MISSING_TENANT_CONTEXT`` / ``INVALID_TENANT_CONTEXT`` without a valid
                tenant context.
        """
        return hygiene_of(self.engine).health(ctx, since=since)

    def memory_events(
        self,
        ctx: TenantContext | None = None,
        memory_id: str | None = None,
        *,
        limit: int = 50,
        events: Sequence[str] | None = None,
    ) -> MemoryEventsOutput:
        """One memory's logged events (create, update, delete, access…), newest first.

        Every ``search`` or ``get`` that returned the memory is logged as an ``access`` event (who,
        by which operation, and for a search its ``search_id`` and ``rank``): ``events=["access"]``
        is the memory's access history.

        Args:
            ctx: The caller's tenant context; every row read or written belongs to its tenant.
            memory_id: The memory; it must be visible to the caller's grant.
            limit: At most this many events (1-500).
            events: Only events of these kinds (create, update, delete, search, access, ignore,
                reject, dedupe, maintenance); all kinds when None.

        Returns:
            The events (they never hold memory content).

        Raises:
            MemoryError: ``MISSING_TENANT_CONTEXT`` / ``INVALID_TENANT_CONTEXT`` without a valid
                tenant context; ``INVALID_PARAMS`` for a limit out of range; ``CONFIGURATION_ERROR``
                when the store keeps no event log.
            MemoryError: ``MEMORY_NOT_FOUND`` when the memory is missing, another tenant's or outside
                the caller's grant (one answer for all three).
        """
        return hygiene_of(self.engine).memory_events(ctx, memory_id, limit=limit, events=events)

    def event_trends(self, ctx: TenantContext | None = None, *, days: int = 14) -> EventTrends:
        """Per-day counts of the tenant's writes, searches and rejected writes.

        Args:
            ctx: The caller's tenant context; every row read or written belongs to its tenant.
            days: How many UTC days back, today included (1-366).

        Returns:
            One point per day, oldest first; days without events count zero.

        Raises:
            MemoryError: ``MISSING_TENANT_CONTEXT`` / ``INVALID_TENANT_CONTEXT`` without a valid
                tenant context; ``INVALID_PARAMS`` for a limit out of range; ``CONFIGURATION_ERROR``
                when the store keeps no event log.
        """
        return hygiene_of(self.engine).event_trends(ctx, days=days)

    def maintenance_runs(self, ctx: TenantContext | None = None, *, limit: int = 20) -> MaintenanceRunsOutput:
        """The tenant's recorded maintenance runs (what each did), newest first.

        Args:
            ctx: The caller's tenant context; every row read or written belongs to its tenant.
            limit: At most this many runs (1-500).

        Returns:
            The runs: when, outcome, counts per task, duration and errors.

        Raises:
            MemoryError: ``MISSING_TENANT_CONTEXT`` / ``INVALID_TENANT_CONTEXT`` without a valid
                tenant context; ``INVALID_PARAMS`` for a limit out of range; ``CONFIGURATION_ERROR``
                when the store keeps no event log.
        """
        return hygiene_of(self.engine).maintenance_runs(ctx, limit=limit)

    @property
    def policies(self) -> PolicyManager:
        """Per-tenant governance policies: ``mem.policies.set(t, deny_patterns=[...])``, ``.get(t)``."""
        return hygiene_of(self.engine).policies

    @property
    def hygiene(self) -> Hygiene:
        """Write gate, governance and health (:class:`~stratamem.hygiene.service.Hygiene`)."""
        return hygiene_of(self.engine)

    # -- agent loop utilities (stratamem.agent.loop) -------------------------------------------
    def system_contract(self) -> str:
        """The system-prompt text telling a model how to use its memory tools (the hygiene prompts).

        Returns:
            The prompt text.

        Raises:
            Nothing.
        """
        return system_contract(self.hygiene.config.prompts)

    def format_context(self, memories: SearchMemoryOutput | Iterable[MemoryLike], *, max_tokens: int = 1000) -> str:
        """A compact layer-labelled block of memories within ``max_tokens``.

        Args:
            memories: Search results or memories.
            max_tokens: Budget of the block (estimated tokens).

        Returns:
            The block, empty without memories.

        Raises:
            MemoryError: ``INVALID_PARAMS`` for a non-positive budget or items that are not
                memories.
        """
        return format_context(memories, max_tokens)

    def process_conversation(
        self,
        ctx: TenantContext | None,
        messages: Sequence[Message],
        *,
        response: Message | None = None,
        identifiers: Any = None,
    ) -> ConversationResult:
        """Run the write gate over the user messages of a turn.

        Args:
            ctx: The caller's tenant context; every row read or written belongs to its tenant.
            messages: The turn's messages (``{role, content}``).
            response: The assistant's reply (context only).
            identifiers: The scope identifiers (``user_id``, ``session_id``, ``project_id``,
                ``agent_id``, …) as a dict or ``ScopeIdentifiers``.

        Returns:
            What was created, updated or ignored.

        Raises:
            MemoryError: ``MISSING_TENANT_CONTEXT`` / ``INVALID_TENANT_CONTEXT`` without a valid
                tenant context; ``INVALID_PARAMS`` for malformed messages.
        """
        return process_conversation(self, ctx, messages, response, identifiers)

    # -- observation (telemetry/observe.py) -------------------------------------------------------
    @property
    def observation(self) -> Observation | None:
        """What ``observe`` attached (its ``config`` and ``metrics_url``); None when observation is off."""
        return self._observation

    def metrics_text(self) -> str:
        """The process's Prometheus metrics (the server's ``/metrics`` names).

        Returns:
            The text exposition format, this store's ``memory_storage_size`` fresh.

        Raises:
            MemoryError: ``CONFIGURATION_ERROR`` unless the store was opened with metrics observed.
        """
        if self._observation is None or not self._observation.config.metrics:
            raise MemoryError(
                ErrorCode.CONFIGURATION_ERROR,
                "metrics are not observed: open the store with observe=True (or STRATAMEM_OBSERVE=1)",
                operation="metrics_text",
            )
        return telemetry.metrics_text()

    def fit_context(
        self,
        ctx: TenantContext | None,
        messages: Sequence[Message],
        max_tokens: int,
        *,
        identifiers: Any = None,
        layer: str | Layer = "session",
        keep_recent: int = 4,
        compact_at: float = 0.8,
        max_tool_tokens: int = 500,
    ) -> FitContextResult:
        """The messages to send within ``max_tokens`` (``agent/budget.py``).

        Args:
            ctx: The caller's tenant context; every row read or written belongs to its tenant.
            messages: The conversation, oldest first (chat-completion message dicts).
            max_tokens: The context budget.
            identifiers: The scope identifiers where pruned outputs and summaries are stored.
            layer: The layer they are stored in.
            keep_recent: The newest messages never pruned or compacted.
            compact_at: Share of ``max_tokens`` above which the oldest turns are compacted.
            max_tool_tokens: Tool outputs larger than this are stored and replaced by a pointer.

        Returns:
            The messages to send, what was pruned (with memory ids) and the summary written, if any.

        Raises:
            MemoryError: ``MISSING_TENANT_CONTEXT`` / ``INVALID_TENANT_CONTEXT`` without a valid
                tenant context; ``INVALID_PARAMS`` for bad arguments; ``PROVIDER_ERROR`` from the store.
        """
        hygiene = self.hygiene
        return fit_context(
            self,
            ctx,
            messages,
            max_tokens,
            identifiers=identifiers,
            layer=layer,
            llm=hygiene.llm,
            prompts=hygiene.config.prompts,
            keep_recent=keep_recent,
            compact_at=compact_at,
            max_tool_tokens=max_tool_tokens,
        )

    # -- lifecycle ---------------------------------------------------------------------------
    def close(self) -> None:
        """Stop background work and close the store.

        Returns:
            None.

        Raises:
            Nothing.
        """
        self.lifecycle.close()
        if self._observation is not None:
            self._observation.close()
        self.engine.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
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
        settings: Settings | None = None,
        encryption_key: EncryptionKey | str | None = None,
        observe: bool | ObserveConfig | None = None,
    ) -> Self:
        return cls(
            await asyncio.to_thread(
                Memory.open,
                location,
                embedder=embedder,
                config=config,
                clock=clock,
                settings=settings,
                encryption_key=encryption_key,
                observe=observe,
            )
        )

    @property
    def engine(self) -> MemoryEngine:
        return self.sync.engine

    async def add(
        self,
        ctx: TenantContext | None = None,
        content: str | None = None,
        *,
        layer: str | Layer | None = None,
        identifiers: Any = None,
        metadata: dict[str, Any] | None = None,
        tier: str | None = None,
        expires_at: datetime | str | None = None,
        importance: float | None = None,
        provenance: Any = None,
        supersedes: Sequence[str] | None = None,
    ) -> AddMemoryOutput:
        return await asyncio.to_thread(
            self.sync.add,
            ctx,
            content,
            layer=layer,
            identifiers=identifiers,
            metadata=metadata,
            tier=tier,
            expires_at=expires_at,
            importance=importance,
            provenance=provenance,
            supersedes=supersedes,
        )

    async def search(
        self,
        ctx: TenantContext | None = None,
        query: str | None = None,
        *,
        identifiers: Any = None,
        layers: Sequence[str | Layer] | None = None,
        limit: int | None = None,
        threshold: float | None = None,
        filter: Any = None,
        expand_graph: bool = False,
        hybrid_weight: float | None = None,
        recency_boost: float | None = None,
        importance_boost: float | None = None,
        include_superseded: bool = False,
        as_of: datetime | str | None = None,
        order: Order | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        time_field: TimeField | None = None,
        tags_match: TagsMatch | None = None,
        include_narrower: bool = False,
    ) -> SearchMemoryOutput:
        return await asyncio.to_thread(
            self.sync.search,
            ctx,
            query,
            identifiers=identifiers,
            layers=layers,
            limit=limit,
            threshold=threshold,
            filter=filter,
            expand_graph=expand_graph,
            hybrid_weight=hybrid_weight,
            recency_boost=recency_boost,
            importance_boost=importance_boost,
            include_superseded=include_superseded,
            as_of=as_of,
            order=order,
            since=since,
            until=until,
            time_field=time_field,
            tags_match=tags_match,
            include_narrower=include_narrower,
        )

    async def get(self, ctx: TenantContext | None = None, memory_id: str | None = None) -> MemoryEntry | None:
        return await asyncio.to_thread(self.sync.get, ctx, memory_id)

    async def update(
        self,
        ctx: TenantContext | None = None,
        memory_id: str | None = None,
        *,
        content: str | None = None,
        metadata: dict[str, Any] | None = None,
        if_match: str | None = None,
        expires_at: datetime | str | Unset | None = UNSET,
        tier: str | None = None,
        record_conflict: bool = True,
    ) -> UpdateMemoryOutput:
        return await asyncio.to_thread(
            self.sync.update,
            ctx,
            memory_id,
            content=content,
            metadata=metadata,
            if_match=if_match,
            expires_at=expires_at,
            tier=tier,
            record_conflict=record_conflict,
        )

    async def delete(
        self, ctx: TenantContext | None = None, memory_id: str | None = None, *, if_match: str | None = None
    ) -> DeleteMemoryOutput:
        return await asyncio.to_thread(self.sync.delete, ctx, memory_id, if_match=if_match)

    async def list(
        self,
        ctx: TenantContext | None = None,
        layer: str | Layer | None = None,
        *,
        identifiers: Any = None,
        cursor: str | None = None,
        limit: int | None = None,
        filter: Any = None,
        include_superseded: bool = False,
        as_of: datetime | str | None = None,
        order: Order | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        time_field: TimeField | None = None,
        tags_match: TagsMatch | None = None,
        include_narrower: bool = False,
        expires_before: datetime | str | None = None,
    ) -> ListMemoriesOutput:
        return await asyncio.to_thread(
            self.sync.list,
            ctx,
            layer,
            identifiers=identifiers,
            cursor=cursor,
            limit=limit,
            filter=filter,
            include_superseded=include_superseded,
            as_of=as_of,
            order=order,
            since=since,
            until=until,
            time_field=time_field,
            tags_match=tags_match,
            include_narrower=include_narrower,
            expires_before=expires_before,
        )

    async def bulk_add(self, ctx: TenantContext | None = None, items: Sequence[Any] = ()) -> BulkAddOutput:
        return await asyncio.to_thread(self.sync.bulk_add, ctx, items)

    async def bulk_delete(self, ctx: TenantContext | None = None, ids: Sequence[str] = ()) -> BulkDeleteOutput:
        return await asyncio.to_thread(self.sync.bulk_delete, ctx, ids)

    async def stats(self, ctx: TenantContext | None = None) -> StoreStats:
        return await asyncio.to_thread(self.sync.stats, ctx)

    async def export(
        self, ctx: TenantContext | None = None, *, include_embeddings: bool = False
    ) -> AsyncIterator[MemoryEntry]:
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
    async def open_from_snapshot(
        cls, tenants: Any = None, *, location: str | None = None, **kwargs: Any
    ) -> AsyncMemory:
        return cls(await asyncio.to_thread(Memory.open_from_snapshot, tenants, location=location, **kwargs))

    @property
    def lifecycle(self) -> AsyncProxy:
        """``Memory.lifecycle`` with coroutine methods (attributes such as ``config`` read and set as is)."""
        return AsyncProxy(self.sync.lifecycle)

    @property
    def policies(self) -> AsyncProxy:
        """``Memory.policies`` with coroutine methods: ``await mem.policies.set(t, deny_patterns=[...])``."""
        return AsyncProxy(self.sync.policies)

    @property
    def hygiene(self) -> AsyncProxy:
        """``Memory.hygiene`` with coroutine methods."""
        return AsyncProxy(self.sync.hygiene)

    async def close_session(
        self,
        ctx: TenantContext | None,
        user_id: str,
        session_id: str,
        *,
        project_id: str | None = None,
        agent_id: str | None = None,
    ) -> CloseSessionResult:
        return await asyncio.to_thread(
            lambda: self.sync.close_session(ctx, user_id, session_id, project_id=project_id, agent_id=agent_id)
        )

    async def reflect(
        self, ctx: TenantContext | None, user_id: str, session_id: str, *, agent_id: str | None = None
    ) -> ReflectionResult:
        return await asyncio.to_thread(self.sync.reflect, ctx, user_id, session_id, agent_id=agent_id)

    async def promote(
        self,
        ctx: TenantContext | None,
        source_id: str,
        target_layer: str | Layer,
        *,
        identifiers: Any = None,
        delete_original: bool = False,
        content: str | None = None,
        tags: builtins.list[str] | None = None,
    ) -> MemoryEntry:
        return await asyncio.to_thread(
            self.sync.promote,
            ctx,
            source_id,
            target_layer,
            identifiers=identifiers,
            delete_original=delete_original,
            content=content,
            tags=tags,
        )

    async def compact(
        self,
        ctx: TenantContext | None,
        source_ids: Sequence[str],
        callback: Callable[..., Any],
        *,
        delete_sources: bool = False,
        target_layer: str | Layer | None = None,
        tags: builtins.list[str] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> MemoryEntry:
        return await asyncio.to_thread(
            self.sync.compact,
            ctx,
            source_ids,
            callback,
            delete_sources=delete_sources,
            target_layer=target_layer,
            tags=tags,
            metadata=metadata,
        )

    async def delete_by_scope(self, ctx: TenantContext | None, layer: str | Layer, identifiers: Any) -> int:
        return await asyncio.to_thread(self.sync.delete_by_scope, ctx, layer, identifiers)

    async def feedback(self, ctx: TenantContext | None, memory_ids: Sequence[str], reward: float) -> FeedbackResult:
        return await asyncio.to_thread(self.sync.feedback, ctx, memory_ids, reward)

    async def conflicts(
        self,
        ctx: TenantContext | None,
        *,
        memory_id: str | None = None,
        layer: str | Layer | None = None,
        identifiers: Any = None,
        cursor: str | None = None,
        limit: int | None = None,
    ) -> ListMemoriesOutput:
        return await asyncio.to_thread(
            lambda: self.sync.conflicts(
                ctx, memory_id=memory_id, layer=layer, identifiers=identifiers, cursor=cursor, limit=limit
            )
        )

    async def crud(self, ctx: TenantContext | None, request: Any) -> MemoryCrudResponse:
        return await asyncio.to_thread(self.sync.crud, ctx, request)

    async def soft_delete(self, ctx: TenantContext | None, ids: Sequence[str]) -> builtins.list[str]:
        return await asyncio.to_thread(self.sync.soft_delete, ctx, ids)

    async def restore(self, ctx: TenantContext | None, ids: Sequence[str]) -> builtins.list[str]:
        return await asyncio.to_thread(self.sync.restore, ctx, ids)

    async def prune(self, ctx: TenantContext | None, *, dry_run: bool = True) -> PruneReport:
        return await asyncio.to_thread(lambda: self.sync.prune(ctx, dry_run=dry_run))

    async def maintain(self, *, tenants: Sequence[str] | None = None) -> MaintenanceReport:
        return await asyncio.to_thread(self.sync.maintain, tenants=tenants)

    async def process(
        self,
        ctx: TenantContext | None = None,
        text: str | None = None,
        *,
        intent: str = "none",
        identifiers: Any = None,
        recent_messages: Sequence[str] | None = None,
        layer: str | Layer | None = None,
    ) -> ProcessResult:
        return await asyncio.to_thread(
            self.sync.process,
            ctx,
            text,
            intent=intent,
            identifiers=identifiers,
            recent_messages=recent_messages,
            layer=layer,
        )

    async def remember(
        self,
        ctx: TenantContext | None = None,
        text: str | None = None,
        *,
        identifiers: Any = None,
        layer: str | Layer | None = None,
    ) -> ProcessResult:
        return await asyncio.to_thread(self.sync.remember, ctx, text, identifiers=identifiers, layer=layer)

    async def forget(
        self,
        ctx: TenantContext | None = None,
        text: str | None = None,
        *,
        identifiers: Any = None,
        layer: str | Layer | None = None,
    ) -> ProcessResult:
        return await asyncio.to_thread(self.sync.forget, ctx, text, identifiers=identifiers, layer=layer)

    async def forget_user(self, ctx: TenantContext | None = None, user_id: str | None = None) -> ForgetUserReport:
        return await asyncio.to_thread(self.sync.forget_user, ctx, user_id)

    async def health(self, ctx: TenantContext | None = None, *, since: datetime | None = None) -> MemoryHealth:
        return await asyncio.to_thread(self.sync.health, ctx, since=since)

    async def memory_events(
        self,
        ctx: TenantContext | None = None,
        memory_id: str | None = None,
        *,
        limit: int = 50,
        events: Sequence[str] | None = None,
    ) -> MemoryEventsOutput:
        return await asyncio.to_thread(self.sync.memory_events, ctx, memory_id, limit=limit, events=events)

    async def event_trends(self, ctx: TenantContext | None = None, *, days: int = 14) -> EventTrends:
        return await asyncio.to_thread(self.sync.event_trends, ctx, days=days)

    async def maintenance_runs(self, ctx: TenantContext | None = None, *, limit: int = 20) -> MaintenanceRunsOutput:
        return await asyncio.to_thread(self.sync.maintenance_runs, ctx, limit=limit)

    async def system_contract(self) -> str:
        return self.sync.system_contract()

    async def format_context(
        self, memories: SearchMemoryOutput | Iterable[MemoryLike], *, max_tokens: int = 1000
    ) -> str:
        return self.sync.format_context(memories, max_tokens=max_tokens)

    async def process_conversation(
        self,
        ctx: TenantContext | None,
        messages: Sequence[Message],
        *,
        response: Message | None = None,
        identifiers: Any = None,
    ) -> ConversationResult:
        return await asyncio.to_thread(
            self.sync.process_conversation, ctx, messages, response=response, identifiers=identifiers
        )

    @property
    def observation(self) -> Observation | None:
        return self.sync.observation

    async def metrics_text(self) -> str:
        return await asyncio.to_thread(self.sync.metrics_text)

    async def fit_context(
        self,
        ctx: TenantContext | None,
        messages: Sequence[Message],
        max_tokens: int,
        *,
        identifiers: Any = None,
        layer: str | Layer = "session",
        keep_recent: int = 4,
        compact_at: float = 0.8,
        max_tool_tokens: int = 500,
    ) -> FitContextResult:
        return await asyncio.to_thread(
            lambda: self.sync.fit_context(
                ctx,
                messages,
                max_tokens,
                identifiers=identifiers,
                layer=layer,
                keep_recent=keep_recent,
                compact_at=compact_at,
                max_tool_tokens=max_tool_tokens,
            )
        )

    async def close(self) -> None:
        await asyncio.to_thread(self.sync.close)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()


def _share_docstrings() -> None:
    """Give every public ``AsyncMemory`` method the documentation of its ``Memory`` twin (same
    arguments, returns and error codes; the async one is awaited)."""
    for name, member in vars(AsyncMemory).items():
        twin = vars(Memory).get(name)
        if name.startswith("_") or twin is None or isinstance(member, property):
            continue
        target = member.__func__ if isinstance(member, classmethod | staticmethod) else member
        source = twin.__func__ if isinstance(twin, classmethod | staticmethod) else twin
        if source.__doc__ and "Returns:" not in (target.__doc__ or ""):
            target.__doc__ = source.__doc__


_share_docstrings()
