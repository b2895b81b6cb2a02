"""Reflection: distil a finished session's memories into the agent's own long-term memory.

``reflect`` reads the session's memories (session layer of one user and session, plus the agent's
memories written during it) and writes to the **agent layer** (``agentId`` + ``userId``):

* one **summary** of the session (``metadata.kind = "reflection_summary"``), and
* **rules**: standing instructions and lasting preferences, phrased for the agent
  (``metadata.kind = "reflection_rule"``).

Every reflection names its sources: ``provenance.compactedFromIds`` and ``metadata.reflectedFromIds``
(the memory ids it was distilled from) and ``metadata.reflectedSessionId``. Reflections stay in the
agent layer; they reach broader layers only through an explicit ``promote``.

**Rule-based by default** (offline, deterministic): rules are the sources the write gate's classifier
calls instructions or preferences that state something durable; the summary lists the distinct
sources. **With an LLM configured** (``STRATAMEM_LLM_URL``…, or ``mem.hygiene.configure(llm=…)``)
one structured call (prompt ``reflect``) writes the summary and the rules, each rule with the numbers
of its sources; when it fails the rules answer and ``stratamem_llm_fallbacks_total{task="reflection"}``
counts it.

**Idempotent**: a session reflected with the same sources writes nothing; new sources since the last
reflection replace its summary (the old one is kept as superseded history) and add only rules that
no rule of the agent scope states already.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..errors import ErrorCode, MemoryError
from ..hygiene.prompts import PromptTemplates
from ..hygiene.text import jaccard, key_terms
from ..layers import parse_identifiers, scope_key
from ..llm.base import DecisionContext, LLMClient
from ..llm.metrics import record_fallback
from ..llm.rules import RuleBasedLLM, categorize, clean, first_person, worth_keeping
from ..model import AddMemoryInput, Layer, LayerIdentifiers, MemoryEntry, TenantContext
from ..providers.base import Scope
from .promotion import sensitivity
from .scan import iter_scope, write_entries

if TYPE_CHECKING:
    from ..engine import MemoryEngine

log = logging.getLogger("stratamem.lifecycle")

SUMMARY_KIND = "reflection_summary"
RULE_KIND = "reflection_rule"
#: Sources one reflection reads at most (newest kept); the rest of a very long session is left out.
MAX_SOURCES = 200
#: Longest summary in characters (the rule-based one is cut at a source boundary).
MAX_SUMMARY_CHARS = 2000
#: Rules at least this similar (key-term Jaccard) to a stored rule are not written again.
RULE_OVERLAP = 0.8


class ReflectionResult(BaseModel):
    """What one reflection did."""

    model_config = ConfigDict(extra="forbid")

    session_id: str
    user_id: str
    agent_id: str | None = None
    #: Source memories read (session layer + the agent's memories of the session).
    evaluated: int = 0
    #: ``llm`` or ``rules`` (also when the LLM failed and the rules answered).
    method: Literal["llm", "rules"] = "rules"
    #: The session's current summary memory (agent layer); None when there was nothing to reflect.
    summary_id: str | None = None
    #: Rule memories written by this call.
    rule_ids: list[str] = Field(default_factory=list)
    #: Memories written by this call (summary and rules).
    created: int = 0
    #: True when the session was already reflected with the same sources (nothing written).
    unchanged: bool = False
    #: Why nothing was reflected (no sources, no agent id), else None.
    skipped: str | None = None


class _Rule(BaseModel):
    model_config = ConfigDict(extra="ignore")

    content: str = Field(min_length=1, max_length=2000)
    sources: list[int] = Field(default_factory=list)


class _Reflection(BaseModel):
    """The LLM's answer to the ``reflect`` prompt."""

    model_config = ConfigDict(extra="ignore")

    summary: str = Field(min_length=1, max_length=MAX_SUMMARY_CHARS * 2)
    rules: list[_Rule] = Field(default_factory=list, max_length=50)


def _is_reflection(entry: MemoryEntry) -> bool:
    return entry.metadata.get("kind") in (SUMMARY_KIND, RULE_KIND)


