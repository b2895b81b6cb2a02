"""Lifecycle commands: ``prune`` (Memory-R1 candidates, ``--dry-run`` lists only), ``maintain`` (TTL
purge, decay, consolidation, pruning, integrity, once), ``forget-user``, ``close-session``."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from .common import DEFAULT_DB, DbOpt, EmbedderOpt, JsonOpt, TenantOpt, console, emit_json, open_store, tenant


def register(app: typer.Typer) -> None:
    @app.command()
    def prune(
        db: DbOpt = DEFAULT_DB,
        tenant_id: TenantOpt = None,
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Only list the candidates.")] = False,
        embedder: EmbedderOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        """Soft-delete memories whose reward feedback is consistently negative (see the README rule)."""
        with open_store(db, embedder) as mem:
            report = mem.prune(tenant(tenant_id), dry_run=dry_run)
        if as_json:
            emit_json(report.model_dump(mode="json"))
            return
        table = Table(
            title=f"{len(report.candidates)} pruning candidates"
            + (" (dry run)" if dry_run else f", {len(report.pruned)} pruned")
        )
        for col in ("id", "signals", "mean reward", "status"):
            table.add_column(col)
        for c in report.candidates:
            table.add_row(c.id, str(c.signals), f"{c.mean_reward:.3f}", c.status)
        console.print(table)

    @app.command()
    def maintain(
        db: DbOpt = DEFAULT_DB,
        tenants: Annotated[
            list[str] | None, typer.Option("--tenant", "-t", help="Tenant (repeatable; default all).")
        ] = None,
        embedder: EmbedderOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        """Run every maintenance task once: TTL purge, decay, consolidation, pruning, integrity, access retention."""
        with open_store(db, embedder) as mem:
            report = mem.maintain(tenants=tenants or None)
        if as_json:
            emit_json(report.model_dump(mode="json"))
            return
        table = Table(title=f"maintenance of {len(report.tenants)} tenant(s) in {report.duration_s:.3f}s")
        for col in (
            "tenant",
            "purged",
            "archived",
            "consolidated",
            "prune candidates",
            "pruned",
            "repaired",
            "access pruned",
            "errors",
        ):
            table.add_column(col)
        for r in report.tenants:
            table.add_row(
                r.tenant_id,
                str(r.purged),
                str(r.archived),
                str(r.consolidated),
                str(r.prune_candidates),
                str(r.pruned),
                str(r.integrity_repaired),
                str(r.access_events_pruned),
                ", ".join(r.errors) or "-",
            )
        console.print(table)

    @app.command("forget-user")
    def forget_user(
        user_id: Annotated[str, typer.Option("--user-id", help="The user to forget.")],
        db: DbOpt = DEFAULT_DB,
        tenant_id: TenantOpt = None,
        embedder: EmbedderOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        """Remove every memory, graph node/edge, event row and cached vector of a user; revoke their keys."""
        with open_store(db, embedder, must_exist=True) as mem:
            report = mem.forget_user(tenant(tenant_id), user_id)
        if as_json:
            emit_json(report.model_dump(mode="json"))
            return
        counts = report.model_dump(exclude={"tenant_id", "user_id"})
        console.print(f"forgot user {user_id} of tenant {tenant_id}: {counts}", markup=False, highlight=False)

    @app.command("close-session")
    def close_session(
        user_id: Annotated[str, typer.Option("--user-id", help="userId of the session.")],
        session_id: Annotated[str, typer.Option("--session-id", help="sessionId to close.")],
        project_id: Annotated[str | None, typer.Option("--project-id", help="Promote into this project.")] = None,
        agent_id: Annotated[str | None, typer.Option("--agent-id", help="The session's agent.")] = None,
        db: DbOpt = DEFAULT_DB,
        tenant_id: TenantOpt = None,
        embedder: EmbedderOpt = None,
    ) -> None:
        """Promote the session's important memories (PII-redacted) and apply session retention."""
        with open_store(db, embedder) as mem:
            result = mem.close_session(tenant(tenant_id), user_id, session_id, project_id=project_id, agent_id=agent_id)
        emit_json(result.model_dump(mode="json"))

    @app.command("reflect")
    def reflect(
        user_id: Annotated[str, typer.Option("--user-id", help="userId of the session.")],
        session_id: Annotated[str, typer.Option("--session-id", help="sessionId to reflect.")],
        agent_id: Annotated[
            str | None,
            typer.Option(
                "--agent-id", help="Agent layer to write to (default: the agent in the memories' provenance)."
            ),
        ] = None,
        db: DbOpt = DEFAULT_DB,
        tenant_id: TenantOpt = None,
        embedder: EmbedderOpt = None,
    ) -> None:
        """Distil a session into agent-layer summaries and rules (LLM when configured, else rules)."""
        with open_store(db, embedder, must_exist=True) as mem:
            result = mem.reflect(tenant(tenant_id), user_id, session_id, agent_id=agent_id)
        emit_json(result.model_dump(mode="json"))
