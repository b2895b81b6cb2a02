"""The in-server schedule: periodic jobs (maintenance, snapshot pushes) on one background thread.

``ScheduleRunner(jobs).start()`` runs each :class:`Job` every ``interval_s`` seconds until ``stop()``:

* **Never overlapping.** One thread runs the due jobs one after the other, so a run never starts
  while another one (of any job) is still going; the next run of a job is due ``interval_s`` after
  the start of the previous one, or at once if that run took longer.
* **Failures stay contained.** An exception is logged, counted in
  ``stratamem_schedule_runs_total{job, outcome="error"}`` and kept in ``runner.state[job].last_error``;
  the runner (and the server around it) keeps going and retries at the next tick.
* **One instance per job** when a Redis client is given: a run first takes the job's
  :class:`~stratamem.coordination.lock.RedisLock` (``{prefix}:schedule:{job}``, one attempt, extended
  by a heartbeat while the job runs); an instance that cannot take it skips the run
  (``outcome="skipped"``). A successful run leaves ``{prefix}:schedule:{job}:done`` for 90 % of the
  interval, so a fleet of servers runs each job about once per interval, not once per server.
* **Injected clock.** ``monotonic`` (default :func:`time.monotonic`) decides what is due;
  ``run_pending()`` runs every due job once, so tests step the schedule without sleeping.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel

from ..persistence.schedule import SnapshotScheduler
from . import metrics
from .maintenance import run_maintenance

if TYPE_CHECKING:
    from redis import Redis

    from ..persistence.snapshots import SnapshotManager
    from .manager import Lifecycle

log = logging.getLogger("stratamem.schedule")

Outcome = Literal["ok", "error", "skipped"]
#: Longest the runner thread sleeps between checks (keeps ``stop()`` and clock changes responsive).
MAX_WAIT_S = 1.0


@dataclass(frozen=True)
class Job:
    name: str
    interval_s: float
    fn: Callable[[], object]
    #: Run once right after ``start()`` instead of one interval later.
    run_at_start: bool = False

    def __post_init__(self) -> None:
        if not self.interval_s > 0:
            raise ValueError(f"the interval of job {self.name!r} must be positive")


class JobState(BaseModel):
    name: str
    interval_s: float
    runs: int = 0
    failures: int = 0
    skipped: int = 0
    running: bool = False
    last_outcome: Outcome | None = None
    last_error: str | None = None
    last_duration_s: float | None = None
    last_finished_at: datetime | None = None


class JobFailed(Exception):
    """Raised by a job that ran to the end but reports failures (counted as an error)."""

    def __init__(self, message: str, result: object = None) -> None:
        super().__init__(message)
        self.result = result


class ScheduleRunner:
    def __init__(
        self,
        jobs: Sequence[Job],
        *,
        redis: Redis | None = None,
        lock_prefix: str = "stratamem",
        lock_ttl: float = 60.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        names = [j.name for j in jobs]
        if len(set(names)) != len(names):
            raise ValueError(f"job names must be unique: {names}")
        self.jobs: dict[str, Job] = {j.name: j for j in jobs}
        self.redis = redis
        self.lock_prefix = lock_prefix
        self.lock_ttl = lock_ttl
        self.instance_id = uuid.uuid4().hex
        self._monotonic = monotonic
        self.state: dict[str, JobState] = {j.name: JobState(name=j.name, interval_s=j.interval_s) for j in jobs}
        #: What the last run of each job returned (e.g. a MaintenanceReport).
        self.last_results: dict[str, object] = {}
        now = monotonic()
        self._next_due: dict[str, float] = {j.name: now if j.run_at_start else now + j.interval_s for j in jobs}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._run_lock = threading.Lock()

    # ------------------------------------------------------------------------------ stepping
    def due(self) -> list[str]:
        now = self._monotonic()
        return [name for name, at in self._next_due.items() if at <= now]

    def run_pending(self) -> dict[str, Outcome]:
        """Run every job that is due now, one after the other; returns their outcomes."""
        with self._run_lock:  # a manual call and the thread never overlap either
            out: dict[str, Outcome] = {}
            for name in self.due():
                if self._stop.is_set():
                    break
                started = self._monotonic()
                out[name] = self._run(self.jobs[name])
                self._next_due[name] = started + self.jobs[name].interval_s
            return out

    def _run(self, job: Job) -> Outcome:
        state = self.state[job.name]
        lock: Any = None
        if self.redis is not None:
            try:
                lock = self._claim(job)
            except Exception as exc:  # Redis down: do not run uncoordinated, try again next tick
                return self._finish(job, "error", f"coordination unavailable: {type(exc).__name__}: {exc}", 0.0)
            if lock is None:
                return self._finish(job, "skipped", None, 0.0)
        heartbeat = _Heartbeat(lock, self.lock_ttl / 3) if lock is not None else None
        state.running = True
        t0 = time.perf_counter()
        error: str | None = None
        try:
            self.last_results[job.name] = job.fn()
        except Exception as exc:
            log.error("scheduled job %s failed: %s", job.name, exc, exc_info=not isinstance(exc, JobFailed))
            if isinstance(exc, JobFailed):
                self.last_results[job.name] = exc.result
            error = f"{type(exc).__name__}: {exc}"[:500]
        finally:
            duration = time.perf_counter() - t0
            state.running = False
            if heartbeat is not None:
                heartbeat.stop()
            if lock is not None:
                self._release(job, lock, duration, ok=error is None)
        return self._finish(job, "ok" if error is None else "error", error, duration)

    def _finish(self, job: Job, outcome: Outcome, error: str | None, duration: float) -> Outcome:
        state = self.state[job.name]
        state.last_outcome = outcome
        metrics.SCHEDULE_RUNS.labels(job=job.name, outcome=outcome).inc()
        if outcome == "skipped":
            state.skipped += 1
            return outcome
        state.runs += 1
        state.last_duration_s = round(duration, 6)
        state.last_finished_at = datetime.now(UTC)
        metrics.SCHEDULE_DURATION.labels(job=job.name).observe(duration)
        if outcome == "error":
            state.failures += 1
            state.last_error = error
        else:
            state.last_error = None
            metrics.SCHEDULE_LAST_SUCCESS.labels(job=job.name).set(time.time())
        return outcome

    # ------------------------------------------------------------------------------ coordination
    def _key(self, job: Job) -> str:
        return f"{self.lock_prefix}:schedule:{job.name}"

    def _claim(self, job: Job) -> Any:
        """The job's RedisLock when this instance should run it now, else None."""
        from ..coordination.lock import RedisLock  # noqa: PLC0415  redis extra

        assert self.redis is not None
        lock = RedisLock(self.redis, self._key(job), ttl=self.lock_ttl)
        if not lock.try_acquire():
            log.debug("scheduled job %s is running on another instance", job.name)
            return None
        if self.redis.exists(self._key(job) + ":done"):
            lock.release()
            log.debug("scheduled job %s already ran this interval on another instance", job.name)
            return None
        return lock

    def _release(self, job: Job, lock: Any, duration: float, *, ok: bool) -> None:
        assert self.redis is not None
        try:
            if ok:
                remaining_ms = int((0.9 * job.interval_s - duration) * 1000)
                if remaining_ms > 0:
                    self.redis.set(self._key(job) + ":done", self.instance_id, px=remaining_ms)
        except Exception:
            log.warning("cannot record the run of %s in Redis", job.name, exc_info=True)
        finally:
            lock.release()

    # ------------------------------------------------------------------------------ thread
    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> ScheduleRunner:
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._loop, name="stratamem-schedule", daemon=True)
            self._thread.start()
            log.info(
                "schedule started: %s", ", ".join(f"{j.name} every {j.interval_s:g} s" for j in self.jobs.values())
            )
        return self

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.run_pending()
            except Exception:  # never let the thread die
                log.exception("schedule runner error")
            if not self._next_due:
                break
            delay = min(self._next_due.values()) - self._monotonic()
            if self._stop.wait(min(max(delay, 0.0), MAX_WAIT_S)):
                break

    def stop(self, timeout: float | None = 60.0) -> bool:
        """Stop the thread; a run in progress finishes first. False if it is still running after ``timeout``."""
        self._stop.set()
        if self._thread is None:
            return True
        self._thread.join(timeout)
        if self._thread.is_alive():
            log.warning("schedule runner still busy after %s s; leaving it (daemon thread)", timeout)
            return False
        self._thread = None
        log.info("schedule stopped")
        return True


