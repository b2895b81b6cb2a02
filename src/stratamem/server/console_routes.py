"""The web console (``/console``) and the two read routes it needs that the API lacked.

* ``/console/`` serves the built single-page app from ``console_static/`` (shipped in the package,
  built from ``console/`` by ``make console``; no CDN). The page signs in with an API key held in
  the browser's session storage and calls the REST API with it, so it can do exactly what that
  key can do, and every action is audited like any other API call.
* ``GET /v1/scopes``: the caller's memories counted per layer and scope (the tree of the console's
  Browse pane), over what the key's grant sees.
* ``POST /v1/memories/search/explain``: a search with each result's score taken apart (dense and
  lexical parts, boost factor, relevance in standard deviations above the scope's background), the
  hits of each layer that the merge removed (a near-duplicate of a more specific layer's result, or
  past the limit), the candidates the relevance floor removed and those that state no value of the
  kind the question asks for (``retrieval/asked_values.py``).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from ..layers import precedence, scope_key
from ..model import Layer, LayerIdentifiers, MemoryEntry, TenantContext
from ..providers.base import ScoredEntry
from ..retrieval.asked_values import asked_value
from ..retrieval.boosts import Boosts
from ..retrieval.lexical import lexical_gate
from ..search import FloorMeasure
from .deps import MemoryDep, ReaderDep
from .http_errors import COMMON, responses
from .routes import SearchRequest, check_body_tenant

CONSOLE_URL = "/console"

#: Most memories ``GET /v1/scopes`` reads to count scopes (it reports ``truncated`` past that).
MAX_SCOPE_SCAN = 20_000


def static_dir() -> Path:
    """The built console (``index.html`` and ``assets/``), shipped as package data."""
    return Path(__file__).parent / "console_static"


class _Out(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class ScopeCount(_Out):
    identifiers: LayerIdentifiers = Field(
        description="The identifiers that name this scope of the layer.", examples=[{"userId": "alice"}]
    )
    count: int = Field(description="Live memories in this scope.", examples=[12])


class LayerScopes(_Out):
    layer: Layer
    count: int = Field(description="Live memories in this layer (over its scopes).", examples=[40])
    scopes: list[ScopeCount] = Field(
        description="The layer's scopes, largest first.", examples=[[{"identifiers": {"userId": "alice"}, "count": 12}]]
    )


class ScopeTree(_Out):
    layers: list[LayerScopes] = Field(
        description="Layers holding memories, most specific first.",
        examples=[[{"layer": "user", "count": 12, "scopes": [{"identifiers": {"userId": "alice"}, "count": 12}]}]],
    )
    scanned: int = Field(description="Memories read to build the tree.", examples=[52])
    truncated: bool = Field(
        description="True when the tenant holds more memories than were read "
        f"(at most {MAX_SCOPE_SCAN}); the counts are then partial.",
        examples=[False],
    )


class ScoreParts(_Out):
    dense: float = Field(description="Dense (embedding) similarity of the query and the memory, 0..1.", examples=[0.78])
    lexical: float | None = Field(
        description="What lexical (BM25) matching added to the dense part; null "
        "when conversation context re-ranking also changed the score.",
        examples=[0.05],
    )
    relevance: float = Field(description="Dense + lexical: the relevance the threshold applies to.", examples=[0.83])
    boost_factor: float = Field(description="Recency and importance boost multiplier (1 = no boost).", examples=[1.0])


class FloorParts(_Out):
    """How a result fared against the relevance floor of default search (docs/ranking.md "Relevance floor")."""

    sigma: float | None
    floor: float
    identifier_exception: bool
    kept: bool


class ExplainedResult(_Out):
    memory: MemoryEntry
    layer: Layer
    score: float = Field(description="The ranked score (relevance times the boost factor).", examples=[0.83])
    parts: ScoreParts = Field(
        description="The score taken apart.",
        examples=[{"dense": 0.78, "lexical": 0.05, "relevance": 0.83, "boostFactor": 1.0}],
    )
    floor: FloorParts | None = None


class RemovedResult(_Out):
    memory: MemoryEntry
    layer: Layer
    score: float = Field(description="The ranked score this hit had in its own layer.", examples=[0.8])
    reason: str = Field(
        description="Why the answer left it out: `duplicate` (a near-duplicate of a more "
        "specific layer's result), `limit` (ranked past the limit), `relevance_floor` (less than "
        "the floor's standard deviations above its scope's background) or `asked_value` (it states no "
        'value of the kind the question asks for: no amount of money for "how much does it cost?").',
        examples=["duplicate"],
    )
    duplicate_of: str | None = Field(None, description="Id of the kept result it duplicates.", examples=[None])
    floor: FloorParts | None = None


class SearchExplanation(_Out):
    results: list[ExplainedResult] = Field(description="The results, in the order search returns them.", examples=[[]])
    removed: list[RemovedResult] = Field(
        description="Hits that the answer left out: single layers' hits the merge removed, and merged "
        "candidates the relevance floor or the asked value removed.",
        examples=[[]],
    )
    searched_layers: list[Layer] = Field(
        description="Layers that were searched, most specific first.", examples=[["user", "project"]]
    )
    threshold: float = Field(description="Relevance below which hits are dropped.", examples=[0.7])
    hybrid_weight: float = Field(description="Lexical weight of the fused score.", examples=[1.0])
    dedup_threshold: float = Field(
        description="Similarity at which a broader layer's hit is a duplicate.", examples=[0.95]
    )
    relevance_floor: float | None = None
    asked_value: list[str] = Field(
        default_factory=list,
        description="The kinds of value the question asks for (default search): a result must state one.",
        examples=[["money"]],
    )
    asked_as: dict[Layer, str] = Field(
        default_factory=dict,
        description="The words a layer was searched with when they differ from the query: a question in "
        "the user's voice is asked of the personal layers about \"the user\" or the user's name.",
        examples=[{"user": "where does Dana live now?"}],
    )


def _similarity(a: list[float] | None, b: list[float] | None) -> float | None:
    """Cosine similarity mapped to 0..1 (the scale of scores); None without both vectors."""
    if not a or not b or len(a) != len(b):
        return None
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    if norm == 0.0:
        return None
    return min(1.0, max(0.0, (1.0 + dot / norm) / 2.0))


def _positioned(entry: MemoryEntry) -> bool:
    position = getattr(entry.provenance, "position", None) if entry.provenance else None
    return isinstance(position, int) and not isinstance(position, bool)


def _ids_of(entry: MemoryEntry) -> LayerIdentifiers:
    """Only the identifiers that name the memory's scope in its layer."""
    keep = {
        "agent": ("agent_id", "user_id"),
        "user": ("user_id",),
        "session": ("user_id", "session_id"),
        "project": ("project_id",),
        "team": ("team_id",),
        "org": ("org_id",),
        "company": ("company_id",),
        "object": ("object_type", "object_id"),
    }[entry.layer.value]
    ids = entry.identifiers
    return LayerIdentifiers(**{k: getattr(ids, k) for k in keep if getattr(ids, k, None) is not None})


