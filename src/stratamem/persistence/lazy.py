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
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..errors import ErrorCode, MemoryError
from .manifest import LoadStatus, Manifest, PullReport, RejectedSnapshot, TenantLoadStatus

if TYPE_CHECKING:
    from ..engine import MemoryEngine

log = logging.getLogger("stratamem.snapshots")


class SnapshotLoader(Protocol):
    """What the lazy loader uses of the snapshot manager (``snapshots.SnapshotManager``) that owns it."""

    @property
    def engine(self) -> MemoryEngine: ...

    @property
    def _manifest_cache(self) -> dict[str, Manifest]: ...

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
    ) -> PullReport: ...

    def _insert_deferred(
        self, tenant_id: str, manifest: Manifest, deferred: dict[str, builtins.list[Path]]
    ) -> None: ...


#: What search/get/list/stats read: a lazy load commits these first, then serves those operations.
QUERY_TABLES = frozenset({"memories", "lexical_postings", "tenant_policies", "memory_feedback"})
#: Engine operations that read only the ``QUERY_TABLES`` (memories, lexical index, policies, feedback):
#: they run as soon as those are loaded; every other operation waits for the whole tenant.
QUERY_OPERATIONS = frozenset({"search", "get", "list", "stats"})


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
    #: Set once the query tables are committed (or the load failed): searches may run.
    queryable: threading.Event = field(default_factory=threading.Event)
    done: threading.Event = field(default_factory=threading.Event)
    report: PullReport | None = None

    def until(self, queryable: bool) -> threading.Event:
        """The event set once searches may run (``queryable``) or once the whole tenant is loaded."""
        return self.queryable if queryable else self.done


def _files(manifest: Manifest | None) -> tuple[int, int, int]:
    if manifest is None:
        return 0, 0, 0
    parts = [p for t in manifest.tables for p in t.partitions]
    return len(parts), sum(len(p.files) for p in parts), manifest.total_bytes


