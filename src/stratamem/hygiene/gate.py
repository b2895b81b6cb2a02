"""The write gate: ``process(text, intent)`` decides what of a text is stored.

1. ``intent="forget"``: find every memory of the user about the subject and delete them all.
2. Unsafe input (secrets) is never stored: ignored when inferred, UNSAFE_CONTENT when the user asked.
3. Write decision (store / ignore with a reason) by the LLM, or the rule engine offline;
   ``intent="remember"`` stores even what would normally be ignored.
4. Search before write: a stored memory in the same scope with similarity score ≥
   ``duplicate_threshold`` (0.85 on stratamem's [0, 1] score) *and* key-term overlap (Jaccard ≥
   ``term_overlap``) is updated instead of creating a duplicate; so is one with exactly the same key
   terms (score ≥ ``same_terms_threshold``). A stored memory that gives the same single-valued
   attribute another value (``supersession.slot``: "User's dog's name is …", "User lives in …"; score ≥
   ``slot_threshold``) or that the new memory makes out of date (``supersession/``) is superseded:
   the new memory is created and the old one kept as history; the action is ``updated`` and
   ``superseded`` names the old ones.
5. Otherwise the formatted, third-person fact is created with ``metadata.category``
   (preference | fact | context | instruction) and ``metadata.source = {"type": "inferred" |
   "explicit", "reference": "process"}``.

Name resolution: when the user's name is known, facts are written about the name ("Dana prefers dark
mode") instead of the neutral "User". The name comes from the text itself ("My name is Dana, I prefer
dark mode") or from a current memory of the scope that states it ("User's name is Dana", "User wants
to be called Dee"; that statement keeps "User": it links the neutral form to the name). Matching in
step 4 compares both forms alike (the name read as "User").

Which layer: ``HygieneConfig.layer`` (default ``user``: durable facts about a user belong to the
user, not to a session), or ``layer=`` per call. Forget searches that layer plus every other
personal layer the identifiers reach (agent, user, session).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from .. import supersession
from ..errors import ErrorCode, MemoryError
from ..layers import (
    PERSONAL_LAYERS,
    get_accessible_layers,
    parse_identifiers,
    parse_layer,
    require_identifiers,
    scope_key,
)
from ..llm.base import Category, DecisionContext, FormattedMemory, LLMClient, WriteDecision
from ..llm.metrics import record_fallback
from ..llm.rules import RuleBasedLLM, strip_forget, strip_remember, to_third_person
from ..model import Layer, LayerIdentifiers, TenantContext
from ..providers.base import Scope, ScoredEntry, SearchQuery
from ..wording import NAME_STATEMENT, newest_stated_name, stated_name
from .events import EventLog
from .prompts import PromptTemplates
from .sanitize import sanitize
from .secrets import find_secrets
from .text import containment, jaccard, key_terms, name_user, neutral

if TYPE_CHECKING:
    from ..engine import MemoryEngine

log = logging.getLogger("stratamem.hygiene")
T = TypeVar("T")

Intent = Literal["none", "remember", "forget"]


class HygieneConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    #: Layer process() writes to.
    layer: Layer = Layer.USER
    #: Minimum similarity score (stratamem's [0, 1] scale) of a duplicate candidate; key-term
    #: overlap (below) must hold as well.
    duplicate_threshold: float = Field(0.85, ge=0.0, le=1.0)
    #: Minimum Jaccard overlap of key terms for a candidate to count as the same fact.
    term_overlap: float = Field(0.5, ge=0.0, le=1.0)
    #: A candidate this similar is the same fact whatever the wording.
    near_identical: float = Field(0.97, ge=0.0, le=1.0)
    #: Same key terms (≥ 2) but different wording: a lower similarity suffices ("based in" / "lives in").
    same_terms_threshold: float = Field(0.75, ge=0.0, le=1.0)
    #: A fact setting the same single-valued attribute ("User's dog's name is …", "User lives in …")
    #: replaces the stored one when at least this similar (a changed fact is an
    #: update, not a new memory).
    slot_threshold: float = Field(0.7, ge=0.0, le=1.0)
    #: Forget: minimum similarity score of a match, and share of the subject's key terms it must contain.
    forget_threshold: float = Field(0.6, ge=0.0, le=1.0)
    forget_term_coverage: float = Field(0.6, ge=0.0, le=1.0)
    #: Forget: a match this similar is deleted even without term overlap.
    forget_semantic_only: float = Field(0.9, ge=0.0, le=1.0)
    #: Most memories one forget deletes.
    forget_limit: int = Field(100, ge=1, le=1000)
    #: memory_events rows: ``"sync"`` (handed to the store before the operation returns: every later read
    #: counts them; the embedded store writes them on its append worker right after, with the search's
    #: access statistics, see ``providers/append_queue.py``) or ``"background"`` (queued in the engine and
    #: written in batches by one worker thread; counted a few milliseconds later).
    events_write: Literal["sync", "background"] = "sync"
    #: Log an ``access`` row per memory each search or get returns (the memories' access history,
    #: ``memory_events(..., events=["access"])``); off, reads log only the ``search`` row.
    access_history: bool = True
    prompts: PromptTemplates = Field(default_factory=PromptTemplates)


#: The reason of a write that replaced an older memory.
_REPLACES = "replaces an older memory about the same fact"


class ProcessResult(BaseModel):
    """What the write gate did with one text: the action taken and the memories it touched."""

    action: Literal["created", "updated", "deleted", "ignored"]
    memory_id: str | None = None
    reason: str | None = None
    count: int | None = None
    content: str | None = None
    category: Category | None = None
    source: Literal["inferred", "explicit"] | None = None
    memory_ids: list[str] = Field(default_factory=list)
    #: Ids of older memories the new one (``memory_id``) replaced, kept as history (``status ==
    #: "superseded"``); the action is then ``updated``.
    superseded: list[str] = Field(default_factory=list)


class GateHost(Protocol):
    """What the write gate uses of the hygiene feature that owns it (``hygiene.service.Hygiene``)."""

    @property
    def engine(self) -> MemoryEngine: ...

    @property
    def llm(self) -> LLMClient: ...

    @property
    def config(self) -> HygieneConfig: ...

    @property
    def events(self) -> EventLog: ...


class WriteGate:
    def __init__(self, hygiene: GateHost) -> None:
        self.hygiene = hygiene
        self.engine = hygiene.engine
        self._rules = RuleBasedLLM()

    # ------------------------------------------------------------------ helpers
    def _llm(self, call: Callable[[LLMClient], T]) -> T:
        """Call the configured LLM; on failure degrade to the rule engine (and log why)."""
        llm = self.hygiene.llm
        if isinstance(llm, RuleBasedLLM):
            return call(llm)
        try:
            return call(llm)
        except MemoryError as exc:
            log.warning("LLM call failed (%s); falling back to rules", exc.code.value)
            record_fallback("write_gate", exc)
            return call(self._rules)

    def _search(
        self, tctx: TenantContext, layer: Layer, ids: LayerIdentifiers, text: str, limit: int, min_score: float
    ) -> list[ScoredEntry]:
        vector = self.engine.embeddings.embed_query(text, "process")
        query = SearchQuery(
            tenant_id=tctx.tenant_id,
            scope=Scope(layer, scope_key(layer, ids)),
            vector=vector,
            text=text,
            limit=limit,
            min_score=min_score,
            now=self.engine.now(),
        )
        return list(self.engine.provider.search(query).hits)

    def find_duplicates(
        self, tctx: TenantContext, layer: Layer, ids: LayerIdentifiers, content: str
    ) -> list[ScoredEntry]:
        """Duplicate candidates: semantic matches (score ≥ threshold) that also share key terms."""
        return [h for h, _ in self._matches(tctx, layer, ids, content)]

    def _matches(
        self, tctx: TenantContext, layer: Layer, ids: LayerIdentifiers, content: str, name: str | None = None
    ) -> list[tuple[ScoredEntry, Literal["same", "changed"]]]:
        """Stored memories about the same fact: ``same`` (the same statement in other words: the new
        wording updates it) or ``changed`` (the same single-valued attribute with another value: the
        new memory supersedes it, and the old one is kept as history). With the user's ``name``, a
        memory written about the name and one written about "User" compare alike: both are searched
        for, and compared with the name read as "User"."""
        cfg = self.hygiene.config
        plain = neutral(content, name)
        terms = key_terms(plain)
        slot = supersession.slot(plain)
        floor = min(cfg.duplicate_threshold, cfg.same_terms_threshold, cfg.slot_threshold)
        hits: dict[str, ScoredEntry] = {}
        for text in dict.fromkeys((content, plain)):  # the named form, then the neutral one
            for h in self._search(tctx, layer, ids, text, 10, floor):
                if h.entry.id not in hits or h.score > hits[h.entry.id].score:
                    hits[h.entry.id] = h
        out: list[tuple[ScoredEntry, Literal["same", "changed"]]] = []
        for h in sorted(hits.values(), key=lambda hit: -hit.score):
            stored = neutral(h.entry.content, name)
            overlap = jaccard(terms, key_terms(stored))
            if (
                h.score >= cfg.duplicate_threshold and (overlap >= cfg.term_overlap or h.score >= cfg.near_identical)
            ) or (h.score >= cfg.same_terms_threshold and overlap >= 0.999 and len(terms) >= 2):
                out.append((h, "same"))
            elif slot is not None and h.score >= cfg.slot_threshold and supersession.gives_new_value(plain, stored):
                out.append((h, "changed"))
        return out

    # ------------------------------------------------------------------ process
    def process(
        self,
        ctx: Any,
        text: Any,
        intent: Any = "none",
        identifiers: Any = None,
        recent_messages: Sequence[str] | None = None,
        *,
        layer: Any = None,
    ) -> ProcessResult:
        with self.engine.operation("process", ctx) as (tctx, extra):
            op = "process"
            if not isinstance(text, str) or not text.strip():
                raise MemoryError(
                    ErrorCode.INVALID_PARAMS, "text must be a non-empty string", operation=op, details={"field": "text"}
                )
            if intent not in ("none", "remember", "forget"):
                raise MemoryError(
                    ErrorCode.INVALID_PARAMS,
                    "intent must be none, remember or forget",
                    operation=op,
                    details={"field": "intent"},
                )
            ids = parse_identifiers(identifiers, op)
            target = parse_layer(layer, op) if layer is not None else self.hygiene.config.layer
            require_identifiers(target, ids, op)
            clean = sanitize(text)
            result = (
                self._forget(tctx, clean, target, ids)
                if intent == "forget"
                else self._write(tctx, clean, intent, target, ids, list(recent_messages or []))
            )
            extra.update(action=result.action, memory_id=result.memory_id, intent=intent)
            return result

    def _ignore(self, tctx: TenantContext, reason: str, layer: Layer, code: str | None = None) -> ProcessResult:
        self.hygiene.events.record(
            tctx.tenant_id,
            "ignore",
            layer=layer.value,
            principal=tctx.principal,
            code=code,
            outcome="ignored",
            details={"reason": reason},
        )
        return ProcessResult(action="ignored", reason=reason)

    def _write(
        self, tctx: TenantContext, clean: str, intent: Intent, layer: Layer, ids: LayerIdentifiers, recent: list[str]
    ) -> ProcessResult:
        prompts = self.hygiene.config.prompts
        secrets = sorted({s.kind for s in find_secrets(clean)})
        if secrets:
            if intent == "remember":
                self.engine.audit.record(
                    tenant_id=tctx.tenant_id,
                    principal=tctx.principal,
                    action="process.remember",
                    outcome="denied",
                    code=ErrorCode.UNSAFE_CONTENT.value,
                    details={"kinds": secrets},
                )
                raise MemoryError(
                    ErrorCode.UNSAFE_CONTENT,
                    f"will not remember secrets ({', '.join(secrets)})",
                    operation="process",
                    details={"kinds": secrets},
                    retryable=False,
                )
            return self._ignore(tctx, f"unsafe content: {', '.join(secrets)}", layer, ErrorCode.UNSAFE_CONTENT.value)
        if not clean:
            return self._ignore(tctx, "empty after sanitising", layer)
        context = DecisionContext(recent_messages=recent, user_intent=intent)
        decision = self._llm(lambda llm: llm.decide(clean, context, system=prompts.system("write_decision")))
        if decision.action == "ignore" and intent != "remember":
            return self._ignore(tctx, decision.reason or "not worth remembering", layer)
        name = self._user_name(tctx, layer, ids, clean)
        formatted = self._llm(lambda llm: self._format(llm, clean, name))
        content = sanitize(formatted.content)
        if not content or find_secrets(content):  # output validation: the LLM's text is checked too
            return self._ignore(tctx, "formatted memory failed validation", layer)
        source: Literal["inferred", "explicit"] = "explicit" if intent == "remember" else "inferred"
        reason = decision.reason or ("explicitly requested" if intent == "remember" else "")
        metadata = {"category": formatted.category, "source": {"type": source, "reference": "process"}}
        replaced = self._replaced_by_llm(tctx, decision)
        duplicates = [] if replaced else self._matches(tctx, layer, ids, content, name)
        if duplicates and duplicates[0][1] == "changed":
            replaced = [duplicates[0][0].entry.id]
        if replaced:  # a changed fact: the new memory supersedes the old one, which stays as history
            added = self.engine.add(
                tctx, content, layer.value, ids.model_dump(exclude_none=True), metadata, supersedes=replaced
            )
            return ProcessResult(
                action="updated",
                memory_id=added.memory.id,
                reason=_REPLACES,
                content=added.memory.content,
                category=formatted.category,
                source=source,
                superseded=added.superseded,
            )
        if duplicates:
            existing = duplicates[0][0].entry
            old_src = existing.metadata.get("source")
            if source == "inferred" and isinstance(old_src, dict) and old_src.get("type") == "explicit":
                source = "explicit"
            out = self.engine.update(
                tctx,
                existing.id,
                content=content,
                metadata={"category": formatted.category, "source": {"type": source, "reference": "process"}},
            )
            self.hygiene.events.record(
                tctx.tenant_id,
                "dedupe",
                memory_id=existing.id,
                layer=layer.value,
                principal=tctx.principal,
                details={"score": round(duplicates[0][0].score, 4)},
            )
            return ProcessResult(
                action="updated",
                memory_id=out.memory.id,
                reason="updated an existing memory about the same fact",
                content=out.memory.content,
                category=formatted.category,
                source=source,
            )
        across = self._superseded_across_forms(tctx, layer, ids, content, name)
        added = self.engine.add(
            tctx, content, layer.value, ids.model_dump(exclude_none=True), metadata, supersedes=across or None
        )
        return ProcessResult(
            action="updated" if added.superseded else "created",
            memory_id=added.memory.id,
            reason=_REPLACES if added.superseded else reason,
            content=added.memory.content,
            category=formatted.category,
            source=source,
            superseded=added.superseded,
        )

    def _superseded_across_forms(
        self, tctx: TenantContext, layer: Layer, ids: LayerIdentifiers, content: str, name: str | None
    ) -> list[str]:
        """Older memories a change written about the user's name makes out of date although they were
        written about "User" (or the other way round): the store's rule-based detection
        (``supersession/``) run on the neutral form of both, so "User is vegetarian" stored before the
        name was known is superseded by "Dana is not vegetarian anymore". The store runs the same rules
        on the named form itself when the memory is added."""
        plain = neutral(content, name)
        if plain == content or not self.engine.config.detect_supersession:
            return []
        read = supersession.cues(plain)
        if not read.any:
            return []
        hits = self._search(
            tctx, layer, ids, plain, supersession.CANDIDATES, (1.0 + supersession.MIN_COSINE_FROM_TO) / 2.0
        )
        candidates = [
            supersession.Candidate(
                h.entry.model_copy(update={"content": neutral(h.entry.content, name)}), 2.0 * h.score - 1.0
            )
            for h in hits
        ]
        return [old.id for old in supersession.superseded(plain, candidates, read)]

    def _format(self, llm: LLMClient, text: str, name: str | None) -> FormattedMemory:
        """The format call, told the user's name: the rule engine writes the name itself; an LLM gets
        it in its prompt, and a statement it still opens with "User" is rewritten to the name."""
        prompts = self.hygiene.config.prompts
        if isinstance(llm, RuleBasedLLM):
            return llm.format(text, system=prompts.system("format_memory"), user_name=name)
        out = llm.format(text, system=prompts.format_system(name))
        return out.model_copy(update={"content": name_user(out.content, name)}) if name else out

    def _user_name(self, tctx: TenantContext, layer: Layer, ids: LayerIdentifiers, text: str) -> str | None:
        """The user's name for this write: stated in the text itself ("My name is Dana, …"), else the
        newest current memory of the scope (and of the user layer, for a session or agent write) that
        states it, else None (facts keep the neutral "User")."""
        own = stated_name(to_third_person(strip_remember(text)))
        if own:
            return own
        layers = [layer]
        if layer != Layer.USER and ids.user_id:
            layers.append(Layer.USER)
        return newest_stated_name(
            (hit.entry.created_at, hit.entry.content)
            for lyr in layers
            for hit in self._search(tctx, lyr, ids, NAME_STATEMENT, 20, 0.0)
        )

    def _replaced_by_llm(self, tctx: TenantContext, decision: WriteDecision) -> list[str]:
        """The memory an LLM's ``update`` decision names, when it exists in this tenant (else none)."""
        if decision.action != "update" or not decision.existing_memory_id:
            return []
        existing = self.engine.provider.get(tctx.tenant_id, decision.existing_memory_id, self.engine.now())
        return [existing.id] if existing is not None else []

    def _forget(self, tctx: TenantContext, clean: str, layer: Layer, ids: LayerIdentifiers) -> ProcessResult:
        cfg = self.hygiene.config
        subject = strip_forget(clean)
        if not subject:
            raise MemoryError(
                ErrorCode.INVALID_PARAMS, "say what to forget", operation="process", details={"field": "text"}
            )
        query = to_third_person(subject) or subject
        terms = key_terms(subject)
        layers = [layer] + [lyr for lyr in get_accessible_layers(ids) if lyr in PERSONAL_LAYERS and lyr != layer]
        matches: list[str] = []
        for lyr in layers:
            for hit in self._search(tctx, lyr, ids, query, cfg.forget_limit, cfg.forget_threshold):
                coverage = containment(terms, key_terms(hit.entry.content)) if terms else 0.0
                covered = bool(terms) and coverage >= cfg.forget_term_coverage
                if covered or hit.score >= cfg.forget_semantic_only:
                    matches.append(hit.entry.id)
        deleted = 0
        for start in range(0, len(matches), 100):
            deleted += self.engine.bulk_delete(tctx, matches[start : start + 100]).deleted
        self.engine.audit.record(
            tenant_id=tctx.tenant_id,
            principal=tctx.principal,
            action="process.forget",
            memory_ids=matches,
            details={"deleted": deleted},
        )
        return ProcessResult(
            action="deleted",
            count=deleted,
            memory_ids=matches,
            reason="deleted every matching memory" if deleted else "no matching memory",
        )
