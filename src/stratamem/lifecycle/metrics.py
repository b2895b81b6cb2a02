"""Prometheus metrics of the lifecycle (prometheus-client, default registry, exported by /metrics)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

PROMOTIONS = Counter(
    "stratamem_lifecycle_promotions_total", "Memories promoted to a broader layer", ["trigger", "target_layer"]
)
PROMOTIONS_BLOCKED = Counter(
    "stratamem_lifecycle_promotions_blocked_total",
    "Promotions refused because the memory is sensitive or private",
    ["reason"],
)
CONFLICTS = Counter("stratamem_lifecycle_conflicts_total", "Conflict entries stored on an if_match mismatch")
PRUNING_MARKED = Counter(
    "stratamem_lifecycle_pruning_marked_total", "Memories marked for pruning by negative reward feedback"
)
MAINTENANCE_ITEMS = Counter(
    "stratamem_lifecycle_maintenance_items_total", "Entries affected by maintenance tasks", ["task"]
)
MAINTENANCE_ERRORS = Counter("stratamem_lifecycle_maintenance_errors_total", "Failed maintenance tasks", ["task"])
MAINTENANCE_DURATION = Histogram(
    "stratamem_lifecycle_maintenance_duration_seconds", "Duration of one maintenance task for one tenant", ["task"]
)
SCHEDULE_RUNS = Counter(
    "stratamem_schedule_runs",
    "Runs of the in-server schedule by job and outcome "
    "(ok, error, skipped: another instance holds the job or ran it this interval)",
    ["job", "outcome"],
)
SCHEDULE_DURATION = Histogram(
    "stratamem_schedule_run_duration_seconds",
    "Duration of one scheduled job run",
    ["job"],
    buckets=(0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120, 600, 3600),
)
SCHEDULE_LAST_SUCCESS = Gauge(
    "stratamem_schedule_last_success_timestamp_seconds",
    "Unix time of the last successful run of a scheduled job",
    ["job"],
)
