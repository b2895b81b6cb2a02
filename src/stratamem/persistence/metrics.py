"""Prometheus metrics of snapshots (duration, size, bytes written, failures)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

SNAPSHOT_DURATION = Histogram(
    "stratamem_snapshot_duration_seconds",
    "Duration of snapshot push/pull operations.",
    ["operation"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300),
)
SNAPSHOT_BYTES = Counter("stratamem_snapshot_bytes_written", "Bytes of Parquet uploaded by snapshot pushes.")
SNAPSHOT_SIZE = Gauge("stratamem_snapshot_size_bytes", "Total size of the most recently published snapshot.")
SNAPSHOT_FAILURES = Counter("stratamem_snapshot_failures", "Failed snapshot operations.", ["operation"])
