"""The FastAPI application: ``create_app(memory, settings) -> FastAPI``.

Feature routers are built from the shared dependencies of :mod:`stratamem.server.deps`
(``graph_router(get_memory, get_tenant)`` is always included); more can be passed in
``extra_routers`` (or added with ``app.include_router(router)`` on the returned app).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .. import __version__
from ..errors import ErrorCode, MemoryError
from ..lifecycle.runner import ScheduleRunner, maintenance_job, snapshot_job
from ..model import HealthCheckResult
from ..sdk import Memory
from ..telemetry import metrics, observe
from . import console_routes, docs, http_errors, openapi
from .admin_routes import build_admin_router
from .auth import require_role
from .auth_failures import AuthFailures
from .deps import authenticate_request, get_memory, get_tenant
from .graph_routes import graph_router
from .keys import KeyCache
from .keys_routes import build_keys_router
from .operations_routes import build_operations_router
from .ratelimit import build_limiter
from .routes import build_router
from .settings import ServerSettings
from .snapshot_routes import build_snapshot_router

if TYPE_CHECKING:
    from ..lifecycle.runner import Job, ScheduleRunner

log = logging.getLogger("stratamem.server")


def _snapshots_wanted(settings: ServerSettings) -> bool:
    if settings.snapshot_interval is None or settings.snapshots_enabled is False:
        return False
    if settings.snapshots_enabled:
        return True
    return settings.s3_configured()


def build_schedule(memory: Memory, settings: ServerSettings) -> ScheduleRunner | None:
    """The background runner of ``stratamem serve``: maintenance every ``maintenance_interval`` and
    snapshot pushes every ``snapshot_interval`` (when snapshots are enabled); None when neither runs."""

    jobs: list[Job] = []
    at_start = settings.schedule_run_at_start
    if settings.maintenance_interval is not None:
        if settings.access_history_days is not None:  # 0: keep every access event
            memory.lifecycle.config = memory.lifecycle.config.model_copy(
                update={"access_history_days": settings.access_history_days or None}
            )
        jobs.append(
            maintenance_job(memory.lifecycle, settings.maintenance_interval.total_seconds(), run_at_start=at_start)
        )
    if _snapshots_wanted(settings):
        assert settings.snapshot_interval is not None
        manager: Any = getattr(memory, "_snapshots", None)  # one configured by the caller wins
        try:
            if manager is None:
                manager = memory.configure_snapshots(retention=settings.snapshot_retention)
        except MemoryError as exc:
            if settings.snapshots_enabled:
                raise
            log.warning("scheduled snapshots are off: %s", exc.message)
        else:
            jobs.append(snapshot_job(manager, settings.snapshot_interval.total_seconds(), run_at_start=at_start))
    if not jobs:
        return None
    client = None
    cfg = memory.engine.config
    redis_url = settings.redis_url or cfg.redis_url  # the same Redis as the shared rate limiter
    if redis_url:
        import redis  # noqa: PLC0415  redis extra

        client = redis.Redis.from_url(redis_url, socket_timeout=10, socket_connect_timeout=5)
    return ScheduleRunner(
        jobs, redis=client, lock_prefix=settings.redis_prefix or cfg.redis_prefix, lock_ttl=settings.schedule_lock_ttl
    )


class BodySizeLimit:
    """Reject bodies over ``limit`` bytes with 413 CONTENT_TOO_LONG (declared or streamed)."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    def _error(self) -> MemoryError:
        return MemoryError(
            ErrorCode.CONTENT_TOO_LONG,
            f"request body is larger than {self.limit} bytes",
            operation="request",
            details={"max_length": self.limit},
            retryable=False,
        )

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