def scope_tree(memory: Any, ctx: TenantContext) -> ScopeTree:
    counts: dict[tuple[Layer, str], tuple[LayerIdentifiers, int]] = {}
    scanned, cursor, truncated = 0, None, False
    limit = min(500, memory.engine.config.max_list_limit)
    while True:
        page = memory.list(ctx, None, identifiers=None, cursor=cursor, limit=limit)
        for entry in page.memories:
            ids = _ids_of(entry)
            key = (entry.layer, scope_key(entry.layer, ids))
            prev = counts.get(key)
            counts[key] = (ids, (prev[1] if prev else 0) + 1)
        scanned += len(page.memories)
        cursor = page.next_cursor
        if cursor is None:
            break
        if scanned >= MAX_SCOPE_SCAN:
            truncated = True
            break
    layers: dict[Layer, list[ScopeCount]] = {}
    for (layer, _key), (ids, n) in counts.items():
        layers.setdefault(layer, []).append(ScopeCount(identifiers=ids, count=n))
    out = [
        LayerScopes(
            layer=layer,
            count=sum(s.count for s in scopes),
            scopes=sorted(scopes, key=lambda s: (-s.count, s.identifiers.model_dump_json())),
        )
        for layer, scopes in sorted(layers.items(), key=lambda item: precedence(item[0]))
    ]
    return ScopeTree(layers=out, scanned=scanned, truncated=truncated)


