"""Server commands: ``serve`` (REST + MCP over HTTP) and ``mcp`` (MCP over stdio)."""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from pydantic import ValidationError

from ..model import Grant
from ..settings import Settings
from ..telemetry.observe import OBSERVE_ON, ObserveConfig
from .common import (
    DEFAULT_DB,
    AgentOpt,
    CompanyOpt,
    DbOpt,
    EmbedderOpt,
    ObjectIdOpt,
    ObjectTypeOpt,
    OrgOpt,
    ProjectOpt,
    SessionOpt,
    TeamOpt,
    TenantOpt,
    UserOpt,
    cli_settings,
    coded_errors,
    fail,
    from_settings,
    identifiers,
    open_memory,
    open_store,
    tenant,
)

if TYPE_CHECKING:
    from ..sdk import Memory


#: Scopes granted beyond the identifiers (repeatable): team:t1, project:p1, object:ticket/*, all.
GrantOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--grant", help="Scope granted beyond the identifiers (repeatable): team:t1, project:p1, object:type/id, all."
    ),
]


def _observe_setting(settings: Settings) -> bool | None:
    """``STRATAMEM_OBSERVE`` as the ``--observe`` flag: unset → None, else whether it says on."""
    flag = (settings.observe or "").strip().lower()
    return flag in OBSERVE_ON if flag else None


def _require_server_extra() -> None:
    missing = [
        m
        for m in ("fastapi", "uvicorn", "mcp", "prometheus_client", "opentelemetry", "jwt")
        if importlib.util.find_spec(m) is None
    ]
    if missing:
        raise fail("CONFIGURATION_ERROR", f"missing {', '.join(missing)}: pip install 'stratamem[server]'")


