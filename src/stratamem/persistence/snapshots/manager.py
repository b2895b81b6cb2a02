"""The snapshot manager (``mem.snapshots``) assembled from its phases, its async facade, and
:func:`open_from_snapshot`.
"""

from __future__ import annotations

import asyncio
import builtins
import json
import time
from collections.abc import Callable
from contextlib import suppress
from datetime import datetime
from typing import Any, Protocol, TypeVar

from pydantic import ValidationError

from ...errors import MemoryError
from ...model import TenantContext
from ..manifest import (
    Manifest,
    PullReport,
    PushReport,
    SnapshotInfo,
)
from ..s3 import S3Settings, S3Store
from .base import DEFAULT_COLD_START_BUDGET_S, WaitFor, _check_wait_for, _tenant_id, log, tenant_prefix
from .pull import PullMixin
from .push import PushMixin


class SnapshotManager(PushMixin, PullMixin):
    """Push, list, pull and restore per-tenant snapshots of one store (``mem.snapshots``)."""


class SnapshotHost(Protocol):
    """What :func:`open_from_snapshot` opens: an object with snapshots (``stratamem.Memory``)."""

    def configure_snapshots(self, settings: Any = None, **kwargs: Any) -> SnapshotManager: ...

    def close(self) -> None: ...


M = TypeVar("M", bound=SnapshotHost)


def open_from_snapshot(
    tenants: str | TenantContext | builtins.list[str] | None = None,
    location: str | None = None,
    *,
    open_memory: Callable[..., M],
    settings: S3Settings | None = None,
    store: S3Store | None = None,
    embedder: Any = None,
    at: datetime | str | None = None,
    budget_s: float = DEFAULT_COLD_START_BUDGET_S,
    lazy: bool = False,
    background: bool = True,
    wait_for: WaitFor = "queryable",
    **memory_kwargs: Any,
) -> tuple[M, builtins.list[PullReport]]:
    """Open a store (default: an in-memory DuckDB) and hydrate it from S3 snapshots.

    ``tenants``: one tenant, a list, or None for every tenant with a prefix in the bucket. Without
    an explicit ``embedder`` the hashing embedder is chosen when the snapshot was written with it.
    ``lazy=True``: read the manifests, then load tenants in the background; the first operation on a
    tenant not loaded yet loads it before answering. Returns when every tenant can answer searches
    (``wait_for="queryable"``, the default: its memories and lexical index are loaded; the graph and
    the rest follow in the background) or is completely loaded (``wait_for="loaded"``), or when
    ``budget_s`` is spent, whichever is first (``budget_s=0``: right after the manifests);
    ``mem.snapshots.status()`` reports progress (see :mod:`stratamem.persistence.lazy`).
    ``background=False``: no background loading, each tenant loads on its first access only.
    ``open_memory``: opens the store, called as ``open_memory(location, embedder=…, **memory_kwargs)``
    (``Memory.open``: ``Memory.open_from_snapshot`` passes it).
    """
    _check_wait_for(wait_for)

    settings = settings or (store.settings if store is not None else S3Settings.from_env())
    s3 = store or S3Store(settings)
    probed: Manifest | None = None
    if embedder is None:
        embedder, probed = _snapshot_embedder(s3, tenants)
    mem = open_memory(location or "duckdb:///:memory:", embedder=embedder, **memory_kwargs)
    try:
        mgr = mem.configure_snapshots(settings, store=s3)
        if probed is not None:
            tid = probed.tenant_id
            with suppress(MemoryError):
                mgr._manifest_cache[probed.snapshot_id] = mgr._checked_manifest(
                    tid, f"{tenant_prefix(tid)}manifests/{probed.snapshot_id}.json", probed
                )
        if tenants is None:
            names = mgr.stored_tenants()
        elif isinstance(tenants, str | TenantContext):
            names = [_tenant_id(tenants)]
        else:
            names = [_tenant_id(t) for t in tenants]
        if lazy:
            # manifests first (every tenant), then the loads: background + on first access
            started = time.perf_counter()
            loader = mgr._lazy_loader(budget_s)
            for t in names:
                loader.add(mgr._plan(t, mgr._candidates(t, at, None)))
            queryable = wait_for == "queryable"
            if background:
                loader.start()
                loader.wait(max(0.0, budget_s - (time.perf_counter() - started)), queryable=queryable)
            reports = [mgr._lazy_report(t, budget_s, started, wait=background, queryable=queryable) for t in names]
            status = loader.status()
            log.info(
                "lazy cold start: %d/%d tenants, %d partitions (%d bytes) loaded in %.2fs (budget %.2fs)%s",
                len(status.tenants_loaded),
                len(names),
                status.partitions_loaded,
                status.bytes_loaded,
                status.elapsed_s,
                budget_s,
                "; the rest load in the background or on first access" if not status.complete else "",
            )
        else:
            reports = [mgr.pull(t, at=at, budget_s=budget_s) for t in names]
        mgr.last_reports = reports
    except BaseException:
        mem.close()
        raise
    return mem, reports


def _snapshot_embedder(s3: S3Store, tenants: Any) -> tuple[str | None, Manifest | None]:
    """``hashing:DIM`` when the newest manifest was written with the hashing embedder, else None;
    and that manifest (so the pull does not fetch it again)."""
    if isinstance(tenants, builtins.list):
        tenants = tenants[0] if tenants else None
    if tenants is None:
        return None, None
    tenant_id = _tenant_id(tenants)
    prefix = tenant_prefix(tenant_id) + "manifests/"
    keys = sorted((str(o["Key"]) for o in s3.list(prefix)), reverse=True)
    for key in keys:
        with suppress(MemoryError, ValidationError, json.JSONDecodeError):
            m = Manifest.model_validate_json(s3.get_bytes(key))
            if m.tenant_id != tenant_id or key != f"{prefix}{m.snapshot_id}.json":
                return None, None
            if m.embedding_model and m.embedding_model.startswith("hashing") and m.embedding_dimensions:
                return f"hashing:{m.embedding_dimensions}", m
            return None, m
    return None, None


class AsyncSnapshotManager:
    """``AsyncMemory.snapshots``: the same operations as coroutines (run in worker threads)."""

    def __init__(self, manager: SnapshotManager) -> None:
        self.sync = manager

    async def push(self, tenant: str | TenantContext | None = None) -> builtins.list[PushReport]:
        return await asyncio.to_thread(self.sync.push, tenant)

    async def pull(self, tenant: str | TenantContext, **kwargs: Any) -> PullReport:
        return await asyncio.to_thread(lambda: self.sync.pull(tenant, **kwargs))

    async def restore(self, tenant: str | TenantContext, *, at: datetime | str | None = None) -> PullReport:
        return await asyncio.to_thread(lambda: self.sync.restore(tenant, at=at))

    async def list(self, tenant: str | TenantContext) -> builtins.list[SnapshotInfo]:
        return await asyncio.to_thread(self.sync.list, tenant)
