"""The MCP server over streamable HTTP, mounted at ``/mcp`` of the REST server: each request is
authenticated with its API key or JWT (and rate limited) before the MCP transport sees it, and the
tools act for the tenant and identifiers of that credential."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver import Context
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from ..errors import ErrorCode, MemoryError
from ..server.auth import WRITE_ROLES
from ..server.deps import authenticate_request
from ..server.http_errors import error_response
from .server import Binding, build_mcp_server, make_binding

if TYPE_CHECKING:
    from ..sdk import Memory

AUTH_SCOPE_KEY = "stratamem.auth"


def _http_binding(context: Context[Any, Any]) -> Binding:
    request = context.request_context.request
    auth = getattr(request, "scope", {}).get(AUTH_SCOPE_KEY) if request is not None else None
    if auth is None:
        raise MemoryError(ErrorCode.MISSING_TENANT_CONTEXT, "no credentials on this MCP request", operation="mcp")
    if not auth.identifiers:
        raise MemoryError(
            ErrorCode.MISSING_IDENTIFIER,
            "this credential carries no identifiers; create the key with e.g. --user-id",
            operation="mcp",
            details={"identifier": "userId"},
        )

    return make_binding(auth.ctx, auth.identifiers, can_write=any(auth.ctx.has_role(r) for r in WRITE_ROLES))


class _Authenticated:
    """ASGI wrapper: authenticate (API key/JWT, rate limit) before the MCP transport sees the request."""

    def __init__(self, inner: StreamableHTTPASGIApp) -> None:
        self.inner = inner

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        try:
            result = authenticate_request(
                request, request.headers.get("authorization"), request.headers.get("x-api-key")
            )
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
    server = build_mcp_server(lambda: memory, _http_binding)
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
