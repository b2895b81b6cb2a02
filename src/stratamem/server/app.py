"""The FastAPI application: ``create_app(memory, settings) -> FastAPI``.

Feature routers are built from the shared dependencies of :mod:`stratamem.server.deps`
(``graph_router(get_memory, get_tenant)`` is always included); more can be passed in
``extra_routers`` (or added with ``app.include_router(router)`` on the returned app).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import Any

from fastapi import APIRouter, FastAPI
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .. import __version__
from ..errors import ErrorCode, MemoryError
from ..model import HealthCheckResult
from ..sdk import Memory
from ..telemetry import audit_observer, metrics, tracing
from . import http_errors
from .deps import get_memory, get_tenant
from .graph_routes import graph_router
from .keys_routes import build_keys_router
from .ratelimit import build_limiter
from .routes import build_router
from .settings import ServerSettings


class BodySizeLimit:
    """Reject bodies over ``limit`` bytes with 413 CONTENT_TOO_LONG (declared or streamed)."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    def _error(self) -> MemoryError:
        return MemoryError(ErrorCode.CONTENT_TOO_LONG, f"request body is larger than {self.limit} bytes",
                           operation="request", details={"max_length": self.limit}, retryable=False)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None:
            try:
                too_big = int(declared) > self.limit
            except ValueError:
                too_big = False
            if too_big:
                await http_errors.error_response(self._error())(scope, receive, send)
                return
        # Undeclared length (chunked): buffer up to the limit, then replay to the app.
        buffered: list[Message] = []
        seen = 0
        while True:
            message = await receive()
            buffered.append(message)
            if message["type"] != "http.request":
                break
            seen += len(message.get("body", b""))
            if seen > self.limit:
                await http_errors.error_response(self._error())(scope, receive, send)
                return
            if not message.get("more_body", False):
                break

        async def replay() -> Message:
            return buffered.pop(0) if buffered else await receive()

        await self.app(scope, replay, send)


def create_app(memory: Memory, settings: ServerSettings | None = None, *,
               extra_routers: Sequence[APIRouter] = (), tracer_provider: Any = None) -> FastAPI:
    settings = settings or ServerSettings()
    engine = memory.engine
    metrics.install(engine)
    audit_observer.install(engine)
    tracing.install(engine, tracer_provider)

    mcp_app: Any = None
    if settings.mcp_enabled:
        from ..mcp.server import build_http_app

        mcp_app = build_http_app(memory, settings)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if mcp_app is None:
            yield
            return
        async with mcp_app.session_manager.run():
            yield

    app = FastAPI(
        title="stratamem",
        version=__version__,
        description="Layered, multi-tenant semantic memory for AI agents. Every error is "
                    "`{code, message, operation, details, retryable}`.",
        lifespan=lifespan,
    )
    app.state.memory = memory
    app.state.settings = settings
    app.state.limiter = build_limiter(settings, memory)  # shared through Redis when configured
    http_errors.install(app)
    app.add_middleware(BodySizeLimit, limit=settings.max_body_bytes)

    @app.get("/health", response_model=HealthCheckResult, tags=["ops"],
             responses={503: {"model": HealthCheckResult, "description": "unhealthy"}})
    def health() -> Response:
        result = memory.health_check()
        return JSONResponse(result.to_json_dict(), status_code=503 if result.status == "unhealthy" else 200)

    @app.get("/ready", tags=["ops"], responses=http_errors.responses(503))
    def ready() -> dict[str, Any]:
        if engine._closed:
            raise MemoryError(ErrorCode.PROVIDER_ERROR, "the store is closed", operation="ready")
        try:
            engine.provider.ping()
        except Exception as exc:
            raise MemoryError(ErrorCode.PROVIDER_ERROR, f"storage is not reachable: {type(exc).__name__}",
                              operation="ready") from None
        return {"status": "ready", "provider": engine.provider.name, "schemaVersion": engine.store_info.schema_version}

    @app.get("/metrics", tags=["ops"], response_class=Response,
             responses={200: {"content": {CONTENT_TYPE_LATEST: {}}, "description": "Prometheus text format"}})
    def prometheus_metrics() -> Response:
        try:
            metrics.refresh_storage_size(engine)
        except Exception:  # a scrape must not fail because a count did
            http_errors.log.exception("cannot refresh memory_storage_size")
        return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)

    app.include_router(build_router())
    app.include_router(build_keys_router())
    app.include_router(graph_router(get_memory, get_tenant))
    for router in extra_routers:
        app.include_router(router)

    if mcp_app is not None:
        app.router.routes.append(mcp_app.route)

    return app