def create_app(
    memory: Memory,
    settings: ServerSettings | None = None,
    *,
    extra_routers: Sequence[APIRouter] = (),
    tracer_provider: Any = None,
) -> FastAPI:
    settings = settings or ServerSettings()
    engine = memory.engine
    # the same observers an embedded ``Memory.open(observe=True)`` attaches; /metrics below serves them
    observe.install(engine, observe.ObserveConfig(tracer_provider=tracer_provider))

    mcp_app: Any = None
    if settings.mcp_enabled:
        from ..mcp.http import build_http_app  # noqa: PLC0415  server extra (mcp), loaded only when MCP is enabled

        # The MCP SDK's server configures the root logger (INFO, a rich console handler) when it is
        # built; the server keeps the logging its host set up instead: otherwise every audit line of
        # every write is rendered by rich on stderr, in the request path, under one handler lock.
        root = logging.getLogger()
        handlers, level = list(root.handlers), root.level
        try:
            mcp_app = build_http_app(memory, settings)
        finally:
            root.handlers[:] = handlers
            root.setLevel(level)

    runner = build_schedule(memory, settings)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # Load the embedding model and run it once before the server accepts connections (uvicorn
        # binds the socket after this startup), so /health and /ready answer only once a request
        # would not pay for the model's loading, and the first search is as fast as later ones.
        await asyncio.to_thread(engine.embeddings.embedder.warm_up)
        # and the search index: the largest scopes loaded, their HNSW graphs built or read back
        rows = await asyncio.to_thread(engine.provider.warm_search_index, settings.warm_index_timeout)
        log.info("search index warm: %d rows loaded", rows)
        async with contextlib.AsyncExitStack() as stack:
            if mcp_app is not None:
                await stack.enter_async_context(mcp_app.session_manager.run())
            if runner is not None:
                runner.start()
                # on shutdown: wait for a run in progress (off the event loop), before the store closes
                stack.push_async_callback(asyncio.to_thread, runner.stop)
            yield

    app = FastAPI(
        title="stratamem",
        version=__version__,
        description="Layered, multi-tenant semantic memory for AI agents. Every error is "
        "`{code, message, operation, details, retryable}`.",
        lifespan=lifespan,
        docs_url=None,  # served from local assets below: /docs works offline
        redoc_url=None,
    )
    app.state.memory = memory
    app.state.settings = settings
    #: The in-server schedule (None when no job is enabled); started and stopped by the lifespan.
    app.state.schedule = runner
    app.state.limiter = build_limiter(settings, memory)  # shared through Redis when configured
    app.state.auth_failures = AuthFailures(app.state.limiter, settings)
    #: Verified API keys, kept for key_cache_ttl seconds (server/keys.py KeyCache).
    app.state.key_cache = KeyCache(settings.key_cache_ttl)
    http_errors.install(app)
    app.add_middleware(BodySizeLimit, limit=settings.max_body_bytes)

    @app.get(
        "/health",
        response_model=HealthCheckResult,
        tags=["ops"],
        operation_id="getHealth",
        name="health_check",
        responses={503: {"model": HealthCheckResult, "description": "unhealthy"}},
    )
    def health() -> Response:
        """Liveness with the health of each component; 503 when unhealthy. No key needed."""
        result = memory.health_check()
        return JSONResponse(result.to_json_dict(), status_code=503 if result.status == "unhealthy" else 200)

    @app.get("/ready", tags=["ops"], responses=http_errors.responses(503), operation_id="getReadiness")
    def ready() -> dict[str, Any]:
        """Ready to serve: the store is open and reachable (503 otherwise). No key needed."""
        if engine.closed:
            raise MemoryError(ErrorCode.PROVIDER_ERROR, "the store is closed", operation="ready")
        try:
            engine.provider.ping()
        except Exception:
            log.warning("readiness: storage is not reachable", exc_info=True)
            raise MemoryError(ErrorCode.PROVIDER_ERROR, "storage is not reachable", operation="ready") from None
        return {
            "status": "ready",
            "provider": engine.provider.name,
            "schemaVersion": engine.store_info.schema_version,
            "embedder": engine.embeddings.embedder.model_id,
        }

    def tenant_metrics(request: Request) -> Response:
        """The caller's tenant's series (live memories per layer), for that tenant's admin."""
        auth = authenticate_request(request, request.headers.get("authorization"), request.headers.get("x-api-key"))
        require_role(auth.ctx, frozenset({"admin"}), "read the tenant's metrics")
        by_layer = engine.provider.count_by_layer(auth.ctx.tenant_id, engine.now())
        lines = [
            "# HELP stratamem_tenant_memories Live memories of the caller's tenant, per layer.",
            "# TYPE stratamem_tenant_memories gauge",
        ]
        tenant = auth.ctx.tenant_id.replace("\\", "\\\\").replace('"', '\\"')
        lines += [
            f'stratamem_tenant_memories{{tenant="{tenant}",layer="{layer}"}} {n}'
            for layer, n in sorted(by_layer.items())
        ]
        return Response("\n".join(lines) + "\n", media_type=CONTENT_TYPE_LATEST)

    @app.get(
        "/metrics",
        tags=["ops"],
        response_class=Response,
        operation_id="getMetrics",
        responses={200: {"content": {CONTENT_TYPE_LATEST: {}}, "description": "Prometheus text format"}},
    )
    def prometheus_metrics(request: Request) -> Response:
        """Prometheus metrics in the text exposition format: public, or behind `STRATAMEM_METRICS_TOKEN`
        when set (a tenant admin's credential then gets only its tenant's series)."""
        if settings.metrics_token:
            given = request.headers.get("authorization", "")
            if not hmac.compare_digest(given.encode(), f"Bearer {settings.metrics_token}".encode()):
                if given.strip() or request.headers.get("x-api-key"):  # a tenant admin: its own series only
                    return tenant_metrics(request)
                raise MemoryError(
                    ErrorCode.UNAUTHORIZED,
                    "/metrics needs 'Authorization: Bearer <metrics token>' "
                    "(or a tenant admin's credential for that tenant's series)",
                    operation="metrics",
                )
        try:
            metrics.refresh_storage_size(engine)
        except Exception:  # a scrape must not fail because a count did
            http_errors.log.exception("cannot refresh memory_storage_size")
        try:
            metrics.refresh_store_memory(engine)
        except Exception:
            http_errors.log.exception("cannot refresh stratamem_store_memory_bytes")
        return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)

    docs.install(app)
    console_routes.install(app)
    openapi.install(
        app,
        lambda: {
            "max_content_length": engine.max_content_length,
            "max_query_chars": engine.embeddings.embedder.max_query_chars,
            "max_search_limit": engine.config.max_search_limit,
            "max_list_limit": engine.config.max_list_limit,
            "max_bulk_items": settings.max_bulk_items,
        },
    )
    app.include_router(build_router())
    app.include_router(build_keys_router())
    app.include_router(build_operations_router())
    app.include_router(build_snapshot_router())
    app.include_router(build_admin_router())
    app.include_router(graph_router(get_memory, get_tenant))
    app.include_router(console_routes.build_console_router())
    for router in extra_routers:
        app.include_router(router)

    if mcp_app is not None:
        app.router.routes.append(mcp_app.route)

    return app
