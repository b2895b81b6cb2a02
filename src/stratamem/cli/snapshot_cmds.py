"""``stratamem snapshot push|pull|list|restore``: Parquet snapshots on S3-compatible storage."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table

from ..persistence.s3 import S3Settings
from .common import (
    DEFAULT_DB,
    DbOpt,
    EmbedderOpt,
    JsonOpt,
    TenantOpt,
    coded_errors,
    console,
    emit_json,
    from_settings,
    open_store,
    require_tenant,
)

EndpointOpt = Annotated[
    str | None,
    typer.Option(
        "--endpoint",
        callback=from_settings(lambda s: s.s3_url),
        help="S3-compatible endpoint URL (default: AWS; env STRATAMEM_S3_URL).",
    ),
]
BucketOpt = Annotated[
    str | None,
    typer.Option(
        "--bucket", callback=from_settings(lambda s: s.s3_bucket), help="Bucket name (env STRATAMEM_S3_BUCKET)."
    ),
]
OptTenant = Annotated[
    str | None,
    typer.Option(
        "--tenant",
        "-t",
        callback=from_settings(lambda s: s.tenant),
        help="Tenant id (push/pull: default every tenant; env STRATAMEM_TENANT).",
    ),
]
Tenant = TenantOpt


def _manager(mem: Any, endpoint: str | None, bucket: str | None) -> Any:
    return mem.configure_snapshots(S3Settings.from_env(endpoint_url=endpoint, bucket=bucket))


def register(app: typer.Typer) -> None:
    snap = typer.Typer(
        name="snapshot", help="Snapshots of the store to S3-compatible storage (Parquet).", no_args_is_help=True
    )
    app.add_typer(snap)

    @snap.command("push")
    def push(
        db: DbOpt = DEFAULT_DB,
        tenant_id: OptTenant = None,
        endpoint: EndpointOpt = None,
        bucket: BucketOpt = None,
        embedder: EmbedderOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        """Publish a new snapshot of one tenant (or every tenant)."""
        with open_store(db, embedder, must_exist=True) as mem:
            reports = _manager(mem, endpoint, bucket).push(tenant_id)
        if as_json:
            emit_json([r.model_dump(mode="json") for r in reports])
            return
        for r in reports:
            console.print(
                f"{r.tenant_id}: snapshot {r.snapshot_id} rows={r.rows} files_written={r.files_written} "
                f"reused={r.files_reused} bytes_written={r.bytes_written} in {r.duration_s:.2f}s",
                markup=False,
                highlight=False,
            )

    @snap.command("list")
    def list_(
        db: DbOpt = DEFAULT_DB,
        tenant_id: Tenant = None,
        endpoint: EndpointOpt = None,
        bucket: BucketOpt = None,
        embedder: EmbedderOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        """Published snapshots of a tenant, newest first."""
        with open_store(db, embedder, must_exist=True) as mem:
            infos = _manager(mem, endpoint, bucket).list(require_tenant(tenant_id))
        if as_json:
            emit_json([i.model_dump(mode="json") for i in infos])
            return
        table = Table("snapshot", "created", "rows", "bytes", "files", "schema")
        for i in infos:
            table.add_row(
                i.snapshot_id, i.created_at.isoformat(), str(i.rows), str(i.bytes), str(i.files), str(i.schema_version)
            )
        console.print(table)

    def _restore(
        db: str,
        tenant_id: str | None,
        at: str | None,
        snapshot_id: str | None,
        endpoint: str | None,
        bucket: str | None,
        embedder: str | None,
        as_json: bool,
    ) -> None:
        with open_store(db, embedder) as mem:
            mgr = _manager(mem, endpoint, bucket)
            with coded_errors():
                tenants = [tenant_id] if tenant_id else mgr.stored_tenants()
                reports = [mgr.pull(t, at=at, snapshot_id=snapshot_id) for t in tenants]
        if as_json:
            emit_json([r.model_dump(mode="json") for r in reports])
            return
        for r in reports:
            rejected = ", ".join(f"{x.snapshot_id} ({x.reason})" for x in r.rejected)
            console.print(
                f"{r.tenant_id}: restored snapshot {r.snapshot_id} ({r.created_at.isoformat()}); "
                f"before {r.before} after {r.tables}" + (f"; rejected {rejected}" if rejected else ""),
                markup=False,
                highlight=False,
            )

    @snap.command("pull")
    def pull(
        db: DbOpt = DEFAULT_DB,
        tenant_id: OptTenant = None,
        snapshot_id: Annotated[str | None, typer.Option("--snapshot", help="A snapshot id.")] = None,
        endpoint: EndpointOpt = None,
        bucket: BucketOpt = None,
        embedder: EmbedderOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        """Replace the tenant's data in the store with its newest valid snapshot."""
        _restore(db, tenant_id, None, snapshot_id, endpoint, bucket, embedder, as_json)

    @snap.command("restore")
    def restore(
        at: Annotated[str, typer.Option("--at", help="ISO-8601 time; newest snapshot at or before it.")],
        db: DbOpt = DEFAULT_DB,
        tenant_id: OptTenant = None,
        endpoint: EndpointOpt = None,
        bucket: BucketOpt = None,
        embedder: EmbedderOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        """Point-in-time recovery."""
        _restore(db, tenant_id, at, None, endpoint, bucket, embedder, as_json)
