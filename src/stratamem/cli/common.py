"""Shared CLI plumbing: store/tenant/identifier options, JSON output, coded one-line errors."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from pydantic import ValidationError
from rich.console import Console

from ..errors import ErrorCode, MemoryError
from ..model import TenantContext
from ..settings import DEFAULT_STORE, ENV_PREFIX, Settings
from ..telemetry.observe import ObserveConfig

if TYPE_CHECKING:
    from ..sdk import Memory

console = Console()
err_console = Console(stderr=True)

F = TypeVar("F", bound=Callable[..., Any])

#: Where the settings of one command line are kept (on the root click context).
_SETTINGS_KEY = "stratamem.settings"


def cli_settings(ctx: typer.Context | None = None) -> Settings:
    """The ``STRATAMEM_*`` settings of a command line, read from the environment.

    Args:
        ctx: The command's context: the settings are read once per command line (None: read now).

    Returns:
        The settings.

    Raises:
        typer.Exit: ``error CONFIGURATION_ERROR: <variable>: …`` (exit 2) for a variable with an
            invalid value.
    """
    meta: dict[str, Any] = ctx.find_root().meta if ctx is not None else {}
    settings = meta.get(_SETTINGS_KEY)
    if not isinstance(settings, Settings):
        try:
            settings = Settings()
        except ValidationError as exc:
            err = exc.errors()[0]
            name = f"{ENV_PREFIX}{str(err['loc'][0]).upper()}" if err["loc"] else "environment"
            raise fail(ErrorCode.CONFIGURATION_ERROR.value, f"{name}: {err['msg']}") from None
        meta[_SETTINGS_KEY] = settings
    return settings


def from_settings(
    read: Callable[[Settings], Any], then: Callable[[Any], Any] | None = None
) -> Callable[[typer.Context, typer.CallbackParam, Any], Any]:
    """An option callback: an option not given on the command line takes its setting (the
    ``STRATAMEM_*`` variable, read through :class:`~stratamem.settings.Settings`) when that is set,
    else keeps its default. The command line wins over the environment, which wins over the default.

    Args:
        read: The setting's value in the settings (None or empty: unset).
        then: Applied to the resulting value (a check or conversion).

    Returns:
        The callback to pass as ``typer.Option(callback=...)``.
    """

    def callback(ctx: typer.Context, param: typer.CallbackParam, value: Any) -> Any:
        source = ctx.get_parameter_source(param.name) if param.name else None
        if source is None or source.name == "DEFAULT":  # not on the command line
            configured = read(cli_settings(ctx))
            if configured is not None and configured != "":
                value = configured
        return then(value) if then is not None else value

    return callback


DbOpt = Annotated[
    str,
    typer.Option(
        "--db",
        "--store",
        callback=from_settings(Settings.store_location),
        help="DuckDB file, memory://, or postgresql:// URL (default data/stratamem.duckdb; env STRATAMEM_DB, "
        "formerly STRATAMEM_STORE).",
    ),
]


def _tenant_given(value: str | None) -> str | None:
    """Checked while the command line is parsed, so a command without a tenant touches no store."""
    require_tenant(value)
    return value


#: The tenant: required (``-t`` or ``STRATAMEM_TENANT``); there is no silent default tenant.
TenantOpt = Annotated[
    str | None,
    typer.Option(
        "--tenant",
        "-t",
        show_default=False,
        callback=from_settings(lambda s: s.tenant, then=_tenant_given),
        help="Tenant id (required unless STRATAMEM_TENANT is set).",
    ),
]
EmbedderOpt = Annotated[
    str | None,
    typer.Option(
        "--embedder",
        callback=from_settings(lambda s: s.embedder),
        help="onnx (default), local (torch), hashing, or openai (env STRATAMEM_EMBEDDER).",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON output.")]
AgentOpt = Annotated[str | None, typer.Option("--agent-id", help="agentId identifier.")]
UserOpt = Annotated[str | None, typer.Option("--user-id", help="userId identifier.")]
SessionOpt = Annotated[str | None, typer.Option("--session-id", help="sessionId identifier.")]
ProjectOpt = Annotated[
    str | None, typer.Option("--project-id", "--workspace-id", help="projectId identifier (workspaceId is the same).")
]
TeamOpt = Annotated[str | None, typer.Option("--team-id", help="teamId identifier.")]
OrgOpt = Annotated[str | None, typer.Option("--org-id", help="orgId identifier.")]
CompanyOpt = Annotated[str | None, typer.Option("--company-id", help="companyId identifier.")]
ObjectTypeOpt = Annotated[str | None, typer.Option("--object-type", help="objectType identifier.")]
ObjectIdOpt = Annotated[str | None, typer.Option("--object-id", help="objectId identifier.")]

#: The one default store of every command (and of ``Memory.open()``); ``STRATAMEM_DB`` overrides it.
DEFAULT_DB = DEFAULT_STORE


def identifiers(
    agent_id: str | None = None,
    user_id: str | None = None,
    session_id: str | None = None,
    project_id: str | None = None,
    team_id: str | None = None,
    org_id: str | None = None,
    company_id: str | None = None,
    object_type: str | None = None,
    object_id: str | None = None,
) -> dict[str, str]:
    values = {
        "agent_id": agent_id,
        "user_id": user_id,
        "session_id": session_id,
        "project_id": project_id,
        "team_id": team_id,
        "org_id": org_id,
        "company_id": company_id,
        "object_type": object_type,
        "object_id": object_id,
    }
    return {k: v for k, v in values.items() if v is not None}


def require_tenant(tenant_id: str | None) -> str:
    """The given tenant id, or exit 2: a command never falls back to a tenant nobody named."""
    if tenant_id is None or not tenant_id.strip():
        raise fail(ErrorCode.MISSING_TENANT_CONTEXT.value, "no tenant given: pass --tenant/-t or set STRATAMEM_TENANT")
    return tenant_id


def tenant(tenant_id: str | None) -> TenantContext:
    return TenantContext(tenant_id=require_tenant(tenant_id), principal=os.environ.get("USER") or "cli", roles=("cli",))


def fail(code: str, message: str) -> typer.Exit:
    err_console.print(f"error {code}: {message}", markup=False, highlight=False, soft_wrap=True)
    return typer.Exit(2)


@contextmanager
def coded_errors() -> Iterator[None]:
    """Turn a MemoryError into one line ``error CODE: message`` on stderr and exit code 2."""
    try:
        yield
    except MemoryError as exc:
        raise fail(exc.code.value, exc.message) from None
    except (OSError, ValueError) as exc:
        raise fail("INVALID_PARAMS", str(exc)) from None


def store_file(db: str) -> Path | None:
    """The DuckDB file a store location names, or None for ``memory://``, in-memory and server URLs."""
    if db.startswith("duckdb://"):
        db = db.removeprefix("duckdb://")
        if db in ("", ":memory:", "/:memory:"):
            return None
    elif "://" in db:
        return None
    return Path(db)


