"""Admin routes for S3 snapshots of the caller's own tenant: push, list, restore.

The server's snapshot settings come from its environment (``STRATAMEM_S3_URL``, ``STRATAMEM_S3_BUCKET``
…) or from ``memory.configure_snapshots`` before ``create_app``; without them these routes answer
``CONFIGURATION_ERROR``. A restore replaces the tenant's data in the running store.
``GET /v1/snapshots/status`` says whether snapshots are configured at all (without touching S3 when
they are not) and, when they are, how many the tenant has and the newest one.
"""

from __future__ import annotations

from datetime import datetime

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from ..persistence.health import configured_store
from ..persistence.manifest import PullReport, PushReport, SnapshotInfo
from .deps import MemoryDep
from .http_errors import COMMON, responses
from .keys_routes import AdminDep


class RestoreRequest(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    #: Point in time: the newest snapshot at or before it (default: the newest valid one).
    at: datetime | None = None
    #: One snapshot by id instead.
    snapshot_id: str | None = Field(None, max_length=128)


class SnapshotStatus(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    configured: bool = Field(
        description="False when the server has no snapshot target (no `STRATAMEM_S3_URL` or "
        "`STRATAMEM_S3_BUCKET`, no manager configured in code): the other fields are then empty.",
        examples=[True],
    )
    bucket: str | None = Field(None, description="The snapshot bucket, when configured.", examples=["stratamem"])
    count: int = Field(0, description="Published snapshots of the caller's tenant.", examples=[3])
    latest: SnapshotInfo | None = Field(None, description="The newest snapshot of the caller's tenant, if any.")


def build_snapshot_router() -> APIRouter:
    r = APIRouter(prefix="/v1/snapshots", tags=["snapshots"])

    @r.post(
        "",
        status_code=201,
        response_model=PushReport,
        responses=responses(*COMMON),
        name="push_snapshot",
        operation_id="pushSnapshot",
    )
    def push(memory: MemoryDep, ctx: AdminDep) -> PushReport:
        """Publish a new snapshot of the caller's tenant (Parquet on S3; unchanged files are reused)."""
        return memory.snapshots.push(ctx.tenant_id)[0]

    @r.get(
        "",
        response_model=list[SnapshotInfo],
        responses=responses(*COMMON),
        name="snapshots",
        operation_id="listSnapshots",
    )
    def list_snapshots(memory: MemoryDep, ctx: AdminDep) -> list[SnapshotInfo]:
        """Published snapshots of the caller's tenant, newest first."""
        return memory.snapshots.list(ctx.tenant_id)

    @r.get(
        "/status",
        response_model=SnapshotStatus,
        responses=responses(*COMMON),
        name="snapshot_status",
        operation_id="getSnapshotStatus",
    )
    def status(memory: MemoryDep, ctx: AdminDep) -> SnapshotStatus:
        """Whether snapshots are configured on this server and, when they are, how many the caller's
        tenant has and the newest one. Unconfigured, it answers `configured: false` without calling S3."""
        store = configured_store(memory)
        if store is None:
            return SnapshotStatus(configured=False)
        snaps = memory.snapshots.list(ctx.tenant_id)
        return SnapshotStatus(
            configured=True, bucket=store.bucket, count=len(snaps), latest=snaps[0] if snaps else None
        )

    @r.post(
        "/restore",
        response_model=PullReport,
        responses=responses(*COMMON, 404),
        name="restore_snapshot",
        operation_id="restoreSnapshot",
    )
    def restore(body: RestoreRequest, memory: MemoryDep, ctx: AdminDep) -> PullReport:
        """Replace the tenant's data with a snapshot: one by id, the newest at or before `at`, or the
        newest valid one."""
        mgr = memory.snapshots
        if body.at is not None:
            return mgr.restore(ctx.tenant_id, at=body.at, snapshot_id=body.snapshot_id)
        return mgr.pull(ctx.tenant_id, snapshot_id=body.snapshot_id)

    return r
