"""Hygiene commands: ``policy set/show/reset``, ``health``, ``process``, ``remember``, ``forget``."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table

from ..hygiene.gate import ProcessResult
from .common import (
    DEFAULT_DB,
    DbOpt,
    EmbedderOpt,
    JsonOpt,
    TenantOpt,
    UserOpt,
    console,
    emit_json,
    open_store,
    tenant,
)

LayerOpt = Annotated[str | None, typer.Option("--layer", "-l", help="Layer to write (default: user).")]
SessionIdOpt = Annotated[str | None, typer.Option("--session-id", help="sessionId identifier.")]
AgentIdOpt = Annotated[str | None, typer.Option("--agent-id", help="agentId identifier.")]


def _ids(user_id: str | None, session_id: str | None, agent_id: str | None) -> dict[str, str]:
    raw = {"user_id": user_id, "session_id": session_id, "agent_id": agent_id}
    return {k: v for k, v in raw.items() if v is not None}


def _print_result(res: ProcessResult, as_json: bool) -> None:
    if as_json:
        emit_json(res.model_dump(mode="json", exclude_none=True))
        return
    parts: list[str] = [res.action]
    if res.memory_id:
        parts.append(res.memory_id)
    if res.count is not None:
        parts.append(f"count={res.count}")
    if res.content:
        parts.append(f"content={res.content!r}")
    if res.reason:
        parts.append(f"({res.reason})")
    console.print(" ".join(parts), markup=False, highlight=False)


def register(app: typer.Typer) -> None:
    policy_app = typer.Typer(help="Per-tenant governance policies.", no_args_is_help=True)
    app.add_typer(policy_app, name="policy")

    @policy_app.command("show")
    def policy_show(
        db: DbOpt = DEFAULT_DB, tenant_id: TenantOpt = None, embedder: EmbedderOpt = None, as_json: JsonOpt = False
    ) -> None:
        """Show the tenant's policy."""
        with open_store(db, embedder, must_exist=True) as mem:
            policy = mem.policies.get(tenant(tenant_id))
        if as_json:
            emit_json(policy.model_dump(mode="json"))
            return
        table = Table(title=f"policy of tenant {tenant_id}")
        table.add_column("rule")
        table.add_column("value")
        for key, value in policy.model_dump(mode="json").items():
            table.add_row(key, "-" if value is None else str(value))
        console.print(table)

    @policy_app.command("set")
    def policy_set(
        db: DbOpt = DEFAULT_DB,
        tenant_id: TenantOpt = None,
        deny: Annotated[list[str] | None, typer.Option("--deny", help="Deny pattern, a regex (repeatable).")] = None,
        category: Annotated[
            list[str] | None,
            typer.Option("--category", help="Allowed category (repeatable): preference, fact, context, instruction."),
        ] = None,
        max_length: Annotated[int | None, typer.Option("--max-length", help="Longest content.")] = None,
        pii_mode: Annotated[str | None, typer.Option("--pii-mode", help="reject | redact | allow.")] = None,
        shared_pii_mode: Annotated[
            str | None,
            typer.Option("--shared-pii-mode", help="PII in shared layers: reject | redact (default) | allow."),
        ] = None,
        max_memories: Annotated[int | None, typer.Option("--max-memories", help="Quota per user.")] = None,
        embedder: EmbedderOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        """Change the given rules of the tenant's policy (others keep their value)."""
        fields: dict[str, Any] = {}
        if deny is not None:
            fields["deny_patterns"] = list(deny)
        if category is not None:
            fields["allowed_categories"] = list(category)
        if max_length is not None:
            fields["max_length"] = max_length
        if pii_mode is not None:
            fields["pii_mode"] = pii_mode
        if shared_pii_mode is not None:
            fields["shared_pii_mode"] = shared_pii_mode
        if max_memories is not None:
            fields["max_memories"] = max_memories
        with open_store(db, embedder) as mem:
            policy = mem.policies.set(tenant(tenant_id), **fields)
        if as_json:
            emit_json(policy.model_dump(mode="json"))
        else:
            console.print(
                f"policy of tenant {tenant_id} updated: {policy.model_dump(mode='json')}", markup=False, highlight=False
            )

    @policy_app.command("reset")
    def policy_reset(db: DbOpt = DEFAULT_DB, tenant_id: TenantOpt = None, embedder: EmbedderOpt = None) -> None:
        """Back to the default policy (PII allowed, no patterns, no quota)."""
        with open_store(db, embedder) as mem:
            mem.policies.reset(tenant(tenant_id))
        console.print(f"policy of tenant {tenant_id} reset")

    @app.command()
    def health(
        db: DbOpt = DEFAULT_DB, tenant_id: TenantOpt = None, embedder: EmbedderOpt = None, as_json: JsonOpt = False
    ) -> None:
        """Memory health report: totals, age, duplicate / write-rejection / search-hit rates."""
        with open_store(db, embedder, must_exist=True) as mem:
            report = mem.health(tenant(tenant_id))
        if as_json:
            emit_json(report.model_dump(mode="json"))
            return
        table = Table(title=f"memory health of tenant {tenant_id}")
        table.add_column("metric")
        table.add_column("value", justify="right")
        table.add_row("total memories", str(report.total_memories))
        for cat, n in report.memories_by_category.items():
            table.add_row(f"category {cat}", str(n))
        for src, n in report.memories_by_source.items():
            table.add_row(f"source {src}", str(n))
        table.add_row("average age (days)", f"{report.average_age_days:.2f}")
        table.add_row("duplicate rate", f"{report.duplicate_rate:.1%}")
        table.add_row("write-rejection rate", f"{report.write_rejection_rate:.1%}")
        table.add_row("search-hit rate", f"{report.search_hit_rate:.1%}")
        console.print(table)

    def _gate(
        intent: str,
        text: str,
        db: str,
        tenant_id: str | None,
        user_id: str | None,
        session_id: str | None,
        agent_id: str | None,
        layer: str | None,
        embedder: str | None,
        as_json: bool,
    ) -> None:
        with open_store(db, embedder) as mem:
            res = mem.process(
                tenant(tenant_id), text, intent=intent, identifiers=_ids(user_id, session_id, agent_id), layer=layer
            )
        _print_result(res, as_json)

    @app.command()
    def process(
        text: Annotated[str, typer.Argument(help="A message from the conversation.")],
        db: DbOpt = DEFAULT_DB,
        tenant_id: TenantOpt = None,
        user_id: UserOpt = None,
        session_id: SessionIdOpt = None,
        agent_id: AgentIdOpt = None,
        layer: LayerOpt = None,
        embedder: EmbedderOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        """Write gate: store, update, or ignore (with the reason)."""
        _gate("none", text, db, tenant_id, user_id, session_id, agent_id, layer, embedder, as_json)

    @app.command()
    def remember(
        text: Annotated[str, typer.Argument(help="What to remember.")],
        db: DbOpt = DEFAULT_DB,
        tenant_id: TenantOpt = None,
        user_id: UserOpt = None,
        session_id: SessionIdOpt = None,
        agent_id: AgentIdOpt = None,
        layer: LayerOpt = None,
        embedder: EmbedderOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        """Store explicitly (unless unsafe)."""
        _gate("remember", text, db, tenant_id, user_id, session_id, agent_id, layer, embedder, as_json)

    @app.command()
    def forget(
        text: Annotated[str, typer.Argument(help="What to forget.")],
        db: DbOpt = DEFAULT_DB,
        tenant_id: TenantOpt = None,
        user_id: UserOpt = None,
        session_id: SessionIdOpt = None,
        agent_id: AgentIdOpt = None,
        layer: LayerOpt = None,
        embedder: EmbedderOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        """Delete every matching memory."""
        _gate("forget", text, db, tenant_id, user_id, session_id, agent_id, layer, embedder, as_json)
