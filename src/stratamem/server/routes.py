"""REST routes under /v1 (SPEC R-API). Handlers only translate HTTP ↔ the SDK; JSON is camelCase."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Header, Path, Query, Request
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from ..errors import ErrorCode, MemoryError
from ..model import (
    AddMemoryOutput,
    BulkAddOutput,
    BulkDeleteOutput,
    DeleteMemoryOutput,
    LayerIdentifiers,
    ListMemoriesOutput,
    MemoryEntry,
    MetadataFilter,
    SearchMemoryOutput,
    TenantContext,
    UpdateMemoryOutput,
)
from .deps import MemoryDep, ReaderDep, WriterDep
from .http_errors import COMMON, responses


class _Body(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    #: Optional; when given it must be the credential's own tenant (a request cannot switch tenants).
    tenant_id: str | None = Field(None, max_length=128)


class CreateMemoryRequest(_Body):
    content: str = Field(max_length=1_000_000)
    layer: str = Field(max_length=32, description="agent|user|session|project|team|org|company|object")
    identifiers: LayerIdentifiers = Field(default_factory=LayerIdentifiers)
    metadata: dict[str, Any] = Field(default_factory=dict)
    tier: str | None = Field(None, max_length=64)
    expires_at: datetime | None = None
    importance: float | None = None


class BulkCreateRequest(_Body):
    items: list[CreateMemoryRequest]


class BulkDeleteRequest(_Body):
    ids: list[Annotated[str, Field(max_length=256)]]


class SearchRequest(_Body):
    query: str = Field(max_length=100_000)
    identifiers: LayerIdentifiers = Field(default_factory=LayerIdentifiers)
    layers: list[Annotated[str, Field(max_length=32)]] | None = None
    limit: int | None = None
    threshold: float | None = None
    filter: MetadataFilter | None = None
    #: Per-search overrides of MemoryConfig.hybrid_weight / recency_boost / importance_boost (0..1).
    hybrid_weight: float | None = None
    recency_boost: float | None = None
    importance_boost: float | None = None


class UpdateMemoryRequest(_Body):
    content: str | None = Field(None, max_length=1_000_000)
    metadata: dict[str, Any] | None = None
    expires_at: datetime | None = None
    tier: str | None = Field(None, max_length=64)
    if_match: str | None = Field(None, max_length=128)


def check_body_tenant(request: Request, memory: Any, ctx: TenantContext, body_tenant: str | None, action: str) -> None:
    """A body naming another tenant is refused (403) and audited as a cross-tenant attempt."""
    if body_tenant is None or body_tenant == ctx.tenant_id:
        return
    memory.engine.audit.record(tenant_id=ctx.tenant_id, principal=ctx.principal, action=action, outcome="denied",
                               code=ErrorCode.FORBIDDEN.value, cross_tenant=True,
                               details={"path": request.url.path, "reason": "body names another tenant"})
    raise MemoryError(ErrorCode.FORBIDDEN, "a request may only address the tenant of its credential",
                      operation=action, details={"field": "tenantId"})


def _not_found(memory_id: str, operation: str) -> MemoryError:
    return MemoryError(ErrorCode.MEMORY_NOT_FOUND, f"no memory with id {memory_id!r}", operation=operation,
                       details={"id": memory_id}, retryable=False)


MemoryId = Annotated[str, Path(min_length=1, max_length=256, description="Memory id")]
IfMatch = Annotated[str | None, Header(alias="If-Match", max_length=128)]


def _item(body: CreateMemoryRequest) -> dict[str, Any]:
    return body.model_dump(exclude={"tenant_id"})


def build_router() -> APIRouter:
    r = APIRouter(prefix="/v1", tags=["memories"])

    @r.post("/memories", status_code=201, response_model=AddMemoryOutput, responses=responses(*COMMON),
            name="add")
    def create_memory(body: CreateMemoryRequest, request: Request, memory: MemoryDep,
                      ctx: WriterDep) -> AddMemoryOutput:
        check_body_tenant(request, memory, ctx, body.tenant_id, "add")
        return memory.add(ctx, body.content, body.layer, body.identifiers, body.metadata, tier=body.tier,
                          expires_at=body.expires_at, importance=body.importance)

    @r.post("/memories/bulk", status_code=201, response_model=BulkAddOutput, responses=responses(*COMMON),
            name="bulk_add")
    def bulk_create(body: BulkCreateRequest, request: Request, memory: MemoryDep, ctx: WriterDep) -> BulkAddOutput:
        check_body_tenant(request, memory, ctx, body.tenant_id, "bulk_add")
        for item in body.items:
            check_body_tenant(request, memory, ctx, item.tenant_id, "bulk_add")
        cap = request.app.state.settings.max_bulk_items
        if len(body.items) > cap:
            raise MemoryError(ErrorCode.INVALID_PARAMS, f"at most {cap} items per bulk request (got {len(body.items)})",
                              operation="bulk_add", details={"max_items": cap})
        return memory.bulk_add(ctx, [_item(i) for i in body.items])

    @r.post("/memories/bulk-delete", response_model=BulkDeleteOutput, responses=responses(*COMMON),
            name="bulk_delete")
    def bulk_delete(body: BulkDeleteRequest, request: Request, memory: MemoryDep, ctx: WriterDep) -> BulkDeleteOutput:
        check_body_tenant(request, memory, ctx, body.tenant_id, "bulk_delete")
        cap = request.app.state.settings.max_bulk_items
        if len(body.ids) > cap:
            raise MemoryError(ErrorCode.INVALID_PARAMS, f"at most {cap} ids per bulk request (got {len(body.ids)})",
                              operation="bulk_delete", details={"max_items": cap})
        return memory.bulk_delete(ctx, body.ids)

    @r.post("/memories/search", response_model=SearchMemoryOutput, responses=responses(*COMMON), name="search")
    def search(body: SearchRequest, request: Request, memory: MemoryDep, ctx: ReaderDep) -> SearchMemoryOutput:
        check_body_tenant(request, memory, ctx, body.tenant_id, "search")
        return memory.search(ctx, body.query, body.identifiers, body.layers, body.limit, body.threshold, body.filter,
                             hybrid_weight=body.hybrid_weight, recency_boost=body.recency_boost,
                             importance_boost=body.importance_boost)

    @r.get("/memories", response_model=ListMemoriesOutput, responses=responses(*COMMON), name="list")
    def list_memories(
        memory: MemoryDep, ctx: ReaderDep,
        layer: Annotated[str | None, Query(max_length=32)] = None,
        cursor: Annotated[str | None, Query(max_length=2048)] = None,
        limit: Annotated[int | None, Query()] = None,
        tag: Annotated[list[str] | None, Query(description="Match any of these tags (repeatable)")] = None,
        filter: Annotated[str | None, Query(max_length=8192, description="MetadataFilter as JSON")] = None,
        agent_id: Annotated[str | None, Query(alias="agentId", max_length=256)] = None,
        user_id: Annotated[str | None, Query(alias="userId", max_length=256)] = None,
        session_id: Annotated[str | None, Query(alias="sessionId", max_length=256)] = None,
        project_id: Annotated[str | None, Query(alias="projectId", max_length=256)] = None,
        team_id: Annotated[str | None, Query(alias="teamId", max_length=256)] = None,
        org_id: Annotated[str | None, Query(alias="orgId", max_length=256)] = None,
        company_id: Annotated[str | None, Query(alias="companyId", max_length=256)] = None,
        object_type: Annotated[str | None, Query(alias="objectType", max_length=256)] = None,
        object_id: Annotated[str | None, Query(alias="objectId", max_length=256)] = None,
    ) -> ListMemoriesOutput:
        ids = {"agent_id": agent_id, "user_id": user_id, "session_id": session_id, "project_id": project_id,
               "team_id": team_id, "org_id": org_id, "company_id": company_id, "object_type": object_type,
               "object_id": object_id}
        flt: Any = None
        if filter is not None:
            try:
                flt = json.loads(filter)
            except json.JSONDecodeError:
                raise MemoryError(ErrorCode.INVALID_PARAMS, "filter must be a JSON object", operation="list",
                                  details={"field": "filter"}) from None
            if not isinstance(flt, dict):
                raise MemoryError(ErrorCode.INVALID_PARAMS, "filter must be a JSON object", operation="list",
                                  details={"field": "filter"})
        if tag:
            flt = dict(flt or {})
            flt["tags"] = list(tag)
        return memory.list(ctx, layer, {k: v for k, v in ids.items() if v is not None}, cursor, limit, flt)

    @r.get("/memories/{memory_id}", response_model=MemoryEntry, responses=responses(*COMMON, 404), name="get")
    def get_memory(memory_id: MemoryId, memory: MemoryDep, ctx: ReaderDep) -> MemoryEntry:
        entry = memory.get(ctx, memory_id)
        if entry is None:
            raise _not_found(memory_id, "get")
        return entry

    @r.patch("/memories/{memory_id}", response_model=UpdateMemoryOutput, responses=responses(*COMMON, 404, 409),
             name="update")
    def update_memory(memory_id: MemoryId, body: UpdateMemoryRequest, request: Request, memory: MemoryDep,
                      ctx: WriterDep, if_match: IfMatch = None) -> UpdateMemoryOutput:
        check_body_tenant(request, memory, ctx, body.tenant_id, "update")
        return memory.update(ctx, memory_id, body.content, body.metadata, body.if_match or if_match,
                             expires_at=body.expires_at, tier=body.tier, record_conflict=False)

    @r.delete("/memories/{memory_id}", response_model=DeleteMemoryOutput, responses=responses(*COMMON, 409),
              name="delete")
    def delete_memory(memory_id: MemoryId, memory: MemoryDep, ctx: WriterDep,
                      if_match: IfMatch = None) -> DeleteMemoryOutput:
        return memory.delete(ctx, memory_id, if_match)

    return r
