"""``engine.hygiene``: wires guards, quota hook, search filter and event log into an engine and
offers process / remember / forget / health / policies (the SDK delegates here)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..llm import LLMClient, make_llm
from .events import EventLog
from .gate import HygieneConfig, ProcessResult, WriteGate
from .guards import PolicyGuard, PolicySearchFilter, QuotaHook, SanitizeGuard, SecretGuard
from .health import MemoryHealth, compute_health
from .history import (
    EventTrends,
    MaintenanceRunsOutput,
    MemoryEventsOutput,
    event_trends,
    maintenance_runs,
    memory_events,
)
from .policies import PolicyManager

if TYPE_CHECKING:
    from ..engine import MemoryEngine


class Hygiene:
    def __init__(
        self, engine: MemoryEngine, config: HygieneConfig | None = None, llm: LLMClient | str | None = None
    ) -> None:
        self.engine = engine
        self.config = config or HygieneConfig()
        self._llm: LLMClient | None = make_llm(llm) if llm is not None else None
        self.policies = PolicyManager(engine)
        self.events = EventLog(engine)
        self.events.background = self.config.events_write == "background"
        self.events.access_history = self.config.access_history
        self.gate = WriteGate(self)

    @classmethod
    def install(cls, engine: MemoryEngine) -> Hygiene:
        hygiene = cls(engine)
        secret_guard = SecretGuard(engine)
        engine.hooks.guards.extend([SanitizeGuard(engine), secret_guard, PolicyGuard(engine, hygiene.policies)])
        engine.field_guards.append(secret_guard.check_fields)
        engine.hooks.write_hooks.append(QuotaHook(engine, hygiene.policies))
        engine.hooks.result_filters.append(PolicySearchFilter(engine, hygiene.policies))
        engine.hooks.observers.append(hygiene.events.observe)
        engine.hooks.access_hooks.append(hygiene.events.accessed)
        return hygiene

    @property
    def llm(self) -> LLMClient:
        """The configured LLM (``STRATAMEM_LLM_URL``…) or the rule engine; created on first use."""
        if self._llm is None:
            self._llm = make_llm()
        return self._llm

    def configure(self, *, llm: LLMClient | str | None = None, **fields: Any) -> HygieneConfig:
        """Change the LLM and/or config fields (``layer``, thresholds, ``prompts``)."""
        if llm is not None:
            self._llm = make_llm(llm)
        if fields:
            self.config = HygieneConfig.model_validate({**self.config.model_dump(), **fields})
            self.events.background = self.config.events_write == "background"
            self.events.access_history = self.config.access_history
            if not self.events.background:
                self.events.flush()
        return self.config

    def process(
        self,
        ctx: Any,
        text: Any,
        intent: Any = "none",
        identifiers: Any = None,
        recent_messages: Sequence[str] | None = None,
        *,
        layer: Any = None,
    ) -> ProcessResult:
        return self.gate.process(ctx, text, intent, identifiers, recent_messages, layer=layer)

    def health(self, ctx: Any, *, since: datetime | None = None) -> MemoryHealth:
        with self.engine.operation("memory_health", ctx) as (tctx, _):
            self.events.flush()  # counts include every event queued before the call
            return compute_health(
                self.engine, tctx.tenant_id, since=since, duplicate_score=self.engine.config.dedup_threshold
            )

    def memory_events(
        self, ctx: Any, memory_id: Any, *, limit: int = 50, events: Sequence[str] | None = None
    ) -> MemoryEventsOutput:
        self.events.flush()
        return memory_events(self.engine, ctx, memory_id, limit=limit, events=events)

    def event_trends(self, ctx: Any, *, days: int = 14) -> EventTrends:
        self.events.flush()
        return event_trends(self.engine, ctx, days=days)

    def maintenance_runs(self, ctx: Any, *, limit: int = 20) -> MaintenanceRunsOutput:
        self.events.flush()
        return maintenance_runs(self.engine, ctx, limit=limit)