def explain_search(memory: Any, ctx: TenantContext, body: SearchRequest) -> SearchExplanation:
    engine = memory.engine
    cfg = engine.config
    args: dict[str, Any] = {
        "hybrid_weight": body.hybrid_weight,
        "recency_boost": body.recency_boost,
        "importance_boost": body.importance_boost,
        "include_superseded": body.include_superseded,
        "as_of": body.as_of,
        "include_embedding": True,
    }
    report: list[FloorMeasure] = []
    without_value: list[tuple[Layer, ScoredEntry]] = []
    merged = engine.search(
        ctx,
        body.query,
        body.identifiers,
        body.layers,
        body.limit,
        body.threshold,
        body.filter,
        floor_report=report,
        value_report=without_value,
        **args,
    )
    measures = {m.hit.entry.id: m for m in report}

    def floor_parts(entry_id: str) -> FloorParts | None:
        m = measures.get(entry_id)
        if m is None:
            return None
        sigma = None if m.sigma is None else round(m.sigma, 4)
        return FloorParts(sigma=sigma, floor=m.floor, identifier_exception=m.lexical_exception, kept=m.kept)

    asked = engine.asked_as(ctx, body.query, body.identifiers, merged.searched_layers)
    vectors = {
        layer: [float(x) for x in engine.embeddings.embed_query(text, "search")] for layer, text in asked.items()
    }
    weight = cfg.hybrid_weight if body.hybrid_weight is None else body.hybrid_weight
    boosts = Boosts(
        recency=cfg.recency_boost if body.recency_boost is None else body.recency_boost,
        importance=cfg.importance_boost if body.importance_boost is None else body.importance_boost,
        half_life_days=cfg.recency_half_life_days,
    )
    now = engine.now()
    context_on = cfg.context_weight > 0

    def parts(entry: MemoryEntry, layer: Layer, score: float) -> ScoreParts:
        factor = boosts.factor(entry, now) if boosts.active else 1.0
        relevance = score / factor if factor > 0 else score
        dense = _similarity(vectors[layer], entry.embedding)
        if dense is None:
            dense = relevance
        lexical: float | None = max(0.0, relevance - dense)
        if context_on and _positioned(entry):
            lexical = None
        elif weight * (1.0 - dense) * lexical_gate(dense) <= 0.0:
            lexical = 0.0
        return ScoreParts(
            dense=round(dense, 6),
            lexical=None if lexical is None else round(lexical, 6),
            relevance=round(relevance, 6),
            boost_factor=round(factor, 6),
        )

    results = [
        ExplainedResult(
            memory=r.memory.model_copy(update={"embedding": None}),
            layer=r.layer,
            score=r.score,
            parts=parts(r.memory, r.layer, r.score),
            floor=floor_parts(r.memory.id),
        )
        for r in merged.results
    ]
    kept_ids = {r.memory.id for r in merged.results}
    removed: list[RemovedResult] = [
        RemovedResult(
            memory=m.hit.entry.model_copy(update={"embedding": None}),
            layer=m.layer,
            score=round(m.hit.score, 6),
            reason="relevance_floor",
            floor=floor_parts(m.hit.entry.id),
        )
        for m in report
        if not m.kept
    ]
    removed += [
        RemovedResult(
            memory=hit.entry.model_copy(update={"embedding": None}),
            layer=layer,
            score=round(hit.score, 6),
            reason="asked_value",
            floor=floor_parts(hit.entry.id),
        )
        for layer, hit in without_value
    ]
    left_out = {m.hit.entry.id for m in report if not m.kept} | {hit.entry.id for _, hit in without_value}
    if len(merged.searched_layers) > 1:  # what each layer alone returns, against the merged answer
        for layer in merged.searched_layers:
            alone = engine.search(
                ctx, body.query, body.identifiers, [layer], body.limit, body.threshold, body.filter, **args
            )
            for hit in alone.results:
                if hit.memory.id in kept_ids or hit.memory.id in left_out:
                    continue
                reason, dup = "limit", None
                for kept in merged.results:
                    if precedence(kept.layer) > precedence(layer):
                        continue
                    sim = _similarity(hit.memory.embedding, kept.memory.embedding)
                    if sim is not None and sim >= cfg.dedup_threshold:
                        reason, dup = "duplicate", kept.memory.id
                        break
                removed.append(
                    RemovedResult(
                        memory=hit.memory.model_copy(update={"embedding": None}),
                        layer=layer,
                        score=hit.score,
                        reason=reason,
                        duplicate_of=dup,
                    )
                )
    threshold = cfg.default_threshold if body.threshold is None else body.threshold
    wanted = asked_value(body.query) if body.threshold is None and cfg.value_check else None
    return SearchExplanation(
        results=results,
        removed=removed,
        searched_layers=merged.searched_layers,
        threshold=threshold,
        hybrid_weight=weight,
        dedup_threshold=cfg.dedup_threshold,
        relevance_floor=cfg.relevance_floor if body.threshold is None else None,
        asked_value=sorted(str(k) for k in wanted.kinds) if wanted is not None else [],
        asked_as={layer: text for layer, text in asked.items() if text != body.query},
    )


def build_console_router() -> APIRouter:
    r = APIRouter(prefix="/v1", tags=["console"])

    @r.get("/scopes", response_model=ScopeTree, responses=responses(*COMMON), name="scopes", operation_id="listScopes")
    def scopes(memory: MemoryDep, ctx: ReaderDep) -> ScopeTree:
        """The caller's live memories counted per layer and scope (identifiers), over what the
        key's grant sees; reads at most 20000 memories (then `truncated` is true)."""
        return scope_tree(memory, ctx)

    @r.post(
        "/memories/search/explain",
        response_model=SearchExplanation,
        responses=responses(*COMMON),
        name="search_explain",
        operation_id="explainSearch",
    )
    def search_explain(body: SearchRequest, request: Request, memory: MemoryDep, ctx: ReaderDep) -> SearchExplanation:
        """A search (same body as `POST /v1/memories/search`) with each result's dense and lexical
        score parts, boost factor and relevance-floor measure (standard deviations above the scope's background), the
        single-layer hits the merge removed (near-duplicates of a more specific layer's result, or
        past the limit), the candidates the relevance floor removed and those that state no value of the
        kind the question asks for. Costs one search per layer more."""
        check_body_tenant(request, memory, ctx, body.tenant_id, "search")
        return explain_search(memory, ctx, body)

    return r


def install(app: FastAPI) -> None:
    """Serve the built console at ``/console/`` (``/console`` redirects there)."""
    app.mount(CONSOLE_URL, StaticFiles(directory=static_dir(), html=True, check_dir=False), name="console")
