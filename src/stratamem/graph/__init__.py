"""Knowledge graph on the embedded DuckDB store.

``schema`` (migration 5) · ``extract`` (offline rules + LLM protocol) · ``store`` (write hook) ·
``traverse`` (recursive-SQL traversal) · ``integrity`` (validation, scan, purge) · ``service``
(what ``Memory.graph`` returns) · ``metrics`` (Prometheus + OpenTelemetry).
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
