"""The engine: one pipeline per operation (validate → govern → embed → store → observe).

Surfaces (SDK, REST, MCP, CLI) call the engine; the engine calls a provider. Extension points are
the fields of ``engine.hooks`` (``stratamem/hooks.py``: guards, observers, result filters, tenant
gates, access and conflict hooks, the provider's write hooks and row listeners); features register
there when ``stratamem/assembly.py`` attaches them, and the engine imports no feature.
"""

from __future__ import annotations

import builtins
import contextvars
import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import numpy as np
import numpy.typing as npt
from pydantic import ValidationError

from . import replacements
from .add_groups import AddGroups, PendingAdd
from .arguments import check_str_list, split_ids
from .config import MemoryConfig
from .coordination.ratelimit import RateLimiter, make_rate_limiter
from .cursor import decode_cursor, encode_cursor, fingerprint
from .embeddings import Embedder, EmbeddingService, content_hash
from .embeddings.redis_cache import RedisEmbeddingCache
from .errors import ErrorCode, MemoryError
from .features import EventsFeature, SearchExpansion
from .filters import compile_filter, parse_filter, with_tags_match
from .hooks import ConflictHook, EngineHooks, Observer, OperationEvent, ResultFilter, WriteGuard
from .layers import (
    get_accessible_layers,
    parse_identifiers,
    parse_layer,
    parse_layers,
    precedence,
    require_identifiers,
    scope_key,
    scoped_identifiers,
)
from .limits import json_depth_exceeds
from .model import (
    AddMemoryInput,
    AddMemoryOutput,
    BulkAddOutput,
    BulkDeleteOutput,
    DeleteMemoryOutput,
    HealthCheckResult,
    Layer,
    LayerIdentifiers,
    ListMemoriesOutput,
    MemoryEntry,
    MetadataFilter,
    Provenance,
    SearchMemoryOutput,
    SearchResult,
    StoreStats,
    TenantContext,
    UpdateMemoryOutput,
)
from .providers.base import (
    ListPage,
    ListQuery,
    MemoryProvider,
    PreparedAdd,
    Scope,
    ScoredEntry,
    SearchPage,
    SearchQuery,
    ThreadTurn,
)
from .query import UNSET, QueryOptions, narrower_layers, parse_options, parse_time
from .retrieval.asked_values import asked_value, states_value
from .retrieval.boosts import Boosts, boosted_page
from .retrieval.centering import Centroid
from .retrieval.context import context_page
from .retrieval.voice import (
    ASKED,
    BY_PRONOUN,
    FIRST_PERSON,
    NAME,
    NOBODY,
    PERSONAL_LAYERS,
    PRONOUNS,
    THE_USER,
    ScopeForms,
    closest,
    mentions,
    name_from_id,
    phrasings,
    refers,
    user_words,
    usual_name,
)
from .retry import call_with_retry
from .search import FloorMeasure, above_relevance_floor, merge_results, newer_first
from .telemetry.audit import AuditLog
from .validation import check_id, check_limit
from .wording import NAME_STATEMENT, newest_stated_name

log = logging.getLogger("stratamem")

Clock = Callable[[], datetime]
_Vec = npt.NDArray[np.float32]


def utc_now() -> datetime:
    return datetime.now(UTC)


def _etag(memory_id: str, version: int, chash: str, metadata: Mapping[str, Any]) -> str:
    meta = json.dumps(metadata, sort_keys=True, default=str) if metadata else "{}"  # most memories: none
    raw = f"{memory_id}:{version}:{chash}:{meta}"
    return content_hash(raw)[7:27]


def _superseded_copy(old: MemoryEntry, new: MemoryEntry, now: datetime) -> MemoryEntry:
    """``old`` as the memory ``new`` replaces: superseded, valid until ``new`` was created (the
    stored vector is kept)."""
    version = old.version + 1
    prov = old.provenance.model_copy(update={"superseded_by": new.id, "valid_to": new.created_at})
    return old.model_copy(
        update={
            "status": "superseded",
            "provenance": prov,
            "version": version,
            "updated_at": max(now, old.updated_at),
            "etag": _etag(old.id, version, old.content_hash, old.metadata),
            "embedding": None,
        }
    )


#: Metadata keys fixed at creation (scope and ``promotedFromId`` are immutable so provenance can be
#: trusted; provenance chains are never flattened). The scope (layer + identifiers) cannot be
#: patched at all.
IMMUTABLE_METADATA: tuple[str, ...] = ("promotedFromId", "compactedFromIds")


def _check_immutable(current: MemoryEntry, patch: Mapping[str, Any], operation: str) -> None:
    """INVALID_PARAMS when a metadata patch would change, add or remove an immutable key."""
    for key in IMMUTABLE_METADATA:
        if key in patch and patch[key] != current.metadata.get(key):
            raise MemoryError(
                ErrorCode.INVALID_PARAMS,
                f"metadata.{key} is immutable after creation; promote or compact to create a new entry instead",
                operation=operation,
                details={"field": f"metadata.{key}", "reason": "immutable", "id": current.id},
                retryable=False,
            )


def _lower_priority() -> None:
    """Run the calling thread at nice 10 (Linux: a thread's priority is set by its native id).

    The preparing thread then takes only the cycles the model leaves idle, instead of slowing the
    embedding it is meant to hide behind (a bulk ingest measured slightly faster at nice 10).
    """
    setpriority = getattr(os, "setpriority", None)  # not on Windows
    if setpriority is not None:
        with suppress(OSError):
            setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)


#: How many of a personal scope's memories, those matching the user's name and "user" best, are
#: read to tell how the scope names the user (``MemoryEngine._naming``).
MENTION_SAMPLE = 50
#: Most hits of one layer a search with a time window or ``as_of`` ranks before filtering them.
_MAX_WINDOW_CANDIDATES = 10_000

#: What ``get`` returns and history searches reach: current memories and the ones a newer one replaced.
CURRENT_AND_HISTORY: tuple[str, ...] = ("active", "superseded")


def parse_as_of(value: Any, operation: str) -> datetime | None:
    """``as_of`` of a history query: a datetime or an ISO 8601 string (UTC when no offset is given)."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise MemoryError(
                ErrorCode.INVALID_PARAMS,
                "as_of must be an ISO 8601 date-time",
                operation=operation,
                details={"field": "as_of"},
            ) from None
    if not isinstance(value, datetime):
        raise MemoryError(
            ErrorCode.INVALID_PARAMS, "as_of must be a date-time", operation=operation, details={"field": "as_of"}
        )
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def valid_at(entry: MemoryEntry, at: datetime) -> bool:
    """The memory existed at ``at`` and had not been superseded yet."""
    valid_to = entry.provenance.valid_to
    if valid_to is not None and valid_to.tzinfo is None:
        valid_to = valid_to.replace(tzinfo=UTC)
    created = entry.created_at if entry.created_at.tzinfo else entry.created_at.replace(tzinfo=UTC)
    return created <= at and (valid_to is None or valid_to > at)


def turn_valid_at(turn: ThreadTurn, at: datetime) -> bool:
    """:func:`valid_at` of a turn read by place (``Provider.thread_turns``)."""
    return turn.created_at <= at and (turn.valid_to is None or turn.valid_to > at)


def _statuses(include_superseded: Any, at: datetime | None, operation: str) -> tuple[str, ...]:
    if not isinstance(include_superseded, bool):
        raise MemoryError(
            ErrorCode.INVALID_PARAMS,
            "include_superseded must be true or false",
            operation=operation,
            details={"field": "include_superseded"},
        )
    return CURRENT_AND_HISTORY if include_superseded or at is not None else ("active",)


def _narrowed(
    merged: list[tuple[Layer, ScoredEntry]],
    vectors: list[npt.NDArray[np.float32] | None],
    kept: list[tuple[Layer, ScoredEntry]],
    total: int,
    limit: int,
) -> tuple[list[tuple[Layer, ScoredEntry]], list[npt.NDArray[np.float32] | None], int]:
    """The merged results narrowed to ``kept`` (a subsequence of them), with their vectors and the
    total count: exact when every candidate was seen (fewer than ``limit`` came back), else the
    count less the candidates removed."""
    seen_all = len(merged) < limit or not kept
    total = len(kept) if seen_all else max(len(kept), total - (len(merged) - len(kept)))
    vector_of = {id(hit): vec for (_, hit), vec in zip(merged, vectors, strict=True)}
    return kept, [vector_of[id(hit)] for _, hit in kept], total


def _weight(value: Any, field_name: str, operation: str) -> float:
    """A search weight in [0, 1] (``hybrid_weight``, the boosts), or INVALID_PARAMS naming the field."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
        raise MemoryError(
            ErrorCode.INVALID_PARAMS,
            f"{field_name} must be a number from 0 to 1",
            operation=operation,
            details={"field": field_name},
        )
    return float(value)