class LazyLoader:
    """Background + on-demand loading of tenants' snapshots into one store (one per manager)."""

    def __init__(self, manager: SnapshotLoader, budget_s: float) -> None:
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
            tenant_id=plan.tenant_id,
            state="pending",
            snapshot_id=plan.manifest.snapshot_id if plan.manifest else None,
            partitions_total=parts,
            files_total=files,
            bytes_total=nbytes,
            rejected=list(plan.rejected),
        )
        with self._wake:
            old = self._states.get(plan.tenant_id)
            if old is not None and old.status.state in ("loading", "queryable"):
                raise MemoryError(
                    ErrorCode.CONFLICT,
                    f"tenant {plan.tenant_id} is being loaded from a snapshot",
                    operation="snapshot",
                    retryable=True,
                )
            self._states[plan.tenant_id] = _TenantState(plan, status)
            if plan.tenant_id in self._order:
                self._order.remove(plan.tenant_id)
            self._order.append(plan.tenant_id)
            self._wake.notify_all()
        if not self._gate_installed:
            self.manager.engine.hooks.tenant_gates.append(self.gate)
            self._gate_installed = True

    def start(self) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="stratamem-snapshot-load", daemon=True)
                self._thread.start()

    # ------------------------------------------------------------------------------ loading
    def gate(self, tenant_id: str, operation: str) -> None:
        """Engine tenant gate: before ``operation`` touches the tenant, make the data it reads complete
        (``QUERY_OPERATIONS`` need the query tables, everything else the whole tenant)."""
        state = self._states.get(tenant_id)
        if state is None or state.status.state == "loaded":
            return
        if operation in QUERY_OPERATIONS and state.queryable.is_set() and state.status.state != "failed":
            return
        self.ensure(tenant_id, on_demand=True, queryable=operation in QUERY_OPERATIONS)

    def ensure(self, tenant_id: str, *, on_demand: bool = False, queryable: bool = False) -> None:
        """Load the tenant (on a loader thread) or wait for the load in progress, until its query tables
        (``queryable=True``) or all of it are loaded; raise if it cannot be loaded."""
        state = self._states.get(tenant_id)
        if state is None:
            return
        self._claim(state, on_demand, spawn=True)
        state.until(queryable).wait()
        if state.status.state == "failed":
            raise self._failed_error(state)

    def _claim(self, state: _TenantState, on_demand: bool, *, spawn: bool) -> bool:
        """Start loading a pending tenant (on a new thread when ``spawn``); False if already claimed."""
        with self._wake:
            if state.status.state != "pending":
                return False
            state.status.state = "loading"
            state.status.on_demand = on_demand
        if spawn:
            threading.Thread(
                target=self._load, args=(state,), name=f"stratamem-snapshot-{state.plan.tenant_id}", daemon=True
            ).start()
        return True

    def _queryable(self, state: _TenantState, manifest: Manifest) -> None:
        st = state.status
        st.state = "queryable"
        st.loaded_snapshot_id = manifest.snapshot_id
        st.partitions_loaded = sum(len(t.partitions) for t in manifest.tables if t.name in QUERY_TABLES)
        state.queryable.set()
        log.info(
            "lazy load of tenant %s: query tables of snapshot %s loaded in %.2fs; the rest follows",
            st.tenant_id,
            manifest.snapshot_id,
            time.perf_counter() - self.started,
        )

    def _load(self, state: _TenantState) -> None:
        tenant_id, st = state.plan.tenant_id, state.status
        with state.lock:  # an eager pull of the tenant (discard) waits for this load
            if self._states.get(tenant_id) is not state:  # discarded meanwhile
                return
            t0 = time.perf_counter()
            try:
                report = self.manager._load_tenant(
                    tenant_id,
                    state.plan.candidates,
                    first=state.plan.manifest,
                    rejected=list(state.plan.rejected),
                    deferred=self._defer,
                    on_readable=lambda m: self._queryable(state, m),
                )
            except MemoryError as exc:
                st.state, st.error = "failed", exc.message
                st.duration_s = round(time.perf_counter() - t0, 4)
                st.rejected = [
                    RejectedSnapshot.model_validate(r) for r in (exc.details or {}).get("rejected", [])
                ] or st.rejected
                if not self.manager.engine.closed:
                    log.error(
                        "lazy load of tenant %s failed: %s; its operations raise until a pull succeeds",
                        tenant_id,
                        exc.message,
                    )
                return
            except BaseException as exc:  # never leave waiters hanging
                st.state, st.error = "failed", f"{type(exc).__name__}: {exc}"
                raise
            finally:
                state.queryable.set()
                if st.state == "failed":
                    state.done.set()
            state.report = report
            st.loaded_snapshot_id = report.snapshot_id
            st.rejected = list(report.rejected)
            parts, files, nbytes = _files(self.manager._manifest_cache.get(report.snapshot_id))
            st.partitions_total = st.partitions_loaded = parts
            st.files_total, st.bytes_total, st.bytes_loaded = files, nbytes, report.bytes_downloaded
            st.rows = report.rows
            st.duration_s = round(time.perf_counter() - t0, 4)
            st.state = "loaded"
            state.done.set()
            log.info(
                "lazy load of tenant %s: snapshot %s, %d partitions, %d bytes in %.2fs (%s)",
                tenant_id,
                report.snapshot_id,
                parts,
                report.bytes_downloaded,
                st.duration_s,
                "on demand" if st.on_demand else "background",
            )

    def _defer(self, manifest: Manifest, files: dict[str, builtins.list[Path]], workdir: Path) -> None:
        """Cache tables (``CACHE_TABLES``) are imported after the tenant is served, in the background."""

        def run() -> None:
            try:
                if not self.manager.engine.closed:
                    self.manager._insert_deferred(manifest.tenant_id, manifest, files)
            except MemoryError as exc:  # a cache: a missing row is only recomputed
                log.warning("deferred import of cache tables for tenant %s failed: %s", manifest.tenant_id, exc.message)
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
            details={
                "tenant_id": st.tenant_id,
                "reason": "snapshot_load_failed",
                "rejected": [r.model_dump() for r in st.rejected],
            },
        )

    def _next(self) -> str | None:
        with self._wake:
            for tenant_id in self._order:
                if self._states[tenant_id].status.state == "pending":
                    return tenant_id
        return None

    def _run(self) -> None:
        while (tenant_id := self._next()) is not None:
            if self.manager.engine.closed:
                return
            state = self._states.get(tenant_id)
            if state is not None and self._claim(state, False, spawn=False):
                self._load(state)

    def discard(self, tenant_id: str) -> None:
        """Stop tracking a tenant (an eager pull replaces it); waits for a load in progress."""
        state = self._states.get(tenant_id)
        if state is None:
            return
        with state.lock, self._wake:
            self._states.pop(tenant_id, None)
            if tenant_id in self._order:
                self._order.remove(tenant_id)
            state.queryable.set()
            state.done.set()

    def wait_tenant(self, tenant_id: str, timeout: float | None = None, *, queryable: bool = False) -> bool:
        """Wait until the tenant is loaded (``queryable``: until searches can run) or failed."""
        state = self._states.get(tenant_id)
        return True if state is None else state.until(queryable).wait(timeout)

    def wait(self, timeout: float | None = None, *, queryable: bool = False) -> bool:
        """Wait until every queued tenant is loaded (``queryable``: can answer searches) or failed;
        True when none is left to wait for."""
        deadline = None if timeout is None else time.perf_counter() + timeout
        for state in builtins.list(self._states.values()):
            left = None if deadline is None else max(0.0, deadline - time.perf_counter())
            if not state.until(queryable).wait(left):
                return False
        if queryable:
            return True
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
            by_state["pending" if t.state in ("loading", "queryable") else t.state].append(t.tenant_id)
        loaded = [t for t in tenants if t.state == "loaded"]
        return LoadStatus(
            budget_s=self.budget_s,
            elapsed_s=round(time.perf_counter() - self.started, 4),
            complete=not by_state["pending"],
            partitions_loaded=sum(t.partitions_loaded for t in tenants if t.state != "failed"),
            partitions_pending=sum(
                t.partitions_total - t.partitions_loaded
                for t in tenants
                if t.state in ("pending", "loading", "queryable")
            ),
            tenants_queryable=[t.tenant_id for t in tenants if t.state == "queryable"],
            bytes_loaded=sum(t.bytes_loaded for t in loaded),
            bytes_total=sum(t.bytes_total for t in tenants),
            tenants_loaded=by_state["loaded"],
            tenants_pending=by_state["pending"],
            tenants_failed=by_state["failed"],
            tenants=tenants,
            cache_imports_pending=sum(not f.done() for f in builtins.list(self._deferred)),
        )
