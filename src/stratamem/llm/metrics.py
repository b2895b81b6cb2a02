"""Prometheus metrics of the LLM features (prometheus-client, default registry, exported by /metrics)."""

from __future__ import annotations

from prometheus_client import Counter

from ..errors import MemoryError

#: Every time a configured LLM failed and a feature used its offline rules instead. ``task``:
#: write_gate, graph_extraction, consolidation, reflection, context_compaction; ``reason``: the error
#: code of the failure (PROVIDER_ERROR, RATE_LIMITED, CONFIGURATION_ERROR …) or ``invalid_reply``.
FALLBACKS = Counter(
    "stratamem_llm_fallbacks_total",
    "LLM calls that failed and were answered by the offline rules instead",
    ["task", "reason"],
)


def reason_of(exc: BaseException) -> str:
    """A bounded label for a failure: the MemoryError code, else ``invalid_reply``."""
    return exc.code.value if isinstance(exc, MemoryError) else "invalid_reply"


def record_fallback(task: str, exc: BaseException) -> None:
    FALLBACKS.labels(task=task, reason=reason_of(exc)).inc()
