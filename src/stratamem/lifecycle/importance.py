"""Importance scoring: frequency + recency, optional explicit value.

See :class:`~stratamem.lifecycle.config.ImportanceConfig` for the formula. Access tracking is one
batched provider write per get/search (never per hit) and never fails the read.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Sequence
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


def compute_importance(
    cfg: ImportanceConfig, *, access_count: int, last_access: datetime, now: datetime, explicit: float | None = None
) -> float:
    frequency = min(1.0, access_count / cfg.saturation_accesses)
    days = max(0.0, (now - last_access).total_seconds() / 86400.0)
    recency = math.pow(0.5, days / cfg.recency_half_life_days)
    score = min(1.0, cfg.frequency_weight * frequency + cfg.recency_weight * recency)
    if explicit is not None:
        score = max(score, explicit)
    return round(score, 6)


def importance_at(cfg: ImportanceConfig, entry: MemoryEntry, now: datetime) -> float:
    """Current importance of a stored entry (recency measured at ``now``)."""
    return compute_importance(
        cfg,
        access_count=entry.access_count,
        last_access=entry.last_accessed_at or entry.created_at,
        now=now,
        explicit=explicit_importance(entry),
    )


class AccessTracker:
    """Engine access hook: one batched ``record_access`` per read, run inline (``sync``) or by one
    worker thread (``background``); errors are logged, never raised into the read.

    In background mode accesses queue per tenant and the worker writes everything queued since its
    last write as ONE ``record_access`` per tenant (counts summed, the latest time and importance
    kept): under a steady stream of searches the store sees a few writes per second instead of one
    per search. (DuckDB appends accesses to a log that its next transaction or read folds into
    ``memories``, so each write is an append, not a scan of the table.)"""

    def __init__(self, engine: MemoryEngine, cfg: ImportanceConfig) -> None:
        self.engine = engine
        self.cfg = cfg
        self.background = False
        self._cond = threading.Condition()
        #: tenant -> memory id -> (accesses, importance, time of the latest access)
        self._pending: dict[str, dict[str, tuple[int, float, datetime]]] = {}
        self._busy = False
        self._worker: threading.Thread | None = None

    def __call__(self, ctx: TenantContext, entries: Sequence[MemoryEntry]) -> None:
        if not entries:
            return
        now = self.engine.now()
        try:
            updates = {
                e.id: compute_importance(
                    self.cfg, access_count=e.access_count + 1, last_access=now, now=now, explicit=explicit_importance(e)
                )
                for e in entries
            }
        except Exception:
            log.warning("access tracking failed", exc_info=True)
            return
        if not self.background:
            self._write(ctx.tenant_id, updates, now, None)
            return
        with self._cond:
            queued = self._pending.setdefault(ctx.tenant_id, {})
            for memory_id, value in updates.items():
                count = queued[memory_id][0] if memory_id in queued else 0
                queued[memory_id] = (count + 1, value, now)
            if self._worker is None:
                self._worker = threading.Thread(target=self._run, name="stratamem-access", daemon=True)
                self._worker.start()
            self._cond.notify_all()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._pending and self._worker is not None:
                    self._cond.wait()
                if not self._pending:  # closed and drained
                    return
                batch, self._pending = self._pending, {}
                self._busy = True
            try:
                for tenant_id, queued in batch.items():
                    now = max(when for _, _, when in queued.values())
                    counts = {m: n for m, (n, _, _) in queued.items()}
                    self._write(
                        tenant_id,
                        {m: v for m, (_, v, _) in queued.items()},
                        now,
                        counts if any(n != 1 for n in counts.values()) else None,
                    )
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()

    def _write(self, tenant_id: str, updates: dict[str, float], now: datetime, counts: dict[str, int] | None) -> None:
        try:
            if counts is None:  # one access each: the plain call every provider implements
                self.engine.provider.record_access(tenant_id, updates, now)
            else:
                self.engine.provider.record_access(tenant_id, updates, now, counts=counts)
        except Exception:  # tracking must never fail the read
            log.warning("access tracking failed", exc_info=True)

    def flush(self) -> None:
        """Wait until every queued background access write is stored."""
        with self._cond:
            while self._worker is not None and (self._pending or self._busy):
                self._cond.wait()

    def close(self) -> None:
        self.flush()
        with self._cond:
            worker, self._worker = self._worker, None
            self._cond.notify_all()
        if worker is not None:
            worker.join()
