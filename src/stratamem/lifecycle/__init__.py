"""Memory lifecycle: importance, promotion, compaction, TTL, decay, consolidation,
reward feedback and pruning, optimistic-concurrency conflicts, maintenance.

One responsibility per module: ``importance`` (score + access tracking), ``promotion`` (upward
rules, redaction, sensitivity), ``compaction`` (callback compaction, consolidation), ``expiry``
(TTL purge, soft delete, delete_by_scope), ``decay``, ``feedback``, ``pruning``, ``conflicts``,
``maintenance`` (runner + scheduler), ``reflection`` (session → agent-layer summaries and
rules); ``manager.Lifecycle`` ties them to an engine; ``schema``
holds DuckDB migration 4.
"""

from __future__ import annotations

from .config import (
    ConsolidationConfig,
    DecayConfig,
    ImportanceConfig,
    LifecycleConfig,
    PruningConfig,
    ReflectionConfig,
    SessionCleanupConfig,
    TtlConfig,
)

__all__ = [
    "ConsolidationConfig",
    "DecayConfig",
    "ImportanceConfig",
    "LifecycleConfig",
    "PruningConfig",
    "ReflectionConfig",
    "SessionCleanupConfig",
    "TtlConfig",
]
