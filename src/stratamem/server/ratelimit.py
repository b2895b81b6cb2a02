"""Request rate limits of the REST API and the /mcp mount (per credential and per tenant).

The buckets live in Redis when one is configured (``ServerSettings.redis_url`` or the store's
``MemoryConfig.redis_url``), so every server process pointing at it shares one budget; otherwise in
this process. Algorithm, Redis keys and the behaviour when Redis is unreachable:
:mod:`stratamem.coordination.ratelimit`. A refused request gets 429 RATE_LIMITED with
``details.retry_after`` (seconds) and a ``Retry-After`` header.
"""

from __future__ import annotations

from ..coordination.ratelimit import Bucket, RateLimit, RateLimiter, make_rate_limiter
from ..errors import ErrorCode, MemoryError
from ..sdk import Memory
from .auth import AuthResult
from .settings import ServerSettings


def build_limiter(settings: ServerSettings, memory: Memory) -> RateLimiter:
    cfg = memory.engine.config
    return make_rate_limiter(
        "http", settings.redis_url or cfg.redis_url, prefix=settings.redis_prefix or cfg.redis_prefix
    )


def check_rate(limiter: RateLimiter, settings: ServerSettings, auth: AuthResult) -> None:
    """Take one request from the credential's and the tenant's buckets, or raise RATE_LIMITED."""
    decision = limiter.acquire(
        [
            Bucket("credential", auth.subject, RateLimit(settings.rate_limit_per_second, settings.rate_limit_burst)),
            Bucket(
                "tenant",
                auth.ctx.tenant_id,
                RateLimit(settings.rate_limit_tenant_per_second, settings.rate_limit_tenant_burst),
            ),
        ]
    )
    if not decision.allowed:
        raise MemoryError(
            ErrorCode.RATE_LIMITED,
            f"rate limit exceeded for this {decision.scope}",
            operation="auth",
            details={
                "retry_after": round(decision.retry_after, 3),
                "retry_after_ms": decision.retry_after_ms,
                "scope": decision.scope,
            },
        )
