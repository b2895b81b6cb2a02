"""Decay of relevance over time: ``relevance = initial · (1 - rate)^days_since_creation``.

Entries of non-exempt layers whose relevance falls below ``archive_threshold`` are archived: they
leave search and get, and stay listable (``status == "archived"``) until restored or purged.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import TYPE_CHECKING

from ..model import MemoryEntry
from .config import DecayConfig
from .scan import iter_scope

if TYPE_CHECKING:
    from ..engine import MemoryEngine


def _number(value: object, default: float) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return default


def relevance(entry: MemoryEntry, now: datetime, cfg: DecayConfig) -> float:
    initial = _number(entry.metadata.get("relevance"), 1.0)
    rate = min(1.0, max(0.0, _number(entry.metadata.get("decayFactor"), cfg.rate_per_day)))
    days = max(0.0, (now - entry.created_at).total_seconds() / 86400.0)
    return initial * math.pow(1.0 - rate, days)


def decay(engine: MemoryEngine, tenant_id: str, cfg: DecayConfig, now: datetime | None = None) -> list[str]:
    """Archive the decayed entries of a tenant; returns their ids."""
    if not cfg.enabled:
        return []
    now = now or engine.now()
    doomed = [
        e.id
        for e in iter_scope(engine.provider, tenant_id, now)
        if e.layer not in cfg.exempt_layers and relevance(e, now, cfg) < cfg.archive_threshold
    ]
    if doomed:
        engine.provider.set_status(tenant_id, doomed, "archived", now)
    return doomed