def session_sources(
    engine: MemoryEngine, ctx: TenantContext, user_id: str, session_id: str, agent_id: str | None, now: datetime
) -> list[MemoryEntry]:
    """The session's memories and the agent's memories written in it, oldest first, without sensitive
    or private ones and without reflections."""
    ids = parse_identifiers({"user_id": user_id, "session_id": session_id})
    out = list(
        iter_scope(engine.provider, ctx.tenant_id, now, scope=Scope(Layer.SESSION, scope_key(Layer.SESSION, ids)))
    )
    if agent_id is not None:
        agent = parse_identifiers({"agent_id": agent_id, "user_id": user_id})
        out += [
            e
            for e in iter_scope(
                engine.provider, ctx.tenant_id, now, scope=Scope(Layer.AGENT, scope_key(Layer.AGENT, agent))
            )
            if e.provenance.created_in_session_id == session_id
        ]
    kept = [e for e in out if not _is_reflection(e) and sensitivity(e.metadata) is None]
    kept.sort(key=lambda e: (e.created_at, e.id))
    return kept[-MAX_SOURCES:]


def infer_agent_id(sources: Sequence[MemoryEntry]) -> str | None:
    """The agent named most often in the sources' provenance (ties: the first one seen)."""
    counts: dict[str, int] = {}
    for e in sources:
        if e.provenance.agent_id:
            counts[e.provenance.agent_id] = counts.get(e.provenance.agent_id, 0) + 1
    return max(counts, key=lambda a: counts[a]) if counts else None


# -------------------------------------------------------------------------------- distillation


def _rule_text(text: str) -> str:
    """A stored memory as a rule for the agent: third person ("User prefers TypeScript for code")."""
    return RuleBasedLLM().format(text).content


def distil_rules(sources: Sequence[MemoryEntry]) -> tuple[str, list[tuple[str, list[str], str]]]:
    """The offline reflection: ``(summary, [(rule, source ids, category)])``."""
    rules: list[tuple[str, list[str], str]] = []
    for e in sources:
        category = categorize(first_person(clean(e.content)))
        if category not in ("instruction", "preference") or not worth_keeping(e.content):
            continue
        text = _rule_text(e.content)
        for i, (known, ids, cat) in enumerate(rules):
            if jaccard(key_terms(known), key_terms(text)) >= RULE_OVERLAP:
                rules[i] = (known, [*ids, e.id], cat)
                break
        else:
            rules.append((text, [e.id], category))
    lines: list[str] = []
    size = 0
    rules_engine = RuleBasedLLM()
    for e in sources:
        line = clean(e.content).rstrip(".")
        if rules_engine.decide(e.content, DecisionContext()).reason in ("small talk", "empty after cleaning"):
            continue
        if not line or any(jaccard(key_terms(line), key_terms(k)) >= RULE_OVERLAP for k in lines):
            continue
        if size + len(line) + 2 > MAX_SUMMARY_CHARS:
            break
        lines.append(line)
        size += len(line) + 2
    return "; ".join(lines), rules


def distil_llm(
    llm: LLMClient, prompts: PromptTemplates, sources: Sequence[MemoryEntry]
) -> tuple[str, list[tuple[str, list[str], str]]]:
    """One structured LLM call; rules name their sources by number (1-based)."""
    listing = "\n".join(f"{i}. {' '.join(e.content.split())}" for i, e in enumerate(sources, 1))
    out = llm.complete_json(prompts.system("reflect"), listing, _Reflection)
    rules: list[tuple[str, list[str], str]] = []
    for rule in out.rules:
        ids = [sources[n - 1].id for n in dict.fromkeys(rule.sources) if 1 <= n <= len(sources)]
        content = " ".join(rule.content.split())
        rules.append((content, ids or [e.id for e in sources], categorize(content)))
    return " ".join(out.summary.split())[:MAX_SUMMARY_CHARS], rules


# -------------------------------------------------------------------------------- the job


