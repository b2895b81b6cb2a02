"""Reads of the memory_events log for people: one memory's history, per-day trends of a tenant's
writes, searches and rejections, and the recorded maintenance runs (``lifecycle/maintenance.py``
logs each run per tenant as an event of kind ``maintenance``).

Every read binds the caller's tenant. A memory's history is shown only when the memory itself is
visible to the caller's grant; a denied id answers exactly like a missing one (MEMORY_NOT_FOUND).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from ..errors import ErrorCode, MemoryError

if TYPE_CHECKING:
    from ..engine import MemoryEngine
    from ..model import TenantContext

#: Event kinds summed into each trend series: the three totals, then the write-gate decisions one by
#: one (``created`` a new memory, ``deduplicated`` into an existing one by ``process()``, ``updated``,
#: ``deleted``, ``ignored`` by the gate as not worth keeping, ``rejected`` by a guard, policy or quota).
TREND_KINDS: dict[str, tuple[str, ...]] = {
    "writes": ("create", "update", "delete"),
    "searches": ("search",),
    "rejections": ("reject", "ignore"),
    "created": ("create",),
    "deduplicated": ("dedupe",),
    "updated": ("update",),
    "deleted": ("delete",),
    "ignored": ("ignore",),
    "rejected": ("reject",),
}
#: The write-gate decisions of a trend day, in the order the console shows them.
GATE_DECISIONS = ("created", "deduplicated", "updated", "deleted", "ignored", "rejected")
#: Event kinds a caller may ask ``memory_events`` for (``events=``).
EVENT_KINDS = frozenset({"create", "update", "delete", "search", "access", "ignore", "reject", "dedupe", "maintenance"})
MAX_EVENTS = 500
MAX_DAYS = 366


class MemoryEvent(BaseModel):
    """One row of the memory_events log (it never holds memory content)."""

    id: str
    ts: datetime
    event: str
    memory_id: str | None = None
    layer: str | None = None
    principal: str | None = None
    code: str | None = None
    outcome: str = "ok"
    details: dict[str, Any] = Field(default_factory=dict)


class MemoryEventsOutput(BaseModel):
    memory_id: str
    events: list[MemoryEvent]


class TrendDay(BaseModel):
    day: date
    writes: int = 0
    searches: int = 0
    rejections: int = 0
    created: int = 0
    deduplicated: int = 0
    updated: int = 0
    deleted: int = 0
    ignored: int = 0
    rejected: int = 0


class EventTrends(BaseModel):
    tenant_id: str
    since: datetime
    days: list[TrendDay]


class MaintenanceRun(BaseModel):
    """One maintenance run over one tenant: when, how it ended, what it did."""

    ts: datetime
    outcome: str
    purged: int = 0
    archived: int = 0
    reflected: int = 0
    consolidated: int = 0
    prune_candidates: int = 0
    pruned: int = 0
    integrity_repaired: int = 0
    #: ``access`` events past the retention (``LifecycleConfig.access_history_days``) deleted.
    access_events_pruned: int = 0
    duration_s: float = 0.0
    errors: dict[str, str] = Field(default_factory=dict)


class MaintenanceRunsOutput(BaseModel):
    tenant_id: str
    runs: list[MaintenanceRun]


def _limit(value: Any, operation: str, maximum: int, name: str = "limit") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= maximum:
        raise MemoryError(
            ErrorCode.INVALID_PARAMS,
            f"{name} must be an integer from 1 to {maximum}",
            operation=operation,
            details={"field": name},
        )
    return value


def _kinds(events: Any, operation: str) -> list[str] | None:
    if events is None:
        return None
    if (
        isinstance(events, str | bytes)
        or not isinstance(events, Sequence)
        or not events
        or any(e not in EVENT_KINDS for e in events)
    ):
        raise MemoryError(
            ErrorCode.INVALID_PARAMS,
            f"events must be a non-empty list of: {', '.join(sorted(EVENT_KINDS))}",
            operation=operation,
            details={"field": "events"},
        )
    return list(dict.fromkeys(events))


def memory_events(
    engine: MemoryEngine,
    ctx: TenantContext | None,
    memory_id: Any,
    *,
    limit: int = 50,
    events: Sequence[str] | None = None,
) -> MemoryEventsOutput:
    op = "memory_events"
    with engine.operation(op, ctx) as (tctx, extra):
        n = _limit(limit, op, MAX_EVENTS)
        kinds = _kinds(events, op)
        if not isinstance(memory_id, str) or not memory_id or len(memory_id) > 256:
            raise MemoryError(
                ErrorCode.INVALID_PARAMS,
                "memory_id must be a non-empty string",
                operation=op,
                details={"field": "memory_id"},
            )
        extra["memory_id"] = memory_id
        entry = engine.get_visible(tctx, memory_id, op, statuses=("active", "superseded"))
        if entry is None:  # missing, another tenant's, or outside the grant: one answer
            raise MemoryError(
                ErrorCode.MEMORY_NOT_FOUND,
                f"no memory with id {memory_id!r}",
                operation=op,
                details={"id": memory_id},
                retryable=False,
            )
        rows = engine.provider.list_memory_events(tctx.tenant_id, memory_id=memory_id, events=kinds, limit=n)
        return MemoryEventsOutput(memory_id=memory_id, events=[MemoryEvent.model_validate(r) for r in rows])


def event_trends(engine: MemoryEngine, ctx: TenantContext | None, *, days: int = 14) -> EventTrends:
    op = "event_trends"
    with engine.operation(op, ctx) as (tctx, _):
        n = _limit(days, op, MAX_DAYS, "days")
        today = engine.now().date()
        first = today - timedelta(days=n - 1)
        since = datetime.combine(first, datetime.min.time(), tzinfo=engine.now().tzinfo)
        series = {first + timedelta(days=i): TrendDay(day=first + timedelta(days=i)) for i in range(n)}
        for day, event, count in engine.provider.daily_memory_events(tctx.tenant_id, since):
            point = series.get(day)
            if point is None:
                continue
            for name, kinds in TREND_KINDS.items():
                if event in kinds:
                    setattr(point, name, getattr(point, name) + count)
        return EventTrends(tenant_id=tctx.tenant_id, since=since, days=list(series.values()))


def maintenance_runs(engine: MemoryEngine, ctx: TenantContext | None, *, limit: int = 20) -> MaintenanceRunsOutput:
    op = "maintenance_runs"
    with engine.operation(op, ctx) as (tctx, _):
        n = _limit(limit, op, MAX_EVENTS)
        rows = engine.provider.list_memory_events(tctx.tenant_id, events=["maintenance"], limit=n)
        runs = [
            MaintenanceRun.model_validate({**r.get("details", {}), "ts": r["ts"], "outcome": r["outcome"]})
            for r in rows
        ]
        return MaintenanceRunsOutput(tenant_id=tctx.tenant_id, runs=runs)
