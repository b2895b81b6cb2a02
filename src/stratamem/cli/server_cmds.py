"""Server commands: ``serve`` (REST + MCP over HTTP), ``mcp`` (MCP over stdio), ``keys`` (API keys)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from .common import (
    AgentOpt,
    CompanyOpt,
    DbOpt,
    EmbedderOpt,
    JsonOpt,
    ObjectIdOpt,
    ObjectTypeOpt,
    OrgOpt,
    ProjectOpt,
    SessionOpt,
    TeamOpt,
    TenantOpt,
    UserOpt,
    coded_errors,
    emit_json,
    fail,
    identifiers,
    open_store,
    tenant,
)

DEFAULT_SERVE_DB = "data/stratamem.duckdb"
#: Scopes granted beyond the identifiers (repeatable): team:t1, project:p1, object:ticket/*, all.
GrantOpt = Annotated[list[str] | None, typer.Option(
    "--grant", help="Scope granted beyond the identifiers (repeatable): team:t1, project:p1, object:type/id, all.")]


def _require_server_extra() -> None:
    import importlib.util

    missing = [m for m in ("fastapi", "uvicorn", "mcp", "prometheus_client", "opentelemetry", "jwt")
               if importlib.util.find_spec(m) is None]
    if missing:
        raise fail("CONFIGURATION_ERROR", f"missing {', '.join(missing)}: pip install 'stratamem[server]'")


def register(app: typer.Typer) -> None:
    @app.command()
    def serve(
        db: DbOpt = DEFAULT_SERVE_DB,
        host: Annotated[str, typer.Option("--host", envvar="STRATAMEM_HOST", help="Bind address.")] = "127.0.0.1",
        port: Annotated[int, typer.Option("--port", envvar="STRATAMEM_PORT", help="TCP port.")] = 8080,
        embedder: EmbedderOpt = None,
        log_level: Annotated[str, typer.Option("--log-level", help="uvicorn log level.")] = "info",
        maintenance_interval: Annotated[str | None, typer.Option(
            "--maintenance-interval", envvar="STRATAMEM_MAINTENANCE_INTERVAL",
            help="Run maintenance (TTL purge, decay, consolidation, pruning, integrity) every interval, "
                 "e.g. 1h, 30m, 0.2s (default: off).")] = None,
        snapshot_interval: Annotated[str | None, typer.Option(
            "--snapshot-interval", envvar="STRATAMEM_SNAPSHOT_INTERVAL",
            help="Push S3 snapshots of every tenant every interval (default 6h; 'off' disables).")] = None,
        snapshots: Annotated[bool | None, typer.Option(
            "--snapshots/--no-snapshots", envvar="STRATAMEM_SNAPSHOTS_ENABLED", show_default=False,
            help="Scheduled snapshots on/off (default: on when STRATAMEM_S3_URL or STRATAMEM_S3_BUCKET is set).")]
            = None,
        redis_url: Annotated[str | None, typer.Option(
            "--redis", envvar="STRATAMEM_REDIS_URL",
            help="Redis URL shared by the server processes: rate limits, and scheduled jobs on one instance "
                 "at a time.")] = None,
    ) -> None:
        """Start the REST API (and MCP over streamable HTTP at /mcp) with uvicorn."""
        _require_server_extra()
        import uvicorn
        from pydantic import ValidationError

        from ..server.app import create_app
        from ..server.settings import ServerSettings

        given: dict[str, Any] = {"maintenance_interval": maintenance_interval, "snapshot_interval": snapshot_interval,
                 "snapshots_enabled": snapshots, "redis_url": redis_url}
        try:
            settings = ServerSettings(host=host, port=port, **{k: v for k, v in given.items() if v is not None})
        except ValidationError as exc:
            err = exc.errors()[0]
            raise fail("INVALID_PARAMS", f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}") from None
        with open_store(db, embedder) as mem:
            with coded_errors():
                app_ = create_app(mem, settings)
            typer.echo(f"stratamem serving {db} on http://{host}:{port} (docs: /docs, MCP: /mcp)", err=True)
            runner = app_.state.schedule
            if runner is not None:
                jobs = ", ".join(f"{j.name} every {j.interval_s:g} s" for j in runner.jobs.values())
                typer.echo(f"schedule: {jobs}" + (" (coordinated through Redis)" if runner.redis else ""), err=True)
            uvicorn.run(app_, host=host, port=port, log_level=log_level)

    @app.command("mcp")
    def mcp_stdio(
        db: DbOpt = "stratamem.duckdb",
        tenant_id: TenantOpt = "default",
        layer: Annotated[str | None, typer.Option("--layer", help="Layer for new memories "
                                                  "(default: the most specific one the identifiers allow).")] = None,
        agent_id: AgentOpt = None, user_id: UserOpt = None, session_id: SessionOpt = None,
        project_id: ProjectOpt = None, team_id: TeamOpt = None, org_id: OrgOpt = None,
        company_id: CompanyOpt = None, object_type: ObjectTypeOpt = None, object_id: ObjectIdOpt = None,
        grant: GrantOpt = None, embedder: EmbedderOpt = None,
    ) -> None:
        """Run the MCP server over stdio for one tenant and one set of identifiers (it acts only for
        them, plus the scopes given with --grant)."""
        _require_server_extra()
        from ..mcp.server import make_binding, run_stdio
        from ..model import Grant

        ids = identifiers(agent_id, user_id, session_id, project_id, team_id, org_id, company_id, object_type,
                          object_id)
        with open_store(db, embedder) as mem:
            with coded_errors():
                bound = Grant.parse(grant or [], ids) if ids or grant else None
                ctx = tenant(tenant_id).model_copy(update={"grant": bound})
                binding = make_binding(ctx, ids, layer)
            run_stdio(mem, binding)

    keys = typer.Typer(help="Manage API keys (stored hashed; a key is shown once).", no_args_is_help=True)
    app.add_typer(keys, name="keys")

    @keys.command("create")
    def keys_create(
        db: DbOpt = DEFAULT_SERVE_DB,
        tenant_id: TenantOpt = "default",
        role: Annotated[str, typer.Option("--role", "-r", help="reader, writer or admin.")] = "writer",
        name: Annotated[str | None, typer.Option("--name", help="Label for the key.")] = None,
        agent_id: AgentOpt = None, user_id: UserOpt = None, session_id: SessionOpt = None,
        project_id: ProjectOpt = None, team_id: TeamOpt = None, org_id: OrgOpt = None,
        company_id: CompanyOpt = None, object_type: ObjectTypeOpt = None, object_id: ObjectIdOpt = None,
        grant: GrantOpt = None, embedder: EmbedderOpt = None,
    ) -> None:
        """Create an API key; it is printed once, as the last word of the output. A key bound to
        identifiers (--user-id …) acts only for them plus the scopes given with --grant."""
        from ..server.keys import create_key

        ids = identifiers(agent_id, user_id, session_id, project_id, team_id, org_id, company_id, object_type,
                          object_id)
        with open_store(db, embedder) as mem, coded_errors():
            created = create_key(mem.engine.provider, tenant_id, role, name=name, identifiers=ids,
                                 grants=grant or [])
        rec = created.record
        typer.echo(f"created API key {rec.key_id} ({rec.name}) for tenant {rec.tenant_id} with role {role}.")
        typer.echo("It is shown only once and stored only as a hash; keep it secret:")
        typer.echo(created.key)

    @keys.command("list")
    def keys_list(db: DbOpt = DEFAULT_SERVE_DB, tenant_id: TenantOpt = "default", embedder: EmbedderOpt = None,
                  as_json: JsonOpt = False) -> None:
        """List a tenant's keys (ids and labels; never the keys)."""
        from ..server.keys import key_grants, key_identifiers

        with open_store(db, embedder) as mem:
            records = mem.engine.provider.api_key_list(tenant_id)
        rows: list[dict[str, Any]] = [
            {"keyId": r.key_id, "name": r.name, "roles": list(r.roles), "identifiers": key_identifiers(r),
             "grants": key_grants(r),
                 "createdAt": r.created_at.isoformat(),
                 "revokedAt": r.revoked_at.isoformat() if r.revoked_at else None} for r in records
        ]
        if as_json:
            emit_json(rows)
            return
        for row in rows:
            state = "revoked" if row["revokedAt"] else "active"
            typer.echo(f"{row['keyId']}  {row['name']}  {','.join(row['roles'])}  {state}")

    @keys.command("revoke")
    def keys_revoke(key_id: Annotated[str, typer.Argument(help="Key id (the part after smk_).")],
                    db: DbOpt = DEFAULT_SERVE_DB, tenant_id: TenantOpt = "default",
                    embedder: EmbedderOpt = None) -> None:
        """Revoke a key of this tenant."""
        from datetime import UTC, datetime

        with open_store(db, embedder) as mem:
            ok = mem.engine.provider.api_key_revoke(tenant_id, key_id, datetime.now(UTC))
        if not ok:
            raise fail("INVALID_PARAMS", f"tenant {tenant_id} has no active key {key_id}")
        typer.echo(f"revoked {key_id}")
