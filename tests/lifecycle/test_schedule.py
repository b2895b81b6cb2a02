"""The in-server schedule runner (``stratamem.lifecycle.runner``): an injected monotonic clock decides
what is due, failures are counted and contained, runs never overlap, Redis makes one instance run a job."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import timedelta

import pytest
import redis
from prometheus_client import REGISTRY

from stratamem import Memory, TenantContext
from stratamem.lifecycle.runner import Job, ScheduleRunner, maintenance_job

from ..coordination.conftest import prefix, rclient, redis_url  # noqa: F401  (fixtures)
from .conftest import Clock

U = {"user_id": "u1"}


class Mono:
    """A monotonic clock moved by hand."""

    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def _runs(job: str, outcome: str) -> float:
    return REGISTRY.get_sample_value("stratamem_schedule_runs_total", {"job": job, "outcome": outcome}) or 0.0


def test_jobs_run_when_due_on_the_injected_clock() -> None:
    mono = Mono()
    calls: list[str] = []
    runner = ScheduleRunner(
        [
            Job("every10", 10.0, lambda: calls.append("a")),
            Job("eager", 30.0, lambda: calls.append("b"), run_at_start=True),
        ],
        monotonic=mono,
    )
    assert runner.run_pending() == {"eager": "ok"}
    mono.t += 9.9
    assert runner.run_pending() == {}
    mono.t += 0.1
    assert runner.run_pending() == {"every10": "ok"}
    assert runner.run_pending() == {}
    mono.t += 20.0
    assert runner.run_pending() == {"every10": "ok", "eager": "ok"}
    assert calls == ["b", "a", "a", "b"]
    assert runner.state["every10"].runs == 2 and runner.state["every10"].failures == 0
    assert runner.state["every10"].last_outcome == "ok"
    with pytest.raises(ValueError, match="positive"):
        Job("bad", 0.0, lambda: None)
    with pytest.raises(ValueError, match="unique"):
        ScheduleRunner([Job("x", 1.0, lambda: None), Job("x", 2.0, lambda: None)])


def test_a_failing_job_is_logged_counted_and_retried(caplog: pytest.LogCaptureFixture) -> None:
    mono = Mono()
    broken = {"on": True}

    def job() -> str:
        if broken["on"]:
            raise RuntimeError("disk on fire")
        return "fine"

    errors_before, ok_before = _runs("flaky", "error"), _runs("flaky", "ok")
    runner = ScheduleRunner([Job("flaky", 5.0, job, run_at_start=True)], monotonic=mono)
    with caplog.at_level("ERROR", logger="stratamem.schedule"):
        assert runner.run_pending() == {"flaky": "error"}
    assert "scheduled job flaky failed: disk on fire" in caplog.text
    state = runner.state["flaky"]
    assert (state.runs, state.failures, state.last_error) == (1, 1, "RuntimeError: disk on fire")
    assert _runs("flaky", "error") == errors_before + 1
    broken["on"] = False
    mono.t += 5.0
    assert runner.run_pending() == {"flaky": "ok"}
    assert (state.runs, state.failures, state.last_error) == (2, 1, None)
    assert runner.last_results["flaky"] == "fine"
    assert _runs("flaky", "ok") == ok_before + 1


def test_maintenance_job_purges_an_expired_memory(local_lmem: Memory, acme: TenantContext, clock: Clock) -> None:
    mem = local_lmem
    mono = Mono()
    t0 = clock.now
    gone = mem.add(
        acme, "Temporary door code is 4711", layer="user", identifiers=U, expires_at=t0 + timedelta(hours=1)
    ).memory.id
    kept = mem.add(acme, "User prefers dark mode", layer="user", identifiers=U).memory.id
    runner = ScheduleRunner([maintenance_job(mem.lifecycle, 60.0)], monotonic=mono)
    clock.advance(days=2)  # expired for more than ttl.purge_after (1 day)
    assert mem.get(acme, gone) is None  # expired entries are never returned ...
    assert mem.engine.provider.get(acme.tenant_id, gone, t0) is not None  # ... but still stored
    assert runner.run_pending() == {}
    mono.t += 60.0
    assert runner.run_pending() == {"maintenance": "ok"}
    assert mem.engine.provider.get(acme.tenant_id, gone, t0) is None
    assert mem.get(acme, kept) is not None
    report = runner.last_results["maintenance"]
    assert [(t.tenant_id, t.purged) for t in report.tenants] == [(acme.tenant_id, 1)]  # type: ignore[attr-defined]


def test_runs_never_overlap_and_stop_ends_the_thread() -> None:
    active, peak, runs = [0], [0], {"a": 0, "b": 0}
    guard = threading.Lock()

    def job(name: str) -> None:
        with guard:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        time.sleep(0.02)  # long enough for the other job to be due meanwhile
        with guard:
            active[0] -= 1
            runs[name] += 1

    runner = ScheduleRunner(
        [Job("a", 0.01, lambda: job("a"), run_at_start=True), Job("b", 0.01, lambda: job("b"), run_at_start=True)]
    ).start()
    try:
        deadline = time.monotonic() + 20
        while min(runs.values()) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        assert runner.stop() is True
    assert min(runs.values()) >= 3
    assert peak[0] == 1
    assert runner.running is False
    after = dict(runs)
    assert runner.run_pending() == {}  # a stopped runner runs nothing, even when jobs are due
    assert runs == after


@pytest.fixture()
def fleet(redis_url: str, prefix: str) -> Iterator[tuple[redis.Redis, str]]:  # noqa: F811
    yield redis.Redis.from_url(redis_url), prefix


def test_redis_lets_one_instance_run_a_job(fleet: tuple[redis.Redis, str]) -> None:
    client, key_prefix = fleet
    started, release = threading.Event(), threading.Event()
    executed: list[str] = []

    def slow(who: str) -> None:
        executed.append(who)
        started.set()
        assert release.wait(20)

    mono_a, mono_b = Mono(), Mono()
    a = ScheduleRunner(
        [Job("maintenance", 10.0, lambda: slow("a"), run_at_start=True)],
        redis=client,
        lock_prefix=key_prefix,
        lock_ttl=5.0,
        monotonic=mono_a,
    )
    b = ScheduleRunner(
        [Job("maintenance", 10.0, lambda: executed.append("b"), run_at_start=True)],
        redis=client,
        lock_prefix=key_prefix,
        lock_ttl=5.0,
        monotonic=mono_b,
    )
    skipped_before = _runs("maintenance", "skipped")
    outcome: dict[str, str] = {}
    worker = threading.Thread(target=lambda: outcome.update(a.run_pending()))
    worker.start()
    assert started.wait(20)
    assert client.exists(f"{key_prefix}:schedule:maintenance") == 1  # a holds the job's lock
    assert b.run_pending() == {"maintenance": "skipped"}  # b cannot run it meanwhile
    release.set()
    worker.join(20)
    assert outcome == {"maintenance": "ok"}
    assert client.exists(f"{key_prefix}:schedule:maintenance") == 0  # released
    done_ttl = client.pttl(f"{key_prefix}:schedule:maintenance:done")
    assert 0 < done_ttl <= 9000  # 90 % of the interval minus the run's duration
    mono_b.t += 10.0
    assert b.run_pending() == {"maintenance": "skipped"}  # a already ran it this interval
    assert executed == ["a"]
    assert b.state["maintenance"].skipped == 2 and b.state["maintenance"].runs == 0
    assert _runs("maintenance", "skipped") == skipped_before + 2
    client.delete(f"{key_prefix}:schedule:maintenance:done")  # the interval is over
    mono_b.t += 10.0
    assert b.run_pending() == {"maintenance": "ok"}
    assert executed == ["a", "b"]


def test_unreachable_redis_skips_the_run_with_an_error() -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens there once the socket is closed
    client = redis.Redis(host="127.0.0.1", port=port, socket_connect_timeout=1)
    executed: list[int] = []
    runner = ScheduleRunner(
        [Job("maintenance", 10.0, lambda: executed.append(1), run_at_start=True)], redis=client, monotonic=Mono()
    )
    assert runner.run_pending() == {"maintenance": "error"}
    assert executed == []
    assert (runner.state["maintenance"].last_error or "").startswith("coordination unavailable: ConnectionError")
