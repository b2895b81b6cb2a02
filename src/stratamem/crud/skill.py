"""The ``memory_crud`` skill for agents: one entry point over the engine.

Request: ``action`` (create|read|update|delete|list|promote), ``scope`` (agent|team|global, default
agent → layers agent/team/company), ``namespace`` (that layer's identifier: agentId, teamId,
companyId; required for team/global, defaults to the principal for agent), ``layer``
(working|session|long_term|meta, stored as the entry's ``tier`` and mirrored in ``metadata.tier``),
``items`` (≤ 10), ``filters``, ``cursor``, ``limit`` (default 25, max 100), ``if_match``.

Response: ``{items, next_cursor, has_more, errors: [{code, message, details}]}`` with stable codes
INVALID_PARAMS, FORBIDDEN, NOT_FOUND, CONFLICT, RATE_LIMITED (other engine codes are mapped to
INVALID_PARAMS for bad input; ``details.cause`` keeps the engine code). Bulk actions process each
item and report per-item errors with ``details.index``. Only principals holding a privileged role
write ``global``; an agent scope other than the caller's own needs a privileged role too. Every
action is audited (``memory_crud.<action>``), denials included.

Calls are rate-limited per (tenant, principal) and per tenant (``MemoryConfig.crud_rate_limit_*``,
off by default; shared through Redis when ``redis_url`` is set): a refused call does nothing and
returns one RATE_LIMITED error with ``details.retry_after_ms`` (plus ``retry_after`` in seconds and
``scope``, the exhausted budget: principal or tenant).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..coordination.ratelimit import Bucket, RateLimit
from ..errors import ErrorCode, MemoryError
from ..model import Layer, LayerIdentifiers, MemoryEntry, TenantContext
from ..query import UNSET

if TYPE_CHECKING:
    from ..engine import MemoryEngine
    from ..lifecycle.manager import Lifecycle

MAX_ITEMS = 10
DEFAULT_LIMIT = 25
MAX_LIMIT = 100
#: Roles allowed to write the global scope (only system-level agents; others read it).
PRIVILEGED_ROLES: frozenset[str] = frozenset({"sys4", "admin", "system"})

CrudAction = Literal["create", "read", "update", "delete", "list", "promote"]
CrudScope = Literal["agent", "team", "global"]
CrudLayer = Literal["working", "session", "long_term", "meta"]
CrudCode = Literal["INVALID_PARAMS", "FORBIDDEN", "NOT_FOUND", "CONFLICT", "RATE_LIMITED", "PROVIDER_ERROR"]

SCOPE_LAYER: dict[str, Layer] = {"agent": Layer.AGENT, "team": Layer.TEAM, "global": Layer.COMPANY}
LAYER_SCOPE: dict[Layer, str] = {v: k for k, v in SCOPE_LAYER.items()}
_NAMESPACE_FIELD: dict[str, str] = {"agent": "agent_id", "team": "team_id", "global": "company_id"}


class CrudItem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str | None = None
    content: str | None = None
    metadata: dict[str, Any] | None = None
    tags: list[str] | None = None
    expires_at: str | None = None
    if_match: str | None = None
    #: promote: the target scope (team|global) and its namespace.
    target_scope: CrudScope | None = None
    target_namespace: str | None = None


class MemoryCrudRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    action: CrudAction
    scope: CrudScope = "agent"
    namespace: str | None = None
    layer: CrudLayer | None = None
    items: list[CrudItem] = Field(default_factory=list, max_length=MAX_ITEMS)
    filters: dict[str, Any] | None = None
    cursor: str | None = None
    limit: int = Field(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT)
    if_match: str | None = None
    #: Owner of agent-scope entries (the agent layer needs agentId + userId); default: the principal.
    user_id: str | None = None


class CrudError(BaseModel):
    code: CrudCode
    message: str
    details: dict[str, Any] = Field(default_factory=dict)


class MemoryCrudResponse(BaseModel):
    items: list[dict[str, Any]] = Field(default_factory=list)
    next_cursor: str | None = None
    has_more: bool = False
    errors: list[CrudError] = Field(default_factory=list)


class _Denied(Exception):
    def __init__(self, code: CrudCode, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.error = CrudError(code=code, message=message, details=details or {})


def _map_error(exc: MemoryError, index: int | None = None) -> CrudError:
    code: CrudCode
    if exc.code == ErrorCode.MEMORY_NOT_FOUND:
        code = "NOT_FOUND"
    elif exc.code == ErrorCode.CONFLICT:
        code = "CONFLICT"
    elif exc.code in (ErrorCode.FORBIDDEN, ErrorCode.UNAUTHORIZED, ErrorCode.POLICY_VIOLATION):
        code = "FORBIDDEN"
    elif exc.code == ErrorCode.RATE_LIMITED:
        code = "RATE_LIMITED"
    elif exc.code in (ErrorCode.PROVIDER_ERROR, ErrorCode.EMBEDDING_FAILED):
        code = "PROVIDER_ERROR"
    else:
        code = "INVALID_PARAMS"
    details = {k: v for k, v in exc.details.items() if k not in ("current_etag",) or code == "CONFLICT"}
    details["cause"] = exc.code.value
    if index is not None:
        details["index"] = index
    return CrudError(code=code, message=exc.message, details=details)


def entry_to_item(entry: MemoryEntry) -> dict[str, Any]:
    scope = LAYER_SCOPE.get(entry.layer, entry.layer.value)
    ns_field = _NAMESPACE_FIELD.get(scope)
    return {
        "id": entry.id,
        "content": entry.content,
        "scope": scope,
        "namespace": getattr(entry.identifiers, ns_field) if ns_field else None,
        "layer": entry.tier,
        "metadata": entry.metadata,
        "version": entry.version,
        "etag": entry.etag,
        "conflict": entry.provenance.conflict,
        "conflict_of": entry.provenance.conflict_of,
        "importance": entry.importance,
        "created_at": entry.created_at.isoformat(),
        "updated_at": entry.updated_at.isoformat(),
        "expires_at": entry.expires_at.isoformat() if entry.expires_at else None,
        "provenance": entry.provenance.model_dump(mode="json", by_alias=True, exclude_none=True),
    }


class _Handler:
    def __init__(self, engine: MemoryEngine, lifecycle: Lifecycle, ctx: TenantContext, req: MemoryCrudRequest) -> None:
        self.engine = engine
        self.lifecycle = lifecycle
        self.ctx = ctx
        self.req = req
        self.privileged = bool(PRIVILEGED_ROLES.intersection(ctx.roles))

    def identifiers(self, scope: str, namespace: str | None) -> LayerIdentifiers:
        if scope == "agent":
            agent = namespace or self.ctx.principal
            if not agent:
                raise _Denied(
                    "INVALID_PARAMS",
                    "namespace (the agent id) is required when the context has no principal",
                    {"field": "namespace"},
                )
            if agent != self.ctx.principal and not self.privileged:
                raise _Denied("FORBIDDEN", "agent scope is private to its agent", {"scope": scope})
            return LayerIdentifiers(agent_id=agent, user_id=self.req.user_id or self.ctx.principal or agent)
        if not namespace:
            raise _Denied("INVALID_PARAMS", f"namespace is required for scope '{scope}'", {"field": "namespace"})
        return LayerIdentifiers(**{_NAMESPACE_FIELD[scope]: namespace})

    def check_write(self, scope: str) -> None:
        if scope == "global" and not self.privileged:
            raise _Denied(
                "FORBIDDEN",
                "only privileged agents may write the global scope",
                {"scope": scope, "required_roles": sorted(PRIVILEGED_ROLES)},
            )

    def in_scope(self, mid: str | None, ids: LayerIdentifiers, index: int) -> MemoryEntry:
        if not mid:
            raise _Denied("INVALID_PARAMS", "items[].id is required", {"field": "id", "index": index})
        entry = self.engine.get_visible(self.ctx, mid, f"memory_crud.{self.req.action}")
        layer = SCOPE_LAYER[self.req.scope]
        if (
            entry is None
            or entry.layer != layer
            or any(getattr(entry.identifiers, k) != v for k, v in ids.present().items() if k != "user_id")
        ):
            raise _Denied("NOT_FOUND", f"no memory with id {mid!r} in this scope", {"id": mid, "index": index})
        return entry

    def run(self) -> MemoryCrudResponse:
        req = self.req
        ids = self.identifiers(req.scope, req.namespace)
        if req.action in ("create", "update", "delete"):
            self.check_write(req.scope)
        if req.action == "list" or (req.action == "read" and not req.items):
            return self.list(ids)
        if not req.items:
            raise _Denied("INVALID_PARAMS", f"action '{req.action}' needs at least one item", {"field": "items"})
        out = MemoryCrudResponse()
        for index, item in enumerate(req.items):
            try:
                result = getattr(self, req.action)(ids, item, index)
                if result is not None:
                    out.items.append(result)
            except _Denied as exc:
                exc.error.details.setdefault("index", index)
                out.errors.append(exc.error)
            except MemoryError as exc:
                out.errors.append(_map_error(exc, index))
        return out

    def list(self, ids: LayerIdentifiers) -> MemoryCrudResponse:
        flt = dict(self.req.filters or {})
        if self.req.layer is not None:
            flt["tier"] = self.req.layer
        page = self.engine.list(
            self.ctx, SCOPE_LAYER[self.req.scope].value, ids, self.req.cursor, self.req.limit, flt or None
        )
        return MemoryCrudResponse(
            items=[entry_to_item(e) for e in page.memories],
            next_cursor=page.next_cursor,
            has_more=page.next_cursor is not None,
        )

    def create(self, ids: LayerIdentifiers, item: CrudItem, index: int) -> dict[str, Any]:
        if item.content is None:
            raise _Denied("INVALID_PARAMS", "items[].content is required", {"field": "content"})
        metadata = dict(item.metadata or {})
        if item.tags is not None:
            metadata["tags"] = item.tags
        if self.req.layer is not None:
            metadata["tier"] = self.req.layer
        out = self.engine.add(
            self.ctx,
            item.content,
            SCOPE_LAYER[self.req.scope].value,
            ids,
            metadata,
            tier=self.req.layer,
            expires_at=item.expires_at,
            provenance={"agent_id": self.ctx.principal, "source": "memory_crud"},
        )
        return entry_to_item(out.memory)

    def read(self, ids: LayerIdentifiers, item: CrudItem, index: int) -> dict[str, Any]:
        entry = self.in_scope(item.id, ids, index)
        got = self.engine.get(self.ctx, entry.id)  # counts as an access (importance)
        if got is None:
            raise _Denied("NOT_FOUND", f"no memory with id {entry.id!r} in this scope", {"id": entry.id})
        return entry_to_item(got)

    def update(self, ids: LayerIdentifiers, item: CrudItem, index: int) -> dict[str, Any]:
        if item.target_scope is not None or item.target_namespace is not None:
            field = "target_scope" if item.target_scope is not None else "target_namespace"
            raise _Denied(
                "INVALID_PARAMS",
                "the scope of a memory is immutable after creation; use action 'promote' to copy it to a broader scope",
                {"field": field, "reason": "immutable"},
            )
        entry = self.in_scope(item.id, ids, index)
        metadata = dict(item.metadata or {}) if item.metadata is not None or item.tags is not None else None
        if item.tags is not None and metadata is not None:
            metadata["tags"] = item.tags
        if_match = item.if_match or (self.req.if_match if len(self.req.items) == 1 else None)
        # an expires_at given as null clears the expiry; left out, it stays
        expiry: Any = item.expires_at if "expires_at" in item.model_fields_set else UNSET
        out = self.engine.update(
            self.ctx, entry.id, item.content, metadata, if_match, expires_at=expiry, tier=self.req.layer
        )
        return entry_to_item(out.memory)

    def delete(self, ids: LayerIdentifiers, item: CrudItem, index: int) -> dict[str, Any]:
        if not item.id:
            raise _Denied("INVALID_PARAMS", "items[].id is required", {"field": "id"})
        try:
            entry = self.in_scope(item.id, ids, index)
        except _Denied as exc:
            if exc.error.code == "NOT_FOUND":  # delete is idempotent
                return {"id": item.id, "deleted": False}
            raise
        if_match = item.if_match or (self.req.if_match if len(self.req.items) == 1 else None)
        self.engine.delete(self.ctx, entry.id, if_match)
        return {"id": entry.id, "deleted": True}

    def promote(self, ids: LayerIdentifiers, item: CrudItem, index: int) -> dict[str, Any]:
        entry = self.in_scope(item.id, ids, index)
        target = item.target_scope
        if target is None:
            raise _Denied("INVALID_PARAMS", "items[].target_scope is required for promote", {"field": "target_scope"})
        self.check_write(target)
        target_ids = self.identifiers(target, item.target_namespace) if target != "agent" else ids
        promoted = self.lifecycle.promote(
            self.ctx, entry.id, SCOPE_LAYER[target].value, target_ids, content=item.content, tags=item.tags
        )
        return entry_to_item(promoted)


def _rate_limit(engine: MemoryEngine, ctx: TenantContext) -> None:
    cfg = engine.config
    principal = ctx.principal or ""
    decision = engine.crud_limiter.acquire(
        [
            Bucket(
                "principal",
                f"{ctx.tenant_id}\x00{principal}",
                RateLimit(cfg.crud_rate_limit_per_second, cfg.crud_rate_limit_burst),
            ),
            Bucket(
                "tenant",
                ctx.tenant_id,
                RateLimit(cfg.crud_tenant_rate_limit_per_second, cfg.crud_tenant_rate_limit_burst),
            ),
        ]
    )
    if not decision.allowed:
        raise _Denied(
            "RATE_LIMITED",
            f"too many memory_crud calls for this {decision.scope}; retry later",
            {
                "retry_after_ms": decision.retry_after_ms,
                "retry_after": round(decision.retry_after, 3),
                "scope": decision.scope,
            },
        )


def handle_memory_crud(engine: MemoryEngine, lifecycle: Lifecycle, ctx: Any, request: Any) -> MemoryCrudResponse:
    """Run one ``memory_crud`` request; never raises for bad input (errors are in the response)."""
    action = request.get("action") if isinstance(request, Mapping) else getattr(request, "action", None)
    tctx: TenantContext | None = None
    try:
        tctx = engine.check_context(ctx, "memory_crud")
        _rate_limit(engine, tctx)
        req = request if isinstance(request, MemoryCrudRequest) else MemoryCrudRequest.model_validate(request)
        response = _Handler(engine, lifecycle, tctx, req).run()
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err.get("loc", ()))
        response = MemoryCrudResponse(
            errors=[
                CrudError(
                    code="INVALID_PARAMS",
                    message=f"invalid {where or 'request'}: {err.get('msg')}",
                    details={"field": where},
                )
            ]
        )
    except _Denied as exc:
        response = MemoryCrudResponse(errors=[exc.error])
    except MemoryError as exc:
        response = MemoryCrudResponse(errors=[_map_error(exc)])
    codes = [e.code for e in response.errors]
    outcome: Literal["ok", "denied", "error"] = (
        "denied" if {"FORBIDDEN", "RATE_LIMITED"} & set(codes) else "error" if codes and not response.items else "ok"
    )
    engine.audit.record(
        tenant_id=tctx.tenant_id if tctx else getattr(ctx, "tenant_id", None),
        principal=tctx.principal if tctx else None,
        action=f"memory_crud.{action}",
        outcome=outcome,
        code=codes[0] if codes else None,
        memory_ids=[str(i["id"]) for i in response.items if isinstance(i.get("id"), str)],
        layer=SCOPE_LAYER.get(
            str(request.get("scope", "agent")) if isinstance(request, Mapping) else "agent", Layer.AGENT
        ).value,
        details={"items": len(response.items), "errors": codes},
    )
    return response