def reflect(
    engine: MemoryEngine,
    ctx: TenantContext,
    user_id: Any,
    session_id: Any,
    agent_id: Any,
    llm: LLMClient,
    prompts: PromptTemplates,
    operation: str = "reflect",
) -> ReflectionResult:
    """Distil one session into the agent layer (see the module doc). The caller has checked grants."""
    ids = parse_identifiers({"user_id": user_id, "session_id": session_id}, operation)
    if ids.user_id is None or ids.session_id is None:
        raise MemoryError(
            ErrorCode.MISSING_IDENTIFIER,
            "reflect needs user_id and session_id",
            operation=operation,
            details={"layer": "session", "identifier": "userId/sessionId"},
        )
    uid, sid = ids.user_id, ids.session_id
    agent = parse_identifiers({"agent_id": agent_id}, operation).agent_id if agent_id is not None else None
    now = engine.now()
    sources = session_sources(engine, ctx, uid, sid, agent, now)
    agent = agent or infer_agent_id(sources)
    result = ReflectionResult(session_id=sid, user_id=uid, agent_id=agent, evaluated=len(sources))
    if not sources:
        result.skipped = "the session has no memories"
        return result
    if agent is None:
        result.skipped = "no agent id: pass agent_id or write the session's memories with provenance.agentId"
        return result
    target = LayerIdentifiers(agent_id=agent, user_id=uid)
    existing = [
        e
        for e in iter_scope(
            engine.provider, ctx.tenant_id, now, scope=Scope(Layer.AGENT, scope_key(Layer.AGENT, target))
        )
        if _is_reflection(e)
    ]
    source_ids = sorted(e.id for e in sources)
    previous = next(
        (e for e in existing if e.metadata.get("kind") == SUMMARY_KIND and e.metadata.get("reflectedSessionId") == sid),
        None,
    )
    if previous is not None and sorted(previous.metadata.get("reflectedFromIds") or []) == source_ids:
        result.unchanged, result.summary_id = True, previous.id
        result.method = "llm" if previous.metadata.get("reflectedBy") == "llm" else "rules"
        return result

    summary: str = ""
    rules: list[tuple[str, list[str], str]] = []
    if not isinstance(llm, RuleBasedLLM):
        try:
            summary, rules = distil_llm(llm, prompts, sources)
            result.method = "llm"
        except Exception as exc:  # an LLM outage must not lose the reflection: the rules answer
            record_fallback("reflection", exc)
            log.warning("LLM reflection failed (%s); using the offline rules", type(exc).__name__)
    if result.method == "rules":
        summary, rules = distil_rules(sources)

    known_rules = [e.content for e in existing if e.metadata.get("kind") == RULE_KIND]
    base_meta = {"reflectedSessionId": sid, "reflectedBy": result.method}
    items: list[AddMemoryInput] = []
    if summary:
        items.append(
            AddMemoryInput(
                content=f"Session {sid}: {summary}",
                layer=Layer.AGENT.value,
                identifiers=target,
                metadata={**base_meta, "kind": SUMMARY_KIND, "reflectedFromIds": source_ids},
                provenance={"agent_id": agent, "source": "reflection", "compacted_from_ids": source_ids},
                supersedes=[previous.id] if previous is not None else None,
            )
        )
    for text, from_ids, category in rules:
        if any(jaccard(key_terms(text), key_terms(k)) >= RULE_OVERLAP for k in known_rules):
            continue
        known_rules.append(text)
        items.append(
            AddMemoryInput(
                content=text,
                layer=Layer.AGENT.value,
                identifiers=target,
                metadata={**base_meta, "kind": RULE_KIND, "category": category, "reflectedFromIds": from_ids},
                provenance={"agent_id": agent, "source": "reflection", "compacted_from_ids": from_ids},
            )
        )
    written = write_entries(engine, ctx, items, operation)
    result.created = len(written)
    for entry in written:
        if entry.metadata.get("kind") == SUMMARY_KIND:
            result.summary_id = entry.id
        else:
            result.rule_ids.append(entry.id)
    if result.summary_id is None and previous is not None:
        result.summary_id = previous.id
    engine.audit.record(
        tenant_id=ctx.tenant_id,
        principal=ctx.principal,
        action=operation,
        layer="agent",
        memory_ids=[e.id for e in written],
        details={"session_id": sid, "sources": len(sources), "method": result.method, "created": result.created},
    )
    return result


def idle_sessions(engine: MemoryEngine, tenant_id: str, idle_after: timedelta, now: datetime) -> list[tuple[str, str]]:
    """``(user_id, session_id)`` of the tenant's sessions whose newest memory is older than
    ``idle_after`` (maintenance reflects them; ``reflect`` skips the unchanged ones)."""
    newest: dict[tuple[str, str], datetime] = {}
    for e in iter_scope(engine.provider, tenant_id, now):
        if e.layer != Layer.SESSION or e.identifiers.user_id is None or e.identifiers.session_id is None:
            continue
        key = (e.identifiers.user_id, e.identifiers.session_id)
        if key not in newest or e.updated_at > newest[key]:
            newest[key] = e.updated_at
    return sorted(k for k, at in newest.items() if now - at >= idle_after)
