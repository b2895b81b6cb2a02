"""Health of the snapshot bucket, for ``/health/graph``: when snapshots are configured (a manager
set on the ``Memory``, or ``STRATAMEM_S3_URL`` / ``STRATAMEM_S3_BUCKET`` in the environment), one
``HEAD`` of the bucket says whether the next push can land."""

from __future__ import annotations

import functools
from typing import Any

from ..model import ComponentHealth
from ..settings import Settings
from .s3 import S3Settings, S3Store


@functools.lru_cache(maxsize=8)
def _store_for(settings: S3Settings) -> S3Store:
    return S3Store(settings)


def configured_store(memory: Any) -> S3Store | None:
    """The snapshot store: the `Memory`'s configured manager's, else one from `STRATAMEM_S3_URL` /
    `STRATAMEM_S3_BUCKET`; None when snapshots are not configured."""
    manager = getattr(memory, "_snapshots", None)
    if manager is not None:
        store: S3Store = manager.s3
        return store
    settings = Settings()
    if settings.s3_configured():
        return _store_for(S3Settings.from_env(settings))
    return None


def snapshot_bucket_health(memory: Any) -> ComponentHealth | None:
    """None when snapshots are not configured; else healthy or unhealthy with the bucket's name."""
    store = configured_store(memory)
    if store is None:
        return None
    try:
        store.client.head_bucket(Bucket=store.bucket)
    except Exception as exc:  # any failure (missing bucket, no route, bad credentials) is "unhealthy"
        return ComponentHealth(status="unhealthy", message=f"snapshot bucket {store.bucket}: {type(exc).__name__}")
    return ComponentHealth(status="healthy", message=f"snapshot bucket {store.bucket} reachable")
