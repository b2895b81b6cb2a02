"""Server settings (pydantic-settings): constructor arguments or ``STRATAMEM_*`` environment variables."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any

from pydantic import BeforeValidator, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from ..lifecycle.config import parse_duration

_OFF = {"", "0", "off", "none", "false", "no", "disabled"}


def _interval(value: Any) -> timedelta | None:
    """``"6h"``, ``"30m"``, ``"0.2s"``, seconds or a timedelta; ``0``/``"off"``/None = disabled."""
    if value is None or (isinstance(value, str) and value.strip().lower() in _OFF):
        return None
    out = parse_duration(value)
    return out if out.total_seconds() > 0 else None


#: An optional schedule interval (None = the job does not run).
Interval = Annotated[timedelta | None, BeforeValidator(_interval)]


class ServerSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="STRATAMEM_", extra="ignore", frozen=True)

    host: str = "127.0.0.1"
    port: int = Field(8080, ge=0, le=65535)
    #: Largest accepted request body; bigger ones get 413 CONTENT_TOO_LONG.
    max_body_bytes: int = Field(1_048_576, ge=1024)
    #: Seconds the server waits at start for the search index to load the largest scopes and build
    #: (or read back) their HNSW graphs before it listens (``STRATAMEM_WARM_INDEX_TIMEOUT``).
    warm_index_timeout: float = Field(120.0, ge=0.0)
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
    #: Longest accepted token lifetime (``exp`` minus ``iat``, or minus now without ``iat``);
    #: ``STRATAMEM_JWT_MAX_LIFETIME`` e.g. ``"1h"``; ``0``/``"off"`` = no cap.
    jwt_max_lifetime: Interval = timedelta(hours=24)
    #: Failed authentication per client address: sustained failures per second and burst; beyond
    #: them the address gets 429 until its bucket refills (0 disables). Audit lines of repeated
    #: failures are folded into one per address per window.
    auth_failure_rate_per_second: float = Field(1.0, ge=0.0)
    auth_failure_burst: int = Field(30, ge=1)
    auth_failure_audit_window_s: float = Field(60.0, gt=0.0)
    #: ``STRATAMEM_METRICS_TOKEN``: when set, /metrics needs ``Authorization: Bearer <token>``.
    metrics_token: str | None = Field(None, repr=False)
    #: Mount the MCP streamable-HTTP endpoint at /mcp.
    mcp_enabled: bool = True
    # -- in-server schedule (stratamem.lifecycle.runner) ---------------------------------------
    #: Maintenance (TTL purge, decay, consolidation, pruning, integrity) every interval; off by default.
    maintenance_interval: Interval = None
    #: Snapshot push of every tenant every interval (default 6 h) when S3 snapshots are enabled.
    snapshot_interval: Interval = timedelta(hours=6)
    #: Snapshots older than this are deleted at each push (never the newest).
    snapshot_retention: Annotated[timedelta, BeforeValidator(parse_duration)] = timedelta(days=7)
    #: Scheduled snapshots: None = on when ``STRATAMEM_S3_URL`` or ``STRATAMEM_S3_BUCKET`` is set.
    snapshots_enabled: bool | None = None
    #: Run each scheduled job once at start-up instead of one interval later.
    schedule_run_at_start: bool = False
    #: TTL of a scheduled job's Redis lock (extended every third of it while the job runs); with
    #: ``redis_url`` (above) each scheduled job runs on one server instance at a time.
    schedule_lock_ttl: float = Field(60.0, gt=0.0)
