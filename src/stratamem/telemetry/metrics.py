"""Prometheus metrics of the memory operations (metric names use underscores, not dots).

* ``memory_operations_total{op}`` counter, ``memory_operations_errors_total{code}`` counter,
* ``memory_operations_latency{op}`` histogram in milliseconds,
* ``memory_search_results{layer}`` histogram of results per searched layer,
* ``memory_storage_size{layer}`` gauge of live memories per layer (all tenants), refreshed on scrape.

Metrics live in prometheus_client's default ``REGISTRY`` (created once per process), so ``/metrics``
also exports every other feature's metrics. :class:`MetricsObserver` feeds them from engine events.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING

from prometheus_client import Counter, Gauge, Histogram

from ..model import Layer

if TYPE_CHECKING:
    from ..engine import MemoryEngine
    from ..hooks import OperationEvent

OPERATIONS = Counter("memory_operations", "Memory operations by type.", ["op"])
ERRORS = Counter("memory_operations_errors", "Failed memory operations by error code.", ["code"])
LATENCY = Histogram(
    "memory_operations_latency",
    "Memory operation latency in milliseconds.",
    ["op"],
    buckets=(0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000),
)
SEARCH_RESULTS = Histogram(
    "memory_search_results",
    "Results returned per search, by layer.",
    ["layer"],
    buckets=(0, 1, 2, 3, 5, 10, 20, 50, 100),
)
STORAGE_SIZE = Gauge("memory_storage_size", "Live memories by layer (all tenants).", ["layer"])
STORE_MEMORY = Gauge(
    "stratamem_store_memory_bytes",
    "Memory the store's database engine holds in this process, by its tag (DuckDB: duckdb_memory()).",
    ["tag"],
)


_READS = frozenset({"search", "get", "list", "stats", "export"})
_refresh_lock = threading.Lock()
_last_refresh: dict[int, float] = {}
_counts: dict[int, dict[str, int]] = {}


class MetricsObserver:
    """Engine observer: one call per finished operation."""

    def __init__(self, engine_id: int = 0) -> None:
        self.engine_id = engine_id

    def __call__(self, event: OperationEvent) -> None:
        if event.operation not in _READS:
            with _refresh_lock:  # a write may change the storage counts: recount on the next scrape
                _last_refresh.pop(self.engine_id, None)
        OPERATIONS.labels(op=event.operation).inc()
        LATENCY.labels(op=event.operation).observe(event.duration_s * 1000.0)
        if event.error_code:
            ERRORS.labels(code=event.error_code).inc()
        elif event.operation == "search":
            for layer, count in (event.extra.get("results_by_layer") or {}).items():
                SEARCH_RESULTS.labels(layer=layer).observe(count)


def live_counts(engine: MemoryEngine, *, min_interval_s: float = 30.0) -> dict[str, int]:
    """Live memories per layer of ``engine``'s store (all tenants): recounted after any write, else at
    most every ``min_interval_s``."""
    with _refresh_lock:
        now = time.monotonic()
        cached = _counts.get(id(engine))
        if cached is not None and now - _last_refresh.get(id(engine), -1e9) < min_interval_s:
            return cached
        _last_refresh[id(engine)] = now
    totals = engine.provider.count_live_by_layer(engine.now())
    with _refresh_lock:
        _counts[id(engine)] = totals
    return totals


def refresh_storage_size(engine: MemoryEngine | Iterable[MemoryEngine], *, min_interval_s: float = 30.0) -> None:
    """Set ``memory_storage_size`` to the live memories per layer of one store (or the sum of several)."""
    engines = [engine] if not isinstance(engine, Iterable) else list(engine)
    totals: dict[str, int] = {}
    for one in engines:
        for layer, n in live_counts(one, min_interval_s=min_interval_s).items():
            totals[layer] = totals.get(layer, 0) + n
    for layer in Layer:
        STORAGE_SIZE.labels(layer=layer.value).set(totals.get(layer.value, 0))


def refresh_store_memory(engine: MemoryEngine | Iterable[MemoryEngine]) -> None:
    """Set ``stratamem_store_memory_bytes`` from the stores' own accounting (summed over stores);
    tags that no longer hold memory drop out."""
    engines = [engine] if not isinstance(engine, Iterable) else list(engine)
    totals: dict[str, int] = {}
    for one in engines:
        for tag, size in one.provider.memory_usage().items():
            totals[tag] = totals.get(tag, 0) + size
    STORE_MEMORY.clear()
    for tag, size in totals.items():
        STORE_MEMORY.labels(tag=tag).set(size)


def forget(engine: MemoryEngine) -> None:
    """Drop the cached counts of an engine that is no longer observed."""
    with _refresh_lock:
        _counts.pop(id(engine), None)
        _last_refresh.pop(id(engine), None)


def install(engine: MemoryEngine) -> MetricsObserver:
    """Attach a metrics observer to ``engine`` once; returns it."""
    for obs in engine.hooks.observers:
        if isinstance(obs, MetricsObserver):
            return obs
    obs = MetricsObserver(id(engine))
    engine.hooks.observers.append(obs)
    return obs
