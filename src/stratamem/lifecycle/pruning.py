"""Reward-based pruning: memories whose feedback is consistently negative are removed.

Rule: a memory with at least ``min_signals`` reward signals whose mean reward is below
``threshold`` (defaults: 3 signals, mean < -0.5, rewards in [-1, 1]) is a pruning candidate. It is
archived as soon as feedback makes it a candidate (removed from search); ``prune`` soft-deletes
candidates (``dry_run`` only lists them) and the TTL sweeper purges them after retention.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel

from ..model import TenantContext
from .config import PruningConfig

if TYPE_CHECKING:
    from ..engine import MemoryEngine


class PruneCandidate(BaseModel):
    id: str
    signals: int
    mean_reward: float
    status: str


class PruneReport(BaseModel):
    dry_run: bool
    candidates: list[PruneCandidate]
    pruned: list[str]


def is_candidate(cfg: PruningConfig, signals: int, reward_sum: float) -> bool:
    return signals >= cfg.min_signals and reward_sum / signals < cfg.threshold


def candidates(engine: MemoryEngine, tenant_id: str, cfg: PruningConfig) -> list[PruneCandidate]:
    now = engine.now()
    out: list[PruneCandidate] = []
    for mid, (signals, total) in engine.provider.feedback_stats(tenant_id).items():
        if not is_candidate(cfg, signals, total):
            continue
        entry = engine.provider.get(tenant_id, mid, now, statuses=("active", "archived"))
        if entry is not None:
            out.append(
                PruneCandidate(id=mid, signals=signals, mean_reward=round(total / signals, 6), status=entry.status)
            )
    return out


def prune(engine: MemoryEngine, ctx: TenantContext, cfg: PruningConfig, *, dry_run: bool = True) -> PruneReport:
    found = candidates(engine, ctx.tenant_id, cfg)
    pruned: list[str] = []
    if not dry_run and found:
        pruned = engine.provider.set_status(ctx.tenant_id, [c.id for c in found], "deleted", engine.now())
        engine.audit.record(tenant_id=ctx.tenant_id, principal=ctx.principal, action="prune", memory_ids=pruned)
    return PruneReport(dry_run=dry_run, candidates=found, pruned=pruned)
