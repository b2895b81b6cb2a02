"""Prometheus metrics of the embedding cache (registered once, in the default registry)."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

#: One increment per distinct content hash looked up at a level: ``lru`` (in process), ``redis``
#: (shared), ``store`` (the provider's table); ``result`` is hit, miss or error (Redis unreachable).
CACHE_LOOKUPS = Counter(
    "stratamem_embedding_cache_lookups_total",
    "Embedding cache lookups by level (lru, redis, store) and result (hit, miss, error)",
    ["level", "result"],
)

#: Texts per model run of the server's query micro-batching (embeddings/batching.py): 1 when searches
#: do not overlap, larger when concurrent searches share a run.
QUERY_BATCH_SIZE = Histogram(
    "stratamem_embedding_query_batch_size",
    "Query texts embedded per model run by the micro-batching queue",
    buckets=(1, 2, 4, 8, 16, 32, 64),
)