class MemoryEngine:
    #: Adds of this many items or more run ``provider.prepare_add`` on another thread while embedding.
    prepare_ahead_min: int = 32

    def __init__(
        self,
        provider: MemoryProvider,
        embedder: Embedder,
        config: MemoryConfig | None = None,
        *,
        clock: Clock | None = None,
    ) -> None:
        self.config = config or MemoryConfig()
        self.provider = provider
        self.clock: Clock = clock or utc_now
        shared_cache = None
        if self.config.redis_url:  # shared embedding cache (embeddings/redis_cache.py)
            shared_cache = RedisEmbeddingCache.from_url(
                self.config.redis_url, self.config.redis_prefix, ttl_s=self.config.embedding_cache_ttl_s
            )
        self.embeddings = EmbeddingService(embedder, provider, self.config.retry, shared=shared_cache)
        #: Rate limiter of the memory_crud skill (Redis-backed and shared when ``redis_url`` is set);
        #: follows an injected engine clock. Replaceable (tests inject one with their own clock).
        self.crud_limiter: RateLimiter = make_rate_limiter(
            "crud",
            self.config.redis_url,
            prefix=self.config.redis_prefix,
            clock=None if clock is None else (lambda: self.clock().timestamp()),
        )
        provider.configure_search_index(
            enabled=self.config.search_index,
            ann_threshold=self.config.ann_threshold,
            max_rows=self.config.search_index_max_rows,
        )
        info = provider.initialize(embedder.model_id, embedder.dimensions)
        self.store_info = info
        # ``generate_embedding`` gives the vector a memory of the text would be stored with
        provider.attach_embedder(self.embeddings.embed_text)
        #: Every extension point (``stratamem/hooks.py``); the attributes below are the same lists.
        self.hooks = EngineHooks(write_hooks=provider.write_hooks, row_listeners=provider.row_listeners)
        self.guards: list[WriteGuard] = self.hooks.guards
        #: Checks of a write's other stored strings (``{"tier": …, "identifiers": {…}}``); raise to refuse.
        self.field_guards: list[Callable[[TenantContext, str, Layer | None, Mapping[str, Any]], None]] = []
        self.observers: list[Observer] = self.hooks.observers
        #: Audit sink shared by every feature (writes, denials, cross-tenant attempts; never content).
        self.audit = AuditLog()
        #: Knowledge graph (graph/): a write hook + traversal service where the provider supports it.
        #: Attached by ``stratamem.assembly`` right after construction, as is ``hygiene``.
        self.graph: SearchExpansion
        #: Lifecycle hooks: called after get/search with the entries read (cheap, must not raise), and on
        #: an update's if_match mismatch to store the conflict entry (returns its id or None).
        self.access_hooks: list[Callable[[TenantContext, Sequence[MemoryEntry]], None]] = self.hooks.access_hooks
        self._pool = ThreadPoolExecutor(max_workers=self.config.search_workers, thread_name_prefix="stratamem-search")
        # which phrasing of a question in the user's voice each personal scope takes (retrieval/voice.py)
        self._scope_forms = ScopeForms()
        #: Prepares adds of ``prepare_ahead_min``+ items (``provider.prepare_add``, at nice 10) while the
        #: calling thread embeds them.
        self._prepare_pool = ThreadPoolExecutor(
            max_workers=4, thread_name_prefix="stratamem-prepare", initializer=_lower_priority
        )
        #: Group commit of concurrent single adds of one tenant (``add_groups.py``).
        self.add_groups = AddGroups(self._store_add_group, self._store_add_alone)
        self._closed = False
        # -- feature hooks ----------------------------------------------------------------------
        #: Filters applied to merged search results before the limit (see ``ResultFilter``).
        self.result_filters: list[ResultFilter] = self.hooks.result_filters
        #: Called with the tenant id after every context check, before the operation touches the store;
        #: may block or raise (a lazy snapshot load makes a tenant's data complete here first).
        self.tenant_gates: list[Callable[[str, str], None]] = self.hooks.tenant_gates
        #: hygiene: sanitisation/secret/policy/PII guards, per-user quota, memory_events, process()
        self.hygiene: EventsFeature

    @property
    def conflict_hook(self) -> ConflictHook | None:
        """``hooks.conflict``."""
        return self.hooks.conflict

    @conflict_hook.setter
    def conflict_hook(self, hook: ConflictHook | None) -> None:
        self.hooks.conflict = hook

    # ------------------------------------------------------------------------------ plumbing
    @property
    def max_content_length(self) -> int:
        provider_max = self.provider.capabilities().max_content_length
        own = self.config.max_content_length
        return min(own, provider_max) if own else provider_max

    def now(self) -> datetime:
        now = self.clock()
        return now if now.tzinfo else now.replace(tzinfo=UTC)

    def check_context(self, ctx: Any, operation: str) -> TenantContext:
        if ctx is None:
            raise MemoryError(
                ErrorCode.MISSING_TENANT_CONTEXT,
                "a TenantContext is required for every memory operation",
                operation=operation,
            )
        if isinstance(ctx, Mapping):
            try:
                ctx = TenantContext.model_validate(dict(ctx))
            except ValidationError:
                raise MemoryError(
                    ErrorCode.INVALID_TENANT_CONTEXT, "the tenant context is malformed", operation=operation
                ) from None
        if not isinstance(ctx, TenantContext):
            raise MemoryError(
                ErrorCode.INVALID_TENANT_CONTEXT,
                f"expected a TenantContext, got {type(ctx).__name__}",
                operation=operation,
            )
        ctx.validate_at(self.now(), operation)
        for gate in self.tenant_gates:
            gate(ctx.tenant_id, operation)
        return ctx

    @contextmanager
    def operation(self, name: str, ctx: Any) -> Iterator[tuple[TenantContext, dict[str, Any]]]:
        """Validate the context, time the operation, normalise errors, notify observers.

        The operation's bookkeeping appends (access statistics, its ``memory_events`` row) are
        written together when it ends (``provider.grouped_appends``): one commit instead of two."""
        with self.provider.grouped_appends():
            yield from self._operation(name, ctx)

    def _operation(self, name: str, ctx: Any) -> Iterator[tuple[TenantContext, dict[str, Any]]]:
        start = time.perf_counter()
        extra: dict[str, Any] = {}
        tenant_id = getattr(ctx, "tenant_id", None)
        code: str | None = None
        try:
            if self._closed:
                raise MemoryError(ErrorCode.PROVIDER_ERROR, "this Memory is closed", operation=name, retryable=False)
            checked = self.check_context(ctx, name)
            yield checked, extra
        except MemoryError as exc:
            exc.with_operation(name)
            code = exc.code.value
            raise
        except Exception as exc:  # a bug or an unexpected backend failure: never a raw stack trace
            log.exception("unexpected error in %s", name)
            code = ErrorCode.PROVIDER_ERROR.value
            raise MemoryError(
                ErrorCode.PROVIDER_ERROR,
                f"internal error during {name} (logged)",
                operation=name,
                retryable=False,
            ) from exc
        finally:
            event = OperationEvent(
                name, tenant_id, time.perf_counter() - start, code, extra, principal=getattr(ctx, "principal", None)
            )
            for observer in self.observers:
                try:
                    observer(event)
                except Exception:  # observers must never break an operation
                    log.exception("observer failed")

    def _accessed(self, ctx: TenantContext, entries: Sequence[MemoryEntry]) -> None:
        for hook in self.access_hooks:
            try:
                hook(ctx, entries)
            except Exception:  # access tracking never fails a read
                log.exception("access hook failed")

    def _conflict(
        self,
        ctx: TenantContext,
        current: MemoryEntry,
        content: str | None,
        patch: Mapping[str, Any] | None,
        details: dict[str, Any],
        record: bool = True,
    ) -> dict[str, Any]:
        if record and self.conflict_hook is not None:
            try:
                conflict_id = self.conflict_hook(ctx, current, content, patch)
            except Exception:
                log.exception("conflict hook failed")
                conflict_id = None
            if conflict_id is not None:
                details["conflict_id"] = conflict_id
        return details

    def _store(self, fn: Callable[[], Any], operation: str) -> Any:
        return call_with_retry(fn, operation, self.config.retry)

    # ------------------------------------------------------------------------------ grants
    # Every read and change checks the memory's scope against the caller's grant here (a context
    # without one is a trusted in-process caller). A memory outside the grant looks missing.
    @staticmethod
    def visible(ctx: TenantContext, entry: MemoryEntry) -> bool:
        """May ``ctx`` see (and, with a writing role, change) this stored entry?"""
        return ctx.grant is None or ctx.grant.allows(entry.layer, entry.identifiers)

    def require_grant(self, ctx: TenantContext, layer: Layer, identifiers: LayerIdentifiers, operation: str) -> None:
        """FORBIDDEN when the scope (``layer``, ``identifiers``) a request names is outside the grant."""
        if ctx.grant is None or ctx.grant.allows(layer, scoped_identifiers(layer, identifiers)):
            return
        self.audit.record(
            tenant_id=ctx.tenant_id,
            principal=ctx.principal,
            action=operation,
            outcome="denied",
            code=ErrorCode.FORBIDDEN.value,
            layer=layer.value,
            details={"reason": "outside the grant"},
        )
        raise MemoryError(
            ErrorCode.FORBIDDEN,
            f"this credential may not use that {layer.value} scope",
            operation=operation,
            details={"layer": layer.value, "reason": "outside the grant"},
        )

    def require_tenant_grant(self, ctx: TenantContext, operation: str) -> None:
        """FORBIDDEN unless the caller may see every scope (tenant-wide operations)."""
        if ctx.grant is not None and not ctx.grant.all:
            raise MemoryError(
                ErrorCode.FORBIDDEN,
                f"{operation} needs a tenant-wide grant",
                operation=operation,
                details={"reason": "outside the grant"},
            )

    def get_visible(
        self,
        ctx: TenantContext,
        memory_id: str,
        operation: str,
        include_embedding: bool = False,
        *,
        statuses: tuple[str, ...] = ("active",),
    ) -> MemoryEntry | None:
        """The stored entry, or None when it is missing or outside the caller's grant."""
        entry: MemoryEntry | None = self._store(
            lambda: self.provider.get(
                ctx.tenant_id, memory_id, self.now(), include_embedding=include_embedding, statuses=statuses
            ),
            operation,
        )
        return entry if entry is not None and self.visible(ctx, entry) else None

    # ------------------------------------------------------------------------------ validation
    def _check_content(self, content: Any, operation: str, limit: int | None = None) -> str:
        """The content, or INVALID_PARAMS / CONTENT_TOO_LONG; ``limit`` is ``max_content_length``
        when the caller already has it (a batch asks the provider once, not per item)."""
        if not isinstance(content, str):
            raise MemoryError(
                ErrorCode.INVALID_PARAMS, "content must be a string", operation=operation, details={"field": "content"}
            )
        if not content.strip():
            raise MemoryError(
                ErrorCode.INVALID_PARAMS, "content must not be empty", operation=operation, details={"field": "content"}
            )
        if limit is None:
            limit = self.max_content_length
        if len(content) > limit:
            raise MemoryError(
                ErrorCode.CONTENT_TOO_LONG,
                f"content is {len(content)} characters; the limit is {limit}",
                operation=operation,
                details={"max_length": limit, "length": len(content)},
                retryable=False,
            )
        return content

    def _check_metadata(self, metadata: Any, operation: str) -> dict[str, Any]:
        if metadata is None:
            return {}
        if not isinstance(metadata, Mapping):
            raise MemoryError(
                ErrorCode.INVALID_PARAMS,
                "metadata must be an object",
                operation=operation,
                details={"field": "metadata"},
            )
        if not metadata:
            return {}
        depth = self.config.max_metadata_depth
        if json_depth_exceeds(metadata, depth):  # before json.dumps, which recurses
            raise MemoryError(
                ErrorCode.INVALID_PARAMS,
                f"metadata is nested deeper than {depth} levels",
                operation=operation,
                details={"field": "metadata", "max_depth": depth},
            )
        try:
            encoded = json.dumps(metadata, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise MemoryError(
                ErrorCode.INVALID_PARAMS,
                f"metadata must be JSON-serialisable: {exc}",
                operation=operation,
                details={"field": "metadata"},
            ) from None
        if len(encoded.encode()) > self.config.max_metadata_bytes:
            raise MemoryError(
                ErrorCode.INVALID_PARAMS,
                f"metadata is larger than {self.config.max_metadata_bytes} bytes",
                operation=operation,
                details={"field": "metadata", "max_bytes": self.config.max_metadata_bytes},
            )
        tags = metadata.get("tags")
        if tags is not None and (not isinstance(tags, list) or not all(isinstance(t, str) for t in tags)):
            raise MemoryError(
                ErrorCode.INVALID_PARAMS,
                "metadata.tags must be a list of strings",
                operation=operation,
                details={"field": "metadata.tags"},
            )
        out: dict[str, Any] = json.loads(encoded)
        return out

    def _check_limit(self, limit: Any, default: int, maximum: int, operation: str) -> int:
        return check_limit(limit, default, maximum, operation)

    def _check_expiry(self, expires_at: Any, operation: str) -> datetime | None:
        if expires_at is None:
            return None
        if isinstance(expires_at, str):
            try:
                expires_at = datetime.fromisoformat(expires_at.replace("Z", "+00:00"))
            except ValueError:
                raise MemoryError(
                    ErrorCode.INVALID_PARAMS,
                    "expires_at must be an ISO-8601 timestamp",
                    operation=operation,
                    details={"field": "expiresAt"},
                ) from None
        if not isinstance(expires_at, datetime):
            raise MemoryError(
                ErrorCode.INVALID_PARAMS,
                "expires_at must be a datetime",
                operation=operation,
                details={"field": "expiresAt"},
            )
        aware = expires_at if expires_at.tzinfo else expires_at.replace(tzinfo=UTC)
        if aware <= self.now():  # such a memory could never be read
            raise MemoryError(
                ErrorCode.INVALID_PARAMS,
                "expires_at must be in the future",
                operation=operation,
                details={"field": "expiresAt"},
            )
        return aware

    def _guard(
        self, ctx: TenantContext, operation: str, content: str, layer: Layer, metadata: Mapping[str, Any]
    ) -> str:
        for guard in self.guards:
            content = guard.check_write(ctx, operation, content, layer, metadata)
        return content

    def _guard_fields(
        self,
        ctx: TenantContext,
        operation: str,
        layer: Layer | None,
        tier: str | None,
        identifiers: LayerIdentifiers | None,
    ) -> None:
        fields: dict[str, Any] = {}
        if tier is not None:
            fields["tier"] = tier
        if identifiers is not None:
            present = identifiers.present()
            if present:
                fields["identifiers"] = present
        if fields:
            for check in self.field_guards:
                check(ctx, operation, layer, fields)

    # ------------------------------------------------------------------------------ add
    def _prepare(
        self, ctx: TenantContext, item: AddMemoryInput, operation: str, content_limit: int | None = None
    ) -> MemoryEntry:
        layer = parse_layer(item.layer, operation)
        require_identifiers(layer, item.identifiers, operation)
        self.require_grant(ctx, layer, item.identifiers, operation)
        content = self._check_content(item.content, operation, content_limit)
        metadata = self._check_metadata(item.metadata, operation)
        content = self._guard(ctx, operation, content, layer, metadata)
        self._guard_fields(ctx, operation, layer, item.tier, item.identifiers)
        now = self.now()
        memory_id = str(uuid.uuid4())
        chash = content_hash(content)
        provenance = item.provenance or Provenance()
        if provenance.created_in_session_id is None and item.identifiers.session_id:
            provenance = provenance.model_copy(update={"created_in_session_id": item.identifiers.session_id})
        if provenance.agent_id is None and item.identifiers.agent_id:
            provenance = provenance.model_copy(update={"agent_id": item.identifiers.agent_id})
        if provenance.source is None:
            src = metadata.get("source")
            if isinstance(src, Mapping) and isinstance(src.get("type"), str):
                provenance = provenance.model_copy(update={"source": src["type"]})
        importance = 0.0 if item.importance is None else float(item.importance)
        if item.importance is not None:  # kept so access-driven rescoring never drops it (lifecycle)
            provenance = provenance.model_copy(update={"explicit_importance": importance})
        if not 0.0 <= importance <= 1.0:
            raise MemoryError(
                ErrorCode.INVALID_PARAMS,
                "importance must be between 0 and 1",
                operation=operation,
                details={"field": "importance"},
            )
        return MemoryEntry(
            id=memory_id,
            tenant_id=ctx.tenant_id,
            content=content,
            layer=layer,
            identifiers=scoped_identifiers(layer, item.identifiers),
            metadata=metadata,
            tier=item.tier,
            created_at=now,
            updated_at=now,
            expires_at=self._check_expiry(item.expires_at, operation),
            version=1,
            etag=_etag(memory_id, 1, chash, metadata),
            importance=importance,
            provenance=provenance,
            content_hash=chash,
        )

    def _coerce_input(self, item: Any, operation: str, index: int | None = None) -> AddMemoryInput:
        if isinstance(item, AddMemoryInput):
            return item
        if not isinstance(item, Mapping):
            raise MemoryError(
                ErrorCode.INVALID_PARAMS,
                "each item must be an object",
                operation=operation,
                details={"index": index} if index is not None else {},
            )
        data = dict(item)
        data["identifiers"] = parse_identifiers(data.get("identifiers"), operation)
        try:
            return AddMemoryInput.model_validate(data)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err.get("loc", ()))
            details: dict[str, Any] = {"field": where}
            if index is not None:
                details["index"] = index
            raise MemoryError(
                ErrorCode.INVALID_PARAMS,
                f"invalid {where or 'input'}: {err.get('msg')}",
                operation=operation,
                details=details,
            ) from None

    def _prepare_items(
        self, ctx: TenantContext, items: Sequence[Any], operation: str
    ) -> tuple[list[MemoryEntry], dict[str, list[str]]]:
        """Validated entries of ``items`` and, per new id, the ids it names to supersede."""
        entries: list[MemoryEntry] = []
        explicit: dict[str, list[str]] = {}
        content_limit = self.max_content_length
        for i, raw in enumerate(items):
            try:
                item = self._coerce_input(raw, operation, i)
                entries.append(self._prepare(ctx, item, operation, content_limit))
                if item.supersedes:
                    explicit[entries[-1].id] = [self._check_id(x, operation) for x in item.supersedes]
            except MemoryError as exc:
                if len(items) > 1:
                    exc.details.setdefault("index", i)
                raise
        return entries, explicit

    def _embed(
        self, ctx: TenantContext, entries: Sequence[MemoryEntry], operation: str
    ) -> tuple[list[bool], PreparedAdd | None]:
        """Embed ``entries`` (one call; each entry's ``embedding`` is set); returns, per entry,
        whether the model had to run for it, and the add's work prepared meanwhile (or None)."""
        texts = [e.content for e in entries]
        prepared: PreparedAdd | None = None
        if len(entries) >= self.prepare_ahead_min:
            # While this thread embeds, a low-priority one does the add's work that needs no vectors
            # (graph extraction, postings, rows) on the cycles the model leaves idle. It starts once
            # the embedding caches are read (its dictionary query would slow that lookup down).
            jobs: list[Future[PreparedAdd | None]] = []

            def start() -> None:
                jobs.append(
                    self._prepare_pool.submit(contextvars.copy_context().run, self._prepare_ahead, entries, operation)
                )

            try:
                vectors, generated = self.embeddings.embed_contents(
                    ctx.tenant_id, texts, operation, persist=False, before_model=start
                )
            finally:
                prepared = jobs[0].result() if jobs else None
        else:
            vectors, generated = self.embeddings.embed_contents(ctx.tenant_id, texts, operation, persist=False)
        for entry, vec in zip(entries, vectors.tolist(), strict=True):  # one call for the whole matrix
            entry.embedding = vec
        return generated, prepared

    def _replacements(
        self,
        ctx: TenantContext,
        entries: Sequence[MemoryEntry],
        explicit: Mapping[str, Sequence[str]],
        now: datetime,
        operation: str,
    ) -> list[list[MemoryEntry] | MemoryError]:
        """Per embedded entry, the older memories it replaces (explicit ids, and the rule-based
        detection of ``supersession/`` when configured) or the error that fails it
        (``replacements.py``)."""

        def lookup(old_id: str) -> MemoryEntry | None:
            found: MemoryEntry | None = self._store(lambda: self.provider.get(ctx.tenant_id, old_id, now), operation)
            return found

        def nearest(entry: MemoryEntry, n: int) -> list[tuple[float, MemoryEntry]]:
            query = SearchQuery(
                tenant_id=ctx.tenant_id,
                scope=Scope(entry.layer, scope_key(entry.layer, entry.identifiers)),
                vector=np.asarray(entry.embedding, dtype=np.float32),
                text=entry.content,
                limit=n,
                min_score=replacements.MIN_SCORE,
                now=now,
            )
            page: SearchPage = self._store(lambda: self.provider.search(query), operation)
            return [(hit.score, hit.entry) for hit in page.hits]

        def owner(entry: MemoryEntry) -> str | None:
            # a personal scope is kept for its user, whose name a memory of the user layer may state;
            # read from the stored memories, not from the search-time cache of the scope's forms
            user_id = entry.identifiers.user_id
            if entry.layer not in PERSONAL_LAYERS or not user_id:
                return None
            scope = Scope(Layer.USER, scope_key(Layer.USER, LayerIdentifiers(user_id=user_id)))
            page = self._scope_matches(ctx, operation, scope, NAME_STATEMENT, 20, now)
            return newest_stated_name((hit.entry.created_at, hit.entry.content) for hit in page.hits)

        return replacements.plan(
            entries,
            explicit,
            lookup=lookup,
            nearest=nearest if self.config.detect_supersession else None,
            now=now,
            operation=operation,
            owner=owner,
        )

    def _store_replacing(
        self,
        entries: Sequence[MemoryEntry],
        olds: Sequence[Sequence[MemoryEntry]],
        prepared: PreparedAdd | None,
        now: datetime,
        operation: str,
    ) -> list[list[str]]:
        """Store ``entries`` and mark the memories each replaces (``olds[i]`` for entry ``i``)
        superseded, in one transaction; returns, per entry, the ids actually replaced (a memory
        another writer changed meanwhile is left as it is). The new vectors enter the persistent
        embedding cache in the same transaction as the rows."""
        pairs: list[tuple[MemoryEntry, MemoryEntry]] = []
        owners: list[int] = []
        for i, (entry, replaced) in enumerate(zip(entries, olds, strict=True)):
            for old in replaced:
                pairs.append((_superseded_copy(old, entry, now), old))
                owners.append(i)
        applied: list[bool] = self._store(
            lambda: self.provider.add_replacing(
                entries, pairs, cache_model=self.embeddings.model_id, prepared=prepared
            ),
            operation,
        )
        out: list[list[str]] = [[] for _ in entries]
        for (_, old), i, ok in zip(pairs, owners, applied, strict=True):
            if ok:
                out[i].append(old.id)
        return out

    def add_many(self, ctx: TenantContext, items: Sequence[Any], operation: str) -> list[AddMemoryOutput]:
        entries, explicit = self._prepare_items(ctx, items, operation)
        generated, prepared = self._embed(ctx, entries, operation)
        now = self.now()
        olds: list[list[MemoryEntry]] = []
        for i, planned in enumerate(self._replacements(ctx, entries, explicit, now, operation)):
            if isinstance(planned, MemoryError):  # nothing is stored
                if len(entries) > 1:
                    planned.details.setdefault("index", i)
                raise planned
            olds.append(planned)
        replaced = self._store_replacing(entries, olds, prepared, now, operation)
        return [self._add_output(entry, gen, ids) for entry, gen, ids in zip(entries, generated, replaced, strict=True)]

    def _store_add_group(self, group: list[PendingAdd]) -> None:
        """Store a group of single adds of one tenant (``add_groups.py``): one embedding call and one
        transaction for all of them and the memories they replace, decided in arrival order as
        ``add_many`` does for the items of one call. Sets every member's output or error; an add
        whose replacement fails (an explicit id not found) fails alone and is not stored; when the
        grouped transaction fails, marks each member to be stored alone (``_store_add_alone``, on
        its own caller's thread), so a bad add fails only its own caller."""
        entries = [p.entry for p in group]
        ctx = group[0].ctx
        try:
            generated, prepared = self._embed(ctx, entries, "add")
            now = self.now()
            planned = self._replacements(ctx, entries, {p.entry.id: p.supersedes for p in group}, now, "add")
            kept = [i for i, plan in enumerate(planned) if not isinstance(plan, MemoryError)]
            for pending, plan in zip(group, planned, strict=True):
                if isinstance(plan, MemoryError):
                    pending.error = plan
            olds = [plan for plan in planned if not isinstance(plan, MemoryError)]
            replaced = self._store_replacing([entries[i] for i in kept], olds, prepared, now, "add")
        except Exception as exc:
            if len(group) == 1:
                group[0].error = exc
                return
            log.info("add: a grouped transaction of %d adds failed (%s); storing each alone", len(group), exc)
            for pending in group:
                if pending.error is None:
                    pending.alone = True
            return
        for i, ids in zip(kept, replaced, strict=True):
            group[i].output = self._add_output(entries[i], generated[i], ids)

    def _store_add_alone(self, pending: PendingAdd) -> AddMemoryOutput:
        """Store one add of a group whose transaction failed, as an ungrouped add would be."""
        entry = pending.entry
        generated, prepared = self._embed(pending.ctx, [entry], "add")
        now = self.now()
        planned = self._replacements(pending.ctx, [entry], {entry.id: pending.supersedes}, now, "add")[0]
        if isinstance(planned, MemoryError):
            raise planned
        replaced = self._store_replacing([entry], [planned], prepared, now, "add")[0]
        return self._add_output(entry, generated[0], replaced)

    @staticmethod
    def _add_output(entry: MemoryEntry, generated: bool, replaced: list[str]) -> AddMemoryOutput:
        return AddMemoryOutput(
            memory=entry.model_copy(update={"embedding": None}), embedding_generated=generated, superseded=replaced
        )

    def _prepare_ahead(self, entries: Sequence[MemoryEntry], operation: str) -> PreparedAdd | None:
        """``provider.prepare_add``; a failure only means the work is done in the transaction instead."""
        try:
            return self.provider.prepare_add(entries)
        except Exception as exc:
            log.warning(
                "%s: preparing the add ahead of its transaction failed (%s: %s); it is done in the transaction instead",
                operation,
                type(exc).__name__,
                exc,
            )
            return None

    def add(
        self,
        ctx: Any,
        content: Any,
        layer: Any,
        identifiers: Any = None,
        metadata: Any = None,
        *,
        tier: str | None = None,
        expires_at: Any = None,
        importance: float | None = None,
        provenance: Provenance | Mapping[str, Any] | None = None,
        supersedes: Sequence[str] | None = None,
    ) -> AddMemoryOutput:
        with self.operation("add", ctx) as (tctx, extra):
            item = {
                "content": content,
                "layer": layer,
                "identifiers": identifiers,
                "metadata": metadata or {},
                "tier": tier,
                "expires_at": expires_at,
                "importance": importance,
                "provenance": provenance,
                "supersedes": None if supersedes is None else check_str_list(supersedes, "supersedes", "add"),
            }
            if self.config.group_adds:
                # Validation and guards run here, in the caller; only a valid add joins a group.
                entries, explicit = self._prepare_items(tctx, [item], "add")
                pending = PendingAdd(tctx, entries[0], explicit.get(entries[0].id, ()))
                out = self.add_groups.add(pending)
            else:
                out = self.add_many(tctx, [item], "add")[0]
            extra.update(layer=out.memory.layer.value, memory_id=out.memory.id)
            return out

    def bulk_add(self, ctx: Any, items: Sequence[Any]) -> BulkAddOutput:
        with self.operation("bulk_add", ctx) as (tctx, extra):
            if not isinstance(items, Sequence) or isinstance(items, str | bytes):
                raise MemoryError(ErrorCode.INVALID_PARAMS, "items must be a list", operation="bulk_add")
            if len(items) > self.config.max_bulk_items:
                raise MemoryError(
                    ErrorCode.INVALID_PARAMS,
                    f"at most {self.config.max_bulk_items} items per bulk_add (got {len(items)})",
                    operation="bulk_add",
                    details={"max_items": self.config.max_bulk_items},
                )
            outputs = self.add_many(tctx, items, "bulk_add") if items else []
            extra["count"] = len(outputs)
            extra["memory_ids"] = [o.memory.id for o in outputs]
            return BulkAddOutput(results=outputs)

    # ------------------------------------------------------------------------------ search
    def resolve_layers(self, identifiers: LayerIdentifiers, layers: Any, operation: str) -> list[Layer]:
        requested = parse_layers(layers, operation)
        if requested is None:
            accessible = get_accessible_layers(identifiers)
            if not accessible:
                raise MemoryError(
                    ErrorCode.MISSING_IDENTIFIER,
                    "no layer is accessible with these identifiers; give at least one of userId, projectId, "
                    "teamId, orgId, companyId (agent needs agentId+userId, session needs userId+sessionId)",
                    operation=operation,
                    details={"identifier": "userId", "layers": []},
                )
            return accessible
        for layer in requested:
            require_identifiers(layer, identifiers, operation)
        return requested

    def search(
        self,
        ctx: Any,
        query: Any,
        identifiers: Any = None,
        layers: Any = None,
        limit: Any = None,
        threshold: Any = None,
        filter: Any = None,
        *,
        include_embedding: bool = False,
        expand_graph: bool = False,
        hybrid_weight: float | None = None,
        recency_boost: float | None = None,
        importance_boost: float | None = None,
        include_superseded: bool = False,
        as_of: Any = None,
        order: Any = None,
        since: Any = None,
        until: Any = None,
        time_field: Any = None,
        tags_match: Any = None,
        include_narrower: Any = False,
        floor_report: list[FloorMeasure] | None = None,
        value_report: list[tuple[Layer, ScoredEntry]] | None = None,
    ) -> SearchMemoryOutput:
        """``floor_report``: when a list is given, default search appends how each merged candidate
        fared against the relevance floor (the console's search explanation); ``value_report``: the
        candidates it left out because they state no value of the kind the question asks for
        (``retrieval/asked_values.py``). Results are unchanged by either."""
        with self.operation("search", ctx) as (tctx, extra):
            op = "search"
            opts = parse_options(
                op,
                order=order,
                since=since,
                until=until,
                time_field=time_field,
                tags_match=tags_match,
                include_narrower=include_narrower,
                default_order="relevance",
                allow_relevance=True,
            )
            if not isinstance(query, str) or not query.strip():
                raise MemoryError(
                    ErrorCode.INVALID_PARAMS,
                    "query must be a non-empty string",
                    operation=op,
                    details={"field": "query"},
                )
            max_q = self.embeddings.embedder.max_query_chars
            if len(query) > max_q:
                raise MemoryError(
                    ErrorCode.QUERY_TOO_LONG,
                    f"query is {len(query)} characters; the limit is {max_q}",
                    operation=op,
                    details={"max_length": max_q, "length": len(query)},
                    retryable=False,
                )
            limit = self._check_limit(limit, self.config.default_search_limit, self.config.max_search_limit, op)
            floor = self.config.relevance_floor if threshold is None else None  # default search only
            # default search only: a result must state the kind of value the question asks for
            asked_for = asked_value(query) if threshold is None and self.config.value_check else None
            if threshold is None:
                threshold = self.config.default_threshold
            if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not 0.0 <= threshold <= 1.0:
                raise MemoryError(
                    ErrorCode.INVALID_PARAMS,
                    "threshold must be a number from 0 to 1",
                    operation=op,
                    details={"field": "threshold"},
                )
            ids = parse_identifiers(identifiers, op)
            target = self.resolve_layers(ids, layers, op)
            if opts.include_narrower:
                target = sorted({*target, *(n for lyr in target for n in narrower_layers(lyr, ids))}, key=precedence)
            for layer in target:
                self.require_grant(tctx, layer, ids, op)
            predicate = compile_filter(with_tags_match(parse_filter(filter, op), opts.tags_match))
            # Lexical weight of the fused score (docs/concepts.md "Scores"); 0 = dense similarity only.
            lexical_weight = _weight(
                self.config.hybrid_weight if hybrid_weight is None else hybrid_weight, "hybrid_weight", op
            )
            # Optional query-time boosts (retrieval/boosts.py), off unless configured or asked for.
            boosts = Boosts(
                recency=_weight(
                    self.config.recency_boost if recency_boost is None else recency_boost, "recency_boost", op
                ),
                importance=_weight(
                    self.config.importance_boost if importance_boost is None else importance_boost,
                    "importance_boost",
                    op,
                ),
                half_life_days=self.config.recency_half_life_days,
            )
            at = parse_as_of(as_of, op)
            statuses = _statuses(include_superseded, at, op)
            now = self.now()
            # a personal layer may be searched with the question in its memories' words (retrieval/voice.py)
            asked, centroids, unnamed = self._phrasing(tctx, op, ids, target, query, now)

            def one(layer: Layer) -> SearchPage:
                text, vector = asked[layer]
                min_score = float(threshold)
                if floor is not None and layer in unnamed and self.config.unnamed_threshold is not None:
                    min_score = self.config.unnamed_threshold  # a default search, asked without the person

                def fetch(n: int) -> SearchPage:
                    def keep(entry: MemoryEntry) -> bool:
                        return (at is None or valid_at(entry, at)) and opts.in_window(entry)

                    fetched = n if at is None and not opts.windowed else max(4 * n, 40)
                    while True:
                        q = SearchQuery(
                            tenant_id=tctx.tenant_id,
                            scope=Scope(layer, scope_key(layer, ids)),
                            vector=vector,
                            text=text,
                            limit=fetched,
                            min_score=min_score,
                            now=now,
                            predicate=predicate,
                            include_embedding=True,
                            vectors_only=not include_embedding,  # ranked with, returned without
                            lexical_weight=lexical_weight,
                            statuses=statuses,
                        )
                        page: SearchPage = self._store(lambda q=q: self.provider.search(q), op)  # type: ignore[misc]
                        if at is None and not opts.windowed:
                            return page
                        # history or a time window: the matching hits among the best ``fetched``; fetch
                        # more while too few match and the scope has more hits above the threshold
                        valid = [h for h in page.hits if keep(h.entry)]
                        exhausted = len(page.hits) < fetched or fetched >= _MAX_WINDOW_CANDIDATES
                        if len(valid) >= n or exhausted:
                            return SearchPage(hits=valid[:n], total=len(valid) if exhausted else page.total)
                        fetched = min(_MAX_WINDOW_CANDIDATES, 4 * fetched)

                if boosts.active:
                    return boosted_page(fetch, limit, boosts, now)
                scope = Scope(layer, scope_key(layer, ids))

                def read(places: Sequence[tuple[str, int]]) -> list[ThreadTurn]:
                    turns: list[ThreadTurn] = self._store(
                        lambda: self.provider.thread_turns(
                            tctx.tenant_id, scope, places, vector, now, statuses=statuses, predicate=predicate
                        ),
                        op,
                    )
                    # the filters of ``fetch``, on the turns' own columns (the metadata filter in the store)
                    return [t for t in turns if (at is None or turn_valid_at(t, at)) and opts.in_window(t)]

                def entries(ids: Sequence[str]) -> list[MemoryEntry]:
                    found: list[MemoryEntry] = self._store(
                        lambda: self.provider.scope_entries(tctx.tenant_id, scope, ids, now, statuses=statuses),
                        op,
                    )
                    return found

                return context_page(
                    fetch,
                    limit,
                    self.config.context_weight,
                    read=read,
                    entries=entries,
                    query=text,
                    vector=vector,
                    lexical_weight=lexical_weight,
                    min_score=min_score,
                    speaker_penalty=self.config.speaker_penalty,
                    date_penalty=self.config.date_penalty,
                )

            # all layers are searched concurrently and merged once every one has finished
            pages = [one(target[0])] if len(target) == 1 else builtins.list(self._pool.map(one, target))
            vectors: list[npt.NDArray[np.float32] | None] = []  # the merged hits' vectors, converted once
            merged, dropped = merge_results(
                [(layer, page.hits) for layer, page in zip(target, pages, strict=True)],
                dedup_threshold=self.config.dedup_threshold,
                vectors=vectors,
            )
            total = max(0, sum(p.total for p in pages) - dropped)
            if floor is not None and merged:
                for layer in {lr for lr, _ in merged} - set(centroids):
                    centroids[layer] = self._centroid(tctx, op, ids, layer, now)
                kept = above_relevance_floor(
                    merged,
                    {layer: v for layer, (_, v) in asked.items()},
                    centroids,
                    floor,
                    lexical_weight,
                    floor_report,
                    vectors=vectors,
                )
                merged, vectors, total = _narrowed(merged, vectors, kept, total, limit)
            if asked_for is not None and merged:
                stating = [(layer, hit) for layer, hit in merged if states_value(asked_for, hit.entry.content)]
                if value_report is not None:
                    stated = {id(hit) for _, hit in stating}
                    value_report.extend((layer, hit) for layer, hit in merged if id(hit) not in stated)
                if len(stating) < len(merged):
                    merged, vectors, total = _narrowed(merged, vectors, stating, total, limit)
            # of two current results that state the same thing, the newer first; a history search
            # (include_superseded, as_of) is ranked by relevance alone
            if opts.order == "relevance" and statuses == ("active",):
                merged = newer_first(merged, vectors=vectors)
            for result_filter in self.result_filters:
                kept = result_filter(tctx, merged)
                total, merged = max(0, total - (len(merged) - len(kept))), kept
            results = [
                SearchResult(
                    memory=hit.entry
                    if include_embedding or hit.entry.embedding is None  # vectors_only: given without
                    else hit.entry.model_copy(update={"embedding": None}),
                    score=round(hit.score, 6),
                    layer=layer,
                )
                for layer, hit in merged[:limit]
            ]
            if opts.order != "relevance":  # the best ``limit`` matches, shown by creation time
                results.sort(key=lambda r: (r.memory.created_at, r.memory.id), reverse=opts.order == "newest")
            if expand_graph:  # knowledge graph: add neighbours of the top hits through shared entities
                for gate in self.tenant_gates:  # the graph tables, not only what a plain search reads
                    gate(tctx.tenant_id, "graph.expand_search")
                results += self.graph.expand_search(tctx, results, ids, target, predicate, limit)
                results = [r for r in results if self.visible(tctx, r.memory)]
            by_layer = {layer.value: sum(1 for r in results if r.layer == layer) for layer in target}
            self._accessed(tctx, [r.memory for r in results])
            extra.update(layers=[layer.value for layer in target], result_count=len(results), results_by_layer=by_layer)
            return SearchMemoryOutput(results=results, total_count=total, searched_layers=target)

    def asked_as(self, tctx: TenantContext, query: str, identifiers: Any, layers: Sequence[Layer]) -> dict[Layer, str]:
        """The words each of ``layers`` is searched with for ``query`` (``retrieval/voice.py``): the
        query itself, or a personal layer's rephrasing. For the search console, after ``search`` has
        checked the request (no access check here; the scope's choice is the one that search made)."""
        ids = parse_identifiers(identifiers, "search")
        asked, _, _ = self._phrasing(tctx, "search", ids, layers, query, self.now())
        return {layer: text for layer, (text, _) in asked.items()}

    def _options(
        self, tctx: TenantContext, op: str, ids: LayerIdentifiers, target: Sequence[Layer], query: str, now: datetime
    ) -> tuple[list[tuple[str, str]], tuple[str, ...], str | None]:
        """The phrasings a search of ``target`` chooses from (``retrieval/voice.py``): the query alone
        unless a personal layer is searched; the words a memory would name the user with; and how the
        query refers to the user (``voice.refers``). The user's name: the user id when it is one,
        else, for a first-person or pronoun question of a search that reads the user layer, the name
        its scope states or uses."""
        if not (self.config.user_voice and PERSONAL_LAYERS.intersection(target)):
            return [(ASKED, query)], (), None
        name = name_from_id(ids.user_id)
        how = refers(query, name)
        if name is None and ids.user_id and Layer.USER in target and how in (FIRST_PERSON, BY_PRONOUN):
            # read from the user layer only when this search reads it (its grant was checked)
            name = self._stated_name(tctx, op, ids.user_id, now)
            how = refers(query, name) if name else how
        return phrasings(query, name, how), user_words(name), how

    def _naming(
        self,
        tctx: TenantContext,
        op: str,
        ids: LayerIdentifiers,
        layer: Layer,
        words: tuple[str, ...],
        centroid: Centroid,
        now: datetime,
    ) -> str:
        """How the scope's memories name the user, of the :data:`MENTION_SAMPLE` that match ``words``
        best: :data:`NOBODY` when fewer than half of them name the user at all, by a word of ``words``
        or as "she", "his" … (then the words only pull a question towards those few, a statement of
        the name or an instruction naming the user, and the question is asked without them);
        :data:`ASKED` when only with "she", "his" … do half of them name the user (a question about
        "her" matches them as asked); else :data:`NAME` when more of them use the name (``words[0]``)
        than "user", :data:`THE_USER` otherwise. Kept per scope while its centroid has the same row
        count."""
        scope = Scope(layer, scope_key(layer, ids))
        key = ("mentions", tctx.tenant_id, layer.value, scope.key, *words)
        known = self._scope_forms.get(key, centroid.rows)
        if known is not None:
            return known
        page = self._scope_matches(tctx, op, scope, " ".join(words), MENTION_SAMPLE, now)
        contents = [hit.entry.content for hit in page.hits]
        read = min(centroid.rows, MENTION_SAMPLE)
        if 2 * mentions(contents, (*words, *PRONOUNS)) < read:
            naming = NOBODY
        elif 2 * mentions(contents, words) < read:
            naming = ASKED
        elif len(words) > 1 and mentions(contents, words[:1]) > mentions(contents, words[1:]):
            naming = NAME
        else:
            naming = THE_USER
        self._scope_forms.put(key, centroid.rows, naming)
        return naming

    def _scope_matches(
        self, tctx: TenantContext, op: str, scope: Scope, text: str, limit: int, now: datetime
    ) -> SearchPage:
        """The ``limit`` current memories of one scope that match ``text`` best (threshold 0), read
        for the phrasing step without an access check of its own (the search's grant covers it)."""
        page: SearchPage = self._store(
            lambda: self.provider.search(
                SearchQuery(
                    tenant_id=tctx.tenant_id,
                    scope=scope,
                    vector=self.embeddings.embed_query(text, op),
                    text=text,
                    limit=limit,
                    min_score=0.0,
                    now=now,
                    lexical_weight=self.config.hybrid_weight,
                )
            ),
            op,
        )
        return page

    def _stated_name(self, tctx: TenantContext, op: str, user_id: str, now: datetime) -> str | None:
        """The first name the newest memory of the user's scope states ("User's name is Dana", the
        write gate's form), else the name most of the memories read call their person by
        (``voice.usual_name``: "Ruth works nights", "Never book Ruth …"), looked up once per scope
        and kept while its centroid is the same."""
        ids = LayerIdentifiers(user_id=user_id)
        centroid = self._centroid(tctx, op, ids, Layer.USER, now)
        if centroid is None:
            return None
        scope = Scope(Layer.USER, scope_key(Layer.USER, ids))
        key = ("name", tctx.tenant_id, scope.key)
        known = self._scope_forms.get(key, centroid.rows)
        if known is not None:
            return known or None
        page = self._scope_matches(tctx, op, scope, NAME_STATEMENT, 20, now)
        stated = newest_stated_name((hit.entry.created_at, hit.entry.content) for hit in page.hits)
        stated = stated or usual_name([hit.entry.content for hit in page.hits])
        # the first name: facts say "Priya moved …", rarely "Priya Natarajan moved …"
        found = stated.split()[0] if stated else None
        self._scope_forms.put(key, centroid.rows, found or "")
        return found

    def _centroid(
        self, tctx: TenantContext, op: str, ids: LayerIdentifiers, layer: Layer, now: datetime
    ) -> Centroid | None:
        centroid: Centroid | None = self._store(
            lambda: self.provider.scope_centroid(tctx.tenant_id, Scope(layer, scope_key(layer, ids)), now), op
        )
        return centroid

    def _phrasing(
        self,
        tctx: TenantContext,
        op: str,
        ids: LayerIdentifiers,
        target: Sequence[Layer],
        query: str,
        now: datetime,
    ) -> tuple[dict[Layer, tuple[str, _Vec]], dict[Layer, Centroid | None], set[Layer]]:
        """The (text, vector) each layer is searched with, the centroids read on the way, and the
        layers asked with the person left out (``voice.NOBODY``). With
        several phrasings (``retrieval/voice.py``) each personal layer takes the one that moves the
        question towards its scope's centroid, decided once per scope and kinds offered
        (``ScopeForms``); every other layer, and a scope without memories, the question as asked."""
        options, words, how = self._options(tctx, op, ids, target, query, now)
        # a pronoun's change to a name or to "the user" is too small for the centroid to tell apart
        # (voice.closest): such a question takes the way most of the scope's memories name the user
        pronoun = how == BY_PRONOUN
        text_of = dict(options)
        kinds = tuple(text_of)
        chosen = dict.fromkeys(target, ASKED)
        centroids: dict[Layer, Centroid | None] = {}
        undecided: list[tuple[Layer, Centroid, tuple[str, ...]]] = []
        for layer in target if len(options) > 1 else ():
            if layer not in PERSONAL_LAYERS:
                continue
            centroid = centroids[layer] = self._centroid(tctx, op, ids, layer, now)
            if centroid is None:
                continue
            naming = self._naming(tctx, op, ids, layer, words, centroid, now) if NOBODY in text_of else None
            if naming == NOBODY or (pronoun and naming in text_of):
                chosen[layer] = naming
                continue
            key = (tctx.tenant_id, layer.value, scope_key(layer, ids), *kinds)
            kind = self._scope_forms.get(key, centroid.rows)
            if kind is None:
                undecided.append((layer, centroid, key))
            else:
                chosen[layer] = kind
        if undecided:  # every phrasing embedded once; the chosen ones below come from the query cache
            named = [(kind, text) for kind, text in options if kind != NOBODY]
            matrix = np.vstack(self.embeddings.embed_queries([text for _, text in named], op))
            for layer, centroid, key in undecided:
                chosen[layer] = named[closest(matrix, centroid.mean)][0]
                self._scope_forms.put(key, centroid.rows, chosen[layer])
        needed = list(dict.fromkeys(text_of[kind] for kind in chosen.values()))
        vectors = dict(zip(needed, self.embeddings.embed_queries(needed, op), strict=True))
        asked = {layer: (text_of[kind], vectors[text_of[kind]]) for layer, kind in chosen.items()}
        return asked, centroids, {layer for layer, kind in chosen.items() if kind == NOBODY}

    # ------------------------------------------------------------------------------ get/update/delete
    def _shared_cache_hashes(self, tenant_id: str, ids: Sequence[str]) -> list[str]:
        """Content hashes of these memories when a shared (Redis) embedding cache holds vectors that
        a delete must remove too; no reads when there is none."""
        if self.embeddings.shared is None:
            return []
        now = self.now()
        entries = (self.provider.get(tenant_id, i, now, statuses=CURRENT_AND_HISTORY) for i in ids)
        return [e.content_hash for e in entries if e is not None and e.content_hash]

    def _check_id(self, memory_id: Any, operation: str) -> str:
        return check_id(memory_id, operation)

    def get(self, ctx: Any, memory_id: Any, *, include_embedding: bool = False) -> MemoryEntry | None:
        with self.operation("get", ctx) as (tctx, extra):
            mid = self._check_id(memory_id, "get")
            extra["memory_id"] = mid
            entry = self.get_visible(tctx, mid, "get", include_embedding, statuses=CURRENT_AND_HISTORY)
            extra["found"] = entry is not None
            if entry is not None:
                self._accessed(tctx, [entry])
            return entry

    def update(
        self,
        ctx: Any,
        memory_id: Any,
        content: Any = None,
        metadata: Any = None,
        if_match: str | None = None,
        *,
        expires_at: Any = UNSET,
        tier: str | None = None,
        record_conflict: bool = True,
    ) -> UpdateMemoryOutput:
        """``record_conflict=False``: an ``if_match`` mismatch stores nothing (the seed-001 conflict entry
        is kept only for callers of that contract: the SDK and memory_crud; REST passes False).
        ``expires_at``: not given keeps the expiry, ``None`` clears it, a date-time sets it."""
        with self.operation("update", ctx) as (tctx, extra):
            op = "update"
            mid = self._check_id(memory_id, op)
            extra["memory_id"] = mid
            if content is not None:
                content = self._check_content(content, op)
            patch = self._check_metadata(metadata, op) if metadata is not None else None
            keep_expiry = expires_at is UNSET
            new_expiry = None if keep_expiry else self._check_expiry(expires_at, op)
            for _attempt in range(self.config.retry_max_attempts + 1):
                current = self.get_visible(tctx, mid, op)
                if current is None:
                    raise MemoryError(
                        ErrorCode.MEMORY_NOT_FOUND,
                        f"no memory with id {mid!r}",
                        operation=op,
                        details={"id": mid},
                        retryable=False,
                    )
                if patch:
                    _check_immutable(current, patch, op)
                if tier is not None:
                    self._guard_fields(tctx, op, current.layer, tier, None)
                if if_match is not None and if_match != current.etag:
                    raise MemoryError(
                        ErrorCode.CONFLICT,
                        "the memory changed since it was read (etag mismatch)",
                        operation=op,
                        details=self._conflict(
                            tctx,
                            current,
                            content,
                            patch,
                            {"id": mid, "current_etag": current.etag, "current_version": current.version},
                            record_conflict,
                        ),
                        retryable=False,
                    )
                merged_md = dict(current.metadata)
                if patch:
                    for key, value in patch.items():
                        if value is None:
                            merged_md.pop(key, None)
                        else:
                            merged_md[key] = value
                new_content = current.content
                regenerate = False
                if content is not None and content != current.content:
                    new_content = self._guard(tctx, op, content, current.layer, merged_md)
                    regenerate = new_content != current.content
                elif patch:
                    self._guard(tctx, op, current.content, current.layer, merged_md)
                chash = content_hash(new_content)
                embedding = None
                if regenerate:
                    vectors, _ = self.embeddings.embed_contents(tctx.tenant_id, [new_content], op)
                    embedding = [float(x) for x in vectors[0]]
                version = current.version + 1
                updated = current.model_copy(
                    update={
                        "content": new_content,
                        "content_hash": chash,
                        "metadata": merged_md,
                        "updated_at": max(self.now(), current.updated_at),
                        "version": version,
                        "etag": _etag(mid, version, chash, merged_md),
                        "expires_at": current.expires_at if keep_expiry else new_expiry,
                        "tier": tier if tier is not None else current.tier,
                        "embedding": embedding,
                    }
                )
                if self._store(lambda u=updated, c=current: self.provider.update(u, c), op):  # type: ignore[misc]
                    extra["embedding_regenerated"] = regenerate
                    # an update counts as an access for importance; answer with the counts it left
                    self._accessed(tctx, [updated])
                    stored = self.provider.get(tctx.tenant_id, mid, self.now()) if self.access_hooks else None
                    return UpdateMemoryOutput(
                        memory=(stored or updated).model_copy(update={"embedding": None}),
                        embedding_regenerated=regenerate,
                    )
                if if_match is not None:  # someone else won the race: the caller's etag is now stale
                    raise MemoryError(
                        ErrorCode.CONFLICT,
                        "the memory changed concurrently (etag mismatch)",
                        operation=op,
                        details=self._conflict(tctx, current, content, patch, {"id": mid}, record_conflict),
                        retryable=False,
                    )
            raise MemoryError(
                ErrorCode.CONFLICT,
                "the memory kept changing concurrently; try again",
                operation=op,
                details={"id": mid},
                retryable=False,
            )

    def delete(self, ctx: Any, memory_id: Any, if_match: str | None = None) -> DeleteMemoryOutput:
        with self.operation("delete", ctx) as (tctx, extra):
            mid = self._check_id(memory_id, "delete")
            extra["memory_id"] = mid
            if if_match is not None or tctx.grant is not None:
                current = self.get_visible(tctx, mid, "delete")
                if current is None and tctx.grant is not None:  # missing or outside the grant: nothing to do
                    extra["deleted"] = 0
                    return DeleteMemoryOutput(success=True)
                if current is not None and if_match is not None and current.etag != if_match:
                    raise MemoryError(
                        ErrorCode.CONFLICT,
                        "the memory changed since it was read (etag mismatch)",
                        operation="delete",
                        details={"id": mid, "current_etag": current.etag},
                        retryable=False,
                    )
            hashes = self._shared_cache_hashes(tctx.tenant_id, [mid])
            deleted: list[str] = self._store(lambda: self.provider.delete(tctx.tenant_id, [mid]), "delete")
            self.embeddings.forget(tctx.tenant_id, hashes)
            extra["deleted"] = len(deleted)
            return DeleteMemoryOutput(success=True)

    def bulk_delete(self, ctx: Any, ids: Sequence[Any]) -> BulkDeleteOutput:
        with self.operation("bulk_delete", ctx) as (tctx, extra):
            if not isinstance(ids, Sequence) or isinstance(ids, str | bytes):
                raise MemoryError(ErrorCode.INVALID_PARAMS, "ids must be a list", operation="bulk_delete")
            if len(ids) > self.config.max_bulk_items:
                raise MemoryError(
                    ErrorCode.INVALID_PARAMS,
                    f"at most {self.config.max_bulk_items} ids per bulk_delete (got {len(ids)})",
                    operation="bulk_delete",
                    details={"max_items": self.config.max_bulk_items},
                )
            checked, rejected = split_ids(ids, "bulk_delete")
            allowed = checked
            if tctx.grant is not None:  # ids outside the grant are treated like missing ones
                allowed = [i for i in checked if self.get_visible(tctx, i, "bulk_delete") is not None]
            hashes = self._shared_cache_hashes(tctx.tenant_id, allowed)
            deleted: list[str] = self._store(lambda: self.provider.delete(tctx.tenant_id, allowed), "bulk_delete")
            self.embeddings.forget(tctx.tenant_id, hashes)
            extra["deleted"] = len(deleted)
            extra["memory_ids"] = deleted
            return BulkDeleteOutput.of(checked, deleted, rejected)

    # ------------------------------------------------------------------------------ list
    def list(
        self,
        ctx: Any,
        layer: Any = None,
        identifiers: Any = None,
        cursor: str | None = None,
        limit: Any = None,
        filter: Any = None,
        *,
        include_superseded: bool = False,
        as_of: Any = None,
        order: Any = None,
        since: Any = None,
        until: Any = None,
        time_field: Any = None,
        tags_match: Any = None,
        include_narrower: Any = False,
        expires_before: Any = None,
    ) -> ListMemoriesOutput:
        with self.operation("list", ctx) as (tctx, extra):
            op = "list"
            opts = parse_options(
                op,
                order=order,
                since=since,
                until=until,
                time_field=time_field,
                tags_match=tags_match,
                include_narrower=include_narrower,
                default_order="oldest",
                allow_relevance=False,
            )
            # memories that expire before this time (expired ones stay out of a list, as without it)
            expiring = parse_time(expires_before, "expires_before", op)
            ids = parse_identifiers(identifiers, op)
            scopes: builtins.list[Scope] = []
            if layer is not None:
                lyr = parse_layer(layer, op)
                require_identifiers(lyr, ids, op)
                for each in [lyr, *(narrower_layers(lyr, ids) if opts.include_narrower else [])]:
                    self.require_grant(tctx, each, ids, op)
                    scopes.append(Scope(each, scope_key(each, ids)))
            elif opts.include_narrower:
                raise MemoryError(
                    ErrorCode.INVALID_PARAMS,
                    "include_narrower needs a layer (the broadest scope to read)",
                    operation=op,
                    details={"field": "include_narrower"},
                    retryable=False,
                )
            scope = scopes[0] if scopes else None
            limit = self._check_limit(limit, self.config.default_list_limit, self.config.max_list_limit, op)
            flt: MetadataFilter | None = with_tags_match(parse_filter(filter, op), opts.tags_match)
            fp = fingerprint(
                tctx.tenant_id,
                scope.layer.value if scope else None,
                scope.key if scope else None,
                flt.model_dump() if flt else None,
                *([opts.key()] if opts != QueryOptions(order="oldest") else []),
                *([["expires_before", expiring]] if expiring is not None else []),
            )
            after = decode_cursor(cursor, fp, op) if cursor is not None else None
            at = parse_as_of(as_of, op)
            query = ListQuery(
                tenant_id=tctx.tenant_id,
                now=self.now(),
                scope=scope,
                predicate=compile_filter(flt),
                after=after,
                limit=limit,
                statuses=_statuses(include_superseded, at, op),
                descending=opts.order == "newest",
                since=opts.since,
                until=opts.until,
                time_field=opts.column,
                expires_before=expiring,
            )
            if len(scopes) > 1:
                page = self._list_scopes(query, scopes, op)
            elif scope is None and tctx.grant is not None and not tctx.grant.all:
                page = self._list_granted(tctx, query, op)
            else:
                page = self._store(lambda: self.provider.list(query), op)
            if at is not None:  # history: a page keeps the memories current at ``at`` (it may be shorter)
                page.entries = [e for e in page.entries if valid_at(e, at)]
            next_cursor = None
            if page.has_more and page.entries:
                last = page.entries[-1]
                next_cursor = encode_cursor(last.created_at, last.id, fp)
            extra["result_count"] = len(page.entries)
            return ListMemoriesOutput(memories=page.entries, next_cursor=next_cursor, total_count=page.total)

    def _list_scopes(self, query: ListQuery, scopes: Sequence[Scope], operation: str) -> ListPage:
        """One page over several scopes (``include_narrower``): each scope's first ``limit`` entries
        past the cursor, merged in the query's order; the page is the first ``limit`` of the merge."""
        pages: builtins.list[ListPage] = [
            self._store(lambda q=replace(query, scope=sc): self.provider.list(q), operation)  # type: ignore[misc]
            for sc in scopes
        ]
        merged = sorted(
            (e for p in pages for e in p.entries), key=lambda e: (e.created_at, e.id), reverse=query.descending
        )
        return ListPage(
            entries=merged[: query.limit],
            total=sum(p.total for p in pages),
            has_more=len(merged) > query.limit or any(p.has_more for p in pages),
        )

    def _list_granted(self, ctx: TenantContext, query: ListQuery, operation: str) -> ListPage:
        """A tenant-wide list for a restricted grant: the tenant's pages, keeping what the grant sees
        (the total counts only those; the scan reads the whole tenant, so give a layer where it is large)."""
        kept: builtins.list[MemoryEntry] = []
        total = 0
        after: tuple[datetime, str] | None = None
        while True:
            batch = replace(query, after=after, limit=500)
            page: ListPage = self._store(lambda b=batch: self.provider.list(b), operation)  # type: ignore[misc]
            for entry in page.entries:
                if not self.visible(ctx, entry):
                    continue
                total += 1
                if query.past((entry.created_at, entry.id)) and len(kept) <= query.limit:
                    kept.append(entry)
            if not page.has_more or not page.entries:
                break
            after = (page.entries[-1].created_at, page.entries[-1].id)
        return ListPage(entries=kept[: query.limit], total=total, has_more=len(kept) > query.limit)

    # ------------------------------------------------------------------------------ admin
    def stats(self, ctx: Any) -> StoreStats:
        with self.operation("stats", ctx) as (tctx, _):
            self.require_tenant_grant(tctx, "stats")
            by_layer = self._store(lambda: self.provider.count_by_layer(tctx.tenant_id, self.now()), "stats")
            return StoreStats(
                tenant_id=tctx.tenant_id,
                total=sum(by_layer.values()),
                by_layer=by_layer,
                embedding_model=self.store_info.embedding_model,
                embedding_dimensions=self.store_info.dimensions,
                provider=self.provider.name,
            )

    def export(self, ctx: Any, *, include_embeddings: bool = False) -> Iterator[MemoryEntry]:
        tctx = self.check_context(ctx, "export")
        for entry in self.provider.iter_entries(tctx.tenant_id):
            if not self.visible(tctx, entry):
                continue
            yield entry if include_embeddings else entry.model_copy(update={"embedding": None})

    def health(self) -> HealthCheckResult:
        return self.provider.health_check()

    @property
    def closed(self) -> bool:
        """True once :meth:`close` has begun (features stop their background work)."""
        return self._closed

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._pool.shutdown(wait=True)
        self._prepare_pool.shutdown(wait=True)
        self.hygiene.events.close()  # queued memory_events (events_write="background") are written first
        self.embeddings.embedder.close()
        self.provider.shutdown()
