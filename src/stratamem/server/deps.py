"""FastAPI dependencies shared by every router (ours and other features').

``get_memory(request) -> Memory`` and ``get_tenant(...) -> TenantContext`` are the two a feature
router needs: build it as ``graph_router(get_memory, get_tenant) -> APIRouter`` and pass it to
``create_app(..., extra_routers=[...])``. ``get_tenant`` authenticates (API key or JWT), applies the
per-credential and per-tenant rate limits (``server/ratelimit.py``), and audits every denial.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from ..coordination.ratelimit import LocalRateLimiter, RateLimiter
from ..errors import ErrorCode, MemoryError
from ..model import TenantContext
from ..sdk import Memory
from ..telemetry.metrics import ERRORS
from .auth import READ_ROLES, WRITE_ROLES, AuthResult, authenticate, credential_from_headers, require_role
from .auth_failures import AuthFailures
from .keys import PREFIX as KEY_PREFIX
from .keys import KeyCache
from .ratelimit import check_rate
from .settings import ServerSettings

bearer_scheme = HTTPBearer(auto_error=False, description="API key (smk_…) or signed JWT")
api_key_scheme = APIKeyHeader(name="X-API-Key", auto_error=False, description="API key (smk_…)")


# The dependencies that only read request state are ``async def``: FastAPI runs a plain ``def``
# dependency on a worker thread, one thread hand-off each per request. ``get_auth`` authenticates on
# the event loop only when that touches neither the store nor the network (``authenticates_in_process``): a key's
# first verification reads the store, and the rate limit may ask Redis.


async def get_memory(request: Request) -> Memory:
    memory: Memory = request.app.state.memory
    return memory


async def get_settings(request: Request) -> ServerSettings:
    settings: ServerSettings = request.app.state.settings
    return settings


def _client(request: Request) -> str:
    return request.client.host if request.client else "unknown"


def _audit_denial(
    memory: Memory, request: Request, exc: MemoryError, ctx: TenantContext | None, repeated: int = 0
) -> None:
    ERRORS.labels(code=exc.code.value).inc()  # refused before reaching the engine: still a failed operation
    details: dict[str, object] = {"reason": exc.message, "client": _client(request)}
    if repeated:
        details["repeated"] = repeated
    memory.engine.audit.record(
        tenant_id=ctx.tenant_id if ctx else None,
        principal=ctx.principal if ctx else None,
        action=f"{request.method} {request.url.path}",
        outcome="denied",
        code=exc.code.value,
        details=details,
    )


def authenticate_request(request: Request, authorization: str | None, api_key: str | None) -> AuthResult:
    """Authenticate + rate-limit one request (used by the REST dependencies and the /mcp mount)."""
    memory: Memory = request.app.state.memory
    settings: ServerSettings = request.app.state.settings
    limiter: RateLimiter = request.app.state.limiter
    failures: AuthFailures = request.app.state.auth_failures
    address = _client(request)
    result: AuthResult | None = None
    try:
        failures.check(address)
        result = authenticate(
            credential_from_headers(authorization, api_key),
            memory.engine.provider,
            settings,
            request.app.state.key_cache,
        )
    except MemoryError as exc:
        # unauthenticated: counted per address, audited once per address and window
        refused = exc if exc.code is ErrorCode.RATE_LIMITED else failures.failed(address)
        repeated = failures.audit_due(address)
        if repeated is not None:
            _audit_denial(memory, request, exc, None, repeated)
        raise (refused or exc) from None
    try:
        check_rate(limiter, settings, result)
    except MemoryError as exc:
        _audit_denial(memory, request, exc, result.ctx)
        raise
    request.state.auth = result
    return result


def authenticates_in_process(request: Request, authorization: str | None, api_key: str | None) -> bool:
    """Whether authenticating this request stays in this process's memory: an API key the key cache
    holds fresh (no store read) and the in-process rate limiter (no Redis). A denial then writes its
    audit line like any other (a local append)."""
    if not isinstance(request.app.state.limiter, LocalRateLimiter):
        return False
    try:
        credential = credential_from_headers(authorization, api_key)
    except MemoryError:
        return False
    cache: KeyCache = request.app.state.key_cache
    return credential.startswith(KEY_PREFIX + "_") and cache.holds(credential)


async def get_auth(
    request: Request,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer_scheme)],
    api_key: Annotated[str | None, Depends(api_key_scheme)],
) -> AuthResult:
    cached: AuthResult | None = getattr(request.state, "auth", None)
    if cached is not None:
        return cached
    authorization = request.headers.get("authorization")
    if authenticates_in_process(request, authorization, api_key):
        return authenticate_request(request, authorization, api_key)
    return await run_in_threadpool(authenticate_request, request, authorization, api_key)


async def get_tenant(auth: Annotated[AuthResult, Depends(get_auth)]) -> TenantContext:
    """The caller's tenant context (any role)."""
    return auth.ctx


def _role_dep(allowed: frozenset[str], what: str):  # type: ignore[no-untyped-def]
    async def dep(request: Request, ctx: Annotated[TenantContext, Depends(get_tenant)]) -> TenantContext:
        try:
            require_role(ctx, allowed, what)
        except MemoryError as exc:
            _audit_denial(request.app.state.memory, request, exc, ctx)
            raise
        return ctx

    return dep


get_reader = _role_dep(READ_ROLES, "read memories")
get_writer = _role_dep(WRITE_ROLES, "write memories")

MemoryDep = Annotated[Memory, Depends(get_memory)]
ReaderDep = Annotated[TenantContext, Depends(get_reader)]
WriterDep = Annotated[TenantContext, Depends(get_writer)]
AuthDep = Annotated[AuthResult, Depends(get_auth)]
