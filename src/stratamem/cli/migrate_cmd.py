"""``stratamem migrate``: move one tenant between stores (DuckDB ↔ PostgreSQL), resumable, verified."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from ..migration import migrate_tenant
from .common import (
    EmbedderOpt,
    JsonOpt,
    TenantOpt,
    coded_errors,
    console,
    emit_json,
    err_console,
    require_tenant,
)


def register(app: typer.Typer) -> None:
    @app.command()
    def migrate(
        source: Annotated[str, typer.Option("--from", help="Store to copy from: DuckDB file or postgresql:// URL.")],
        target: Annotated[str, typer.Option("--to", help="Store to copy to (created when missing).")],
        tenant_id: TenantOpt = None,
        embedder: EmbedderOpt = None,
        to_embedder: Annotated[
            str | None,
            typer.Option(
                "--to-embedder", help="Embedder of the target (default: --embedder); another model re-embeds."
            ),
        ] = None,
        checkpoint: Annotated[
            Path | None,
            typer.Option("--checkpoint", help="Progress file (default .stratamem-migrate/<tenant>-<hash>.json)."),
        ] = None,
        batch_size: Annotated[int, typer.Option("--batch-size", min=1, help="Rows per write transaction.")] = 500,
        samples: Annotated[int, typer.Option("--samples", min=0, help="Sample searches compared.")] = 5,
        no_graph: Annotated[bool, typer.Option("--no-graph", help="Do not copy the knowledge graph.")] = False,
        as_json: JsonOpt = False,
    ) -> None:
        """Copy a tenant's memories, vectors, graph, events, policies, API keys and feedback to another
        store and verify the copy. Re-running continues after a crash and never duplicates."""
        tenant = require_tenant(tenant_id)
        with coded_errors():
            report = migrate_tenant(
                source,
                target,
                tenant,
                embedder=embedder,
                target_embedder=to_embedder,
                checkpoint=checkpoint,
                batch_size=batch_size,
                samples=samples,
                include_graph=not no_graph,
            )
        if as_json:
            emit_json(report.model_dump(mode="json"))
        else:
            table = Table(title=f"tenant {tenant}: {report.source} -> {report.target}")
            for col in ("kind", "source", "target", "copied", "checksum", "ok", "note"):
                table.add_column(col)
            for kind, k in report.kinds.items():
                same = (
                    "-"
                    if k.source_checksum is None
                    else ("same" if k.source_checksum == k.target_checksum else "DIFFERENT")
                )
                table.add_row(
                    kind,
                    str(k.source_count),
                    str(k.target_count),
                    str(k.copied),
                    same,
                    "yes" if k.ok else "NO",
                    k.note or "",
                )
            console.print(table)
            identical = sum(1 for s in report.searches if s.same)
            console.print(
                f"sample searches identical: {identical}/{len(report.searches)}"
                + (" (re-embedded: scores differ by design)" if report.reembedded else "")
            )
            for warning in report.warnings:
                console.print(f"warning: {warning}")
        if not report.ok:
            err_console.print("error VERIFICATION_FAILED: the copy does not match the source (see the report)")
            raise typer.Exit(1)
