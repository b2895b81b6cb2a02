"""Persistence to S3-compatible object storage: Parquet snapshots with atomic publish (SPEC R-S3)."""

from __future__ import annotations

from .manifest import Manifest, PullReport, PushReport, SnapshotInfo
from .s3 import S3Settings, S3Store
from .snapshots import SnapshotManager, open_from_snapshot

__all__ = [
    "Manifest",
    "PullReport",
    "PushReport",
    "S3Settings",
    "S3Store",
    "SnapshotInfo",
    "SnapshotManager",
    "open_from_snapshot",
]