@contextmanager
def open_store(
    db: str,
    embedder: str | None,
    *,
    must_exist: bool = False,
    batch_queries: bool = False,
    observe: bool | ObserveConfig | None = None,
) -> Iterator[Memory]:
    """Open the store; ``must_exist`` (read commands): a missing DuckDB file is an error, never created;
    ``batch_queries`` shares the model between concurrent query embeddings (a server); ``observe``: as
    ``Memory.open`` (None: ``STRATAMEM_OBSERVE`` / ``STRATAMEM_METRICS_PORT``)."""
    path = store_file(db)
    if must_exist and path is not None and not path.exists():
        raise fail(
            ErrorCode.CONFIGURATION_ERROR.value,
            f"no store at {path.resolve()} (read commands never create one; check --db or STRATAMEM_DB)",
        )
    settings = cli_settings()
    with coded_errors():
        mem = open_memory(db, embedder, settings, batch_queries=batch_queries, observe=observe)
    try:
        with coded_errors():
            yield mem
    finally:
        mem.close()


def open_memory(
    db: str,
    embedder: str | None,
    settings: Settings,
    *,
    batch_queries: bool = False,
    observe: bool | ObserveConfig | None = None,
) -> Memory:
    """The store and embedder of a command (what :func:`open_store` opens); raises ``MemoryError``.

    The engine (numpy, DuckDB, the embedder) is imported here, when a command first needs it."""
    from ..embeddings import make_embedder  # noqa: PLC0415 - the engine loads when a command needs it
    from ..embeddings.batching import MicroBatchingEmbedder  # noqa: PLC0415
    from ..sdk import Memory  # noqa: PLC0415

    model = make_embedder(embedder, settings=settings)
    if batch_queries:
        model = MicroBatchingEmbedder(model)
    return Memory.open(db, embedder=model, observe=observe, settings=settings)


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()


def parse_json_option(value: str | None, name: str) -> Any:
    if value is None:
        return None
    try:
        return json.loads(value)
    except json.JSONDecodeError as exc:
        raise fail("INVALID_PARAMS", f"{name} is not valid JSON: {exc.msg}") from None
