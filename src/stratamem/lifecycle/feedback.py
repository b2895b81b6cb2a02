"""Reward feedback after a task (did the recalled memories help?).

``feedback(t, memory_ids, reward)``.

Each call adds one signal per memory (reward in [-1, 1]); the running mean decides pruning (see
:mod:`stratamem.lifecycle.pruning`). A memory that becomes a candidate is archived at once, so it
leaves the search index.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from ..errors import ErrorCode, MemoryError
from ..model import TenantContext
from . import metrics
from .config import PruningConfig
from .pruning import is_candidate

if TYPE_CHECKING:
    from ..engine import MemoryEngine

MAX_FEEDBACK_IDS = 100


class FeedbackItem(BaseModel):
    id: str
    signals: int
    mean_reward: float
    marked_for_pruning: bool


class FeedbackResult(BaseModel):
    items: list[FeedbackItem]


def record_feedback(
    engine: MemoryEngine, ctx: TenantContext, memory_ids: Any, reward: Any, cfg: PruningConfig
) -> FeedbackResult:
    op = "feedback"
    if (
        not isinstance(memory_ids, Sequence)
        or isinstance(memory_ids, str)
        or not memory_ids
        or len(memory_ids) > MAX_FEEDBACK_IDS
        or not all(isinstance(i, str) and i for i in memory_ids)
    ):
        raise MemoryError(
            ErrorCode.INVALID_PARAMS,
            f"memory_ids must be a list of 1-{MAX_FEEDBACK_IDS} ids",
            operation=op,
            details={"field": "memory_ids"},
        )
    if (
        isinstance(reward, bool)
        or not isinstance(reward, int | float)
        or not math.isfinite(reward)
        or not -1.0 <= reward <= 1.0
    ):
        raise MemoryError(
            ErrorCode.INVALID_PARAMS, "reward must be a number from -1 to 1", operation=op, details={"field": "reward"}
        )
    ids = list(dict.fromkeys(memory_ids))
    now = engine.now()
    entries = {}
    for mid in ids:
        entry = engine.provider.get(ctx.tenant_id, mid, now, statuses=("active", "archived"))
        if entry is None:
            raise MemoryError(
                ErrorCode.MEMORY_NOT_FOUND,
                f"no memory with id {mid!r}",
                operation=op,
                details={"id": mid},
                retryable=False,
            )
        entries[mid] = entry
    stats = engine.provider.add_feedback(ctx.tenant_id, ids, float(reward), now)
    items: list[FeedbackItem] = []
    newly_marked: list[str] = []
    for mid in ids:
        signals, total = stats[mid]
        marked = is_candidate(cfg, signals, total)
        if marked and entries[mid].status == "active":
            newly_marked.append(mid)
        items.append(
            FeedbackItem(id=mid, signals=signals, mean_reward=round(total / signals, 6), marked_for_pruning=marked)
        )
    if newly_marked:
        engine.provider.set_status(ctx.tenant_id, newly_marked, "archived", now)
        metrics.PRUNING_MARKED.inc(len(newly_marked))
        engine.audit.record(
            tenant_id=ctx.tenant_id,
            principal=ctx.principal,
            action="prune_mark",
            memory_ids=newly_marked,
            details={"rule": f"signals>={cfg.min_signals} and mean<{cfg.threshold}"},
        )
    engine.audit.record(
        tenant_id=ctx.tenant_id, principal=ctx.principal, action=op, memory_ids=ids, details={"reward": float(reward)}
    )
    return FeedbackResult(items=items)
