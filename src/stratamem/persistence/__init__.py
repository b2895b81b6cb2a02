"""Persistence to S3-compatible object storage: Parquet snapshots with atomic publish."""

from __future__ import annotations

from .manifest import LoadStatus, Manifest, PullReport, PushReport, SnapshotInfo, TenantLoadStatus
from .s3 import S3Settings, S3Store
from .snapshots import SnapshotManager, open_from_snapshot

__all__ = [
    "LoadStatus",
    "Manifest",
    "PullReport",
    "PushReport",
    "S3Settings",
    "S3Store",
    "SnapshotInfo",
    "SnapshotManager",
    "TenantLoadStatus",
    "open_from_snapshot",
]