class _Heartbeat:
    """Extends a RedisLock every ``every`` seconds while a long job holds it."""

    def __init__(self, lock: Any, every: float) -> None:
        self._lock = lock
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._beat, args=(max(every, 0.05),), daemon=True, name="stratamem-schedule-heartbeat"
        )
        self._thread.start()

    def _beat(self, every: float) -> None:
        while not self._stop.wait(every):
            if not self._lock.extend():
                log.warning("lost the schedule lock %s while the job runs", getattr(self._lock, "name", "?"))
                return

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


# ---------------------------------------------------------------------------------- the jobs
def maintenance_job(lc: Lifecycle, interval_s: float, *, run_at_start: bool = False) -> Job:
    """TTL purge, decay, consolidation, pruning and integrity for every tenant (``run_maintenance``).
    Task failures do not stop the other tasks; the run then counts as an error."""

    def run() -> object:
        report = run_maintenance(lc)
        failed = [f"{t.tenant_id}/{task}" for t in report.tenants for task in t.errors]
        if failed:
            raise JobFailed(f"{len(failed)} maintenance task(s) failed: {', '.join(failed[:5])}", report)
        return report

    return Job("maintenance", interval_s, run, run_at_start)


def snapshot_job(manager: SnapshotManager, interval_s: float, *, run_at_start: bool = False) -> Job:
    """Push every tenant through :class:`~stratamem.persistence.schedule.SnapshotScheduler` (its
    retention applies on each push); a failed push counts as an error and is retried next tick."""

    scheduler = SnapshotScheduler(manager, timedelta(seconds=interval_s))

    def run() -> object:
        before = scheduler.failures
        reports = scheduler.run_once()
        if scheduler.failures > before:
            raise JobFailed("snapshot push failed (see the stratamem.snapshots log)")
        return reports

    return Job("snapshot", interval_s, run, run_at_start)
