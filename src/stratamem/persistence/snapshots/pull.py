"""Pull and restore: choose a snapshot, load it now or lazily, report what was loaded."""

from __future__ import annotations

import builtins
import shutil
import tempfile
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from ...errors import ErrorCode, MemoryError
from ...model import TenantContext
from ..lazy import LazyLoader, TenantPlan
from ..manifest import (
    LoadStatus,
    Manifest,
    PullReport,
    RejectedSnapshot,
)
from ..metrics import SNAPSHOT_DURATION, SNAPSHOT_FAILURES
from .base import (
    CACHE_TABLES,
    DEFAULT_COLD_START_BUDGET_S,
    WaitFor,
    _check_wait_for,
    _tenant_id,
    _to_utc,
    log,
    snapshot_time,
)
from .hydrate import HydrateMixin


class PullMixin(HydrateMixin):
    """Eager and lazy pulls of tenant snapshots."""

    # ============================================================================= pull/restore
    def _candidates(
        self, tenant_id: str, at: datetime | str | None, snapshot_id: str | None
    ) -> builtins.list[tuple[str, str]]:
        cutoff = _to_utc(at) if at is not None else None
        candidates = [
            (sid, key)
            for sid, key in self._manifest_keys(tenant_id)
            if (snapshot_id is None or sid == snapshot_id) and (cutoff is None or snapshot_time(sid) <= cutoff)
        ]
        if not candidates:
            raise MemoryError(
                ErrorCode.PROVIDER_ERROR,
                f"no snapshot of tenant {tenant_id} "
                + (f"at or before {cutoff.isoformat()}" if cutoff else "exists")
                + (f" with id {snapshot_id}" if snapshot_id else ""),
                operation="snapshot",
                details={"tenant_id": tenant_id, "reason": "no_snapshot"},
            )
        return candidates

    def pull(
        self,
        tenant: str | TenantContext,
        *,
        at: datetime | str | None = None,
        snapshot_id: str | None = None,
        fallback: bool = True,
        budget_s: float | None = None,
        lazy: bool = False,
        background: bool = True,
        wait_for: WaitFor = "queryable",
    ) -> PullReport:
        """Replace the tenant's data in this store with a snapshot: the newest one (at or before ``at``).

        Every file is checked against the manifest's sha256; a snapshot with a corrupt or missing file
        is rejected (logged, listed in ``report.rejected``) and the next older one is tried unless
        ``fallback=False``. The tenant's rows are replaced in one transaction: readers see the old
        rows or the new ones, never a mix.

        ``lazy=True`` (cold start): only the manifest is read now; the tenant is loaded on a
        background thread, or by its first operation (search, get, write …), whichever comes first —
        see :mod:`stratamem.persistence.lazy`. The call waits up to ``budget_s`` (default 3 s) until
        the tenant can answer searches (``wait_for="queryable"``; ``"loaded"``: until all of it is
        loaded) and reports what was loaded; ``status()`` and ``wait_loaded()`` follow the rest.
        ``background=False``: no background thread, the tenant loads on its first access only.
        """
        _check_wait_for(wait_for)
        tenant_id = _tenant_id(tenant)
        started = time.perf_counter()
        self._catalog = None
        candidates = self._candidates(tenant_id, at, snapshot_id)
        if lazy:
            budget = DEFAULT_COLD_START_BUDGET_S if budget_s is None else budget_s
            loader = self._lazy_loader(budget)
            loader.add(self._plan(tenant_id, candidates, fallback))
            if background:
                loader.start()
            return self._lazy_report(tenant_id, budget, started, wait=background, queryable=wait_for == "queryable")
        if self._loader is not None:
            self._loader.discard(tenant_id)
        return self._load_tenant(tenant_id, candidates, fallback=fallback, budget_s=budget_s, started=started)

    def restore(
        self, tenant: str | TenantContext, *, at: datetime | str | None = None, snapshot_id: str | None = None
    ) -> PullReport:
        """Point-in-time recovery: the newest snapshot at or before ``at`` (default: now)."""
        return self.pull(tenant, at=at if at is not None else self.clock(), snapshot_id=snapshot_id)

    def _load_tenant(
        self,
        tenant_id: str,
        candidates: builtins.list[tuple[str, str]],
        *,
        fallback: bool = True,
        budget_s: float | None = None,
        started: float | None = None,
        first: Manifest | None = None,
        rejected: builtins.list[RejectedSnapshot] | None = None,
        deferred: Callable[[Manifest, dict[str, builtins.list[Path]], Path], None] | None = None,
        on_readable: Callable[[Manifest], None] | None = None,
    ) -> PullReport:
        """Download + verify + hydrate the newest loadable candidate (the eager pull, also used by the
        lazy loader for one tenant). With ``deferred``, cache tables are not imported: their verified
        local files are handed to ``deferred`` once the rest is committed (it owns them after)."""
        started = time.perf_counter() if started is None else started
        rejected = [] if rejected is None else rejected
        seen = {r.snapshot_id for r in rejected}
        for sid, key in candidates:
            if sid in seen:
                continue
            workdir = Path(tempfile.mkdtemp(prefix="stratamem-pull-"))
            handed_over = False
            try:
                manifest = (
                    first if first is not None and first.snapshot_id == sid else self._manifest(tenant_id, sid, key)
                )
                self._check_compatible(manifest)
                defer = frozenset(CACHE_TABLES) if deferred is not None else frozenset()
                readable = None if on_readable is None else (lambda m=manifest: on_readable(m))
                before, nbytes, later = self._hydrate(tenant_id, manifest, workdir, defer=defer, on_readable=readable)
                if deferred is not None and any(later.values()):
                    deferred(manifest, later, workdir)
                    handed_over = True
            except MemoryError as exc:
                if self.engine.closed:  # the store went away, not the snapshot: nothing to reject
                    raise
                rejected.append(RejectedSnapshot(snapshot_id=sid, code=exc.code.value, reason=exc.message))
                log.error("snapshot %s of tenant %s rejected: %s", sid, tenant_id, exc.message)
                if exc.code is ErrorCode.CONFIGURATION_ERROR or not fallback:
                    raise
                continue
            finally:
                if not handed_over:
                    shutil.rmtree(workdir, ignore_errors=True)
            duration = time.perf_counter() - started
            SNAPSHOT_DURATION.labels(operation="pull").observe(duration)
            parts = sum(len(t.partitions) for t in manifest.tables)
            files = sum(len(p.files) for t in manifest.tables for p in t.partitions)
            report = PullReport(
                tenant_id=tenant_id,
                snapshot_id=manifest.snapshot_id,
                created_at=manifest.created_at,
                tables={t.name: t.rows for t in manifest.tables},
                rows=manifest.total_rows,
                bytes_downloaded=nbytes,
                duration_s=round(duration, 4),
                rejected=rejected,
                before=before,
                within_budget=None if budget_s is None else duration <= budget_s,
                files_loaded=files,
                files_total=files,
                partitions_loaded=parts,
                partitions_total=parts,
            )
            log.info(
                "restored tenant %s from snapshot %s: before %s, after %s (%.2fs, %d rejected)",
                tenant_id,
                manifest.snapshot_id,
                before,
                report.tables,
                duration,
                len(rejected),
            )
            self._audit(
                tenant_id,
                "snapshot.restore",
                "ok",
                {
                    "snapshot_id": manifest.snapshot_id,
                    "before": before,
                    "after": report.tables,
                    "rejected": [r.snapshot_id for r in rejected],
                },
            )
            return report
        SNAPSHOT_FAILURES.labels(operation="pull").inc()
        self._audit(
            tenant_id,
            "snapshot.restore",
            "error",
            {"rejected": [r.snapshot_id for r in rejected]},
            code=ErrorCode.PROVIDER_ERROR.value,
        )
        raise MemoryError(
            ErrorCode.PROVIDER_ERROR,
            f"no loadable snapshot for tenant {tenant_id}: "
            + "; ".join(f"{r.snapshot_id}: {r.reason}" for r in rejected),
            operation="snapshot",
            details={"tenant_id": tenant_id, "rejected": [r.model_dump() for r in rejected]},
        )

    # ------------------------------------------------------------------------------ lazy pull
    def _lazy_loader(self, budget_s: float) -> LazyLoader:
        if self._loader is None:
            self._loader = LazyLoader(self, budget_s)
        return self._loader

    def _plan(self, tenant_id: str, candidates: builtins.list[tuple[str, str]], fallback: bool = True) -> TenantPlan:
        """Read the newest readable, compatible manifest now (the index of what the tenant holds);
        unreadable newer manifests are rejected here, files are checked when the tenant loads."""
        rejected: builtins.list[RejectedSnapshot] = []
        for sid, key in candidates:
            try:
                manifest = self._manifest(tenant_id, sid, key)
                self._check_compatible(manifest)
            except MemoryError as exc:
                rejected.append(RejectedSnapshot(snapshot_id=sid, code=exc.code.value, reason=exc.message))
                if exc.code is ErrorCode.CONFIGURATION_ERROR or not fallback:
                    raise
                continue
            return TenantPlan(tenant_id, candidates if fallback else candidates[:1], manifest, rejected)
        raise MemoryError(
            ErrorCode.PROVIDER_ERROR,
            f"no loadable snapshot for tenant {tenant_id}: "
            + "; ".join(f"{r.snapshot_id}: {r.reason}" for r in rejected),
            operation="snapshot",
            details={"tenant_id": tenant_id, "rejected": [r.model_dump() for r in rejected]},
        )

    def _lazy_report(
        self, tenant_id: str, budget_s: float, started: float, *, wait: bool = True, queryable: bool = False
    ) -> PullReport:
        """Wait (at most until ``budget_s`` after ``started``) for the tenant to be loaded, or only
        queryable; report where it stands."""
        assert self._loader is not None
        if wait:
            self._loader.wait_tenant(
                tenant_id, max(0.0, budget_s - (time.perf_counter() - started)), queryable=queryable
            )
        st = self._loader.state_of(tenant_id)
        assert st is not None
        duration = time.perf_counter() - started
        done = st.state == "loaded"
        manifest = self._manifest_cache.get(st.loaded_snapshot_id or st.snapshot_id or "")
        return PullReport(
            tenant_id=tenant_id,
            snapshot_id=st.loaded_snapshot_id or st.snapshot_id or "",
            created_at=manifest.created_at if manifest else self.clock(),
            tables={t.name: t.rows for t in manifest.tables} if manifest else {},
            rows=manifest.total_rows if manifest else 0,
            bytes_downloaded=st.bytes_loaded,
            duration_s=round(duration, 4),
            rejected=st.rejected,
            within_budget=duration <= budget_s,
            lazy=True,
            files_loaded=st.files_total if done else 0,
            files_total=st.files_total,
            partitions_loaded=st.partitions_loaded,
            partitions_total=st.partitions_total,
            complete=done,
            state=st.state,
        )

    def status(self) -> LoadStatus:
        """Progress of lazy loads: loaded/pending partitions and tenants, bytes, elapsed time."""
        if self._loader is None:
            return LoadStatus(
                budget_s=0.0,
                elapsed_s=0.0,
                complete=True,
                partitions_loaded=0,
                partitions_pending=0,
                bytes_loaded=0,
                bytes_total=0,
                tenants_loaded=[],
                tenants_pending=[],
                tenants_failed=[],
                tenants=[],
            )
        return self._loader.status()

    def wait_loaded(self, timeout: float | None = None) -> bool:
        """Wait for the lazy loads to finish (loaded or failed; starts the background loader when it
        was not started); True when none is pending."""
        if self._loader is None:
            return True
        self._loader.start()
        return self._loader.wait(timeout)

    def _check_compatible(self, manifest: Manifest) -> None:
        if self._catalog is None:
            with self._snapshot_cursor() as cur:
                versions, model, _ = self._schema_info(cur)
                self._catalog = (set(versions), model, {t.name for t in self._tables(cur)})
        versions_set, model, tables = self._catalog
        newer = sorted(set(manifest.schema_versions) - versions_set)
        absent = [t.name for t in manifest.tables if t.name not in tables]
        if newer or absent:
            raise MemoryError(
                ErrorCode.CONFIGURATION_ERROR,
                f"snapshot {manifest.snapshot_id} was written by schema versions {newer or '?'} that "
                f"this store does not have (tables {absent}); upgrade stratamem before restoring",
                operation="snapshot",
                details={"missing_versions": newer, "missing_tables": absent},
            )
        if manifest.embedding_model and model and manifest.embedding_model != model:
            raise MemoryError(
                ErrorCode.CONFIGURATION_ERROR,
                f"snapshot {manifest.snapshot_id} holds embeddings of {manifest.embedding_model!r}; "
                f"this store uses {model!r}",
                operation="snapshot",
                details={"snapshot_model": manifest.embedding_model, "store_model": model},
            )
