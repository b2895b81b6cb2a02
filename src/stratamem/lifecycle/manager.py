"""``Lifecycle``: the lifecycle features of one engine (installed by ``Memory``; see the package doc)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from ..arguments import check_bool, check_str_list
from ..errors import ErrorCode, MemoryError
from ..filters import compile_filter, parse_filter
from ..hygiene.prompts import DEFAULT_PROMPTS, PromptTemplates
from ..layers import parse_identifiers, parse_layer, require_identifiers, scope_key
from ..llm.base import LLMClient
from ..llm.rules import RuleBasedLLM, worth_keeping
from ..model import Layer, LayerIdentifiers, ListMemoriesOutput, MemoryEntry, TenantContext
from ..providers.base import ListQuery, Scope
from ..validation import check_id
from . import metrics
from .compaction import CompactionCallback, compact
from .config import LifecycleConfig
from .conflicts import ConflictRecorder, hide_conflicts, list_conflicts
from .expiry import delete_by_scope, restore, soft_delete
from .feedback import FeedbackResult, record_feedback
from .importance import AccessTracker, importance_at
from .maintenance import MaintenanceReport, MaintenanceScheduler, run_maintenance
from .promotion import build_promotion, parse_target, sensitivity
from .pruning import PruneReport, prune
from .reflection import ReflectionResult, reflect
from .scan import iter_scope, write_entries

if TYPE_CHECKING:
    from ..engine import MemoryEngine


class PromotionRecord(BaseModel):
    source_id: str
    promoted_id: str
    importance: float


class BlockedPromotion(BaseModel):
    source_id: str
    reason: str
    importance: float


class CloseSessionResult(BaseModel):
    evaluated: int
    target_layer: Layer
    promoted: list[PromotionRecord] = Field(default_factory=list)
    blocked: list[BlockedPromotion] = Field(default_factory=list)
    #: Session entries set to expire after the retention period (or soft-deleted when it is None).
    expiring: int = 0
    deleted: int = 0
    #: The session's reflection into the agent layer (``LifecycleConfig.reflection.on_close_session``);
    #: None when it is switched off.
    reflection: ReflectionResult | None = None


class LifecycleStats(BaseModel):
    """In-process counters (the Prometheus metrics carry the same numbers across instances)."""

    promotions: int = 0
    blocked_promotions: int = 0
    conflicts: int = 0


class Lifecycle:
    def __init__(
        self,
        engine: MemoryEngine,
        config: LifecycleConfig | None = None,
        *,
        llm: Callable[[], LLMClient] | None = None,
        prompts: Callable[[], PromptTemplates] | None = None,
    ) -> None:
        self.engine = engine
        #: The LLM of consolidation and reflection: ``Memory`` passes the write gate's (configured by
        #: ``STRATAMEM_LLM_URL`` or ``mem.hygiene.configure(llm=...)``) and its prompts; the rule
        #: engine and the default prompts without them.
        self._llm_source = llm
        self._prompts_source = prompts
        self.stats = LifecycleStats()
        self._tracker = AccessTracker(engine, (config or LifecycleConfig()).importance)
        self.config = config or LifecycleConfig()
        engine.hooks.access_hooks.append(self._on_access)
        engine.hooks.conflict = self._on_conflict
        engine.hooks.result_filters.append(hide_conflicts)
        self._recorder = ConflictRecorder(engine)

    @property
    def config(self) -> LifecycleConfig:
        return self._config

    @config.setter
    def config(self, value: LifecycleConfig) -> None:
        self._config = value
        self._tracker.cfg = value.importance
        self._tracker.background = value.access_write == "background"

    @property
    def llm(self) -> LLMClient:
        return self._llm_source() if self._llm_source is not None else RuleBasedLLM()

    @property
    def prompts(self) -> PromptTemplates:
        return self._prompts_source() if self._prompts_source is not None else DEFAULT_PROMPTS

    def flush(self) -> None:
        """Wait for queued background access writes (``access_write="background"``)."""
        self._tracker.flush()

    def close(self) -> None:
        """Finish queued access writes; called by ``Memory.close`` before the store closes."""
        self._tracker.close()

    # -- hooks -------------------------------------------------------------------------------
    def _on_access(self, ctx: TenantContext, entries: Sequence[MemoryEntry]) -> None:
        if self._config.track_access:
            self._tracker(ctx, entries)

    def _on_conflict(
        self, ctx: TenantContext, current: MemoryEntry, content: str | None, patch: Mapping[str, Any] | None
    ) -> str | None:
        conflict_id = self._recorder(ctx, current, content, patch)
        if conflict_id is not None:
            self.stats.conflicts += 1
        return conflict_id

    # -- importance ----------------------------------------------------------------------------
    def importance(self, entry: MemoryEntry) -> float:
        return importance_at(self._config.importance, entry, self.engine.now())

    # -- promotion -----------------------------------------------------------------------------
    def promote(
        self,
        ctx: Any,
        source_id: Any,
        target_layer: Any,
        identifiers: Any = None,
        *,
        delete_original: bool = False,
        content: str | None = None,
        tags: list[str] | None = None,
    ) -> MemoryEntry:
        with self.engine.operation("promote", ctx) as (tctx, extra):
            op = "promote"
            mid = check_id(source_id, op)
            target = parse_target(target_layer, op)
            ids = parse_identifiers(identifiers, op)
            source = self.engine.get_visible(tctx, mid, op)
            if source is None:
                raise MemoryError(
                    ErrorCode.MEMORY_NOT_FOUND,
                    f"no memory with id {mid!r}",
                    operation=op,
                    details={"id": mid},
                    retryable=False,
                )
            reason = sensitivity(source.metadata)
            if reason is not None:
                self._blocked(
                    tctx, source, reason, target, importance_at(self._config.importance, source, self.engine.now())
                )
                raise MemoryError(
                    ErrorCode.POLICY_VIOLATION,
                    f"memory {mid!r} is marked {reason} and cannot be promoted",
                    operation=op,
                    details={"policy": reason, "id": mid},
                    retryable=False,
                )
            item = build_promotion(
                source, target, ids, content=content, tags=tags, redact=self._config.session.redact_pii, operation=op
            )
            promoted = write_entries(self.engine, tctx, [item], op)[0]
            if delete_original:
                self.engine.provider.delete(tctx.tenant_id, [mid])
                self.engine.provider.clear_feedback(tctx.tenant_id, [mid])
            self.stats.promotions += 1
            metrics.PROMOTIONS.labels(trigger="explicit", target_layer=target.value).inc()
            self.engine.audit.record(
                tenant_id=tctx.tenant_id,
                principal=tctx.principal,
                action=op,
                memory_ids=[mid, promoted.id],
                layer=target.value,
                details={"source_layer": source.layer.value, "delete_original": delete_original},
            )
            extra.update(memory_id=promoted.id, layer=target.value)
            return promoted

    def _blocked(
        self, ctx: TenantContext, source: MemoryEntry, reason: str, target: Layer, importance: float
    ) -> BlockedPromotion:
        self.stats.blocked_promotions += 1
        metrics.PROMOTIONS_BLOCKED.labels(reason=reason).inc()
        self.engine.audit.record(
            tenant_id=ctx.tenant_id,
            principal=ctx.principal,
            action="promotion_blocked",
            outcome="denied",
            code=ErrorCode.POLICY_VIOLATION.value,
            memory_ids=[source.id],
            layer=source.layer.value,
            details={"reason": reason, "target_layer": target.value},
        )
        return BlockedPromotion(source_id=source.id, reason=reason, importance=importance)

    def close_session(
        self, ctx: Any, user_id: str, session_id: str, project_id: str | None = None, *, agent_id: str | None = None
    ) -> CloseSessionResult:
        """Promotion check when a session ends, then cleanup per the session retention settings.

        With ``agent_id``, that agent's memories (agent layer, this user) written during this session
        are evaluated too, by the same importance/durability rules; they are not deleted at close."""
        with self.engine.operation("close_session", ctx) as (tctx, extra):
            op = "close_session"
            cfg = self._config.session
            ids = parse_identifiers({"user_id": user_id, "session_id": session_id}, op)
            if ids.user_id is None or ids.session_id is None:
                raise MemoryError(
                    ErrorCode.MISSING_IDENTIFIER,
                    "close_session needs user_id and session_id",
                    operation=op,
                    details={"layer": "session", "identifier": "userId/sessionId"},
                )
            self.engine.require_grant(tctx, Layer.SESSION, ids, op)
            project = project_id or cfg.project_id
            target = Layer.PROJECT if project else cfg.default_target
            target_ids = parse_identifiers({"user_id": ids.user_id, "project_id": project}, op)
            now = self.engine.now()
            entries = list(
                iter_scope(
                    self.engine.provider, tctx.tenant_id, now, scope=Scope(Layer.SESSION, scope_key(Layer.SESSION, ids))
                )
            )
            volatile = entries + self._agent_entries(tctx, ids, agent_id, now, op)
            result = CloseSessionResult(evaluated=len(volatile), target_layer=target)
            if self._config.reflection.on_close_session:
                # before the cleanup below, which may soft-delete the session's memories
                try:
                    result.reflection = reflect(
                        self.engine, tctx, ids.user_id, ids.session_id, agent_id, self.llm, self.prompts, op
                    )
                except MemoryError as exc:
                    if exc.code != ErrorCode.FORBIDDEN:
                        raise
                    # a credential limited to the session may close it without writing the agent layer
                    result.reflection = ReflectionResult(
                        session_id=ids.session_id,
                        user_id=ids.user_id,
                        skipped="the credential may not write the agent layer",
                    )
            items = []
            sources: list[tuple[MemoryEntry, float]] = []
            done = self._already_promoted(tctx, target, target_ids, [e.id for e in volatile], now)
            for entry in volatile:
                imp = importance_at(self._config.importance, entry, now)
                important = imp >= cfg.promotion_threshold or (cfg.promote_durable and worth_keeping(entry.content))
                if not cfg.promote_important or not important or entry.id in done:
                    continue
                reason = sensitivity(entry.metadata)
                if reason is not None:
                    result.blocked.append(self._blocked(tctx, entry, reason, target, imp))
                    continue
                items.append(build_promotion(entry, target, target_ids, redact=cfg.redact_pii, operation=op))
                sources.append((entry, imp))
            promoted = write_entries(self.engine, tctx, items, op)
            for (src, imp), new in zip(sources, promoted, strict=True):
                result.promoted.append(PromotionRecord(source_id=src.id, promoted_id=new.id, importance=imp))
            if promoted:
                self.stats.promotions += len(promoted)
                metrics.PROMOTIONS.labels(trigger="session_close", target_layer=target.value).inc(len(promoted))
            if cfg.auto_delete and entries:
                if cfg.retention_period is None:
                    result.deleted = len(
                        self.engine.provider.set_status(tctx.tenant_id, [e.id for e in entries], "deleted", now)
                    )
                else:
                    until = now + cfg.retention_period
                    shorten = [e.id for e in entries if e.expires_at is None or e.expires_at > until]
                    result.expiring = self.engine.provider.set_expiry(tctx.tenant_id, shorten, until)
            self.engine.audit.record(
                tenant_id=tctx.tenant_id,
                principal=tctx.principal,
                action=op,
                layer="session",
                memory_ids=[p.promoted_id for p in result.promoted],
                details={
                    "evaluated": result.evaluated,
                    "promoted": len(result.promoted),
                    "blocked": len(result.blocked),
                    "target_layer": target.value,
                },
            )
            extra.update(promoted=len(result.promoted), blocked=len(result.blocked))
            return result

    def _agent_entries(
        self, ctx: TenantContext, ids: LayerIdentifiers, agent_id: Any, now: Any, op: str
    ) -> list[MemoryEntry]:
        """The agent's live memories for this user that were written in this session."""
        if agent_id is None:
            return []
        agent = parse_identifiers({"agent_id": agent_id, "user_id": ids.user_id}, op)
        if agent.agent_id is None:
            raise MemoryError(
                ErrorCode.MISSING_IDENTIFIER,
                "agent_id must not be blank",
                operation=op,
                details={"layer": "agent", "identifier": "agentId"},
            )
        scope = Scope(Layer.AGENT, scope_key(Layer.AGENT, agent))
        return [
            e
            for e in iter_scope(self.engine.provider, ctx.tenant_id, now, scope=scope)
            if e.provenance.created_in_session_id == ids.session_id
        ]

    def _already_promoted(
        self, ctx: TenantContext, target: Layer, ids: LayerIdentifiers, source_ids: list[str], now: Any
    ) -> set[str]:
        """Source ids that already have a copy in the target scope (closing a session twice is a no-op)."""
        if not source_ids:
            return set()

        require_identifiers(target, ids, "close_session")
        predicate = compile_filter(parse_filter({"promotedFromId": {"in": source_ids}}, "close_session"))
        query = ListQuery(
            tenant_id=ctx.tenant_id,
            now=now,
            scope=Scope(target, scope_key(target, ids)),
            predicate=predicate,
            limit=len(source_ids) + 1,
        )
        found: set[str] = set()
        while True:
            page = self.engine.provider.list(query)
            found.update(str(e.metadata.get("promotedFromId")) for e in page.entries)
            if not page.has_more or not page.entries:
                return found
            query.after = (page.entries[-1].created_at, page.entries[-1].id)

    # -- reflection -------------------------------------------------------------------------------
    def reflect(self, ctx: Any, user_id: Any, session_id: Any, agent_id: Any = None) -> ReflectionResult:
        """Distil the session's memories into agent-layer summaries and rules with provenance
        (``lifecycle/reflection.py``); idempotent. Without ``agent_id`` the agent named in the
        session memories' provenance is used."""
        with self.engine.operation("reflect", ctx) as (tctx, extra):
            op = "reflect"
            ids = parse_identifiers({"user_id": user_id, "session_id": session_id}, op)
            if ids.user_id is None or ids.session_id is None:
                raise MemoryError(
                    ErrorCode.MISSING_IDENTIFIER,
                    "reflect needs user_id and session_id",
                    operation=op,
                    details={"layer": "session", "identifier": "userId/sessionId"},
                )
            self.engine.require_grant(tctx, Layer.SESSION, ids, op)
            if agent_id is not None:
                agent = parse_identifiers({"agent_id": agent_id, "user_id": ids.user_id}, op)
                self.engine.require_grant(tctx, Layer.AGENT, agent, op)
            out = reflect(self.engine, tctx, ids.user_id, ids.session_id, agent_id, self.llm, self.prompts, op)
            extra.update(created=out.created, method=out.method)
            return out

    # -- compaction / scope deletion -------------------------------------------------------------
    def compact(
        self,
        ctx: Any,
        source_ids: Any,
        callback: CompactionCallback,
        *,
        delete_sources: bool = False,
        target_layer: Any = None,
        tags: list[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> MemoryEntry:
        with self.engine.operation("compact", ctx) as (tctx, extra):
            out = compact(
                self.engine,
                tctx,
                source_ids,
                callback,
                delete_sources=delete_sources,
                target_layer=target_layer,
                tags=tags,
                metadata=metadata,
            )
            extra.update(memory_id=out.id)
            return out

    def delete_by_scope(self, ctx: Any, layer: Any, identifiers: Any) -> int:
        with self.engine.operation("delete_by_scope", ctx) as (tctx, extra):
            if tctx.grant is not None:
                lyr = parse_layer(layer, "delete_by_scope")
                self.engine.require_grant(
                    tctx, lyr, parse_identifiers(identifiers, "delete_by_scope"), "delete_by_scope"
                )
            n = delete_by_scope(self.engine, tctx, layer, identifiers)
            extra["deleted"] = n
            return n

    def soft_delete(self, ctx: Any, ids: Any) -> list[str]:
        with self.engine.operation("soft_delete", ctx) as (tctx, _):
            self.engine.require_tenant_grant(tctx, "soft_delete")
            return soft_delete(self.engine, tctx, ids)

    def restore(self, ctx: Any, ids: Any) -> list[str]:
        with self.engine.operation("restore", ctx) as (tctx, _):
            self.engine.require_tenant_grant(tctx, "restore")
            return restore(self.engine, tctx, ids)

    def list(
        self, ctx: Any, layer: Any = None, identifiers: Any = None, *, include_archived: bool = True, limit: int = 100
    ) -> list[MemoryEntry]:
        """Live entries of a scope including archived ones (``entry.status == "archived"``)."""
        with self.engine.operation("list_lifecycle", ctx) as (tctx, _):
            scope = None
            if layer is not None:
                lyr = parse_layer(layer, "list")
                ids = parse_identifiers(identifiers, "list")
                require_identifiers(lyr, ids, "list")
                self.engine.require_grant(tctx, lyr, ids, "list")
                scope = Scope(lyr, scope_key(lyr, ids))
            else:
                self.engine.require_tenant_grant(tctx, "list")
            statuses = ("active", "archived") if include_archived else ("active",)
            out: list[MemoryEntry] = []
            for e in iter_scope(
                self.engine.provider, tctx.tenant_id, self.engine.now(), scope=scope, statuses=statuses
            ):
                out.append(e)
                if len(out) >= limit:
                    break
            return out

    # -- feedback / pruning / conflicts ------------------------------------------------------------
    def feedback(self, ctx: Any, memory_ids: Any, reward: Any) -> FeedbackResult:
        with self.engine.operation("feedback", ctx) as (tctx, _):
            self.engine.require_tenant_grant(tctx, "feedback")
            return record_feedback(self.engine, tctx, memory_ids, reward, self._config.pruning)

    def prune(self, ctx: Any, *, dry_run: bool = True) -> PruneReport:
        with self.engine.operation("prune", ctx) as (tctx, _):
            self.engine.require_tenant_grant(tctx, "prune")
            return prune(self.engine, tctx, self._config.pruning, dry_run=check_bool(dry_run, "dry_run", "prune"))

    def conflicts(
        self,
        ctx: Any,
        memory_id: str | None = None,
        *,
        layer: Any = None,
        identifiers: Any = None,
        cursor: str | None = None,
        limit: int | None = None,
    ) -> ListMemoriesOutput:
        return list_conflicts(
            self.engine, ctx, memory_id, layer=layer, identifiers=identifiers, cursor=cursor, limit=limit
        )

    # -- maintenance --------------------------------------------------------------------------------
    def maintain(self, tenants: Sequence[str] | None = None) -> MaintenanceReport:
        return run_maintenance(self, None if tenants is None else check_str_list(tenants, "tenants", "maintain"))

    def schedule(self, interval_s: float) -> MaintenanceScheduler:
        return MaintenanceScheduler(self, interval_s).start()
