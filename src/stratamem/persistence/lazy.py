"""Lazy cold start from snapshots: serve at once, load each tenant on its first access.

``open_from_snapshot(..., lazy=True)`` reads only the manifests (the snapshot's index: files,
checksums, row counts per partition) before it returns. A :class:`LazyLoader` then loads tenants
on a background thread, and registers a *tenant gate* on the engine: every operation for a tenant
whose data is not loaded yet (search, get, list, graph, writes …) first loads that tenant — all its
partitions, downloaded in parallel, sha256-verified, and inserted in one transaction — then runs.
A tenant is therefore either absent-and-loading or complete; a query never sees part of a tenant.

A corrupted or missing file makes that snapshot rejected and the tenant falls back to its previous
snapshot, exactly as an eager pull does (``status().tenants[i].rejected``). When no snapshot of a
tenant can be loaded, the tenant is marked ``failed`` and every operation on it raises a clear
PROVIDER_ERROR rather than answering from an empty or partial store.
"""

from __future__ import annotations

import builtins
import logging
import shutil
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ErrorCode, MemoryError
from .manifest import LoadStatus, Manifest, PullReport, RejectedSnapshot, TenantLoadStatus

if TYPE_CHECKING:
    from .snapshots import SnapshotManager

log = logging.getLogger("stratamem.snapshots")


@dataclass
class TenantPlan:
    """A tenant to load: its candidate snapshots (newest first) and the newest readable manifest."""

    tenant_id: str
    candidates: builtins.list[tuple[str, str]]
    manifest: Manifest | None
    rejected: builtins.list[RejectedSnapshot] = field(default_factory=list)


@dataclass
class _TenantState:
    plan: TenantPlan
    status: TenantLoadStatus
    lock: threading.Lock = field(default_factory=threading.Lock)
    done: threading.Event = field(default_factory=threading.Event)
    report: PullReport | None = None


def _files(manifest: Manifest | None) -> tuple[int, int, int]:
    if manifest is None:
        return 0, 0, 0
    parts = [p for t in manifest.tables for p in t.partitions]
    return len(parts), sum(len(p.files) for p in parts), manifest.total_bytes


