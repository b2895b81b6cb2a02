"""MCP server with the official ``mcp`` SDK (``MCPServer``).

Tools (camelCase verb + noun, like the REST operation ids; docs/mcp.md lists them with an example each):

* read: ``searchMemory``, ``listMemory``;
* write: ``createMemory`` (the one way for a model to save a fact it decided to keep),
  ``updateMemory``, ``deleteMemory``; ``remember`` / ``forget`` when the user explicitly asks;
* lifecycle: ``promoteMemory``, ``closeSession``.

Every tool carries MCP annotations (``readOnlyHint``, ``destructiveHint``, ``idempotentHint``,
``openWorldHint``). Earlier names stay as deprecated aliases (``memory_crud``, ``memory_process``,
``memory_promote``, ``close_session``); ``STRATAMEM_MCP_LEGACY_TOOLS=0`` hides them.

The tenant and the identifiers never come from the model: over stdio they are the command's options
(``stratamem mcp --tenant T --user-id U``); over HTTP (mounted at ``/mcp``) they come from the API key
(or JWT) of the request. A failed call is an MCP tool error whose text starts with the stratamem code
(``MEMORY_NOT_FOUND: no memory with id …``) and whose structured content is the error object
(``code``, ``message``, ``operation``, ``details``, ``retryable``); arguments that do not match the
input schema are ``INVALID_PARAMS`` naming the argument.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field, ValidationError

from .. import __version__
from ..crud.skill import CrudAction, CrudError, CrudItem, CrudLayer, CrudScope, MemoryCrudResponse
from ..errors import ErrorCode, MemoryError
from ..layers import get_accessible_layers, parse_identifiers, parse_layer
from ..model import Layer, LayerIdentifiers, MemoryEntry, TenantContext
from ..settings import Settings

if TYPE_CHECKING:
    from ..sdk import Memory

Category = Literal["preference", "fact", "context", "instruction"]
Intent = Literal["none", "remember", "forget"]
#: memory_crud actions that write (need a credential that may write).
CRUD_WRITES = frozenset({"create", "update", "delete", "promote"})


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
            raise MemoryError(
                ErrorCode.MISSING_IDENTIFIER,
                "the MCP server needs identifiers (e.g. a userId) to know whose memories to use",
                operation="mcp",
                details={"identifier": "userId"},
            )
        target = accessible[0]
    return Binding(ctx=ctx, identifiers=ids, layer=target, can_write=can_write)


Resolver = Callable[[Context[Any, Any]], Binding]


class CodedToolError(ToolError):
    """A tool failure carrying the stratamem error it reports."""

    def __init__(self, error: MemoryError) -> None:
        super().__init__(f"{error.code.value}: {error.message}")
        self.error = error


def _tool_error(exc: MemoryError) -> ToolError:
    return CodedToolError(exc)


def _coded(exc: BaseException, tool: str) -> MemoryError | None:
    """The stratamem error behind a failed tool call: ours, or the SDK's argument validation."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, CodedToolError):
            return cause.error
        if isinstance(cause, MemoryError):
            return cause
        if isinstance(cause, ValidationError):
            err = cause.errors()[0]
            name = ".".join(str(p) for p in err.get("loc", ()))
            return MemoryError(
                ErrorCode.INVALID_PARAMS,
                f"{name}: {err.get('msg')}",
                operation=tool,
                details={"field": name},
                retryable=False,
            )
        cause = cause.__cause__
    return None


