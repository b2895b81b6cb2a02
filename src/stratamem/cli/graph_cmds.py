"""Knowledge-graph commands: ``stratamem graph check [--repair]``, ``related``, ``path``, ``neighbors``."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from .common import DEFAULT_DB, DbOpt, EmbedderOpt, JsonOpt, TenantOpt, console, emit_json, open_store, tenant


def register(app: typer.Typer) -> None:
    graph_app = typer.Typer(help="Knowledge graph: integrity scan and traversal.", no_args_is_help=True)
    app.add_typer(graph_app, name="graph")

    @graph_app.command("check")
    def check(
        db: DbOpt = DEFAULT_DB,
        repair: Annotated[bool, typer.Option("--repair", help="Delete the orphans found.")] = False,
        only_tenant: Annotated[str | None, typer.Option("--tenant", "-t", help="Scan one tenant only.")] = None,
        embedder: EmbedderOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        """Integrity scan: orphaned edges, nodes and entities (reported to the audit log)."""
        with open_store(db, embedder, must_exist=True) as mem:
            report = mem.graph.check(repair=repair, tenant_id=only_tenant, principal="cli")
        if as_json:
            emit_json(
                {
                    "ok": report.ok,
                    "repaired": report.repaired,
                    "total_orphans": report.total_orphans,
                    "tenants": [t.model_dump() for t in report.tenants],
                }
            )
        else:
            table = Table("tenant", "orphans", "repaired")
            for t in report.tenants:
                table.add_row(t.tenant_id, ", ".join(f"{k}={v}" for k, v in t.orphans.items()) or "-", str(t.repaired))
            console.print(table)
            verb = "repaired" if repair else "found"
            console.print(f"{report.total_orphans} orphan(s) {verb}")
        if report.total_orphans and not repair:
            raise typer.Exit(1)

    @graph_app.command("related")
    def related(
        node: Annotated[str, typer.Argument(help="Memory id or entity name.")],
        db: DbOpt = DEFAULT_DB,
        tenant_id: TenantOpt = None,
        hops: Annotated[int, typer.Option("--hops", "-n", help="Maximum hop distance (1-6).")] = 2,
        limit: Annotated[int, typer.Option("--limit", "-k")] = 20,
        entities: Annotated[bool, typer.Option("--entities", help="Include entities, not only memories.")] = False,
        embedder: EmbedderOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        """Memories related to a memory or entity within N hops, nearest first."""
        with open_store(db, embedder, must_exist=True) as mem:
            out = mem.graph.related(tenant(tenant_id), node, hops, limit=limit, include_entities=entities)
        if as_json:
            emit_json(out.model_dump(mode="json"))
            return
        table = Table("hops", "kind", "id", "reasoning")
        for item in out.items:
            table.add_row(str(item.hops), item.node.kind, item.node.id, item.reasoning)
        console.print(table)

    @graph_app.command("path")
    def path(
        a: Annotated[str, typer.Argument(help="Memory id or entity name.")],
        b: Annotated[str, typer.Argument(help="Memory id or entity name.")],
        db: DbOpt = DEFAULT_DB,
        tenant_id: TenantOpt = None,
        embedder: EmbedderOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        """Shortest path between two memories or entities, as a reasoning path."""
        with open_store(db, embedder, must_exist=True) as mem:
            out = mem.graph.path(tenant(tenant_id), a, b)
        if as_json:
            emit_json(out.model_dump(mode="json"))
        elif out.found:
            console.print(f"{out.hops} hop(s): {out.reasoning}", markup=False, highlight=False)
        else:
            console.print("no path")
            raise typer.Exit(1)
