"""Server settings (pydantic-settings): constructor arguments or ``STRATAMEM_*`` environment variables."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class ServerSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="STRATAMEM_", extra="ignore", frozen=True)

    host: str = "127.0.0.1"
    port: int = Field(8080, ge=0, le=65535)
    #: Largest accepted request body; bigger ones get 413 CONTENT_TOO_LONG.
    max_body_bytes: int = Field(1_048_576, ge=1024)
    #: Items per bulk request (REST cap; the SDK allows more).
    max_bulk_items: int = Field(100, ge=1, le=1000)
    #: Token bucket per API key / token subject: sustained requests per second (0 disables) and burst.
    rate_limit_per_second: float = Field(50.0, ge=0.0)
    rate_limit_burst: int = Field(100, ge=1)
    #: Token bucket per tenant (all its credentials together): requests per second (0 disables) and burst.
    rate_limit_tenant_per_second: float = Field(0.0, ge=0.0)
    rate_limit_tenant_burst: int = Field(500, ge=1)
    #: Redis shared by every server process (``STRATAMEM_REDIS_URL``): the rate-limit buckets live
    #: there, so N processes share one budget. None: the store's ``MemoryConfig.redis_url``, else
    #: per-process buckets. Redis unreachable → per-process buckets until it is back (README "Redis").
    redis_url: str | None = None
    #: Key prefix in Redis (``STRATAMEM_REDIS_PREFIX``); None: the store's ``MemoryConfig.redis_prefix``.
    redis_prefix: str | None = None
    #: Signed bearer tokens (optional): HS256 shared secret and/or RS256 public key (PEM).
    jwt_secret: str | None = None
    jwt_public_key: str | None = None
    jwt_audience: str | None = None
    jwt_issuer: str | None = None
    #: Mount the MCP streamable-HTTP endpoint at /mcp.
    mcp_enabled: bool = True
