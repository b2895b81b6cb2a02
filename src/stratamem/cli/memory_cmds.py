"""Memory commands: add, search, get, list, delete, stats, import, export."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..errors import ErrorCode, MemoryError
from .common import (
    DEFAULT_DB,
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
    console,
    emit_json,
    fail,
    identifiers,
    open_store,
    parse_json_option,
    tenant,
)

IMPORT_BATCH = 100

# -- the query options ``search`` and ``list`` share --------------------------------------------
FilterOpt = Annotated[str | None, typer.Option("--filter", help="Metadata filter as JSON.")]
IncludeSupersededOpt = Annotated[
    bool, typer.Option("--include-superseded", help="Also show memories a newer one replaced (history).")
]
AsOfOpt = Annotated[str | None, typer.Option("--as-of", help="ISO 8601 time: the memories that were current then.")]
SinceOpt = Annotated[str | None, typer.Option("--since", help="ISO 8601: only memories at or after it.")]
UntilOpt = Annotated[str | None, typer.Option("--until", help="ISO 8601: only memories before it.")]
TimeFieldOpt = Annotated[
    str | None, typer.Option("--time-field", help="What --since/--until apply to: created (default) or updated.")
]
TagsOpt = Annotated[list[str] | None, typer.Option("--tag", help="Only memories with this tag (repeatable).")]
TagsMatchOpt = Annotated[
    str | None, typer.Option("--tags-match", help="any (default): one of the --tag values; all: every one.")
]
IncludeNarrowerOpt = Annotated[
    bool,
    typer.Option("--include-narrower", help="Also the narrower scopes whose ids are given (user + session, agent)."),
]


def register(app: typer.Typer) -> None:
    @app.command()
    def add(
        content: Annotated[str, typer.Argument(help="Memory text.")],
        db: DbOpt = DEFAULT_DB,
        tenant_id: TenantOpt = None,
        layer: Annotated[str, typer.Option("--layer", "-l", help="Target layer.")] = "user",
        tags: Annotated[list[str] | None, typer.Option("--tag", help="Tag (repeatable).")] = None,
        metadata: Annotated[str | None, typer.Option("--metadata", help="Metadata as a JSON object.")] = None,
        supersedes: Annotated[
            list[str] | None, typer.Option("--supersedes", help="Id of an older memory this one replaces (repeatable).")
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
        embedder: EmbedderOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        """Store one memory."""
        md: dict[str, Any] = parse_json_option(metadata, "--metadata") or {}
        if tags:
            md["tags"] = list(tags)
        ids = identifiers(
            agent_id, user_id, session_id, project_id, team_id, org_id, company_id, object_type, object_id
        )
        with open_store(db, embedder) as mem:
            out = mem.add(
                tenant(tenant_id),
                content=content,
                layer=layer,
                identifiers=ids,
                metadata=md,
                supersedes=supersedes or None,
            )
        if as_json:
            emit_json(out.to_json_dict())
        else:
            console.print(f"added {out.memory.id} to layer {out.memory.layer.value}")
            for old_id in out.superseded:
                console.print(f"superseded {old_id}")

    @app.command()
    def search(
        query: Annotated[str, typer.Argument(help="Natural-language query.")],
        db: DbOpt = DEFAULT_DB,
        tenant_id: TenantOpt = None,
        layers: Annotated[list[str] | None, typer.Option("--layer", "-l", help="Layer to search (repeatable).")] = None,
        limit: Annotated[int, typer.Option("--limit", "-k")] = 10,
        threshold: Annotated[
            float | None, typer.Option("--threshold", help="Minimum score 0..1 (default 0.7).")
        ] = None,
        filter_json: FilterOpt = None,
        recency_boost: Annotated[
            float | None,
            typer.Option("--recency-boost", help='0..1: discount older memories (README "Scores"); default off.'),
        ] = None,
        importance_boost: Annotated[
            float | None,
            typer.Option("--importance-boost", help="0..1: discount less important memories; default off."),
        ] = None,
        include_superseded: IncludeSupersededOpt = False,
        as_of: AsOfOpt = None,
        order: Annotated[str | None, typer.Option("--order", help="relevance (default), newest or oldest.")] = None,
        since: SinceOpt = None,
        until: UntilOpt = None,
        time_field: TimeFieldOpt = None,
        tags: TagsOpt = None,
        tags_match: TagsMatchOpt = None,
        include_narrower: IncludeNarrowerOpt = False,
        agent_id: AgentOpt = None,
        user_id: UserOpt = None,
        session_id: SessionOpt = None,
        project_id: ProjectOpt = None,
        team_id: TeamOpt = None,
        org_id: OrgOpt = None,
        company_id: CompanyOpt = None,
        object_type: ObjectTypeOpt = None,
        object_id: ObjectIdOpt = None,
        embedder: EmbedderOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        """Semantic search across the layers the identifiers reach."""
        ids = identifiers(
            agent_id, user_id, session_id, project_id, team_id, org_id, company_id, object_type, object_id
        )
        flt = with_tags(parse_json_option(filter_json, "--filter"), tags)
        with open_store(db, embedder, must_exist=True) as mem:
            res = mem.search(
                tenant(tenant_id),
                query,
                identifiers=ids,
                layers=layers or None,
                limit=limit,
                threshold=threshold,
                filter=flt,
                recency_boost=recency_boost,
                importance_boost=importance_boost,
                include_superseded=include_superseded,
                as_of=as_of,
                order=order,  # type: ignore[arg-type]
                since=since,
                until=until,
                time_field=time_field,  # type: ignore[arg-type]
                tags_match=tags_match,  # type: ignore[arg-type]
                include_narrower=include_narrower,
            )
        if as_json:
            emit_json(res.to_json_dict())
            return
        table = Table(
            title=f"{len(res.results)} of {res.total_count} results "
            f"(layers: {', '.join(layer.value for layer in res.searched_layers)})"
        )
        for col in ("score", "layer", "id", "content"):
            table.add_column(col)
        for r in res.results:
            table.add_row(f"{r.score:.3f}", r.layer.value, r.memory.id, r.memory.content)
        console.print(table)

    @app.command()
    def get(
        memory_id: Annotated[str, typer.Argument(help="Memory id.")],
        db: DbOpt = DEFAULT_DB,
        tenant_id: TenantOpt = None,
        embedder: EmbedderOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        """Show one memory (MEMORY_NOT_FOUND, exit 2, when it does not exist)."""
        with open_store(db, embedder, must_exist=True) as mem:
            entry = mem.get(tenant(tenant_id), memory_id)
        if entry is None:
            raise fail(ErrorCode.MEMORY_NOT_FOUND.value, f"no memory with id {memory_id!r}")
        if as_json:
            emit_json(entry.to_json_dict(exclude={"embedding"}))
        else:
            console.print_json(json.dumps(entry.to_json_dict(exclude={"embedding"})))

    @app.command("list")
    def list_(
        db: DbOpt = DEFAULT_DB,
        tenant_id: TenantOpt = None,
        layer: Annotated[str | None, typer.Option("--layer", "-l", help="Layer (omit for all layers).")] = None,
        limit: Annotated[int, typer.Option("--limit", "-n")] = 50,
        cursor: Annotated[str | None, typer.Option("--cursor", help="Cursor from a previous page.")] = None,
        filter_json: FilterOpt = None,
        include_superseded: IncludeSupersededOpt = False,
        as_of: AsOfOpt = None,
        order: Annotated[str | None, typer.Option("--order", help="newest or oldest (default).")] = None,
        since: SinceOpt = None,
        until: UntilOpt = None,
        time_field: TimeFieldOpt = None,
        tags: TagsOpt = None,
        tags_match: TagsMatchOpt = None,
        include_narrower: IncludeNarrowerOpt = False,
        expires_before: Annotated[
            str | None,
            typer.Option(
                "--expires-before", help="ISO 8601: only memories set to expire before it (never-expiring left out)."
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
        embedder: EmbedderOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        """List memories, oldest first (or --order newest), one page at a time."""
        ids = identifiers(
            agent_id, user_id, session_id, project_id, team_id, org_id, company_id, object_type, object_id
        )
        with open_store(db, embedder, must_exist=True) as mem:
            page = mem.list(
                tenant(tenant_id),
                layer=layer,
                identifiers=ids,
                cursor=cursor,
                limit=limit,
                filter=with_tags(parse_json_option(filter_json, "--filter"), tags),
                include_superseded=include_superseded,
                as_of=as_of,
                order=order,  # type: ignore[arg-type]
                since=since,
                until=until,
                time_field=time_field,  # type: ignore[arg-type]
                tags_match=tags_match,  # type: ignore[arg-type]
                include_narrower=include_narrower,
                expires_before=expires_before,
            )
        if as_json:
            emit_json(page.to_json_dict())
            return
        table = Table(title=f"{len(page.memories)} of {page.total_count} memories")
        expiry = expires_before is not None  # show when each one expires
        for col in ("id", "layer", "created", *(["expires"] if expiry else []), "content"):
            table.add_column(col)
        for e in page.memories:
            when = [e.expires_at.isoformat(timespec="seconds") if e.expires_at else ""] if expiry else []
            table.add_row(e.id, e.layer.value, e.created_at.isoformat(timespec="seconds"), *when, e.content)
        console.print(table)
        if page.next_cursor:
            console.print(f"next page: --cursor {page.next_cursor}")

    @app.command()
    def delete(
        memory_ids: Annotated[list[str], typer.Argument(help="Memory id(s).")],
        db: DbOpt = DEFAULT_DB,
        tenant_id: TenantOpt = None,
        embedder: EmbedderOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        """Delete memories (idempotent)."""
        with open_store(db, embedder) as mem:
            out = mem.bulk_delete(tenant(tenant_id), memory_ids)
        if as_json:
            emit_json(out.to_json_dict())
        else:
            console.print(f"deleted {out.deleted} of {len(memory_ids)}")

    @app.command()
    def stats(
        db: DbOpt = DEFAULT_DB,
        tenant_id: TenantOpt = None,
        embedder: EmbedderOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        """Memory counts per layer for a tenant."""
        with open_store(db, embedder, must_exist=True) as mem:
            st = mem.stats(tenant(tenant_id))
        if as_json:
            emit_json(st.to_json_dict())
            return
        table = Table(title=f"tenant {st.tenant_id}: {st.total} memories ({st.provider}, {st.embedding_model})")
        table.add_column("layer")
        table.add_column("memories", justify="right")
        for layer, n in st.by_layer.items():
            table.add_row(layer, str(n))
        console.print(table)

    @app.command("import")
    def import_(
        file: Annotated[Path, typer.Argument(help="JSONL file: one {content, layer, identifiers, metadata} per line.")],
        db: DbOpt = DEFAULT_DB,
        tenant_id: TenantOpt = None,
        embedder: EmbedderOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        """Import memories from JSONL (as written by `export`), in batches, with a progress bar."""
        if not file.is_file():
            raise fail("INVALID_PARAMS", f"no such file: {file}")
        items: list[dict[str, Any]] = []
        with file.open("rb") as fh:
            for lineno, raw_line in enumerate(fh, 1):
                try:
                    line = raw_line.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise fail(
                        "INVALID_PARAMS",
                        f"{file}:{lineno}: not UTF-8 text (byte 0x{raw_line[exc.start]:02x} at column {exc.start + 1})",
                    ) from None
                if not line.strip():
                    continue
                try:
                    raw = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise fail("INVALID_PARAMS", f"{file}:{lineno}: invalid JSON: {exc.msg}") from None
                if not isinstance(raw, dict):
                    raise fail("INVALID_PARAMS", f"{file}:{lineno}: each line must be a JSON object")
                item = {k: raw[k] for k in ("content", "layer", "identifiers", "metadata", "tier") if k in raw}
                if "expiresAt" in raw or "expires_at" in raw:
                    item["expires_at"] = raw.get("expiresAt", raw.get("expires_at"))
                items.append(item)
        added = 0
        with (
            open_store(db, embedder) as mem,
            Progress(
                TextColumn("importing"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=console,
                disable=as_json,
            ) as progress,
        ):
            task = progress.add_task("import", total=len(items))
            for start in range(0, len(items), IMPORT_BATCH):
                batch = items[start : start + IMPORT_BATCH]
                try:
                    added += len(mem.bulk_add(tenant(tenant_id), batch).results)
                except MemoryError as exc:
                    if "index" in exc.details:
                        exc.message = f"line item {start + int(exc.details['index']) + 1}: {exc.message}"
                    exc.message += f" ({added} memories imported before this error)"
                    raise
                progress.advance(task, len(batch))
        if as_json:
            emit_json({"imported": added})
        else:
            console.print(f"imported {added} memories")

    @app.command()
    def export(
        db: DbOpt = DEFAULT_DB,
        tenant_id: TenantOpt = None,
        output: Annotated[Path | None, typer.Option("--output", "-o", help="File to write (default stdout).")] = None,
        with_embeddings: Annotated[bool, typer.Option("--with-embeddings", help="Include vectors.")] = False,
        embedder: EmbedderOpt = None,
    ) -> None:
        """Export a tenant's memories as JSONL (re-importable with `import`)."""
        with open_store(db, embedder, must_exist=True) as mem:
            exclude = None if with_embeddings else {"embedding"}
            lines = (
                json.dumps(e.to_json_dict(exclude=exclude), ensure_ascii=False) + "\n"
                for e in mem.export(tenant(tenant_id), include_embeddings=with_embeddings)
            )
            if output is None:
                for line in lines:
                    typer.echo(line, nl=False)
            else:
                n = 0
                with output.open("w", encoding="utf-8") as fh:
                    for line in lines:
                        fh.write(line)
                        n += 1
                console.print(f"exported {n} memories to {output}", highlight=False)


def with_tags(flt: Any, tags: list[str] | None) -> Any:
    """The --filter object with the --tag values added."""
    if not tags:
        return flt
    return {**(flt or {}), "tags": list(tags)}
