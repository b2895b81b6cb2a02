"""Retention: old manifests expire, unreferenced data objects are collected."""

from __future__ import annotations

import builtins
from contextlib import suppress

from ...errors import MemoryError
from ...model import TenantContext
from .base import SnapshotBase, _tenant_id, _to_utc, log, snapshot_time, tenant_prefix


class RetentionMixin(SnapshotBase):
    """``prune``."""

    def prune(self, tenant: str | TenantContext) -> builtins.list[str]:
        """Apply retention: drop manifests older than ``retention`` (never the newest), then every data
        or temporary object no remaining manifest references (older than ``gc_grace``)."""
        tenant_id = _tenant_id(tenant)
        prefix = tenant_prefix(tenant_id)
        now = self.clock()
        manifests = self._manifest_keys(tenant_id)
        expired = [(sid, key) for sid, key in manifests[1:] if snapshot_time(sid) < now - self.retention]
        if expired:
            self.s3.delete([key for _, key in expired])
        keep: set[str] = set()
        gone = {key for _, key in expired}
        for _, key in manifests:
            if key in gone:
                continue
            with suppress(MemoryError):
                keep |= self._load_manifest(tenant_id, key).object_keys()
        cutoff = now - self.gc_grace
        garbage = [
            str(o["Key"])
            for sub in ("data/", "_tmp/")
            for o in self.s3.list(prefix + sub)
            if str(o["Key"]) not in keep and _to_utc(o["LastModified"]) <= cutoff
        ]
        if garbage:
            self.s3.delete(garbage)
        if expired or garbage:
            log.info(
                "snapshot retention for tenant %s: %d snapshots expired, %d objects collected",
                tenant_id,
                len(expired),
                len(garbage),
            )
        return [sid for sid, _ in expired]
