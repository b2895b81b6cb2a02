"""Prometheus metrics of the embedding cache (registered once, in the default registry)."""

from __future__ import annotations

from prometheus_client import Counter

#: One increment per distinct content hash looked up at a level: ``lru`` (in process), ``redis``
#: (shared), ``store`` (the provider's table); ``result`` is hit, miss or error (Redis unreachable).
CACHE_LOOKUPS = Counter(
    "stratamem_embedding_cache_lookups_total",
    "Embedding cache lookups by level (lru, redis, store) and result (hit, miss, error)",
    ["level", "result"],
)
