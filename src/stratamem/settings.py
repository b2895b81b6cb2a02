"""Every ``STRATAMEM_*`` environment variable, read in one place (pydantic-settings).

:class:`Settings` holds the variables of the library, the CLI and the embedders; :class:`ServerSettings`
adds the server's. Code that needs a value takes a ``Settings`` argument (``None``: read the
environment now, so a variable set after import still counts); nothing else in the package reads
``os.environ`` for a ``STRATAMEM_*`` name. ``python -m stratamem.settings`` prints the Markdown table
of ``docs/configuration.md`` (a test checks the two agree and that every name used in ``src/`` is a
field here).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any

from pydantic import BeforeValidator, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from .lifecycle.config import parse_duration

#: The default store of ``Memory.open()`` and of every CLI command (``STRATAMEM_DB`` overrides it).
DEFAULT_STORE = "data/stratamem.duckdb"

#: The prefix of every variable: field ``llm_url`` is ``STRATAMEM_LLM_URL``.
ENV_PREFIX = "STRATAMEM_"

_OFF = {"", "0", "off", "none", "false", "no", "disabled"}


def _interval(value: Any) -> timedelta | None:
    """``"6h"``, ``"30m"``, ``"0.2s"``, seconds or a timedelta; ``0``/``"off"``/None = disabled."""
    if value is None or (isinstance(value, str) and value.strip().lower() in _OFF):
        return None
    out = parse_duration(value)
    return out if out.total_seconds() > 0 else None


#: An optional schedule interval (None = the job does not run).
Interval = Annotated[timedelta | None, BeforeValidator(_interval)]


class Settings(BaseSettings):
    """The library's, the CLI's and the embedders' variables; empty strings count as unset."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore", frozen=True)

    # -- store ---------------------------------------------------------------------------------
    db: str | None = Field(
        None, description="Store of `Memory.open()` and of every CLI command (default `data/stratamem.duckdb`)."
    )
    store: str | None = Field(None, description="Former name of `STRATAMEM_DB` (read when that is unset).")
    tenant: str | None = Field(None, description="Tenant of CLI commands (instead of `--tenant`).")
    # -- encryption at rest (read by ``encryption.key_from_env``) -------------------------------
    encryption_key: str | None = Field(
        None, repr=False, description="Key of encryption at rest: the DuckDB file and snapshots (docs/security.md)."
    )
    encryption_key_file: str | None = Field(None, description="File whose first line is the encryption key.")
    encryption_previous_key_file: str | None = Field(
        None, description="Older encryption keys, one per line, used only to read data written before a rotation."
    )
    new_encryption_key: str | None = Field(
        None, repr=False, description="New key of `stratamem encryption rotate` (instead of `--new-key-file`)."
    )
    # -- embedded observation (read by ``telemetry.observe``) ---------------------------------
    observe: str | None = Field(
        None, description="`1`/`true`: metrics, spans and the audit for embedded stores (SDK, CLI, stdio MCP)."
    )
    metrics_port: int | None = Field(
        None, ge=0, le=65535, description="Port of the metrics endpoint of an embedded store (implies observe)."
    )
    # -- MCP -----------------------------------------------------------------------------------
    mcp_legacy_tools: bool = Field(
        True, description="`0`: the MCP server hides the deprecated tool names (`memory_crud`, …)."
    )
    # -- embeddings ----------------------------------------------------------------------------
    embedder: str | None = Field(
        None, description="Default embedder: `onnx` (default), `onnx-int8`, `local`, `hashing[:DIM]`, `openai`."
    )
    embedding_url: str | None = Field(None, description="Base URL of the `openai` embedder (OpenAI-compatible API).")
    embedding_model: str | None = Field(None, description="Model name of the `openai` embedder.")
    embedding_api_key: str | None = Field(None, repr=False, description="API key of the `openai` embedder.")
    embedding_dimensions: str | None = Field(
        None, description="Vector size requested from the `openai` embedder (default: the model's)."
    )
    onnx_dir: str | None = Field(
        None, description="Directory of the ONNX model (default `~/.cache/stratamem/onnx/all-MiniLM-L6-v2`)."
    )
    onnx_int8_dir: str | None = Field(None, description="Directory of the int8 ONNX model (`onnx-int8`).")
    onnx_int8_queries: bool = Field(
        True, description="`0`: the `onnx` embedder runs queries on the float model too (default: on its int8 build)."
    )
    # -- LLM -----------------------------------------------------------------------------------
    llm_url: str | None = Field(
        None, description="Base URL of an OpenAI-compatible LLM; unset: the offline rule engine."
    )
    llm_model: str | None = Field(None, description="Model name of the LLM.")
    llm_api_key: str | None = Field(None, repr=False, description="API key of the LLM (optional for local servers).")
    # -- Redis, S3 -----------------------------------------------------------------------------
    redis_url: str | None = Field(
        None,
        description="Redis shared by processes: embedding cache, rate limits, locks, scheduled jobs on one "
        "instance at a time.",
    )
    redis_prefix: str | None = Field(None, description="Key prefix in Redis (default `MemoryConfig.redis_prefix`).")
    s3_url: str | None = Field(None, description="S3-compatible endpoint of snapshots (default: AWS).")
    s3_bucket: str | None = Field(None, description="Snapshot bucket (default `stratamem`).")
    # -- security, audit -----------------------------------------------------------------------
    key_pepper: str = Field("", repr=False, description="Secret mixed into API key hashes (kept outside the database).")
    audit_log: str | None = Field(None, description="JSON-lines file the audit log appends to.")
    # -- coordination --------------------------------------------------------------------------
    contention_alert_threshold: int = Field(
        50, description="Contended lock attempts per window that raise the alert (0 turns it off)."
    )
    contention_alert_window_s: float = Field(60.0, description="Window of the contention alert, in seconds.")
    # -- CLI key management --------------------------------------------------------------------
    server: str | None = Field(None, description="URL of a running server for `stratamem keys` (`--server`).")
    admin_key: str | None = Field(None, repr=False, description="Admin API key for `stratamem keys --server`.")

    def store_location(self) -> str | None:
        """``STRATAMEM_DB``, else ``STRATAMEM_STORE``, else None."""
        return self.db or self.store or None

    def s3_configured(self) -> bool:
        """True when an S3 endpoint or bucket is set (snapshots default to on)."""
        return bool(self.s3_url or self.s3_bucket)


