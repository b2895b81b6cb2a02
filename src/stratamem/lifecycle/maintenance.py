"""Background maintenance: TTL/soft-delete purge, decay, reflection, consolidation, pruning, integrity,
retention of the access history.

``run_maintenance`` runs every task for every tenant (or the given ones), records Prometheus
metrics, and never lets one failing task stop the others. ``MaintenanceScheduler`` runs it on an
interval in a daemon thread (for the server); ``stratamem maintain`` runs it once.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Protocol

from pydantic import BaseModel, Field

from ..errors import ErrorCode, MemoryError
from ..hygiene.prompts import PromptTemplates
from ..llm.base import LLMClient
from ..model import TenantContext
from . import metrics
from .compaction import consolidate
from .config import LifecycleConfig
from .decay import decay
from .expiry import purge
from .pruning import candidates, prune
from .reflection import idle_sessions, reflect

if TYPE_CHECKING:
    from ..engine import MemoryEngine


class Lifecycle(Protocol):
    """What maintenance uses of the lifecycle feature (``lifecycle.manager.Lifecycle``)."""

    @property
    def engine(self) -> MemoryEngine: ...

    @property
    def config(self) -> LifecycleConfig: ...

    @property
    def llm(self) -> LLMClient: ...

    @property
    def prompts(self) -> PromptTemplates: ...


log = logging.getLogger("stratamem.lifecycle")

TASKS: tuple[str, ...] = (
    "ttl_purge",
    "decay",
    "reflection",
    "consolidation",
    "pruning",
    "integrity",
    "access_retention",
)


class TenantReport(BaseModel):
    tenant_id: str
    purged: int = 0
    archived: int = 0
    #: Agent-layer reflection memories (summaries and rules) written for idle sessions.
    reflected: int = 0
    consolidated: int = 0
    prune_candidates: int = 0
    pruned: int = 0
    integrity_repaired: int = 0
    #: ``access`` events older than ``LifecycleConfig.access_history_days`` deleted from the event log.
    access_events_pruned: int = 0
    errors: dict[str, str] = Field(default_factory=dict)


class MaintenanceReport(BaseModel):
    tenants: list[TenantReport]
    duration_s: float


def _integrity(lc: Lifecycle, tenant_id: str) -> int:
    """Feedback rows of memories that no longer exist are removed; returns how many."""
    now = lc.engine.now()
    provider = lc.engine.provider
    orphans = [
        mid
        for mid in provider.feedback_stats(tenant_id)
        if provider.get(tenant_id, mid, now, statuses=("active", "archived", "deleted")) is None
    ]
    provider.clear_feedback(tenant_id, orphans)
    return len(orphans)


#: The event kinds the access-history retention deletes; every other kind is audit history and kept.
ACCESS_EVENTS: tuple[str, ...] = ("access",)


def _access_retention(lc: Lifecycle, tenant_id: str) -> int:
    """``access`` events of the tenant older than ``access_history_days`` are deleted; returns how many.

    None keeps them all; a store without the event log has nothing to prune."""
    days = lc.config.access_history_days
    if days is None:
        return 0
    before = lc.engine.now() - timedelta(days=days)
    try:
        return lc.engine.provider.prune_memory_events(tenant_id, ACCESS_EVENTS, before)
    except MemoryError as exc:
        if exc.code == ErrorCode.CONFIGURATION_ERROR:  # the store has no event log
            return 0
        raise


def _record_run(engine: MemoryEngine, rep: TenantReport, duration_s: float) -> None:
    """Keep the run's report in the tenant's memory_events log (kind ``maintenance``), so the
    console and ``Memory.maintenance_runs`` can list recent runs. A store without the log keeps none."""
    details = {**rep.model_dump(exclude={"tenant_id"}), "duration_s": round(duration_s, 6)}
    row = {
        "tenant_id": rep.tenant_id,
        "id": str(uuid.uuid4()),
        "ts": engine.now(),
        "event": "maintenance",
        "principal": "maintenance",
        "outcome": "error" if rep.errors else "ok",
        "details": details,
    }
    try:
        engine.provider.append_memory_events([row])
    except MemoryError as exc:
        if exc.code != ErrorCode.CONFIGURATION_ERROR:  # CONFIGURATION_ERROR: the store has no event log
            log.warning("maintenance run of tenant %s could not be recorded", rep.tenant_id, exc_info=True)


def run_maintenance(lc: Lifecycle, tenants: Sequence[str] | None = None) -> MaintenanceReport:
    start = time.perf_counter()
    cfg = lc.config
    engine = lc.engine
    reports: list[TenantReport] = []
    for tenant_id in tenants if tenants is not None else engine.provider.tenants():
        tenant_start = time.perf_counter()
        rep = TenantReport(tenant_id=tenant_id)
        ctx = TenantContext(tenant_id=tenant_id, principal="maintenance", roles=("system",))

        def do_purge(t: str = tenant_id) -> int:
            return len(purge(engine, t, cfg.ttl))

        def do_decay(t: str = tenant_id) -> int:
            return len(decay(engine, t, cfg.decay))

        def do_reflect(c: TenantContext = ctx) -> int:
            rcfg = cfg.reflection
            if not rcfg.in_maintenance:
                return 0
            sessions = idle_sessions(engine, c.tenant_id, rcfg.idle_after, engine.now())
            return sum(
                reflect(engine, c, uid, sid, None, lc.llm, lc.prompts, "maintain").created for uid, sid in sessions
            )

        def do_consolidate(c: TenantContext = ctx) -> int:
            return len(consolidate(engine, cfg, c, llm=lc.llm))

        def do_prune(c: TenantContext = ctx, r: TenantReport = rep) -> int:
            if cfg.pruning.auto_prune:
                report = prune(engine, c, cfg.pruning, dry_run=False)
                r.prune_candidates = len(report.candidates)
                return len(report.pruned)
            r.prune_candidates = len(candidates(engine, c.tenant_id, cfg.pruning))
            return 0

        def do_integrity(t: str = tenant_id) -> int:
            return _integrity(lc, t)

        def do_access_retention(t: str = tenant_id) -> int:
            return _access_retention(lc, t)

        steps: list[tuple[str, Callable[[], int], str]] = [
            ("ttl_purge", do_purge, "purged"),
            ("decay", do_decay, "archived"),
            ("reflection", do_reflect, "reflected"),
            ("consolidation", do_consolidate, "consolidated"),
            ("pruning", do_prune, "pruned"),
            ("integrity", do_integrity, "integrity_repaired"),
            ("access_retention", do_access_retention, "access_events_pruned"),
        ]
        for task, fn, field in steps:
            t0 = time.perf_counter()
            try:
                n = fn()
                setattr(rep, field, n)
                metrics.MAINTENANCE_ITEMS.labels(task=task).inc(n)
            except Exception as exc:
                log.warning("maintenance task %s failed for tenant %s", task, tenant_id, exc_info=True)
                rep.errors[task] = f"{type(exc).__name__}: {exc}"[:300]
                metrics.MAINTENANCE_ERRORS.labels(task=task).inc()
            finally:
                metrics.MAINTENANCE_DURATION.labels(task=task).observe(time.perf_counter() - t0)
        engine.audit.record(
            tenant_id=tenant_id,
            principal="maintenance",
            action="maintain",
            outcome="error" if rep.errors else "ok",
            details=rep.model_dump(exclude={"tenant_id"}),
        )
        _record_run(engine, rep, time.perf_counter() - tenant_start)
        reports.append(rep)
    return MaintenanceReport(tenants=reports, duration_s=round(time.perf_counter() - start, 6))


class MaintenanceScheduler:
    """Runs maintenance every ``interval_s`` seconds in a daemon thread until ``stop()``."""

    def __init__(self, lc: Lifecycle, interval_s: float) -> None:
        self.lc = lc
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="stratamem-maintenance", daemon=True)
        self.last_report: MaintenanceReport | None = None

    def start(self) -> MaintenanceScheduler:
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.last_report = run_maintenance(self.lc)
            except Exception:
                log.exception("scheduled maintenance failed")

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)
