"""Knowledge graph on the DuckDB and PostgreSQL stores (docs/graph.md).

``schema`` (DuckDB migration 5; PostgreSQL's is in ``providers/postgres_schema.py``) · ``extract``
(offline rules + LLM protocol) · ``store`` (write hook) · ``traverse`` (CSR snapshot and recursive
SQL) · ``integrity`` (validation, scan, purge) · ``service`` (what ``Memory.graph`` returns) ·
``portable`` (copy a tenant's graph between stores) · ``metrics`` (Prometheus + OpenTelemetry).
"""

from .extract import (
    ExtractedEntity,
    ExtractedRelation,
    ExtractionResult,
    KnownEntity,
    LLMGraphExtractor,
    RuleBasedExtractor,
    register_relation_phrase,
)

__all__ = [
    "ExtractedEntity",
    "ExtractedRelation",
    "ExtractionResult",
    "KnownEntity",
    "LLMGraphExtractor",
    "RuleBasedExtractor",
    "register_relation_phrase",
]
