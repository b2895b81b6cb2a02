"""MCP server with the official ``mcp`` SDK (``MCPServer``): tools createMemory, searchMemory,
updateMemory, deleteMemory, listMemory with camelCase input schemas; the
``memory_crud`` skill; ``memory_process`` (the write gate, intent none|remember|forget) with
its shortcuts ``remember``/``forget``; ``memory_promote`` and ``close_session`` (lifecycle).

The tenant and the identifiers never come from the model: over stdio they are the command's options
(``stratamem mcp --tenant T --user-id U``); over HTTP (mounted at ``/mcp``) they come from the API key
(or JWT) of the request. Tool errors are MCP tool errors whose text starts with the stratamem code.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import Field
from starlette.requests import Request
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from .. import __version__
from ..crud.skill import CrudAction, CrudError, CrudItem, CrudLayer, CrudScope, MemoryCrudResponse
from ..errors import ErrorCode, MemoryError
from ..layers import get_accessible_layers, parse_identifiers, parse_layer
from ..model import Layer, LayerIdentifiers, MemoryEntry, TenantContext
from ..sdk import Memory
from ..server.auth import WRITE_ROLES
from ..server.deps import authenticate_request
from ..server.http_errors import error_response

Category = Literal["preference", "fact", "context", "instruction"]
Intent = Literal["none", "remember", "forget"]
#: memory_crud actions that write (need a credential that may write).
CRUD_WRITES = frozenset({"create", "update", "delete", "promote"})
AUTH_SCOPE_KEY = "stratamem.auth"


@dataclass(frozen=True)
class Binding:
    """Who the tools act for: tenant, identifiers, and the layer new memories go to."""

    ctx: TenantContext
    identifiers: LayerIdentifiers
    layer: Layer
    can_write: bool = True


def make_binding(ctx: TenantContext, identifiers: Any, layer: str | None = None, *, can_write: bool = True) -> Binding:
    ids = parse_identifiers(identifiers, "mcp")
    if layer is not None:
        target = parse_layer(layer, "mcp")
    else:
        accessible = get_accessible_layers(ids)
        if not accessible:
            raise MemoryError(ErrorCode.MISSING_IDENTIFIER,
                              "the MCP server needs identifiers (e.g. a userId) to know whose memories to use",
                              operation="mcp", details={"identifier": "userId"})
        target = accessible[0]
    return Binding(ctx=ctx, identifiers=ids, layer=target, can_write=can_write)


Resolver = Callable[[Context[Any, Any]], Binding]


def _tool_error(exc: MemoryError) -> ToolError:
    return ToolError(f"{exc.code.value}: {exc.message}")


def _limit(value: float, operation: str) -> int:
    if value != int(value) or not 1 <= value <= 100:
        raise MemoryError(ErrorCode.INVALID_PARAMS, "limit must be a whole number from 1 to 100", operation=operation,
                          details={"field": "limit"})
    return int(value)


def _view(entry: MemoryEntry, score: float | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": entry.id, "content": entry.content, "layer": entry.layer.value,
        "category": entry.metadata.get("category"), "tags": entry.tags,
        "createdAt": entry.created_at.isoformat(), "updatedAt": entry.updated_at.isoformat(),
        "version": entry.version,
    }
    if score is not None:
        out["score"] = score
    if entry.status == "superseded":  # history (includeSuperseded / asOf): say what replaced it
        out["status"] = entry.status
        out["supersededBy"] = entry.provenance.superseded_by
    return out


def build_mcp_server(memory: Memory, resolve: Resolver) -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer("stratamem", version=__version__,
                                       instructions="Long-term memory: search before answering, store durable facts.")

    def binding(context: Context[Any, Any], write: bool = False) -> Binding:
        try:
            b = resolve(context)
            if write and not b.can_write:
                raise MemoryError(ErrorCode.FORBIDDEN, "this credential may not write memories", operation="mcp")
            return b
        except MemoryError as exc:
            raise _tool_error(exc) from None

    @server.tool(name="createMemory",
                 description="Store a new memory. Only call after write decision gate approves.")
    def create_memory(
        content: Annotated[str, Field(description="The formatted memory content")],
        category: Annotated[Category, Field(description="The type of memory")],
        context: Context[Any, Any],
        tags: Annotated[list[str] | None, Field(description="Optional tags for filtering")] = None,
    ) -> dict[str, Any]:
        b = binding(context, write=True)
        try:
            out = memory.add(b.ctx, content, b.layer, b.identifiers,
                             {"category": category, "tags": list(tags or []), "source": {"type": "mcp"}})
        except MemoryError as exc:
            raise _tool_error(exc) from None
        return _view(out.memory)

    @server.tool(name="searchMemory", description="Search for relevant memories by semantic similarity")
    def search_memory(
        query: Annotated[str, Field(description="The search query")],
        context: Context[Any, Any],
        limit: Annotated[float, Field(description="Maximum number of results")] = 5,
        category: Annotated[Category | None, Field(description="Filter by category")] = None,
        includeSuperseded: Annotated[bool, Field(
            description="Also return facts that a newer memory replaced (history)")] = False,
        asOf: Annotated[str | None, Field(
            description="ISO 8601 time: return the facts that were current then")] = None,
    ) -> dict[str, Any]:
        b = binding(context)
        try:
            flt = {"custom": {"category": category}} if category else None
            res = memory.search(b.ctx, query, b.identifiers, limit=_limit(limit, "search"), filter=flt,
                                include_superseded=includeSuperseded, as_of=asOf)
        except MemoryError as exc:
            raise _tool_error(exc) from None
        return {"results": [_view(r.memory, r.score) for r in res.results], "totalCount": res.total_count}

    @server.tool(name="updateMemory", description="Update an existing memory with new information")
    def update_memory(
        id: Annotated[str, Field(description="The memory ID to update")],
        content: Annotated[str, Field(description="The new memory content")],
        context: Context[Any, Any],
    ) -> dict[str, Any]:
        b = binding(context, write=True)
        try:
            out = memory.update(b.ctx, id, content)
        except MemoryError as exc:
            raise _tool_error(exc) from None
        return _view(out.memory)

    @server.tool(name="deleteMemory", description="Delete a memory by ID")
    def delete_memory(
        id: Annotated[str, Field(description="The memory ID to delete")],
        context: Context[Any, Any],
    ) -> dict[str, Any]:
        b = binding(context, write=True)
        try:
            existed = memory.get(b.ctx, id) is not None
            memory.delete(b.ctx, id)
        except MemoryError as exc:
            raise _tool_error(exc) from None
        return {"success": True, "deleted": existed}

    @server.tool(name="listMemory", description="List all stored memories for debugging")
    def list_memory(
        context: Context[Any, Any],
        limit: Annotated[float, Field(description="Maximum number of results")] = 20,
        category: Annotated[Category | None, Field(description="Filter by category")] = None,
    ) -> dict[str, Any]:
        b = binding(context)
        try:
            flt = {"custom": {"category": category}} if category else None
            res = memory.list(b.ctx, b.layer, b.identifiers, limit=_limit(limit, "list"), filter=flt)
        except MemoryError as exc:
            raise _tool_error(exc) from None
        return {"memories": [_view(e) for e in res.memories], "totalCount": res.total_count}

    # -- the memory_crud skill ----------------------------------------------------------------------
    @server.tool(name="memory_crud",
                 description="One entry point for memory CRUD (seed memory_crud skill): action create|read|update|"
                             "delete|list|promote on scope agent|team|global; errors are returned in 'errors'.")
    def memory_crud(
        action: Annotated[CrudAction, Field(description="What to do")],
        context: Context[Any, Any],
        scope: Annotated[CrudScope, Field(description="agent (default), team or global")] = "agent",
        namespace: Annotated[str | None, Field(description="Identifier of the scope (agent id, team id, "
                                                           "company id); agent defaults to the caller")] = None,
        layer: Annotated[CrudLayer | None, Field(description="working|session|long_term|meta")] = None,
        items: Annotated[list[CrudItem] | None, Field(description="Up to 10 items (id, content, metadata, tags, "
                                                                  "expires_at, if_match, target_scope, "
                                                                  "target_namespace)")] = None,
        filters: Annotated[dict[str, Any] | None, Field(description="Metadata filter for list")] = None,
        cursor: Annotated[str | None, Field(description="Opaque cursor from a previous list")] = None,
        limit: Annotated[int, Field(description="Page size for list (1-100)")] = 25,
        if_match: Annotated[str | None, Field(description="Etag for a single-item update/delete")] = None,
    ) -> dict[str, Any]:
        b = binding(context)
        if action in CRUD_WRITES and not b.can_write:
            memory.engine.audit.record(tenant_id=b.ctx.tenant_id, principal=b.ctx.principal,
                                       action=f"memory_crud.{action}", outcome="denied",
                                       code=ErrorCode.FORBIDDEN.value, details={"reason": "read-only credential"})
            denied = CrudError(code="FORBIDDEN", message="this credential may not write memories",
                               details={"action": action})
            return MemoryCrudResponse(errors=[denied]).model_dump(mode="json")
        request: dict[str, Any] = {"action": action, "scope": scope, "namespace": namespace, "layer": layer,
                                   "items": [i.model_dump(exclude_none=True) for i in items or []],
                                   "filters": filters, "cursor": cursor, "limit": limit, "if_match": if_match}
        if b.identifiers.user_id:  # the owner of agent-scope entries comes from the binding, not the model
            request["user_id"] = b.identifiers.user_id
        res = memory.crud(b.ctx, {k: v for k, v in request.items() if v is not None})
        return dict(res.model_dump(mode="json"))

    # -- write gate, remember / forget -------------------------------------------------------------
    def process(context: Context[Any, Any], text: str, intent: Intent,
                recent_messages: list[str] | None = None) -> dict[str, Any]:
        b = binding(context, write=True)
        try:
            out = memory.process(b.ctx, text, intent, b.identifiers, recent_messages, layer=b.layer)
        except MemoryError as exc:
            raise _tool_error(exc) from None
        return dict(out.model_dump(mode="json", exclude_none=True))

    @server.tool(name="memory_process",
                 description="Let the memory decide: store a durable fact (deduplicated, reformatted), update a "
                             "duplicate, ignore noise, or with intent 'forget' delete every matching memory.")
    def memory_process(
        text: Annotated[str, Field(description="What the user said or the fact to consider")],
        context: Context[Any, Any],
        intent: Annotated[Intent, Field(description="none (let the gate decide), remember or forget")] = "none",
        recent_messages: Annotated[list[str] | None, Field(description="Recent conversation turns")] = None,
    ) -> dict[str, Any]:
        return process(context, text, intent, recent_messages)

    @server.tool(name="remember", description="The user explicitly asked to remember this: store it (unless unsafe)")
    def remember(text: Annotated[str, Field(description="What to remember")],
                 context: Context[Any, Any]) -> dict[str, Any]:
        return process(context, text, "remember")

    @server.tool(name="forget", description="The user explicitly asked to forget this: delete every matching memory")
    def forget(text: Annotated[str, Field(description="What to forget")],
               context: Context[Any, Any]) -> dict[str, Any]:
        return process(context, text, "forget")

    # -- lifecycle --------------------------------------------------------------------------------
    @server.tool(name="memory_promote",
                 description="Copy a memory to a broader layer (upward only, e.g. session -> user -> project); "
                             "PII is redacted and the copy links back with promotedFromId")
    def memory_promote(
        id: Annotated[str, Field(description="The memory ID to promote")],
        target_layer: Annotated[str, Field(description="user, project, team, org, company (or workspace/global)")],
        context: Context[Any, Any],
        delete_original: Annotated[bool, Field(description="Delete the source after promotion")] = False,
    ) -> dict[str, Any]:
        b = binding(context, write=True)
        try:
            source = memory.engine.provider.get(b.ctx.tenant_id, id, memory.engine.now()) if id else None
            if source is None or not _owned(source, b.identifiers):  # another user's memory looks missing
                raise MemoryError(ErrorCode.MEMORY_NOT_FOUND, f"no memory with id {id!r}", operation="promote",
                                  details={"id": id})
            out = memory.promote(b.ctx, id, target_layer, b.identifiers, delete_original=delete_original)
        except MemoryError as exc:
            raise _tool_error(exc) from None
        view = _view(out)
        view["promotedFromId"] = out.provenance.promoted_from_id
        return view

    @server.tool(name="close_session",
                 description="End a session: promote its important memories (importance >= 0.8) to the project "
                             "or user layer and let the session's memories expire")
    def close_session(
        context: Context[Any, Any],
        session_id: Annotated[str | None, Field(description="Session to close (default: the bound one)")] = None,
    ) -> dict[str, Any]:
        b = binding(context, write=True)
        try:
            sid = session_id or b.identifiers.session_id
            if not b.identifiers.user_id or not sid:
                raise MemoryError(ErrorCode.MISSING_IDENTIFIER, "close_session needs a userId (from the credential) "
                                  "and a session_id", operation="close_session",
                                  details={"identifier": "userId" if not b.identifiers.user_id else "sessionId"})
            out = memory.close_session(b.ctx, b.identifiers.user_id, sid, b.identifiers.project_id)
        except MemoryError as exc:
            raise _tool_error(exc) from None
        return dict(out.model_dump(mode="json"))

    return server


def _owned(entry: MemoryEntry, identifiers: LayerIdentifiers) -> bool:
    """The entry's scope identifiers are all the caller's (a bound userId may act on its own scopes)."""
    mine = identifiers.present()
    return all(mine.get(k) == v for k, v in entry.identifiers.present().items())


# ------------------------------------------------------------------------------------------ stdio
def run_stdio(memory: Memory, binding: Binding) -> None:
    build_mcp_server(memory, lambda _ctx: binding).run("stdio")


# ------------------------------------------------------------------------------------------ HTTP
def _http_binding(context: Context[Any, Any]) -> Binding:
    request = context.request_context.request
    auth = getattr(request, "scope", {}).get(AUTH_SCOPE_KEY) if request is not None else None
    if auth is None:
        raise MemoryError(ErrorCode.MISSING_TENANT_CONTEXT, "no credentials on this MCP request", operation="mcp")
    if not auth.identifiers:
        raise MemoryError(ErrorCode.MISSING_IDENTIFIER,
                          "this credential carries no identifiers; create the key with e.g. --user-id",
                          operation="mcp", details={"identifier": "userId"})

    return make_binding(auth.ctx, auth.identifiers, can_write=any(auth.ctx.has_role(r) for r in WRITE_ROLES))


class _Authenticated:
    """ASGI wrapper: authenticate (API key/JWT, rate limit) before the MCP transport sees the request."""

    def __init__(self, inner: StreamableHTTPASGIApp) -> None:
        self.inner = inner

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        try:
            result = authenticate_request(request, request.headers.get("authorization"),
                                          request.headers.get("x-api-key"))
        except MemoryError as exc:
            await error_response(exc)(scope, receive, send)
            return
        scope[AUTH_SCOPE_KEY] = result
        await self.inner(scope, receive, send)


@dataclass
class HttpMcp:
    session_manager: StreamableHTTPSessionManager
    route: Route


def build_http_app(memory: Memory, settings: Any) -> HttpMcp:
    server = build_mcp_server(memory, _http_binding)
    local = settings.host in ("127.0.0.1", "localhost", "::1")
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=local,
        allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"] if local else [],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"] if local else [],
    )
    server.streamable_http_app(streamable_http_path="/mcp", transport_security=security, host=settings.host)
    manager = server.session_manager
    endpoint = _Authenticated(StreamableHTTPASGIApp(manager))
    return HttpMcp(session_manager=manager, route=Route("/mcp", endpoint=endpoint))