class ServerSettings(Settings):
    """The server's settings: constructor arguments or ``STRATAMEM_*`` variables."""

    host: str = Field("127.0.0.1", description="Bind address of `stratamem serve`.")
    port: int = Field(8080, ge=0, le=65535, description="TCP port of `stratamem serve`.")
    max_body_bytes: int = Field(
        1_048_576, ge=1024, description="Largest accepted request body; bigger ones get 413 CONTENT_TOO_LONG."
    )
    max_bulk_items: int = Field(100, ge=1, le=1000, description="Items per bulk request (the SDK allows more).")
    warm_index_timeout: float = Field(
        120.0,
        ge=0.0,
        description="Seconds the server waits at start for the search index to load the largest "
        "scopes and build (or read back) their HNSW graphs before it listens.",
    )
    rate_limit_per_second: float = Field(
        50.0, ge=0.0, description="Sustained requests per second per API key / token subject (0 disables)."
    )
    rate_limit_burst: int = Field(100, ge=1, description="Burst of the per-credential rate limit.")
    rate_limit_tenant_per_second: float = Field(
        0.0, ge=0.0, description="Requests per second per tenant, all its credentials together (0 disables)."
    )
    rate_limit_tenant_burst: int = Field(500, ge=1, description="Burst of the per-tenant rate limit.")
    jwt_secret: str | None = Field(None, repr=False, description="HS256 shared secret of signed bearer tokens.")
    jwt_public_key: str | None = Field(None, description="RS256 public key (PEM) of signed bearer tokens.")
    jwt_audience: str | None = Field(None, description="Required `aud` of bearer tokens.")
    jwt_issuer: str | None = Field(None, description="Required `iss` of bearer tokens.")
    #: Longest accepted token lifetime (``exp`` minus ``iat``, or minus now without ``iat``).
    jwt_max_lifetime: Interval = Field(
        timedelta(hours=24), description="Longest accepted token lifetime, e.g. `1h`; `0`/`off` = no cap."
    )
    #: Beyond these the address gets 429 until its bucket refills; audit lines of repeated failures
    #: are folded into one per address per window.
    auth_failure_rate_per_second: float = Field(
        1.0, ge=0.0, description="Failed authentications per second per client address (0 disables)."
    )
    auth_failure_burst: int = Field(30, ge=1, description="Burst of failed authentications per client address.")
    key_cache_ttl: float = Field(
        5.0,
        ge=0.0,
        description="Seconds a verified API key is reused without reading the store again; a key revoked "
        "through this server is refused at once, elsewhere (CLI, another server) within this time (0 disables).",
    )
    auth_failure_audit_window_s: float = Field(
        60.0, gt=0.0, description="Window folding repeated authentication failures into one audit line."
    )
    metrics_token: str | None = Field(
        None, repr=False, description="When set, /metrics needs `Authorization: Bearer <token>`."
    )
    mcp_enabled: bool = Field(True, description="Mount the MCP streamable-HTTP endpoint at /mcp.")
    batch_queries: bool = Field(
        True, description="Embed the queries of concurrent searches in one model run (`stratamem serve`)."
    )
    # -- in-server schedule (stratamem.lifecycle.runner) ---------------------------------------
    maintenance_interval: Interval = Field(
        None, description="Run maintenance (TTL purge, decay, consolidation, pruning) every interval; off by default."
    )
    access_history_days: int | None = Field(
        None,
        ge=0,
        description="Days scheduled maintenance keeps `access` events (the per-memory read history); "
        "unset: 30 (`LifecycleConfig.access_history_days`), `0` keeps them all.",
    )
    snapshot_interval: Interval = Field(
        timedelta(hours=6), description="Push snapshots of every tenant every interval when snapshots are enabled."
    )
    snapshot_retention: Annotated[timedelta, BeforeValidator(parse_duration)] = Field(
        timedelta(days=7), description="Snapshots older than this are deleted at each push (never the newest)."
    )
    snapshots_enabled: bool | None = Field(
        None, description="Scheduled snapshots on/off (default: on when `STRATAMEM_S3_URL` or `_S3_BUCKET` is set)."
    )
    schedule_run_at_start: bool = Field(
        False, description="Run each scheduled job once at start-up instead of one interval later."
    )
    schedule_lock_ttl: float = Field(
        60.0, gt=0.0, description="TTL (seconds) of a scheduled job's Redis lock, extended while the job runs."
    )


def env_names() -> dict[str, str]:
    """Every variable name → its field name (of :class:`ServerSettings`, which includes :class:`Settings`)."""
    return {ENV_PREFIX + name.upper(): name for name in ServerSettings.model_fields}


def _default(value: Any) -> str:
    if value is None or value == "":
        return ""
    if isinstance(value, timedelta):
        return f"`{int(value.total_seconds())}s`"
    return f"`{value}`"


def env_table() -> str:
    """The Markdown table of every variable (the one in ``docs/configuration.md``)."""
    rows = ["| Variable | Default | Used by | Meaning |", "|---|---|---|---|"]
    for name, field in ServerSettings.model_fields.items():
        used_by = "library, CLI" if name in Settings.model_fields else "server"
        rows.append(
            f"| `{ENV_PREFIX}{name.upper()}` | {_default(field.default)} | {used_by} | {field.description or ''} |"
        )
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(env_table(), end="")
