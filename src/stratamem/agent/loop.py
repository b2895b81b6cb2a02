"""Agent loop utilities: the pieces an agent needs around a model call.

- :func:`system_contract` — the text that tells a model how to treat its memory (from the hygiene prompts).
- :func:`format_context` — a compact, layer-labelled block of memories that fits a token budget.
- :func:`process_conversation` — runs the write gate over the user's messages of one turn.

Token counting: a word-based estimate (``ceil(words * 4 / 3)``, at least 1 per non-empty text). The
default embedder's tokenizer truncates to its model window and counts WordPiece tokens of a model no
chat model uses, so it would not be more accurate for a chat model's budget; the estimate errs on the
high side for English prose, which keeps the block inside the budget.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from pydantic import BaseModel, Field

from ..errors import ErrorCode, MemoryError
from ..hygiene.gate import ProcessResult
from ..hygiene.prompts import PromptTemplates
from ..model import MemoryEntry, SearchMemoryOutput, SearchResult, TenantContext


class WriteGate(Protocol):
    """What :func:`process_conversation` needs of a store: ``Memory.process`` (the write gate)."""

    def process(
        self,
        ctx: TenantContext | None = ...,
        text: str | None = ...,
        *,
        intent: str = ...,
        identifiers: Any = ...,
        recent_messages: Sequence[str] | None = ...,
        layer: Any = ...,
    ) -> ProcessResult: ...


#: Default token budget of :func:`format_context`.
DEFAULT_MAX_TOKENS = 1000
CONTEXT_HEADER = "Memories (hints that may be stale):"
#: How many earlier messages of the turn the write gate sees with each user message.
RECENT_MESSAGES = 5
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def estimate_tokens(text: str) -> int:
    """Word-based token estimate: ``ceil(words * 4 / 3)``; 0 for blank text."""
    words = len(text.split())
    return math.ceil(words * 4 / 3) if words else 0


def system_contract(prompts: PromptTemplates) -> str:
    """The system-prompt text for an agent with memory tools: the contract, how to read retrieved
    memories, when to search before writing, and the explicit remember/forget rules."""
    return "\n\n".join(
        (
            prompts.system_contract,
            prompts.retrieval_usage,
            prompts.search_before_write,
            prompts.explicit_remember,
            prompts.explicit_forget,
        )
    )


MemoryLike = SearchResult | MemoryEntry | Mapping[str, Any]


def _entries(memories: SearchMemoryOutput | Iterable[MemoryLike]) -> list[tuple[MemoryEntry, float | None]]:
    items: Iterable[MemoryLike] = memories.results if isinstance(memories, SearchMemoryOutput) else memories
    out: list[tuple[MemoryEntry, float | None]] = []
    for item in items:
        if isinstance(item, SearchResult):
            out.append((item.memory, item.score))
        elif isinstance(item, MemoryEntry):
            out.append((item, None))
        elif "memory" in item:
            result = SearchResult.model_validate(item)
            out.append((result.memory, result.score))
        else:
            out.append((MemoryEntry.model_validate(item), None))
    return out


def _line(entry: MemoryEntry, text: str) -> str:
    return f"- [{entry.layer.value}] {' '.join(text.split())} ({entry.updated_at.date().isoformat()})"


def format_context(memories: SearchMemoryOutput | Iterable[MemoryLike], max_tokens: int = DEFAULT_MAX_TOKENS) -> str:
    """A compact block of memories, one line each labelled with its layer and date, within ``max_tokens``
    (see :func:`estimate_tokens`).

    Order: most relevant first (search score), newer first among equal scores (entries without a
    score rank by recency). A memory that does not fit whole is shortened to its leading complete
    sentences if those fit, and left out otherwise: no memory is cut mid-sentence. Empty string when
    nothing fits. Accepts a :class:`SearchMemoryOutput`, search results, entries or their dicts.
    """
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise MemoryError(
            ErrorCode.INVALID_PARAMS,
            "max_tokens must be an integer of at least 1",
            operation="format_context",
            details={"field": "max_tokens"},
        )
    try:
        entries = _entries(memories)
    except (TypeError, ValueError, AttributeError):  # pydantic's ValidationError is a ValueError
        raise MemoryError(
            ErrorCode.INVALID_PARAMS,
            "memories must be search results, memories or their dicts",
            operation="format_context",
            details={"field": "memories"},
        ) from None
    ranked = sorted(
        entries,
        key=lambda pair: (pair[1] if pair[1] is not None else float("-inf"), pair[0].updated_at),
        reverse=True,
    )
    seen: set[str] = set()
    lines: list[str] = []
    used = estimate_tokens(CONTEXT_HEADER)
    for entry, _score in ranked:
        if entry.id in seen:
            continue
        seen.add(entry.id)
        sentences = [s for s in _SENTENCE_END.split(entry.content.strip()) if s]
        for keep in range(len(sentences), 0, -1):
            line = _line(entry, " ".join(sentences[:keep]))
            cost = estimate_tokens(line)
            if used + cost <= max_tokens:
                lines.append(line)
                used += cost
                break
    return "\n".join([CONTEXT_HEADER, *lines]) if lines else ""


class ConversationResult(BaseModel):
    """What :func:`process_conversation` did with one turn, one write-gate result per user message."""

    created: list[ProcessResult] = Field(default_factory=list)
    updated: list[ProcessResult] = Field(default_factory=list)
    deleted: list[ProcessResult] = Field(default_factory=list)
    ignored: list[ProcessResult] = Field(default_factory=list)

    @property
    def memory_ids(self) -> list[str]:
        """Ids of the memories created or updated by the turn."""
        return [r.memory_id for r in (*self.created, *self.updated) if r.memory_id]


Message = str | Mapping[str, Any] | Any


def _role_and_text(message: Message) -> tuple[str, str]:
    """``(role, text)`` of a message: a plain string is a user message; dicts and objects carry
    ``role`` (or ``type``/``source``) and ``content`` (str or a list of text parts)."""
    if isinstance(message, str):
        return "user", message
    get = message.get if isinstance(message, Mapping) else lambda k, d=None: getattr(message, k, d)
    role = str(get("role") or get("type") or get("source") or "user").lower()
    content = get("content", "")
    if isinstance(content, list):
        content = " ".join(
            str(p.get("text", "")) if isinstance(p, Mapping) else str(getattr(p, "text", p)) for p in content
        )
    return role, str(content or "")


_USER_ROLES = frozenset({"user", "human", "humanmessage", "usermessage"})


def process_conversation(
    memory: WriteGate,
    ctx: TenantContext | None,
    messages: Sequence[Message],
    response: Message | None = None,
    identifiers: Any = None,
) -> ConversationResult:
    """Run the write gate (:meth:`Memory.process`) over the user messages of a turn, each with the
    turn's earlier messages as ``recent_messages``. The assistant ``response`` is context only: it is
    never stored (facts about the user come from the user)."""
    if isinstance(messages, str | bytes) or not isinstance(messages, Iterable):
        raise MemoryError(
            ErrorCode.INVALID_PARAMS,
            "messages must be a list of messages",
            operation="process_conversation",
            details={"field": "messages"},
        )
    result = ConversationResult()
    history: list[str] = []
    for message in messages:
        role, text = _role_and_text(message)
        if role in _USER_ROLES and text.strip():
            outcome = memory.process(
                ctx, text, intent="none", identifiers=identifiers, recent_messages=history[-RECENT_MESSAGES:]
            )
            getattr(result, outcome.action).append(outcome)
        if text.strip():
            history.append(text)
    del response  # not written: see the docstring
    return result