class LazyLoader:
    """Background + on-demand loading of tenants' snapshots into one store (one per manager)."""

    def __init__(self, manager: SnapshotManager, budget_s: float) -> None:
        self.manager = manager
        self.budget_s = budget_s
        self.started = time.perf_counter()
        self._states: dict[str, _TenantState] = {}
        self._order: builtins.list[str] = []
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._thread: threading.Thread | None = None
        self._gate_installed = False
        self._cache_pool = ThreadPoolExecutor(1, thread_name_prefix="stratamem-snapshot-cache")
        self._deferred: builtins.list[Future[None]] = []

    # ------------------------------------------------------------------------------ planning
    def add(self, plan: TenantPlan) -> None:
        """Queue a tenant; from now on its first access loads it (replacing its current rows)."""
        parts, files, nbytes = _files(plan.manifest)
        status = TenantLoadStatus(
            tenant_id=plan.tenant_id, state="pending",
            snapshot_id=plan.manifest.snapshot_id if plan.manifest else None,
            partitions_total=parts, files_total=files, bytes_total=nbytes, rejected=list(plan.rejected))
        with self._wake:
            old = self._states.get(plan.tenant_id)
            if old is not None and old.status.state == "loading":
                raise MemoryError(ErrorCode.CONFLICT, f"tenant {plan.tenant_id} is being loaded from a snapshot",
                                  operation="snapshot", retryable=True)
            self._states[plan.tenant_id] = _TenantState(plan, status)
            if plan.tenant_id in self._order:
                self._order.remove(plan.tenant_id)
            self._order.append(plan.tenant_id)
            self._wake.notify_all()
        if not self._gate_installed:
            self.manager.engine.tenant_gates.append(self.gate)
            self._gate_installed = True

    def start(self) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="stratamem-snapshot-load", daemon=True)
                self._thread.start()

    # ------------------------------------------------------------------------------ loading
    def gate(self, tenant_id: str, operation: str) -> None:
        """Engine tenant gate: make the tenant's data complete before ``operation`` touches it."""
        state = self._states.get(tenant_id)
        if state is None or state.status.state == "loaded":
            return
        self.ensure(tenant_id, on_demand=True)

    def ensure(self, tenant_id: str, *, on_demand: bool = False) -> PullReport | None:
        """Load the tenant now (or wait for the load in progress); raise if it cannot be loaded."""
        state = self._states.get(tenant_id)
        if state is None:
            return None
        with state.lock:  # one loader per tenant; a concurrent caller waits here for the result
            st = state.status
            if st.state == "loaded":
                return state.report
            if st.state == "failed":
                raise self._failed_error(state)
            st.state = "loading"
            st.on_demand = on_demand
            t0 = time.perf_counter()
            try:
                report = self.manager._load_tenant(state.plan.tenant_id, state.plan.candidates,
                                                   first=state.plan.manifest, rejected=list(state.plan.rejected),
                                                   deferred=self._defer)
            except MemoryError as exc:
                st.state, st.error = "failed", exc.message
                st.duration_s = round(time.perf_counter() - t0, 4)
                st.rejected = [RejectedSnapshot.model_validate(r) for r in (exc.details or {}).get("rejected", [])] \
                    or st.rejected
                state.done.set()
                log.error("lazy load of tenant %s failed: %s; its operations will raise until a pull succeeds",
                          tenant_id, exc.message)
                raise self._failed_error(state) from exc
            state.report = report
            st.state = "loaded"
            st.loaded_snapshot_id = report.snapshot_id
            st.rejected = list(report.rejected)
            loaded = self.manager._manifest_cache.get(report.snapshot_id)
            parts, files, nbytes = _files(loaded)
            st.partitions_total = st.partitions_loaded = parts
            st.files_total, st.bytes_total, st.bytes_loaded = files, nbytes, report.bytes_downloaded
            st.rows = report.rows
            st.duration_s = round(time.perf_counter() - t0, 4)
            state.done.set()
            log.info("lazy load of tenant %s: snapshot %s, %d partitions, %d bytes in %.2fs (%s)", tenant_id,
                     report.snapshot_id, parts, report.bytes_downloaded, st.duration_s,
                     "on demand" if on_demand else "background")
            return report

    def _defer(self, manifest: Manifest, files: dict[str, builtins.list[Path]], workdir: Path) -> None:
        """Cache tables (``CACHE_TABLES``) are imported after the tenant is served, in the background."""
        def run() -> None:
            try:
                if not self.manager.engine._closed:
                    self.manager._insert_deferred(manifest.tenant_id, manifest, files)
            except MemoryError as exc:  # a cache: a missing row is only recomputed
                log.warning("deferred import of cache tables for tenant %s failed: %s", manifest.tenant_id,
                            exc.message)
            finally:
                shutil.rmtree(workdir, ignore_errors=True)

        with self._lock:
            self._deferred.append(self._cache_pool.submit(run))

    def _failed_error(self, state: _TenantState) -> MemoryError:
        st = state.status
        return MemoryError(
            ErrorCode.PROVIDER_ERROR,
            f"tenant {st.tenant_id} could not be loaded from its snapshots ({st.error}); it is not served from "
            "partial data — fix the snapshot or pull again",
            operation="snapshot",
            details={"tenant_id": st.tenant_id, "reason": "snapshot_load_failed",
                     "rejected": [r.model_dump() for r in st.rejected]},
        )

    def _next(self) -> str | None:
        with self._wake:
            for tenant_id in self._order:
                if self._states[tenant_id].status.state == "pending":
                    return tenant_id
        return None

    def _run(self) -> None:
        while (tenant_id := self._next()) is not None:
            if self.manager.engine._closed:
                return
            try:
                self.ensure(tenant_id)
            except MemoryError as exc:
                if self.manager.engine._closed:
                    return
                log.debug("background load of %s: %s", tenant_id, exc.message)

    def discard(self, tenant_id: str) -> None:
        """Stop tracking a tenant (an eager pull replaces it); waits for a load in progress."""
        state = self._states.get(tenant_id)
        if state is None:
            return
        with state.lock, self._wake:
            self._states.pop(tenant_id, None)
            if tenant_id in self._order:
                self._order.remove(tenant_id)
            state.done.set()

    def wait_tenant(self, tenant_id: str, timeout: float | None = None) -> bool:
        state = self._states.get(tenant_id)
        return True if state is None else state.done.wait(timeout)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until every queued tenant is loaded or failed; True when none is pending."""
        deadline = None if timeout is None else time.perf_counter() + timeout
        for state in builtins.list(self._states.values()):
            left = None if deadline is None else max(0.0, deadline - time.perf_counter())
            if not state.done.wait(left):
                return False
        for fut in builtins.list(self._deferred):
            left = None if deadline is None else max(0.0, deadline - time.perf_counter())
            try:
                fut.result(left)
            except TimeoutError:
                return False
        return True

    # ------------------------------------------------------------------------------ status
    def state_of(self, tenant_id: str) -> TenantLoadStatus | None:
        state = self._states.get(tenant_id)
        return state.status.model_copy(deep=True) if state else None

    def status(self) -> LoadStatus:
        tenants = [self._states[t].status.model_copy(deep=True) for t in builtins.list(self._order)]
        by_state: dict[str, builtins.list[str]] = {"loaded": [], "pending": [], "failed": []}
        for t in tenants:
            by_state["pending" if t.state == "loading" else t.state].append(t.tenant_id)
        loaded = [t for t in tenants if t.state == "loaded"]
        return LoadStatus(
            budget_s=self.budget_s, elapsed_s=round(time.perf_counter() - self.started, 4),
            complete=not by_state["pending"],
            partitions_loaded=sum(t.partitions_loaded for t in loaded),
            partitions_pending=sum(t.partitions_total for t in tenants if t.state in ("pending", "loading")),
            bytes_loaded=sum(t.bytes_loaded for t in loaded), bytes_total=sum(t.bytes_total for t in tenants),
            tenants_loaded=by_state["loaded"], tenants_pending=by_state["pending"],
            tenants_failed=by_state["failed"], tenants=tenants,
            cache_imports_pending=sum(not f.done() for f in builtins.list(self._deferred)),
        )