def register(app: typer.Typer) -> None:
    @app.command()
    def serve(
        db: DbOpt = DEFAULT_DB,
        host: Annotated[
            str | None,
            typer.Option("--host", show_default=False, help="Bind address (default 127.0.0.1; env STRATAMEM_HOST)."),
        ] = None,
        port: Annotated[
            int | None, typer.Option("--port", show_default=False, help="TCP port (default 8080; env STRATAMEM_PORT).")
        ] = None,
        embedder: EmbedderOpt = None,
        log_level: Annotated[str, typer.Option("--log-level", help="uvicorn log level.")] = "info",
        maintenance_interval: Annotated[
            str | None,
            typer.Option(
                "--maintenance-interval",
                help="Run maintenance (TTL purge, decay, consolidation, pruning, integrity) every interval, "
                "e.g. 1h, 30m, 0.2s (default: off; env STRATAMEM_MAINTENANCE_INTERVAL).",
            ),
        ] = None,
        snapshot_interval: Annotated[
            str | None,
            typer.Option(
                "--snapshot-interval",
                help="Push S3 snapshots of every tenant every interval (default 6h; 'off' disables; env "
                "STRATAMEM_SNAPSHOT_INTERVAL).",
            ),
        ] = None,
        snapshots: Annotated[
            bool | None,
            typer.Option(
                "--snapshots/--no-snapshots",
                show_default=False,
                help="Scheduled snapshots on/off (default: on when STRATAMEM_S3_URL or STRATAMEM_S3_BUCKET is set; "
                "env STRATAMEM_SNAPSHOTS_ENABLED).",
            ),
        ] = None,
        redis_url: Annotated[
            str | None,
            typer.Option(
                "--redis",
                help="Redis URL shared by the server processes: rate limits, and scheduled jobs on one instance "
                "at a time (env STRATAMEM_REDIS_URL).",
            ),
        ] = None,
        batch_queries: Annotated[
            bool | None,
            typer.Option(
                "--batch-queries/--no-batch-queries",
                show_default=False,
                help="Embed the queries of concurrent searches in one model run (default: on; env "
                "STRATAMEM_BATCH_QUERIES).",
            ),
        ] = None,
    ) -> None:
        """Start the REST API (and MCP over streamable HTTP at /mcp) with uvicorn."""
        _require_server_extra()
        import uvicorn  # noqa: PLC0415  server extra (uvicorn)

        from ..server.app import create_app  # noqa: PLC0415  server extra (fastapi)
        from ..server.settings import ServerSettings  # noqa: PLC0415  server extra (pydantic-settings)

        # every value left out here is read by ServerSettings from its STRATAMEM_* variable (or defaulted)
        given: dict[str, Any] = {
            "host": host,
            "port": port,
            "batch_queries": batch_queries,
            "maintenance_interval": maintenance_interval,
            "snapshot_interval": snapshot_interval,
            "snapshots_enabled": snapshots,
            "redis_url": redis_url,
        }
        try:
            settings = ServerSettings(**{k: v for k, v in given.items() if v is not None})
        except ValidationError as exc:
            err = exc.errors()[0]
            raise fail("INVALID_PARAMS", f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}") from None
        # stratamem's own log lines (schedule, audit lines of writes, warnings) on stderr at INFO, as
        # before (--log-level is uvicorn's), plainly formatted: create_app leaves the root logger to
        # its host, and this command is the host
        logging.basicConfig(level=logging.INFO, format="%(levelname)s: %(name)s: %(message)s")
        # the app attaches the observers itself and serves them at /metrics: no second endpoint from the env
        with open_store(db, embedder, batch_queries=settings.batch_queries, observe=False) as mem:
            with coded_errors():
                app_ = create_app(mem, settings)
            # a PostgreSQL URL is shown without its password (the provider's redacted form)
            shown = getattr(mem.engine.provider, "display_url", None) or db
            typer.echo(
                f"stratamem serving {shown} on http://{settings.host}:{settings.port} (docs: /docs, MCP: /mcp)",
                err=True,
            )
            runner = app_.state.schedule
            if runner is not None:
                jobs = ", ".join(f"{j.name} every {j.interval_s:g} s" for j in runner.jobs.values())
                typer.echo(f"schedule: {jobs}" + (" (coordinated through Redis)" if runner.redis else ""), err=True)
            uvicorn.run(app_, host=settings.host, port=settings.port, log_level=log_level)

    @app.command("mcp")
    def mcp_stdio(
        db: DbOpt = DEFAULT_DB,
        tenant_id: TenantOpt = None,
        layer: Annotated[
            str | None,
            typer.Option(
                "--layer", help="Layer for new memories (default: the most specific one the identifiers allow)."
            ),
        ] = None,
        agent_id: AgentOpt = None,
        user_id: UserOpt = None,
        session_id: SessionOpt = None,
        project_id: ProjectOpt = None,
        team_id: TeamOpt = None,
        org_id: OrgOpt = None,
        company_id: CompanyOpt = None,
        object_type: ObjectTypeOpt = None,
        object_id: ObjectIdOpt = None,
        grant: GrantOpt = None,
        embedder: EmbedderOpt = None,
        observe: Annotated[
            bool | None,
            typer.Option(
                "--observe/--no-observe",
                show_default=False,
                callback=from_settings(_observe_setting),
                help="Metrics, per-operation spans and the audit of writes, denials and cross-tenant attempts "
                "(default: off; on when --metrics-port or --audit-log is given; env STRATAMEM_OBSERVE).",
            ),
        ] = None,
        metrics_port: Annotated[
            int | None,
            typer.Option(
                "--metrics-port",
                min=0,
                max=65535,
                callback=from_settings(lambda s: s.metrics_port),
                help="Serve Prometheus metrics at http://127.0.0.1:PORT/metrics (implies --observe; env "
                "STRATAMEM_METRICS_PORT).",
            ),
        ] = None,
        audit_log: Annotated[
            Path | None,
            typer.Option(
                "--audit-log",
                help="Append the audit lines (JSON) to this file (implies --observe; STRATAMEM_AUDIT_LOG names the "
                "file without turning observation on).",
            ),
        ] = None,
    ) -> None:
        """Run the MCP server over stdio for one tenant and one set of identifiers (it acts only for
        them, plus the scopes given with --grant)."""
        _require_server_extra()
        wanted = observe if observe is not None else (metrics_port is not None or audit_log is not None)
        observation = ObserveConfig(metrics_port=metrics_port, audit_log=audit_log) if wanted else False
        from ..mcp.server import make_binding  # noqa: PLC0415  server extra (mcp)
        from ..mcp.stdio import OpeningStore, run_stdio  # noqa: PLC0415

        ids = identifiers(
            agent_id, user_id, session_id, project_id, team_id, org_id, company_id, object_type, object_id
        )
        with coded_errors():
            bound = Grant.parse(grant or [], ids) if ids or grant else None
            ctx = tenant(tenant_id).model_copy(update={"grant": bound})
            binding = make_binding(ctx, ids, layer)
        settings = cli_settings()

        def prepare(mem: Memory) -> None:
            if mem.observation is not None and mem.observation.metrics_url:
                typer.echo(f"stratamem mcp: metrics at {mem.observation.metrics_url}", err=True)
            # the single-text path of the embedder (MCP tools embed one text per call); a failure is
            # logged by OpeningStore and reported by the first call that embeds
            mem.engine.embeddings.embedder.embed_one("warm-up")

        # The store and the model open beside the MCP handshake: the client sees the server answer as
        # soon as the SDK is loaded, and the first tool call waits for the store only if it is not open.
        store = OpeningStore(lambda: open_memory(db, embedder, settings, observe=observation), prepare).start()
        try:
            run_stdio(store, binding)
        finally:
            store.close()
        if store.error is not None:
            raise typer.Exit(2)
