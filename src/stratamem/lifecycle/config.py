"""Lifecycle configuration: every knob of importance, promotion, TTL, decay, consolidation and pruning.

Durations accept a :class:`~datetime.timedelta`, seconds, or strings like ``"7d"``, ``"12h"``,
``"30m"``, ``"45s"`` (e.g. the session retention period).
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from ..model import Layer

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_duration(value: Any) -> timedelta:
    """``"7d"`` → 7 days; a number is seconds; a timedelta is returned as is."""
    if isinstance(value, timedelta):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return timedelta(seconds=float(value))
    if isinstance(value, str):
        m = _DURATION.match(value.lower())
        if m:
            return timedelta(seconds=float(m.group(1)) * _UNITS[m.group(2)])
    raise ValueError(f"invalid duration {value!r}; use e.g. '7d', '12h', '30m' or seconds")


def _opt_duration(value: Any) -> timedelta | None:
    return None if value is None else parse_duration(value)


Duration = Annotated[timedelta, BeforeValidator(parse_duration)]
OptDuration = Annotated[timedelta | None, BeforeValidator(_opt_duration)]


class _Cfg(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ImportanceConfig(_Cfg):
    """``importance = max(explicit, frequency_weight·min(1, n/saturation_accesses) + recency_weight·2^(-d/half_life))``

    ``n`` = access_count, ``d`` = days since the last access (or creation), ``explicit`` = the
    importance given at add time or ``metadata.importance``. Rounded to 6 decimals.
    """

    frequency_weight: float = Field(0.5, ge=0.0, le=1.0)
    recency_weight: float = Field(0.5, ge=0.0, le=1.0)
    saturation_accesses: int = Field(5, ge=1)
    recency_half_life_days: float = Field(7.0, gt=0.0)


class SessionCleanupConfig(_Cfg):
    """What happens when a session closes: retention and promotion of important entries."""

    auto_delete: bool = True
    #: Session memories expire this long after the session closes; None = soft-delete at close.
    retention_period: OptDuration = timedelta(days=7)
    promote_important: bool = True
    promotion_threshold: float = Field(0.8, ge=0.0, le=1.0)
    #: Also promote a session memory that states something durable (a preference, instruction, fact,
    #: relationship or dated plan: ``llm.rules.worth_keeping``) even when it was never accessed.
    promote_durable: bool = True
    #: Layer that receives promotions when close_session gets no project_id.
    default_target: Layer = Layer.USER
    #: Project that receives promotions when close_session gets none (the project layer).
    project_id: str | None = None
    #: Redact PII ([REDACTED_EMAIL] …) from promoted content.
    redact_pii: bool = True


class TtlConfig(_Cfg):
    #: Expired entries are purged (hard-deleted) this long after ``expires_at``.
    purge_after: Duration = timedelta(days=1)
    #: Soft-deleted entries are purged this long after ``deleted_at``.
    soft_delete_retention: Duration = timedelta(days=30)


class DecayConfig(_Cfg):
    """Decay of relevance over time: ``relevance = initial · (1 - rate)^days_since_creation``.

    ``initial`` = ``metadata.relevance`` (default 1.0); ``rate`` = ``metadata.decayFactor`` when set,
    else ``rate_per_day``. Below ``archive_threshold`` the entry is archived (leaves search).
    """

    enabled: bool = True
    rate_per_day: float = Field(0.01, ge=0.0, le=1.0)
    archive_threshold: float = Field(0.05, ge=0.0, le=1.0)
    exempt_layers: tuple[Layer, ...] = (Layer.ORG, Layer.COMPANY)


class ConsolidationConfig(_Cfg):
    """Consolidation: merge near-duplicates of a scope once it holds more than
    ``max_memories_before_trigger`` entries (score = (1+cosine)/2 ≥ ``similarity_threshold``)."""

    enabled: bool = True
    similarity_threshold: float = Field(0.95, ge=0.0, le=1.0)
    max_memories_before_trigger: int = Field(1000, ge=1)
    target_layers: tuple[Layer, ...] = (Layer.AGENT, Layer.USER, Layer.SESSION, Layer.PROJECT)


class PruningConfig(_Cfg):
    """Memory-R1 pruning rule: a memory with at least ``min_signals`` rewards whose mean reward is
    below ``threshold`` is marked for pruning (archived: out of search); ``prune`` soft-deletes it."""

    min_signals: int = Field(3, ge=1)
    threshold: float = Field(-0.5, ge=-1.0, le=1.0)
    #: ``maintain`` soft-deletes marked memories (otherwise it only reports them).
    auto_prune: bool = False


class ReflectionConfig(_Cfg):
    """Reflection jobs (``lifecycle/reflection.py``): a finished session distilled into agent-layer
    summaries and rules, with the LLM when one is configured and by rules otherwise."""

    #: ``close_session`` reflects the session first when an agent is known (its ``agent_id`` argument,
    #: or the agent named in the session memories' provenance).
    on_close_session: bool = True
    #: ``maintain`` (and the server schedule) reflects sessions idle for ``idle_after`` that changed since
    #: their last reflection.
    in_maintenance: bool = True
    idle_after: Duration = timedelta(hours=1)


class LifecycleConfig(_Cfg):
    importance: ImportanceConfig = ImportanceConfig()
    session: SessionCleanupConfig = SessionCleanupConfig()
    ttl: TtlConfig = TtlConfig()
    decay: DecayConfig = DecayConfig()
    consolidation: ConsolidationConfig = ConsolidationConfig()
    pruning: PruningConfig = PruningConfig()
    reflection: ReflectionConfig = ReflectionConfig()
    #: Track access_count/last_accessed_at/importance on get and search hits.
    track_access: bool = True
    #: ``maintain`` deletes ``access`` events (the per-memory read history of the memory_events log,
    #: one row per returned search or get result) older than this many days; None keeps them all.
    #: Other event kinds (create, update, delete, search, ...) are audit history and are kept.
    access_history_days: int | None = Field(30, ge=1)
    #: ``"sync"``: the batched access write is handed to the store before the read returns, so every later
    #: read sees exact counts (the embedded store writes it on its append worker right after the
    #: operation, ``providers/append_queue.py``); ``"background"``: it is queued in the engine and written
    #: by one worker thread (``Lifecycle.flush()`` waits), coalescing bursts of searches.
    access_write: Literal["sync", "background"] = "sync"
