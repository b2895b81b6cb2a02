"""Prometheus metrics of the lifecycle (prometheus-client, default registry, exported by /metrics)."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

PROMOTIONS = Counter("stratamem_lifecycle_promotions_total", "Memories promoted to a broader layer",
                     ["trigger", "target_layer"])
PROMOTIONS_BLOCKED = Counter("stratamem_lifecycle_promotions_blocked_total",
                             "Promotions refused because the memory is sensitive or private", ["reason"])
CONFLICTS = Counter("stratamem_lifecycle_conflicts_total", "Conflict entries stored on an if_match mismatch")
PRUNING_MARKED = Counter("stratamem_lifecycle_pruning_marked_total",
                         "Memories marked for pruning by negative reward feedback")
MAINTENANCE_ITEMS = Counter("stratamem_lifecycle_maintenance_items_total",
                            "Entries affected by maintenance tasks", ["task"])
MAINTENANCE_ERRORS = Counter("stratamem_lifecycle_maintenance_errors_total", "Failed maintenance tasks", ["task"])
MAINTENANCE_DURATION = Histogram("stratamem_lifecycle_maintenance_duration_seconds",
                                 "Duration of one maintenance task for one tenant", ["task"])
