"""Context budget: keep an agent's prompt inside its token budget without losing what it held.

:func:`fit_context` takes the messages about to be sent and a token budget and returns the messages
to send instead:

* **Prompt-time pruning of large tool outputs.** A tool message (role ``tool``/``function``) above
  ``max_tool_tokens`` outside the ``keep_recent`` newest messages is stored whole as a memory
  (``metadata.kind = "tool_output"``) and replaced in the prompt by a short stub naming that memory's
  id: the retrievable pointer (``Memory.get``). Stored history is never rewritten.
* **Compaction near the limit.** When the prompt still needs more than ``compact_at`` of the budget,
  the oldest turns (never system messages, never the ``keep_recent`` newest, never a tool result
  without the call it answers) are summarised into one memory (``metadata.kind =
  "conversation_summary"``) and replaced by one system message carrying the summary and its id. The
  summary comes from the configured LLM (prompt ``summarize_conversation``), or from the offline
  rules (the leading sentence of each message, newest kept first) when none is configured or it
  fails (``stratamem_llm_fallbacks_total{task="context_compaction"}``).

Idempotent: the same tool output or the same compacted turns are found again by the SHA-256 of their
text (``metadata.contentSha256``) and reuse their memory instead of writing a new one, so a loop that
calls this every turn on its full history stores each thing once. Token counts are the word-based
estimate of :func:`~stratamem.agent.loop.estimate_tokens` plus a few tokens per message.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

from ..errors import ErrorCode, MemoryError
from ..hygiene.prompts import PromptTemplates
from ..llm.base import DecisionContext, LLMClient
from ..llm.metrics import record_fallback
from ..llm.rules import RuleBasedLLM
from ..model import AddMemoryOutput, ListMemoriesOutput, TenantContext
from .loop import Message, _role_and_text, estimate_tokens

log = logging.getLogger("stratamem.agent")

#: Tokens a chat format spends on each message besides its text (role, separators).
MESSAGE_OVERHEAD = 4
TOOL_ROLES = frozenset({"tool", "function", "tool_result", "ipython"})
SYSTEM_ROLES = frozenset({"system", "developer"})
TOOL_OUTPUT_KIND = "tool_output"
SUMMARY_KIND = "conversation_summary"
#: Share of the budget a summary may take.
SUMMARY_SHARE = 0.15
#: Words of a message the rule-based summary keeps (its leading sentence, cut at a word boundary).
RULE_SUMMARY_WORDS = 30
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


class BudgetStore(Protocol):
    """What :func:`fit_context` needs of a store: ``Memory.add`` and ``Memory.list``."""

    def add(
        self,
        ctx: TenantContext | None = ...,
        content: str | None = ...,
        *,
        layer: Any = ...,
        identifiers: Any = ...,
        metadata: dict[str, Any] | None = ...,
        tier: str | None = ...,
        expires_at: Any = ...,
        importance: float | None = ...,
        provenance: Any = ...,
        supersedes: Sequence[str] | None = ...,
    ) -> AddMemoryOutput: ...

    def list(
        self,
        ctx: TenantContext | None = ...,
        layer: Any = ...,
        *,
        identifiers: Any = ...,
        limit: int | None = ...,
        filter: Any = ...,
    ) -> ListMemoriesOutput: ...


class PrunedOutput(BaseModel):
    """A tool output taken out of the prompt and where it is stored."""

    #: Position of the message in the input.
    index: int
    #: The memory holding the full output (``Memory.get``).
    memory_id: str
    #: Estimated tokens of the full output.
    tokens: int


class KeptOutput(BaseModel):
    """A large tool output left in the prompt because it could not be stored (e.g. it holds a secret)."""

    index: int
    code: str


class FitContextResult(BaseModel):
    """The messages to send and what was done to fit them into the budget."""

    messages: list[dict[str, Any]]
    max_tokens: int
    tokens_before: int
    tokens_after: int
    #: True when even the result does not fit (the newest messages alone exceed the budget).
    over_budget: bool = False
    pruned: list[PrunedOutput] = Field(default_factory=list)
    not_pruned: list[KeptOutput] = Field(default_factory=list)
    #: Oldest messages replaced by the summary (0: no compaction).
    compacted_messages: int = 0
    summary_memory_id: str | None = None
    summary_method: Literal["llm", "rules"] | None = None


def message_tokens(message: Mapping[str, Any]) -> int:
    return estimate_tokens(str(message.get("content") or "")) + MESSAGE_OVERHEAD


def _as_dict(message: Message) -> dict[str, Any]:
    if isinstance(message, Mapping):
        out = dict(message)
        if not isinstance(out.get("content"), str | None):
            out["content"] = _role_and_text(message)[1]
        out.setdefault("role", "user")
        return out
    role, text = _role_and_text(message)
    return {"role": role, "content": text}


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _existing(
    store: BudgetStore, ctx: TenantContext | None, layer: Any, identifiers: Any, kind: str, digest: str
) -> str | None:
    found = store.list(ctx, layer, identifiers=identifiers, limit=1, filter={"kind": kind, "contentSha256": digest})
    return found.memories[0].id if found.memories else None


def _clip_words(text: str, words: int) -> str:
    parts = text.split()
    return " ".join(parts[:words]) + (" …" if len(parts) > words else "")


def _stub(memory_id: str, tokens: int, content: str) -> str:
    head = _clip_words(content.strip().splitlines()[0] if content.strip() else "", 20)
    return f"[tool output pruned: about {tokens} tokens, stored as memory {memory_id}; it began: {head}]"


def _fit_words(text: str, budget: int) -> str:
    """The leading complete sentences of ``text`` within ``budget`` tokens (words if no sentence fits)."""
    kept: list[str] = []
    for sentence in _SENTENCE.split(text.strip()):
        if estimate_tokens(" ".join([*kept, sentence])) > budget:
            break
        kept.append(sentence)
    if kept:
        return " ".join(kept)
    return _clip_words(text, max(1, budget * 3 // 4))


def rule_summary(lines: Sequence[tuple[str, str]], budget: int) -> str:
    """Offline summary of ``(role, text)`` turns: each turn's leading sentence, small talk left out,
    the newest turns kept first when the budget is short; in conversation order."""
    rules = RuleBasedLLM()
    picked: list[str] = []
    used = 0
    for role, text in reversed(lines):
        body = " ".join(text.split())
        if not body or rules.decide(body, DecisionContext()).reason == "small talk":
            continue
        first = _SENTENCE.split(body)[0]
        line = f"{role}: {_clip_words(first, RULE_SUMMARY_WORDS)}"
        cost = estimate_tokens(line)
        if used + cost > budget:
            break
        picked.append(line)
        used += cost
    return " | ".join(reversed(picked))


def _compaction_span(messages: list[dict[str, Any]], keep_recent: int, need: int, summary_budget: int) -> list[int]:
    """Indexes of the oldest turns to compact: enough to free ``need`` tokens net of the summary,
    without system messages or the newest ``keep_recent``, and never leaving a tool result without
    the message that called it."""
    limit = max(0, len(messages) - keep_recent)
    candidates = [i for i in range(limit) if messages[i].get("role") not in SYSTEM_ROLES]
    chosen: list[int] = []
    freed = 0
    for i in candidates:
        if freed - summary_budget >= need:
            break
        chosen.append(i)
        freed += message_tokens(messages[i])
    # a tool result right after the span belongs to a call inside it: take it along
    nxt = (chosen[-1] + 1) if chosen else None
    while nxt is not None and nxt < limit and messages[nxt].get("role") in TOOL_ROLES:
        chosen.append(nxt)
        nxt += 1
    return chosen


def fit_context(
    store: BudgetStore,
    ctx: TenantContext | None,
    messages: Sequence[Message],
    max_tokens: int,
    *,
    identifiers: Any = None,
    layer: Any = "session",
    llm: LLMClient | None = None,
    prompts: PromptTemplates | None = None,
    keep_recent: int = 4,
    compact_at: float = 0.8,
    max_tool_tokens: int = 500,
) -> FitContextResult:
    """The messages to send within ``max_tokens`` (see the module doc). Pruned outputs and summaries
    are stored in ``layer`` with ``identifiers`` (default: the session layer, so they need
    ``user_id`` and ``session_id``)."""
    op = "fit_context"
    if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
        raise MemoryError(
            ErrorCode.INVALID_PARAMS, "messages must be a list of messages", operation=op, details={"field": "messages"}
        )
    for name, value, low in (
        ("max_tokens", max_tokens, 1),
        ("keep_recent", keep_recent, 0),
        ("max_tool_tokens", max_tool_tokens, 1),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise MemoryError(
                ErrorCode.INVALID_PARAMS,
                f"{name} must be an integer of at least {low}",
                operation=op,
                details={"field": name},
            )
    if isinstance(compact_at, bool) or not isinstance(compact_at, int | float) or not 0 < compact_at <= 1:
        raise MemoryError(
            ErrorCode.INVALID_PARAMS,
            "compact_at must be a number in (0, 1]",
            operation=op,
            details={"field": "compact_at"},
        )
    try:
        msgs = [_as_dict(m) for m in messages]
    except (TypeError, ValueError, AttributeError):
        raise MemoryError(
            ErrorCode.INVALID_PARAMS,
            "messages must be strings, dicts or message objects",
            operation=op,
            details={"field": "messages"},
        ) from None
    before = sum(message_tokens(m) for m in msgs)
    result = FitContextResult(messages=msgs, max_tokens=max_tokens, tokens_before=before, tokens_after=before)
    recent_from = len(msgs) - keep_recent

    # 1. prompt-time pruning of large tool outputs (outside the newest messages)
    for i, m in enumerate(msgs):
        content = str(m.get("content") or "")
        tokens = estimate_tokens(content)
        if i >= recent_from or m.get("role") not in TOOL_ROLES or tokens <= max_tool_tokens:
            continue
        digest = _sha(content)
        try:
            mid = _existing(store, ctx, layer, identifiers, TOOL_OUTPUT_KIND, digest)
            if mid is None:
                meta: dict[str, Any] = {"kind": TOOL_OUTPUT_KIND, "contentSha256": digest}
                for key, field in (("name", "toolName"), ("tool_call_id", "toolCallId")):
                    if isinstance(m.get(key), str):
                        meta[field] = m[key]
                mid = store.add(
                    ctx,
                    content,
                    layer=layer,
                    identifiers=identifiers,
                    metadata=meta,
                    provenance={"source": "tool_output"},
                ).memory.id
        except MemoryError as exc:
            if exc.code in (
                ErrorCode.INVALID_PARAMS,
                ErrorCode.MISSING_IDENTIFIER,
                ErrorCode.INVALID_LAYER,
                ErrorCode.FORBIDDEN,
            ):
                raise  # the caller's arguments are wrong, not this output
            result.not_pruned.append(KeptOutput(index=i, code=exc.code.value))
            continue
        msgs[i] = {**m, "content": _stub(mid, tokens, content)}
        result.pruned.append(PrunedOutput(index=i, memory_id=mid, tokens=tokens))

    # 2. compaction of the oldest turns when the prompt is near the limit
    total = sum(message_tokens(m) for m in msgs)
    if total > compact_at * max_tokens:
        summary_budget = max(16, int(max_tokens * SUMMARY_SHARE))
        need = total - int(compact_at * max_tokens * 0.75)  # leave room for the next turns
        span = _compaction_span(msgs, keep_recent, need, summary_budget)
        if span:
            lines = [(str(msgs[i].get("role")), str(msgs[i].get("content") or "")) for i in span]
            digest = _sha("\n".join(f"{r}: {t}" for r, t in lines))
            summary_id = _existing(store, ctx, layer, identifiers, SUMMARY_KIND, digest)
            if summary_id is not None:
                found = store.list(
                    ctx, layer, identifiers=identifiers, limit=1, filter={"kind": SUMMARY_KIND, "contentSha256": digest}
                ).memories[0]
                summary, method = found.content, str(found.metadata.get("summarizedBy", "rules"))
            else:
                summary, method = _summarise(lines, summary_budget, llm, prompts)
                if not summary:
                    summary = f"{len(span)} earlier messages (small talk)"
                summary_id = store.add(
                    ctx,
                    summary,
                    layer=layer,
                    identifiers=identifiers,
                    metadata={
                        "kind": SUMMARY_KIND,
                        "contentSha256": digest,
                        "compactedMessages": len(span),
                        "summarizedBy": method,
                    },
                    provenance={
                        "source": "context_compaction",
                        "compacted_from_ids": [p.memory_id for p in result.pruned if p.index in span] or None,
                    },
                ).memory.id
            replacement = {
                "role": "system",
                "content": f"Summary of {len(span)} earlier messages (memory {summary_id}): {summary}",
            }
            first = span[0]
            taken = set(span)
            msgs = [
                *[m for i, m in enumerate(msgs) if i < first and i not in taken],
                replacement,
                *[m for i, m in enumerate(msgs) if i > first and i not in taken],
            ]
            result.compacted_messages = len(span)
            result.summary_memory_id = summary_id
            result.summary_method = "llm" if method == "llm" else "rules"
    result.messages = msgs
    result.tokens_after = sum(message_tokens(m) for m in msgs)
    result.over_budget = result.tokens_after > max_tokens
    return result


def _summarise(
    lines: list[tuple[str, str]], budget: int, llm: LLMClient | None, prompts: PromptTemplates | None
) -> tuple[str, str]:
    if llm is not None and not isinstance(llm, RuleBasedLLM):
        try:
            system = (prompts or PromptTemplates()).summarize_conversation
            text = llm.summarize([f"{role}: {' '.join(t.split())}" for role, t in lines], system=system).content
            return _fit_words(" ".join(text.split()), budget), "llm"
        except Exception as exc:  # an LLM outage must not break the agent loop: the rules answer
            record_fallback("context_compaction", exc)
            log.warning("LLM context compaction failed (%s); using the offline summary", type(exc).__name__)
    return rule_summary(lines, budget), "rules"
