"""LLM protocol: write decisions, formatting, classification, summaries.

``make_llm()`` returns the OpenAI-compatible HTTP client when ``STRATAMEM_LLM_URL`` (or an explicit
base URL) is configured, and the deterministic :class:`RuleBasedLLM` otherwise, so every feature
works offline.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..settings import Settings
from .base import (
    CATEGORIES,
    Category,
    Classification,
    DecisionContext,
    FormattedMemory,
    GraphEntity,
    GraphExtraction,
    GraphRelation,
    LLMClient,
    Summary,
    WriteDecision,
)
from .rules import RuleBasedLLM

if TYPE_CHECKING:
    from .openai import OpenAIChatLLM


def __getattr__(name: str) -> Any:
    """``OpenAIChatLLM`` is imported on first use: its HTTP client (httpx) is not needed offline and
    importing it would slow every cold start."""
    if name == "OpenAIChatLLM":
        from .openai import OpenAIChatLLM  # noqa: PLC0415  httpx, only for the OpenAI-compatible backend (offline runs never load it)

        return OpenAIChatLLM
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def make_llm(spec: str | LLMClient | None = None, *, settings: Settings | None = None) -> LLMClient:
    """``None`` → environment (``STRATAMEM_LLM_URL``/``_MODEL``/``_API_KEY``) or rules; ``"rules"``;
    ``"openai"`` (environment required); or a ready client."""
    if spec is not None and not isinstance(spec, str):
        return spec
    choice = (spec or "").strip().lower()
    settings = settings or Settings()
    url = settings.llm_url
    if choice == "rules" or (not choice and not url):
        return RuleBasedLLM()
    from .openai import OpenAIChatLLM  # noqa: PLC0415  httpx, only for the OpenAI-compatible backend (offline runs never load it)

    return OpenAIChatLLM.from_env(settings)


__all__ = [
    "CATEGORIES",
    "Category",
    "Classification",
    "DecisionContext",
    "FormattedMemory",
    "GraphEntity",
    "GraphExtraction",
    "GraphRelation",
    "LLMClient",
    "OpenAIChatLLM",
    "RuleBasedLLM",
    "Summary",
    "WriteDecision",
    "make_llm",
]
