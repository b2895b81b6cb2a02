"""``stratamem demo``: seed a few layered memories into a store and show layered search."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from .common import DEFAULT_DB, DbOpt, EmbedderOpt, console, open_store, tenant

_SEED = [
    ("company", "Use spaces for indentation in all repositories"),
    ("project", "This project uses tabs for indentation"),
    ("project", "The backend of this project runs on PostgreSQL 16"),
    ("user", "User prefers dark mode in every editor"),
    ("user", "User writes Python and TypeScript"),
    ("team", "The team does code review before every merge"),
]
_IDS = {"user_id": "alice", "project_id": "backend", "team_id": "platform", "company_id": "acme"}
_QUERIES = ["what color theme does the user like", "tabs or spaces for indentation?", "which database do we use"]


def register(app: typer.Typer) -> None:
    @app.command()
    def demo(
        db: DbOpt = DEFAULT_DB,
        tenant_id: Annotated[str, typer.Option("--tenant")] = "demo",
        embedder: EmbedderOpt = None,
    ) -> None:
        """Seed example memories (once) and run layered searches against them."""
        ctx = tenant(tenant_id)
        with open_store(db, embedder) as mem:
            if mem.list(ctx, limit=1).total_count == 0:
                mem.bulk_add(ctx, [{"content": c, "layer": layer, "identifiers": _IDS} for layer, c in _SEED])
                console.print(f"seeded {len(_SEED)} memories into {db} (tenant {tenant_id})")
            for q in _QUERIES:
                res = mem.search(ctx, q, identifiers=_IDS, limit=3)
                table = Table(title=f"search: {q!r}  (layers {', '.join(x.value for x in res.searched_layers)})")
                for col in ("layer", "score", "memory"):
                    table.add_column(col)
                for r in res.results:
                    table.add_row(r.layer.value, f"{r.score:.3f}", r.memory.content)
                console.print(table)
