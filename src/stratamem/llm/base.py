"""The LLM protocol: every call returns a validated pydantic model.

Implementations: :class:`~stratamem.llm.openai.OpenAIChatLLM` (any OpenAI-compatible
``/chat/completions`` endpoint: OpenAI, Ollama, vLLM …) and the offline
:class:`~stratamem.llm.rules.RuleBasedLLM`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

Category = Literal["preference", "fact", "context", "instruction"]
CATEGORIES: tuple[Category, ...] = ("preference", "fact", "context", "instruction")

M = TypeVar("M", bound=BaseModel)


class _Out(BaseModel):
    model_config = ConfigDict(extra="ignore")


class DecisionContext(BaseModel):
    """What the LLM sees when deciding about a write: the new text and similar stored memories."""

    recent_messages: list[str] = Field(default_factory=list)
    existing_memories: list[str] = Field(default_factory=list)
    user_intent: Literal["remember", "forget", "none"] = "none"


class WriteDecision(_Out):
    """The LLM's write decision: store, ignore, or update an existing memory."""

    action: Literal["store", "ignore", "update"]
    reason: str = ""
    existing_memory_id: str | None = None


class FormattedMemory(_Out):
    """A concise third-person fact plus its category."""

    content: str = Field(min_length=1)
    category: Category = "fact"


class Classification(_Out):
    category: Category


class Summary(_Out):
    content: str = Field(min_length=1)


class GraphEntity(_Out):
    """An entity named in a text: its name as written and an upper-case type (PERSON, PROJECT …)."""

    name: str = Field(min_length=1, max_length=200)
    type: str = Field(default="ENTITY", min_length=1, max_length=40)


class GraphRelation(_Out):
    """``source —type→ target`` between two entity names of the same extraction."""

    source: str = Field(min_length=1, max_length=200)
    target: str = Field(min_length=1, max_length=200)
    type: str = Field(min_length=1, max_length=40)


class GraphExtraction(_Out):
    """The LLM's answer to a graph extraction (``knowledge graph``); the graph package cleans it."""

    entities: list[GraphEntity] = Field(default_factory=list)
    relations: list[GraphRelation] = Field(default_factory=list)


@runtime_checkable
class LLMClient(Protocol):
    """What features need from a language model. Each method is deterministic for the rule engine."""

    name: str

    def decide(self, text: str, context: DecisionContext, *, system: str | None = None) -> WriteDecision:
        """Should ``text`` become long-term memory? (prompt: write decision)."""
        ...

    def format(self, text: str, *, system: str | None = None) -> FormattedMemory:
        """Rewrite ``text`` as a concise third-person fact with a category (prompt: format memory)."""
        ...

    def classify(self, text: str) -> Classification: ...

    def summarize(self, texts: Sequence[str], *, system: str | None = None) -> Summary:
        """One memory that says what all ``texts`` say (compaction)."""
        ...

    def complete_json(self, system: str, user: str, schema: type[M]) -> M:
        """Free-form structured call (extraction etc.); the rule engine raises CONFIGURATION_ERROR."""
        ...

    def close(self) -> None: ...