class _CodedMCPServer(MCPServer[Any]):
    """``MCPServer`` whose failed tool calls answer with the stratamem code first, not the SDK's
    ``Error executing tool <name>:`` prefix, and the error object as structured content."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            error = _coded(exc, name)
            if error is None:
                raise
            return CallToolResult(
                content=[TextContent(type="text", text=f"{error.code.value}: {error.message}")],
                structured_content=error.to_dict(),
                is_error=True,
            )


def _limit(value: int, operation: str) -> int:
    if not 1 <= value <= 100:
        raise MemoryError(
            ErrorCode.INVALID_PARAMS,
            "limit must be a whole number from 1 to 100",
            operation=operation,
            details={"field": "limit"},
        )
    return value


#: MCP tool annotations: what a client may tell its user (or skip confirming) before a call.
READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
CREATE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
CHANGE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False)
REMOVE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False)
#: memory_crud and the write gate may create, change or delete, depending on the request.
MIXED = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False)

#: Deprecated tool name → the tool that replaces it (docs/mcp.md).
DEPRECATED_TOOLS: dict[str, str] = {
    "memory_promote": "promoteMemory",
    "close_session": "closeSession",
    "memory_process": "createMemory, or remember/forget when the user asks",
    "memory_crud": "createMemory, searchMemory, listMemory, updateMemory, deleteMemory and promoteMemory",
}


def legacy_tools_enabled() -> bool:
    """Whether the deprecated tool names are listed (``STRATAMEM_MCP_LEGACY_TOOLS``, default on)."""
    return Settings().mcp_legacy_tools


Since = Annotated[str | None, Field(description="ISO 8601 time: only memories saved at or after it")]
Until = Annotated[str | None, Field(description="ISO 8601 time: only memories saved before it")]
Tags = Annotated[list[str] | None, Field(description="Only memories with these labels")]
TagsMatchArg = Annotated[Literal["any", "all"], Field(description="any (default): one of the labels; all: every one")]


def _mcp_filter(category: str | None, tags: list[str] | None) -> dict[str, Any] | None:
    flt: dict[str, Any] = {}
    if category:
        flt["custom"] = {"category": category}
    if tags:
        flt["tags"] = list(tags)
    return flt or None


def _view(entry: MemoryEntry, score: float | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": entry.id,
        "content": entry.content,
        "layer": entry.layer.value,
        "category": entry.metadata.get("category"),
        "tags": entry.tags,
        "createdAt": entry.created_at.isoformat(),
        "updatedAt": entry.updated_at.isoformat(),
        "version": entry.version,
    }
    if score is not None:
        out["score"] = score
    if entry.expires_at is not None:  # what listMemory's expiresBefore selects on
        out["expiresAt"] = entry.expires_at.isoformat()
    if entry.status == "superseded":  # history (includeSuperseded / asOf): say what replaced it
        out["status"] = entry.status
        out["supersededBy"] = entry.provenance.superseded_by
    return out


INSTRUCTIONS = (
    "Long-term memory of this user. Before answering, call searchMemory with the topic of the question. "
    "When you learn a lasting fact, preference or instruction, save it with createMemory (one short "
    "sentence). When the user asks you to remember or forget something, call remember or forget."
)


def build_mcp_server(
    store: Callable[[], Memory], resolve: Resolver, *, legacy_tools: bool | None = None
) -> MCPServer[Any]:
    """The MCP server and its tools.

    Args:
        store: Returns the open store; it may wait for the store to open (stdio opens it beside the
            handshake) and raise its ``MemoryError``, which the tool call answers with.
        resolve: Who a tool call acts for (the stdio command's options, or the HTTP request's key).
        legacy_tools: List the deprecated tool names (None: ``STRATAMEM_MCP_LEGACY_TOOLS``).
    """
    server: MCPServer[Any] = _CodedMCPServer("stratamem", version=__version__, instructions=INSTRUCTIONS)
    legacy = legacy_tools_enabled() if legacy_tools is None else legacy_tools

    def deprecated(name: str, fn: Callable[..., Any], annotations: ToolAnnotations, description: str) -> None:
        if legacy:
            server.add_tool(
                fn,
                name=name,
                annotations=annotations,
                description=f"Deprecated: use {DEPRECATED_TOOLS[name]}. {description}",
            )

    def binding(context: Context[Any, Any], write: bool = False) -> Binding:
        try:
            b = resolve(context)
            if write and not b.can_write:
                raise MemoryError(ErrorCode.FORBIDDEN, "this credential may not write memories", operation="mcp")
            return b
        except MemoryError as exc:
            raise _tool_error(exc) from None

    def opened() -> Memory:
        try:
            return store()
        except MemoryError as exc:
            raise _tool_error(exc) from None

    @server.tool(
        name="createMemory",
        annotations=CREATE,
        description="Save one lasting fact, preference or instruction about the user, written as a short "
        "sentence (e.g. 'Prefers dark mode in editors'). Use it for things worth knowing in "
        "later conversations, not for small talk. Search first to avoid saving a duplicate; "
        "to change a saved memory use updateMemory.",
    )
    def create_memory(
        content: Annotated[str, Field(description="The memory as one short, self-contained sentence")],
        category: Annotated[Category, Field(description="preference, fact, context or instruction")],
        context: Context[Any, Any],
        tags: Annotated[list[str] | None, Field(description="Optional short labels for filtering, e.g. ['ui']")] = None,
    ) -> dict[str, Any]:
        b = binding(context, write=True)
        try:
            out = store().add(
                b.ctx,
                content,
                layer=b.layer,
                identifiers=b.identifiers,
                metadata={"category": category, "tags": list(tags or []), "source": {"type": "mcp"}},
            )
        except MemoryError as exc:
            raise _tool_error(exc) from None
        return _view(out.memory)

    @server.tool(
        name="searchMemory",
        annotations=READ,
        description="Find saved memories related to a topic, best match first. Call it before answering "
        "anything that may depend on what you know about the user.",
    )
    def search_memory(
        query: Annotated[str, Field(description="What to look for, in plain words")],
        context: Context[Any, Any],
        limit: Annotated[int, Field(description="Maximum number of results (1-100)", ge=1, le=100)] = 5,
        category: Annotated[Category | None, Field(description="Only this kind of memory")] = None,
        includeSuperseded: Annotated[
            bool, Field(description="Also return facts that a newer memory replaced (history)")
        ] = False,
        asOf: Annotated[str | None, Field(description="ISO 8601 time: return the facts that were current then")] = None,
        since: Since = None,
        until: Until = None,
        tags: Tags = None,
        tagsMatch: TagsMatchArg = "any",
    ) -> dict[str, Any]:
        b = binding(context)
        try:
            res = store().search(
                b.ctx,
                query,
                identifiers=b.identifiers,
                limit=_limit(limit, "search"),
                filter=_mcp_filter(category, tags),
                include_superseded=includeSuperseded,
                as_of=asOf,
                since=since,
                until=until,
                tags_match=tagsMatch,
            )
        except MemoryError as exc:
            raise _tool_error(exc) from None
        return {"results": [_view(r.memory, r.score) for r in res.results], "totalCount": res.total_count}

    @server.tool(
        name="updateMemory",
        annotations=CHANGE,
        description="Replace the text of a saved memory when the fact changed (e.g. the user moved). "
        "Take the id from searchMemory or listMemory.",
    )
    def update_memory(
        id: Annotated[str, Field(description="Id of the memory to change")],
        content: Annotated[str, Field(description="The new text, one short sentence")],
        context: Context[Any, Any],
    ) -> dict[str, Any]:
        b = binding(context, write=True)
        try:
            out = store().update(b.ctx, id, content=content)
        except MemoryError as exc:
            raise _tool_error(exc) from None
        return _view(out.memory)

    @server.tool(
        name="deleteMemory",
        annotations=REMOVE,
        description="Delete one saved memory by id (wrong or outdated facts). Deleting a memory that is "
        "already gone does nothing.",
    )
    def delete_memory(
        id: Annotated[str, Field(description="Id of the memory to delete")],
        context: Context[Any, Any],
    ) -> dict[str, Any]:
        b = binding(context, write=True)
        try:
            existed = store().get(b.ctx, id) is not None
            store().delete(b.ctx, id)
        except MemoryError as exc:
            raise _tool_error(exc) from None
        return {"success": True, "deleted": existed}

    @server.tool(
        name="listMemory",
        annotations=READ,
        description="List the saved memories of this user, newest first, without a search query (e.g. "
        "when the user asks what you remember).",
    )
    def list_memory(
        context: Context[Any, Any],
        limit: Annotated[int, Field(description="Maximum number of memories (1-100)", ge=1, le=100)] = 20,
        category: Annotated[Category | None, Field(description="Only this kind of memory")] = None,
        order: Annotated[Literal["newest", "oldest"], Field(description="newest (default) or oldest first")] = "newest",
        since: Since = None,
        until: Until = None,
        tags: Tags = None,
        tagsMatch: TagsMatchArg = "any",
        expiresBefore: Annotated[
            str | None,
            Field(description="ISO 8601 time: only memories set to expire before it (e.g. within a week)"),
        ] = None,
    ) -> dict[str, Any]:
        b = binding(context)
        try:
            res = store().list(
                b.ctx,
                b.layer,
                identifiers=b.identifiers,
                limit=_limit(limit, "list"),
                filter=_mcp_filter(category, tags),
                order=order,
                since=since,
                until=until,
                tags_match=tagsMatch,
                expires_before=expiresBefore,
            )
        except MemoryError as exc:
            raise _tool_error(exc) from None
        return {"memories": [_view(e) for e in res.memories], "totalCount": res.total_count}

    # -- the memory_crud skill ----------------------------------------------------------------------
    def memory_crud(
        action: Annotated[CrudAction, Field(description="What to do")],
        context: Context[Any, Any],
        scope: Annotated[CrudScope, Field(description="agent (default), team or global")] = "agent",
        namespace: Annotated[
            str | None,
            Field(description="Identifier of the scope (agent id, team id, company id); agent defaults to the caller"),
        ] = None,
        layer: Annotated[CrudLayer | None, Field(description="working|session|long_term|meta")] = None,
        items: Annotated[
            list[CrudItem] | None,
            Field(
                description="Up to 10 items (id, content, metadata, tags, "
                "expires_at, if_match, target_scope, "
                "target_namespace)"
            ),
        ] = None,
        filters: Annotated[dict[str, Any] | None, Field(description="Metadata filter for list")] = None,
        cursor: Annotated[str | None, Field(description="Opaque cursor from a previous list")] = None,
        limit: Annotated[int, Field(description="Page size for list (1-100)")] = 25,
        if_match: Annotated[str | None, Field(description="Etag for a single-item update/delete")] = None,
    ) -> dict[str, Any]:
        b = binding(context)
        memory = opened()
        if action in CRUD_WRITES and not b.can_write:
            memory.engine.audit.record(
                tenant_id=b.ctx.tenant_id,
                principal=b.ctx.principal,
                action=f"memory_crud.{action}",
                outcome="denied",
                code=ErrorCode.FORBIDDEN.value,
                details={"reason": "read-only credential"},
            )
            denied = CrudError(
                code="FORBIDDEN", message="this credential may not write memories", details={"action": action}
            )
            return MemoryCrudResponse(errors=[denied]).model_dump(mode="json")
        request: dict[str, Any] = {
            "action": action,
            "scope": scope,
            "namespace": namespace,
            "layer": layer,
            "items": [i.model_dump(exclude_none=True) for i in items or []],
            "filters": filters,
            "cursor": cursor,
            "limit": limit,
            "if_match": if_match,
        }
        if b.identifiers.user_id:  # the owner of agent-scope entries comes from the binding, not the model
            request["user_id"] = b.identifiers.user_id
        res = memory.crud(b.ctx, {k: v for k, v in request.items() if v is not None})
        return dict(res.model_dump(mode="json"))

    deprecated(
        "memory_crud",
        memory_crud,
        MIXED,
        "One request format for create, read, update, delete, list and promote on the agent, team or "
        "global scope; errors are returned in 'errors'.",
    )

    # -- write gate, remember / forget -------------------------------------------------------------
    def process(
        context: Context[Any, Any], text: str, intent: Intent, recent_messages: list[str] | None = None
    ) -> dict[str, Any]:
        b = binding(context, write=True)
        try:
            out = store().process(
                b.ctx, text, intent=intent, identifiers=b.identifiers, recent_messages=recent_messages, layer=b.layer
            )
        except MemoryError as exc:
            raise _tool_error(exc) from None
        return dict(out.model_dump(mode="json", exclude_none=True))

    def memory_process(
        text: Annotated[str, Field(description="What the user said or the fact to consider")],
        context: Context[Any, Any],
        intent: Annotated[Intent, Field(description="none (let the gate decide), remember or forget")] = "none",
        recent_messages: Annotated[list[str] | None, Field(description="Recent conversation turns")] = None,
    ) -> dict[str, Any]:
        return process(context, text, intent, recent_messages)

    deprecated(
        "memory_process",
        memory_process,
        MIXED,
        "Let the memory decide: store a lasting fact (deduplicated, reformatted), update a duplicate, "
        "ignore small talk, or with intent 'forget' delete every matching memory.",
    )

    @server.tool(
        name="remember",
        annotations=CREATE,
        description="The user explicitly asked you to remember something: save it (a near-duplicate is "
        "updated instead, unsafe content such as passwords is refused).",
    )
    def remember(
        text: Annotated[str, Field(description="What the user asked you to remember, in their words")],
        context: Context[Any, Any],
    ) -> dict[str, Any]:
        return process(context, text, "remember")

    @server.tool(
        name="forget",
        annotations=REMOVE,
        description="The user explicitly asked you to forget something: delete every saved memory that "
        "matches it. Use deleteMemory instead to remove one memory you know the id of.",
    )
    def forget(
        text: Annotated[str, Field(description="What the user asked you to forget, in their words")],
        context: Context[Any, Any],
    ) -> dict[str, Any]:
        return process(context, text, "forget")

    # -- lifecycle --------------------------------------------------------------------------------
    def promote(context: Context[Any, Any], id: str, target_layer: str, delete_original: bool) -> dict[str, Any]:
        b = binding(context, write=True)
        try:
            engine = store().engine
            source = engine.provider.get(b.ctx.tenant_id, id, engine.now()) if id else None
            if source is None or not _owned(source, b.identifiers):  # another user's memory looks missing
                raise MemoryError(
                    ErrorCode.MEMORY_NOT_FOUND, f"no memory with id {id!r}", operation="promote", details={"id": id}
                )
            out = store().promote(b.ctx, id, target_layer, identifiers=b.identifiers, delete_original=delete_original)
        except MemoryError as exc:
            raise _tool_error(exc) from None
        view = _view(out)
        view["promotedFromId"] = out.provenance.promoted_from_id
        return view

    promote_text = (
        "Share a memory more widely: copy it from this conversation or user to a broader scope "
        "(user, then project, team, org, company). Personal data is removed from the copy."
    )

    @server.tool(name="promoteMemory", annotations=MIXED, description=promote_text)
    def promote_memory(
        id: Annotated[str, Field(description="Id of the memory to copy")],
        targetLayer: Annotated[str, Field(description="user, project, team, org or company")],
        context: Context[Any, Any],
        deleteOriginal: Annotated[bool, Field(description="Also delete the original (a move)")] = False,
    ) -> dict[str, Any]:
        return promote(context, id, targetLayer, deleteOriginal)

    def memory_promote(
        id: Annotated[str, Field(description="Id of the memory to copy")],
        target_layer: Annotated[str, Field(description="user, project, team, org or company")],
        context: Context[Any, Any],
        delete_original: Annotated[bool, Field(description="Also delete the original (a move)")] = False,
    ) -> dict[str, Any]:
        return promote(context, id, target_layer, delete_original)

    deprecated("memory_promote", memory_promote, MIXED, promote_text)

    def close(context: Context[Any, Any], session_id: str | None) -> dict[str, Any]:
        b = binding(context, write=True)
        try:
            sid = session_id or b.identifiers.session_id
            if not b.identifiers.user_id or not sid:
                raise MemoryError(
                    ErrorCode.MISSING_IDENTIFIER,
                    "close_session needs a userId (from the credential) and a session_id",
                    operation="close_session",
                    details={"identifier": "userId" if not b.identifiers.user_id else "sessionId"},
                )
            out = store().close_session(b.ctx, b.identifiers.user_id, sid, project_id=b.identifiers.project_id)
        except MemoryError as exc:
            raise _tool_error(exc) from None
        return dict(out.model_dump(mode="json"))

    close_text = (
        "The conversation is over: keep its important memories (copied to the user or project) and "
        "let the rest of the conversation's memories expire."
    )

    @server.tool(name="closeSession", annotations=REMOVE, description=close_text)
    def close_session_tool(
        context: Context[Any, Any],
        sessionId: Annotated[str | None, Field(description="Conversation to close (default: this one)")] = None,
    ) -> dict[str, Any]:
        return close(context, sessionId)

    def close_session(
        context: Context[Any, Any],
        session_id: Annotated[str | None, Field(description="Conversation to close (default: this one)")] = None,
    ) -> dict[str, Any]:
        return close(context, session_id)

    deprecated("close_session", close_session, REMOVE, close_text)

    return server


def _owned(entry: MemoryEntry, identifiers: LayerIdentifiers) -> bool:
    """The entry's scope identifiers are all the caller's (a bound userId may act on its own scopes)."""
    mine = identifiers.present()
    return all(mine.get(k) == v for k, v in entry.identifiers.present().items())
