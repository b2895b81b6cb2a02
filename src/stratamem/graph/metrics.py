"""Graph telemetry (query duration, result counts, traversal depth): Prometheus metrics +
OpenTelemetry spans.

Metrics live in prometheus-client's default registry; spans use the OpenTelemetry API (a no-op
unless the application installs an SDK/exporter).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace
from prometheus_client import Gauge, Histogram

QUERY_DURATION = Histogram(
    "graph_query_duration_seconds",
    "Duration of knowledge-graph queries",
    ["query_type"],
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5),
)
RESULT_COUNT = Histogram(
    "graph_query_result_count",
    "Rows returned by knowledge-graph queries",
    ["query_type"],
    buckets=(0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000),
)
TRAVERSAL_DEPTH = Histogram(
    "graph_traversal_depth",
    "Requested hop depth of graph traversals",
    ["query_type"],
    buckets=(1, 2, 3, 4, 5, 6, 8, 10),
)
CACHE_HIT_RATIO = Gauge("graph_cache_hit_ratio", "Share of graph traversals answered from the cache")

_tracer = trace.get_tracer("stratamem.graph")


class CacheStats:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def record(self, hit: bool) -> None:
        with self._lock:
            if hit:
                self.hits += 1
            else:
                self.misses += 1
            CACHE_HIT_RATIO.set(self.hits / (self.hits + self.misses))

    @property
    def ratio(self) -> float:
        total = self.hits + self.misses
        return self.hits / total if total else 0.0


CACHE_STATS = CacheStats()


class QueryTimer:
    """What a traced query fills in; the context manager records it on exit."""

    def __init__(self) -> None:
        self.result_count = 0
        self.cached = False


@contextmanager
def observe(query_type: str, tenant_id: str, hops: int | None) -> Iterator[QueryTimer]:
    start = time.perf_counter()
    timer = QueryTimer()
    attrs: dict[str, Any] = {"graph.query_type": query_type, "tenant_id": tenant_id}
    if hops is not None:
        attrs["graph.hops"] = hops
    with _tracer.start_as_current_span(f"graph.{query_type}", attributes=attrs) as span:
        try:
            yield timer
        finally:
            elapsed = time.perf_counter() - start
            QUERY_DURATION.labels(query_type).observe(elapsed)
            RESULT_COUNT.labels(query_type).observe(timer.result_count)
            if hops is not None:
                TRAVERSAL_DEPTH.labels(query_type).observe(hops)
            span.set_attribute("graph.result_count", timer.result_count)
            span.set_attribute("graph.duration_ms", round(elapsed * 1000, 3))
            span.set_attribute("graph.cached", timer.cached)
