"""REST routes under /v1. Handlers only translate HTTP ↔ the SDK; JSON is camelCase."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Header, Path, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from ..errors import ErrorCode, MemoryError
from ..model import (
    AddMemoryOutput,
    BulkAddOutput,
    BulkDeleteOutput,
    DeleteMemoryOutput,
    Layer,
    LayerIdentifiers,
    ListMemoriesOutput,
    MemoryEntry,
    MetadataFilter,
    Provenance,
    SearchMemoryOutput,
    TenantContext,
    UpdateMemoryOutput,
)
from ..query import UNSET
from .deps import MemoryDep, ReaderDep, WriterDep
from .http_errors import COMMON, responses

#: A layer name: documented as an enum; any other string is answered by the store with 400 INVALID_LAYER.
#: The schema lists the layers; the parser also takes other APIs' scope names (``workspace``, see
#: ``stratamem.scopes``), kept out of the enum so answers and inputs document one vocabulary.
LayerName = Annotated[str, Field(max_length=32, json_schema_extra={"enum": [x.value for x in Layer]})]


class _Body(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    #: Optional; when given it must be the credential's own tenant (a request cannot switch tenants).
    tenant_id: str | None = Field(None, max_length=128)


class CreateMemoryRequest(_Body):
    content: str = Field(max_length=1_000_000)
    layer: LayerName
    identifiers: LayerIdentifiers = Field(default_factory=LayerIdentifiers)
    metadata: dict[str, Any] = Field(default_factory=dict)
    tier: str | None = Field(None, max_length=64)
    expires_at: datetime | None = None
    importance: float | None = None
    provenance: Provenance | None = None
    supersedes: list[Annotated[str, Field(max_length=256)]] | None = Field(None, max_length=100)


class BulkCreateRequest(_Body):
    items: list[CreateMemoryRequest]


class BulkDeleteRequest(_Body):
    ids: list[Annotated[str, Field(max_length=256)]]


class SearchRequest(_Body):
    query: str = Field(max_length=100_000)
    identifiers: LayerIdentifiers = Field(default_factory=LayerIdentifiers)
    layers: list[LayerName] | None = None
    limit: int | None = None
    threshold: float | None = None
    filter: MetadataFilter | None = None
    #: Per-search overrides of MemoryConfig.hybrid_weight / recency_boost / importance_boost (0..1).
    hybrid_weight: float | None = None
    recency_boost: float | None = None
    importance_boost: float | None = None
    include_superseded: bool = False
    as_of: datetime | None = None
    order: Literal["relevance", "newest", "oldest"] | None = None
    since: datetime | None = None
    until: datetime | None = None
    time_field: Literal["created", "updated"] | None = None
    tags_match: Literal["any", "all"] | None = None
    include_narrower: bool = False


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
    memory.engine.audit.record(
        tenant_id=ctx.tenant_id,
        principal=ctx.principal,
        action=action,
        outcome="denied",
        code=ErrorCode.FORBIDDEN.value,
        cross_tenant=True,
        details={"path": request.url.path, "reason": "body names another tenant"},
    )
    raise MemoryError(
        ErrorCode.FORBIDDEN,
        "a request may only address the tenant of its credential",
        operation=action,
        details={"field": "tenantId"},
    )


def _not_found(memory_id: str, operation: str) -> MemoryError:
    return MemoryError(
        ErrorCode.MEMORY_NOT_FOUND,
        f"no memory with id {memory_id!r}",
        operation=operation,
        details={"id": memory_id},
        retryable=False,
    )


MemoryId = Annotated[str, Path(min_length=1, max_length=256, description="Memory id")]
IfMatch = Annotated[str | None, Header(alias="If-Match", max_length=1024)]

#: The ETag response header of a memory (its etag, quoted as RFC 7232 writes entity tags).
ETAG_HEADER = {
    "ETag": {
        "description": 'Entity tag of the returned version, e.g. `"c261a1ab8fd49856ed8f"`.',
        "schema": {"type": "string"},
    }
}


def quoted_etag(etag: str) -> str:
    return f'"{etag}"'


def if_match_tags(value: str | None) -> list[str] | None:
    """The entity tags of an ``If-Match`` value: ``"tag"``, weak ``W/"tag"``, a bare tag (as earlier
    clients send it) or a comma-separated list of those; None for no header or ``*`` (any version)."""
    if value is None or value.strip() in ("", "*"):
        return None
    tags: list[str] = []
    for part in value.split(","):
        tag = part.strip()
        if tag.startswith(("W/", "w/")):
            tag = tag[2:].strip()
        if len(tag) >= 2 and tag[0] == tag[-1] == '"':
            tag = tag[1:-1]
        if tag:
            tags.append(tag)
    return tags or None


def expected_etag(memory: Any, ctx: TenantContext, memory_id: str, value: str | None) -> str | None:
    """The one etag to hand to the store: the only one given, or of several the current one (the
    store still compares it atomically, so a change in between is a CONFLICT)."""
    tags = if_match_tags(value)
    if tags is None:
        return None
    if len(tags) > 1:
        current = memory.get(ctx, memory_id)
        if current is not None and current.etag in tags:
            return str(current.etag)
    return tags[0]


def _item(body: CreateMemoryRequest) -> dict[str, Any]:
    return body.model_dump(exclude={"tenant_id"})


def json_response(model: BaseModel, status_code: int = 200) -> Response:
    """``model`` as JSON, the body FastAPI's ``response_model`` would give (by alias, JSON mode).

    Returning a model makes FastAPI dump it, validate the dump against the response model again (on
    a worker thread, for a plain ``def`` route) and encode it a third time; the add and search routes,
    the request path under load, return the engine's already validated output serialised once.
    """
    return Response(model.model_dump_json(by_alias=True), status_code=status_code, media_type="application/json")


def build_router() -> APIRouter:
    r = APIRouter(prefix="/v1", tags=["memories"])

    @r.post(
        "/memories",
        status_code=201,
        response_model=AddMemoryOutput,
        responses=responses(*COMMON, 413),
        name="add",
        operation_id="createMemory",
    )
    def create_memory(body: CreateMemoryRequest, request: Request, memory: MemoryDep, ctx: WriterDep) -> Response:
        """Store one memory in a layer; the identifiers the layer needs are required (e.g. `userId`
        for `user`). Needs a writer key."""
        check_body_tenant(request, memory, ctx, body.tenant_id, "add")
        added = memory.add(
            ctx,
            body.content,
            layer=body.layer,
            identifiers=body.identifiers,
            metadata=body.metadata,
            tier=body.tier,
            expires_at=body.expires_at,
            importance=body.importance,
            provenance=body.provenance,
            supersedes=body.supersedes,
        )
        return json_response(added, status_code=201)

    @r.post(
        "/memories/bulk",
        status_code=201,
        response_model=BulkAddOutput,
        responses=responses(*COMMON, 413),
        name="bulk_add",
        operation_id="bulkCreateMemories",
    )
    def bulk_create(body: BulkCreateRequest, request: Request, memory: MemoryDep, ctx: WriterDep) -> BulkAddOutput:
        """Store several memories in one request (all or none; an error names the item's index)."""
        check_body_tenant(request, memory, ctx, body.tenant_id, "bulk_add")
        for item in body.items:
            check_body_tenant(request, memory, ctx, item.tenant_id, "bulk_add")
        cap = request.app.state.settings.max_bulk_items
        if len(body.items) > cap:
            raise MemoryError(
                ErrorCode.INVALID_PARAMS,
                f"at most {cap} items per bulk request (got {len(body.items)})",
                operation="bulk_add",
                details={"max_items": cap},
            )
        return memory.bulk_add(ctx, [_item(i) for i in body.items])

    @r.post(
        "/memories/bulk-delete",
        response_model=BulkDeleteOutput,
        responses=responses(*COMMON),
        name="bulk_delete",
        operation_id="bulkDeleteMemories",
    )
    def bulk_delete(body: BulkDeleteRequest, request: Request, memory: MemoryDep, ctx: WriterDep) -> BulkDeleteOutput:
        """Delete several memories by id (idempotent: unknown ids count as not deleted)."""
        check_body_tenant(request, memory, ctx, body.tenant_id, "bulk_delete")
        cap = request.app.state.settings.max_bulk_items
        if len(body.ids) > cap:
            raise MemoryError(
                ErrorCode.INVALID_PARAMS,
                f"at most {cap} ids per bulk request (got {len(body.ids)})",
                operation="bulk_delete",
                details={"max_items": cap},
            )
        return memory.bulk_delete(ctx, body.ids)

    @r.post(
        "/memories/search",
        response_model=SearchMemoryOutput,
        responses=responses(*COMMON),
        name="search",
        operation_id="searchMemories",
    )
    def search(body: SearchRequest, request: Request, memory: MemoryDep, ctx: ReaderDep) -> Response:
        """Semantic (hybrid dense + lexical) search across every layer the identifiers reach, most
        specific layer first; results below `threshold` are dropped."""
        check_body_tenant(request, memory, ctx, body.tenant_id, "search")
        found = memory.search(
            ctx,
            body.query,
            identifiers=body.identifiers,
            layers=body.layers,
            limit=body.limit,
            threshold=body.threshold,
            filter=body.filter,
            hybrid_weight=body.hybrid_weight,
            recency_boost=body.recency_boost,
            importance_boost=body.importance_boost,
            include_superseded=body.include_superseded,
            as_of=body.as_of,
            order=body.order,
            since=body.since,
            until=body.until,
            time_field=body.time_field,
            tags_match=body.tags_match,
            include_narrower=body.include_narrower,
        )
        return json_response(found)

    @r.get(
        "/memories",
        response_model=ListMemoriesOutput,
        responses=responses(*COMMON),
        name="list",
        operation_id="listMemories",
    )
    def list_memories(
        memory: MemoryDep,
        ctx: ReaderDep,
        layer: Annotated[str | None, Query(max_length=32, json_schema_extra={"enum": [x.value for x in Layer]})] = None,
        cursor: Annotated[str | None, Query(max_length=2048)] = None,
        limit: Annotated[int | None, Query()] = None,
        tag: Annotated[list[str] | None, Query(description="Match any of these tags (repeatable)")] = None,
        filter: Annotated[str | None, Query(max_length=8192, description="MetadataFilter as JSON")] = None,
        agent_id: Annotated[str | None, Query(alias="agentId", max_length=256)] = None,
        user_id: Annotated[str | None, Query(alias="userId", max_length=256)] = None,
        session_id: Annotated[str | None, Query(alias="sessionId", max_length=256)] = None,
        project_id: Annotated[str | None, Query(alias="projectId", max_length=256)] = None,
        workspace_id: Annotated[str | None, Query(alias="workspaceId", max_length=256)] = None,
        team_id: Annotated[str | None, Query(alias="teamId", max_length=256)] = None,
        org_id: Annotated[str | None, Query(alias="orgId", max_length=256)] = None,
        company_id: Annotated[str | None, Query(alias="companyId", max_length=256)] = None,
        object_type: Annotated[str | None, Query(alias="objectType", max_length=256)] = None,
        object_id: Annotated[str | None, Query(alias="objectId", max_length=256)] = None,
        include_superseded: Annotated[bool, Query(alias="includeSuperseded")] = False,
        as_of: Annotated[datetime | None, Query(alias="asOf")] = None,
        order: Annotated[Literal["newest", "oldest"] | None, Query()] = None,
        since: Annotated[datetime | None, Query()] = None,
        until: Annotated[datetime | None, Query()] = None,
        time_field: Annotated[Literal["created", "updated"] | None, Query(alias="timeField")] = None,
        tags_match: Annotated[Literal["any", "all"] | None, Query(alias="tagsMatch")] = None,
        include_narrower: Annotated[bool, Query(alias="includeNarrower")] = False,
        expires_before: Annotated[datetime | None, Query(alias="expiresBefore")] = None,
    ) -> ListMemoriesOutput:
        """One page of memories (oldest first, or `order=newest`), filtered by layer, identifiers,
        tags (`tagsMatch=all` for every tag), metadata, a time window (`since`/`until`) and an
        expiry bound (`expiresBefore`: the memories expiring before it); follow `nextCursor` for
        the next page."""
        ids = {
            "agent_id": agent_id,
            "user_id": user_id,
            "session_id": session_id,
            "project_id": project_id,
            "team_id": team_id,
            "org_id": org_id,
            "company_id": company_id,
            "object_type": object_type,
            "object_id": object_id,
            "workspace_id": workspace_id,
        }
        flt: Any = None
        if filter is not None:
            try:
                flt = json.loads(filter)
            except json.JSONDecodeError:
                raise MemoryError(
                    ErrorCode.INVALID_PARAMS,
                    "filter must be a JSON object",
                    operation="list",
                    details={"field": "filter"},
                ) from None
            if not isinstance(flt, dict):
                raise MemoryError(
                    ErrorCode.INVALID_PARAMS,
                    "filter must be a JSON object",
                    operation="list",
                    details={"field": "filter"},
                )
        if tag:
            flt = dict(flt or {})
            flt["tags"] = list(tag)
        return memory.list(
            ctx,
            layer,
            identifiers={k: v for k, v in ids.items() if v is not None},
            cursor=cursor,
            limit=limit,
            filter=flt,
            include_superseded=include_superseded,
            as_of=as_of,
            order=order,
            since=since,
            until=until,
            time_field=time_field,
            tags_match=tags_match,
            include_narrower=include_narrower,
            expires_before=expires_before,
        )

    @r.get(
        "/memories/{memory_id}",
        response_model=MemoryEntry,
        responses={200: {"description": "The memory", "headers": ETAG_HEADER}, **responses(*COMMON, 404)},
        name="get",
        operation_id="getMemory",
    )
    def get_memory(memory_id: MemoryId, memory: MemoryDep, ctx: ReaderDep, response: Response) -> MemoryEntry:
        """One memory by id; the `ETag` header (and the `etag` field) is its version for `If-Match`."""
        entry = memory.get(ctx, memory_id)
        if entry is None:
            raise _not_found(memory_id, "get")
        response.headers["ETag"] = quoted_etag(entry.etag)
        return entry

    @r.patch(
        "/memories/{memory_id}",
        response_model=UpdateMemoryOutput,
        responses={
            200: {"description": "The updated memory", "headers": ETAG_HEADER},
            **responses(*COMMON, 404, 409, 413),
        },
        name="update",
        operation_id="updateMemory",
    )
    def update_memory(
        memory_id: MemoryId,
        body: UpdateMemoryRequest,
        request: Request,
        memory: MemoryDep,
        ctx: WriterDep,
        response: Response,
        if_match: IfMatch = None,
    ) -> UpdateMemoryOutput:
        """Change content (re-embedded), metadata (merged), expiry or tier. With `If-Match` (or
        `ifMatch`) the update only happens if the memory is still at that version, else 409."""
        check_body_tenant(request, memory, ctx, body.tenant_id, "update")
        expected = expected_etag(memory, ctx, memory_id, body.if_match or if_match)
        # `expiresAt: null` clears the expiry; left out, it stays
        expiry: Any = body.expires_at if "expires_at" in body.model_fields_set else UNSET
        out = memory.update(
            ctx,
            memory_id,
            content=body.content,
            metadata=body.metadata,
            if_match=expected,
            expires_at=expiry,
            tier=body.tier,
            record_conflict=False,
        )
        response.headers["ETag"] = quoted_etag(out.memory.etag)
        return out

    @r.delete(
        "/memories/{memory_id}",
        response_model=DeleteMemoryOutput,
        responses=responses(*COMMON, 409),
        name="delete",
        operation_id="deleteMemory",
    )
    def delete_memory(
        memory_id: MemoryId, memory: MemoryDep, ctx: WriterDep, if_match: IfMatch = None
    ) -> DeleteMemoryOutput:
        """Delete a memory (idempotent: `success` is false when there was none); `If-Match` makes it
        conditional on the version."""
        return memory.delete(ctx, memory_id, if_match=expected_etag(memory, ctx, memory_id, if_match))

    return r
