"""Prometheus metrics of write coordination (registered once, in the default registry)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

QUEUE_DEPTH = Gauge("stratamem_coord_queue_depth", "Writes waiting in the Redis queue", ["queue"])
WAIT_SECONDS = Histogram(
    "stratamem_coord_write_wait_seconds",
    "Time from enqueueing a write to receiving its committed result",
    ["queue", "operation"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
TIMEOUTS = Counter("stratamem_coord_timeouts_total", "Writes or lock acquisitions that timed out", ["kind"])
PROCESSED = Counter("stratamem_coord_writes_total", "Writes executed by the writer", ["queue", "operation", "outcome"])
LOCK_WAIT_SECONDS = Histogram("stratamem_coord_lock_wait_seconds", "Time spent acquiring a coordination lock", ["lock"])
LOCK_CONTENTION = Counter("stratamem_coord_lock_contention_total", "Lock attempts that found the lock held", ["lock"])
RATELIMIT_DECISIONS = Counter(
    "stratamem_ratelimit_decisions_total",
    "Rate-limit decisions by limiter (http, crud), backend (local, redis, fallback) and decision",
    ["limiter", "backend", "decision"],
)
RATELIMIT_BACKEND_ERRORS = Counter(
    "stratamem_ratelimit_backend_errors_total",
    "Redis errors of the shared rate limiter (the decision fell back to the in-process limiter)",
    ["limiter"],
)
