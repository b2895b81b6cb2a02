"""REST routes for the SDK operations beyond CRUD and search: the write gate (process / remember /
forget), the lifecycle (promote, compact, close_session, reflect, feedback, prune, soft delete, restore,
delete_by_scope, conflicts, maintenance), hygiene (memory health report, policies), export as
streamed NDJSON, stats, capabilities, accessible layers, embeddings and the ``memory_crud`` skill.

Handlers only translate HTTP to the SDK: every failure is the SDK's ``MemoryError``, answered with
the same code and status as on every other route. The route ``name`` is the SDK method's name (a
test checks that every public ``Memory`` method has a route or a documented reason not to).
Requests are camelCase; answers are the SDK's own models.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from ..agent.budget import FitContextResult
from ..crud.skill import MemoryCrudResponse
from ..hygiene.gate import ProcessResult
from ..hygiene.health import MemoryHealth
from ..hygiene.history import EventTrends, MaintenanceRunsOutput, MemoryEventsOutput
from ..hygiene.policies import TenantPolicy
from ..layers import get_accessible_layers
from ..lifecycle.feedback import FeedbackResult
from ..lifecycle.maintenance import MaintenanceReport
from ..lifecycle.manager import CloseSessionResult
from ..lifecycle.pruning import PruneReport
from ..lifecycle.reflection import ReflectionResult
from ..model import (
    Layer,
    LayerIdentifiers,
    ListMemoriesOutput,
    MemoryEntry,
    ProviderCapabilities,
    StoreStats,
)
from .deps import MemoryDep, ReaderDep, WriterDep
from .http_errors import COMMON, responses
from .keys_routes import AdminDep
from .routes import LayerName, MemoryId, check_body_tenant

Ids = list[Annotated[str, Field(min_length=1, max_length=256)]]
NDJSON = "application/x-ndjson"


class _Body(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    #: Optional; when given it must be the credential's own tenant.
    tenant_id: str | None = Field(None, max_length=128)


class ProcessRequest(_Body):
    text: str = Field(max_length=100_000)
    intent: Literal["none", "remember", "forget"] = "none"
    identifiers: LayerIdentifiers = Field(default_factory=LayerIdentifiers)
    recent_messages: list[Annotated[str, Field(max_length=100_000)]] | None = Field(None, max_length=50)
    layer: LayerName | None = None


class GateRequest(_Body):
    text: str = Field(max_length=100_000)
    identifiers: LayerIdentifiers = Field(default_factory=LayerIdentifiers)
    layer: LayerName | None = None


class PromoteRequest(_Body):
    target_layer: LayerName
    identifiers: LayerIdentifiers = Field(default_factory=LayerIdentifiers)
    delete_original: bool = False
    content: str | None = Field(None, max_length=1_000_000)
    tags: list[Annotated[str, Field(max_length=128)]] | None = None


class CompactRequest(_Body):
    source_ids: Ids = Field(min_length=1, max_length=1000)
    #: The summary of the sources (a remote caller writes it; the SDK takes a callback instead).
    content: str = Field(max_length=1_000_000)
    delete_sources: bool = False
    target_layer: LayerName | None = None
    tags: list[Annotated[str, Field(max_length=128)]] | None = None
    metadata: dict[str, Any] | None = None


class FitContextRequest(_Body):
    messages: list[dict[str, Any]] = Field(max_length=2000)
    max_tokens: int = Field(ge=1, le=10_000_000)
    identifiers: LayerIdentifiers = Field(default_factory=LayerIdentifiers)
    layer: LayerName = "session"
    keep_recent: int = Field(4, ge=0, le=1000)
    compact_at: float = Field(0.8, gt=0.0, le=1.0)
    max_tool_tokens: int = Field(500, ge=1)


class CloseSessionRequest(_Body):
    user_id: str = Field(min_length=1, max_length=256)
    project_id: str | None = Field(None, max_length=256)
    agent_id: str | None = Field(None, max_length=256)


class ReflectRequest(_Body):
    user_id: str = Field(min_length=1, max_length=256)
    agent_id: str | None = Field(None, max_length=256)


class FeedbackRequest(_Body):
    memory_ids: Ids = Field(min_length=1, max_length=1000)
    reward: float


class IdsRequest(_Body):
    ids: Ids = Field(max_length=1000)


class ScopeRequest(_Body):
    layer: LayerName
    identifiers: LayerIdentifiers = Field(default_factory=LayerIdentifiers)


class PruneRequest(_Body):
    dry_run: bool = True


class EmbeddingRequest(_Body):
    text: str = Field(max_length=100_000)


class EmbeddingResponse(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    embedding: list[float]
    dimensions: int


class IdsResponse(BaseModel):
    ids: list[str]


class CountResponse(BaseModel):
    deleted: int


class LayersResponse(BaseModel):
    layers: list[Layer]


class PolicyRequest(_Body):
    deny_patterns: list[str] | None = None
    allowed_categories: list[str] | None = None
    max_length: int | None = None
    pii_mode: str | None = None
    max_memories: int | None = None


def _ids(q: Any) -> dict[str, str]:
    return {k: v for k, v in q.items() if v is not None}


def build_operations_router() -> APIRouter:
    r = APIRouter(prefix="/v1")

    # -- write gate -------------------------------------------------------------------------
    @r.post(
        "/process",
        response_model=ProcessResult,
        responses=responses(*COMMON),
        name="process",
        operation_id="processMessage",
        tags=["write gate"],
    )
    def process(body: ProcessRequest, request: Request, memory: MemoryDep, ctx: WriterDep) -> ProcessResult:
        """The write gate: decide whether a message is worth storing, deduplicate, then create,
        update, delete (intent `forget`) or ignore it, with the reason."""
        check_body_tenant(request, memory, ctx, body.tenant_id, "process")
        return memory.process(
            ctx,
            body.text,
            intent=body.intent,
            identifiers=body.identifiers,
            recent_messages=body.recent_messages,
            layer=body.layer,
        )

    @r.post(
        "/context/fit",
        response_model=FitContextResult,
        responses=responses(*COMMON),
        name="fit_context",
        operation_id="fitContext",
        tags=["write gate"],
    )
    def fit_context(body: FitContextRequest, request: Request, memory: MemoryDep, ctx: WriterDep) -> FitContextResult:
        """Context budget: the messages to send within `maxTokens`. Large tool outputs are stored as
        memories and replaced by a pointer; near the limit the oldest turns become one summary memory."""
        check_body_tenant(request, memory, ctx, body.tenant_id, "fit_context")
        result: FitContextResult = memory.fit_context(
            ctx,
            body.messages,
            body.max_tokens,
            identifiers=body.identifiers,
            layer=body.layer,
            keep_recent=body.keep_recent,
            compact_at=body.compact_at,
            max_tool_tokens=body.max_tool_tokens,
        )
        return result

    @r.post(
        "/remember",
        response_model=ProcessResult,
        responses=responses(*COMMON),
        name="remember",
        operation_id="rememberText",
        tags=["write gate"],
    )
    def remember(body: GateRequest, request: Request, memory: MemoryDep, ctx: WriterDep) -> ProcessResult:
        """Store a text explicitly (still refused when unsafe or against the tenant's policy)."""
        check_body_tenant(request, memory, ctx, body.tenant_id, "remember")
        return memory.remember(ctx, body.text, identifiers=body.identifiers, layer=body.layer)

    @r.post(
        "/forget",
        response_model=ProcessResult,
        responses=responses(*COMMON),
        name="forget",
        operation_id="forgetText",
        tags=["write gate"],
    )
    def forget(body: GateRequest, request: Request, memory: MemoryDep, ctx: WriterDep) -> ProcessResult:
        """Delete every memory of the scope that matches the text."""
        check_body_tenant(request, memory, ctx, body.tenant_id, "forget")
        return memory.forget(ctx, body.text, identifiers=body.identifiers, layer=body.layer)

    # -- lifecycle --------------------------------------------------------------------------
    @r.post(
        "/memories/{memory_id}/promote",
        status_code=201,
        response_model=MemoryEntry,
        responses=responses(*COMMON, 404),
        name="promote",
        operation_id="promoteMemory",
        tags=["lifecycle"],
    )
    def promote(
        memory_id: MemoryId, body: PromoteRequest, request: Request, memory: MemoryDep, ctx: WriterDep
    ) -> MemoryEntry:
        """Copy (or move, with `deleteOriginal`) a memory to a broader layer, e.g. user → project."""
        check_body_tenant(request, memory, ctx, body.tenant_id, "promote")
        return memory.promote(
            ctx,
            memory_id,
            body.target_layer,
            identifiers=body.identifiers,
            delete_original=body.delete_original,
            content=body.content,
            tags=body.tags,
        )

    @r.post(
        "/memories/compact",
        status_code=201,
        response_model=MemoryEntry,
        responses=responses(*COMMON, 404),
        name="compact",
        operation_id="compactMemories",
        tags=["lifecycle"],
    )
    def compact(body: CompactRequest, request: Request, memory: MemoryDep, ctx: WriterDep) -> MemoryEntry:
        """Replace several memories by one summary written by the caller (`content`); the summary
        records the sources in its provenance."""
        check_body_tenant(request, memory, ctx, body.tenant_id, "compact")
        summary = body.content
        return memory.compact(
            ctx,
            body.source_ids,
            lambda _entries: summary,
            delete_sources=body.delete_sources,
            target_layer=body.target_layer,
            tags=body.tags,
            metadata=body.metadata,
        )

    @r.post(
        "/sessions/{session_id}/close",
        response_model=CloseSessionResult,
        responses=responses(*COMMON),
        name="close_session",
        operation_id="closeSession",
        tags=["lifecycle"],
    )
    def close_session(
        session_id: Annotated[str, Path(min_length=1, max_length=256)],
        body: CloseSessionRequest,
        request: Request,
        memory: MemoryDep,
        ctx: WriterDep,
    ) -> CloseSessionResult:
        """End a session: promote its important memories (PII-redacted) and apply session retention."""
        check_body_tenant(request, memory, ctx, body.tenant_id, "close_session")
        result: CloseSessionResult = memory.close_session(
            ctx, body.user_id, session_id, project_id=body.project_id, agent_id=body.agent_id
        )
        return result

    @r.post(
        "/sessions/{session_id}/reflect",
        response_model=ReflectionResult,
        responses=responses(*COMMON),
        name="reflect",
        operation_id="reflectSession",
        tags=["lifecycle"],
    )
    def reflect(
        session_id: Annotated[str, Path(min_length=1, max_length=256)],
        body: ReflectRequest,
        request: Request,
        memory: MemoryDep,
        ctx: WriterDep,
    ) -> ReflectionResult:
        """Distil the session's memories into agent-layer summaries and rules, with provenance (LLM when
        configured, rules otherwise); a session reflected with the same sources writes nothing."""
        check_body_tenant(request, memory, ctx, body.tenant_id, "reflect")
        result: ReflectionResult = memory.reflect(ctx, body.user_id, session_id, agent_id=body.agent_id)
        return result

    @r.post(
        "/feedback",
        response_model=FeedbackResult,
        responses=responses(*COMMON),
        name="feedback",
        operation_id="recordFeedback",
        tags=["lifecycle"],
    )
    def feedback(body: FeedbackRequest, request: Request, memory: MemoryDep, ctx: WriterDep) -> FeedbackResult:
        """Record a reward (-1..1) for memories that were used; consistently negative ones can be pruned."""
        check_body_tenant(request, memory, ctx, body.tenant_id, "feedback")
        result: FeedbackResult = memory.feedback(ctx, body.memory_ids, body.reward)
        return result

    @r.post(
        "/prune",
        response_model=PruneReport,
        responses=responses(*COMMON),
        name="prune",
        operation_id="pruneMemories",
        tags=["lifecycle"],
    )
    def prune(body: PruneRequest, request: Request, memory: MemoryDep, ctx: WriterDep) -> PruneReport:
        """Soft-delete memories whose feedback is consistently negative (`dryRun`: only list them)."""
        check_body_tenant(request, memory, ctx, body.tenant_id, "prune")
        report: PruneReport = memory.prune(ctx, dry_run=body.dry_run)
        return report

    @r.post(
        "/memories/soft-delete",
        response_model=IdsResponse,
        responses=responses(*COMMON),
        name="soft_delete",
        operation_id="softDeleteMemories",
        tags=["lifecycle"],
    )
    def soft_delete(body: IdsRequest, request: Request, memory: MemoryDep, ctx: WriterDep) -> IdsResponse:
        """Hide memories from reads until restored or purged; returns the ids that were soft-deleted."""
        check_body_tenant(request, memory, ctx, body.tenant_id, "soft_delete")
        return IdsResponse(ids=memory.soft_delete(ctx, body.ids))

    @r.post(
        "/memories/restore",
        response_model=IdsResponse,
        responses=responses(*COMMON),
        name="restore",
        operation_id="restoreMemories",
        tags=["lifecycle"],
    )
    def restore(body: IdsRequest, request: Request, memory: MemoryDep, ctx: WriterDep) -> IdsResponse:
        """Bring soft-deleted memories back; returns the ids that were restored."""
        check_body_tenant(request, memory, ctx, body.tenant_id, "restore")
        return IdsResponse(ids=memory.restore(ctx, body.ids))

    @r.post(
        "/memories/delete-by-scope",
        response_model=CountResponse,
        responses=responses(*COMMON),
        name="delete_by_scope",
        operation_id="deleteMemoriesByScope",
        tags=["lifecycle"],
    )
    def delete_by_scope(body: ScopeRequest, request: Request, memory: MemoryDep, ctx: WriterDep) -> CountResponse:
        """Delete every memory of one layer and scope (e.g. one user's session)."""
        check_body_tenant(request, memory, ctx, body.tenant_id, "delete_by_scope")
        return CountResponse(deleted=memory.delete_by_scope(ctx, body.layer, body.identifiers))

    @r.get(
        "/conflicts",
        response_model=ListMemoriesOutput,
        responses=responses(*COMMON),
        name="conflicts",
        operation_id="listConflicts",
        tags=["lifecycle"],
    )
    def conflicts(
        memory: MemoryDep,
        ctx: ReaderDep,
        memory_id: Annotated[str | None, Query(alias="memoryId", max_length=256)] = None,
        cursor: Annotated[str | None, Query(max_length=2048)] = None,
        limit: Annotated[int | None, Query()] = None,
    ) -> ListMemoriesOutput:
        """Memories flagged as contradicting another (or the ones contradicting `memoryId`)."""
        return memory.conflicts(ctx, memory_id=memory_id, cursor=cursor, limit=limit)

    @r.post(
        "/maintenance",
        response_model=MaintenanceReport,
        responses=responses(*COMMON),
        name="maintain",
        operation_id="runMaintenance",
        tags=["lifecycle"],
    )
    def maintain(memory: MemoryDep, ctx: AdminDep) -> MaintenanceReport:
        """Run maintenance once for the caller's tenant (TTL purge, decay, consolidation, pruning,
        integrity). Admin keys only."""
        report: MaintenanceReport = memory.maintain(tenants=[ctx.tenant_id])
        return report

    # -- hygiene ----------------------------------------------------------------------------
    @r.get(
        "/health-report",
        response_model=MemoryHealth,
        responses=responses(*COMMON),
        name="health",
        operation_id="getMemoryHealth",
        tags=["hygiene"],
    )
    def health(memory: MemoryDep, ctx: ReaderDep, since: Annotated[datetime | None, Query()] = None) -> MemoryHealth:
        """Memory health of the tenant: totals, age, duplicate, write-rejection and search-hit rates."""
        return memory.health(ctx, since=since)

    @r.get(
        "/memories/{memory_id}/events",
        response_model=MemoryEventsOutput,
        responses=responses(*COMMON),
        name="memory_events",
        operation_id="listMemoryEvents",
        tags=["hygiene"],
    )
    def memory_events(
        memory_id: MemoryId,
        memory: MemoryDep,
        ctx: ReaderDep,
        limit: Annotated[int, Query()] = 50,
        event: Annotated[list[str] | None, Query()] = None,
    ) -> MemoryEventsOutput:
        """Logged events of one memory (create, update, delete, access…), newest first; `event`
        (repeatable) keeps only those kinds: `event=access` is the memory's access history (each
        search or get that returned it). A memory outside the key's grant answers 404 like a missing one."""
        return memory.memory_events(ctx, memory_id, limit=limit, events=event)

    @r.get(
        "/health-report/trends",
        response_model=EventTrends,
        responses=responses(*COMMON),
        name="event_trends",
        operation_id="getEventTrends",
        tags=["hygiene"],
    )
    def event_trends(memory: MemoryDep, ctx: ReaderDep, days: Annotated[int, Query()] = 14) -> EventTrends:
        """Per-day counts (UTC days) of the tenant's writes, searches and rejected writes over the last
        `days` days, and the write-gate decisions one by one (created, deduplicated, updated, deleted,
        ignored, rejected)."""
        return memory.event_trends(ctx, days=days)

    @r.get(
        "/maintenance/runs",
        response_model=MaintenanceRunsOutput,
        responses=responses(*COMMON),
        name="maintenance_runs",
        operation_id="listMaintenanceRuns",
        tags=["lifecycle"],
    )
    def maintenance_runs(
        memory: MemoryDep, ctx: ReaderDep, limit: Annotated[int, Query()] = 20
    ) -> MaintenanceRunsOutput:
        """The tenant's recorded maintenance runs, newest first: when, outcome and what each task did."""
        return memory.maintenance_runs(ctx, limit=limit)

    @r.get(
        "/policies",
        response_model=TenantPolicy,
        responses=responses(*COMMON),
        name="policies",
        operation_id="getPolicy",
        tags=["hygiene"],
    )
    def get_policy(memory: MemoryDep, ctx: ReaderDep) -> TenantPolicy:
        """The tenant's governance policy (deny patterns, categories, PII mode, quota)."""
        return memory.policies.get(ctx)

    @r.patch(
        "/policies",
        response_model=TenantPolicy,
        responses=responses(*COMMON),
        name="set_policy",
        operation_id="updatePolicy",
        tags=["hygiene"],
    )
    def set_policy(body: PolicyRequest, request: Request, memory: MemoryDep, ctx: AdminDep) -> TenantPolicy:
        """Change the given rules of the tenant's policy; the others keep their value. Admin keys only."""
        check_body_tenant(request, memory, ctx, body.tenant_id, "policies")
        fields = body.model_dump(exclude={"tenant_id"}, exclude_unset=True)
        return memory.policies.set(ctx, **fields)

    @r.delete(
        "/policies",
        response_model=TenantPolicy,
        responses=responses(*COMMON),
        name="reset_policy",
        operation_id="resetPolicy",
        tags=["hygiene"],
    )
    def reset_policy(memory: MemoryDep, ctx: AdminDep) -> TenantPolicy:
        """Back to the default policy (PII allowed, no patterns, no quota). Admin keys only."""
        return memory.policies.reset(ctx)

    # -- store ------------------------------------------------------------------------------
    @r.get(
        "/export",
        response_class=StreamingResponse,
        name="export",
        operation_id="exportMemories",
        tags=["store"],
        responses={
            200: {
                "content": {NDJSON: {"schema": {"type": "string"}}},
                "description": "One memory (JSON, as GET /v1/memories/{id}) per line, oldest first",
            },
            **responses(*COMMON),
        },
    )
    def export(
        memory: MemoryDep, ctx: ReaderDep, include_embeddings: Annotated[bool, Query(alias="includeEmbeddings")] = False
    ) -> StreamingResponse:
        """Every memory of the tenant as NDJSON, streamed (re-importable with `stratamem import`)."""
        entries = memory.export(ctx, include_embeddings=include_embeddings)
        exclude = None if include_embeddings else {"embedding"}
        first = next(entries, None)  # errors (e.g. the tenant check) are answered before streaming starts

        def lines() -> Iterator[bytes]:
            if first is None:
                return
            yield (json.dumps(first.to_json_dict(exclude=exclude), ensure_ascii=False) + "\n").encode()
            for entry in entries:
                yield (json.dumps(entry.to_json_dict(exclude=exclude), ensure_ascii=False) + "\n").encode()

        return StreamingResponse(lines(), media_type=NDJSON)

    @r.get(
        "/stats",
        response_model=StoreStats,
        responses=responses(*COMMON),
        name="stats",
        operation_id="getStats",
        tags=["store"],
    )
    def stats(memory: MemoryDep, ctx: ReaderDep) -> StoreStats:
        """Memory counts per layer of the tenant, with the store's provider and embedding model."""
        return memory.stats(ctx)

    @r.get(
        "/capabilities",
        response_model=ProviderCapabilities,
        responses=responses(*COMMON),
        name="capabilities",
        operation_id="getCapabilities",
        tags=["store"],
    )
    def capabilities(memory: MemoryDep, ctx: ReaderDep) -> ProviderCapabilities:
        """What the storage provider supports (vector / keyword search, dimensions, content limit)."""
        return memory.capabilities()

    @r.get(
        "/layers",
        response_model=LayersResponse,
        responses=responses(*COMMON),
        name="get_accessible_layers",
        operation_id="getAccessibleLayers",
        tags=["store"],
    )
    def accessible_layers(
        ctx: ReaderDep,
        agent_id: Annotated[str | None, Query(alias="agentId", max_length=256)] = None,
        user_id: Annotated[str | None, Query(alias="userId", max_length=256)] = None,
        session_id: Annotated[str | None, Query(alias="sessionId", max_length=256)] = None,
        project_id: Annotated[str | None, Query(alias="projectId", max_length=256)] = None,
        team_id: Annotated[str | None, Query(alias="teamId", max_length=256)] = None,
        org_id: Annotated[str | None, Query(alias="orgId", max_length=256)] = None,
        company_id: Annotated[str | None, Query(alias="companyId", max_length=256)] = None,
        object_type: Annotated[str | None, Query(alias="objectType", max_length=256)] = None,
        object_id: Annotated[str | None, Query(alias="objectId", max_length=256)] = None,
    ) -> LayersResponse:
        """The layers a search with these identifiers reaches, most specific first."""
        ids = _ids(
            {
                "agent_id": agent_id,
                "user_id": user_id,
                "session_id": session_id,
                "project_id": project_id,
                "team_id": team_id,
                "org_id": org_id,
                "company_id": company_id,
                "object_type": object_type,
                "object_id": object_id,
            }
        )
        return LayersResponse(layers=get_accessible_layers(ids))

    @r.post(
        "/embeddings",
        response_model=EmbeddingResponse,
        responses=responses(*COMMON),
        name="generate_embedding",
        operation_id="generateEmbedding",
        tags=["store"],
    )
    def generate_embedding(body: EmbeddingRequest, memory: MemoryDep, ctx: ReaderDep) -> EmbeddingResponse:
        """The store's embedding of a text (the model every memory of this store is embedded with)."""
        vector = memory.generate_embedding(body.text)
        return EmbeddingResponse(embedding=vector, dimensions=len(vector))

    @r.post(
        "/crud",
        response_model=MemoryCrudResponse,
        responses=responses(*COMMON),
        name="crud",
        operation_id="memoryCrud",
        tags=["store"],
    )
    def crud(body: dict[str, Any], memory: MemoryDep, ctx: WriterDep) -> Any:
        """The `memory_crud` skill: one request (`operation`, `scope`, `layer`, …) in,
        `{items, next_cursor, has_more, errors}` out."""
        return memory.crud(ctx, body)

    return r
