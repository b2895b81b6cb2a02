"""Importance scoring (seed 000 "Importance Scoring"): frequency + recency, optional explicit value.

See :class:`~stratamem.lifecycle.config.ImportanceConfig` for the formula. Access tracking is one
batched provider write per get/search (never per hit) and never fails the read.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import TYPE_CHECKING

from ..model import MemoryEntry, TenantContext
from .config import ImportanceConfig

if TYPE_CHECKING:
    from ..engine import MemoryEngine

log = logging.getLogger("stratamem.lifecycle")


def explicit_importance(entry: MemoryEntry) -> float | None:
    """The caller-given importance: ``metadata.importance`` or the value passed to ``add``."""
    for value in (entry.metadata.get("importance"), (entry.provenance.model_extra or {}).get("explicit_importance")):
        if isinstance(value, int | float) and not isinstance(value, bool) and 0.0 <= value <= 1.0:
            return float(value)
    return None


def compute_importance(cfg: ImportanceConfig, *, access_count: int, last_access: datetime, now: datetime,
                       explicit: float | None = None) -> float:
    frequency = min(1.0, access_count / cfg.saturation_accesses)
    days = max(0.0, (now - last_access).total_seconds() / 86400.0)
    recency = math.pow(0.5, days / cfg.recency_half_life_days)
    score = min(1.0, cfg.frequency_weight * frequency + cfg.recency_weight * recency)
    if explicit is not None:
        score = max(score, explicit)
    return round(score, 6)


def importance_at(cfg: ImportanceConfig, entry: MemoryEntry, now: datetime) -> float:
    """Current importance of a stored entry (recency measured at ``now``)."""
    return compute_importance(cfg, access_count=entry.access_count,
                              last_access=entry.last_accessed_at or entry.created_at, now=now,
                              explicit=explicit_importance(entry))


class AccessTracker:
    """Engine access hook: one batched ``record_access`` per read, run inline (``sync``) or on one
    worker thread (``background``); errors are logged, never raised into the read."""

    def __init__(self, engine: MemoryEngine, cfg: ImportanceConfig) -> None:
        self.engine = engine
        self.cfg = cfg
        self.background = False
        self._executor: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def __call__(self, ctx: TenantContext, entries: Sequence[MemoryEntry]) -> None:
        if not entries:
            return
        now = self.engine.now()
        try:
            updates = {
                e.id: compute_importance(self.cfg, access_count=e.access_count + 1, last_access=now, now=now,
                                         explicit=explicit_importance(e))
                for e in entries
            }
        except Exception:
            log.warning("access tracking failed", exc_info=True)
            return
        if self.background:
            with self._lock:
                if self._executor is None:
                    self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="stratamem-access")
                self._executor.submit(self._write, ctx.tenant_id, updates, now)
        else:
            self._write(ctx.tenant_id, updates, now)

    def _write(self, tenant_id: str, updates: dict[str, float], now: datetime) -> None:
        try:
            self.engine.provider.record_access(tenant_id, updates, now)
        except Exception:  # tracking must never fail the read
            log.warning("access tracking failed", exc_info=True)

    def flush(self) -> None:
        """Wait until every queued background access write is stored."""
        with self._lock:
            executor = self._executor
        if executor is not None:
            executor.submit(lambda: None).result()

    def close(self) -> None:
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)
