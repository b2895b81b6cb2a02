"""The in-server schedule of `stratamem serve`: real uvicorn servers on free loopback ports (in-process
with an injected clock, and the CLI in a subprocess), real S3 (SeaweedFS) for scheduled snapshots."""

from __future__ import annotations

import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
import uvicorn
from fastapi import FastAPI

from stratamem import Memory, TenantContext
from stratamem.errors import MemoryError
from stratamem.persistence import S3Settings, S3Store
from stratamem.server.app import build_schedule, create_app
from stratamem.server.keys import create_key
from stratamem.server.settings import ServerSettings

from ..lifecycle.conftest import T0, Clock
from ..snapshots.conftest import s3, s3_settings  # noqa: F401  (fixtures)
from .conftest import LiveServer, free_port, run_cli

S3_ENV = (
    "STRATAMEM_S3_URL",
    "STRATAMEM_S3_BUCKET",
    "STRATAMEM_MAINTENANCE_INTERVAL",
    "STRATAMEM_SNAPSHOT_INTERVAL",
    "STRATAMEM_SNAPSHOTS_ENABLED",
    "STRATAMEM_REDIS_URL",
    "STRATAMEM_REDIS_PREFIX",
    "STRATAMEM_ACCESS_HISTORY_DAYS",
)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in S3_ENV:
        monkeypatch.delenv(name, raising=False)


class InProcessServer:
    """uvicorn serving an app on a free port from a thread (so the test can hold the Memory and its clock)."""

    def __init__(self, app: FastAPI) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> InProcessServer:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert self.thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(60)
        assert not self.thread.is_alive()


def wait_for(cond: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.05)


def metric(text: str, name: str, **labels: str) -> float:
    want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    for line in text.splitlines():
        m = re.match(r"^([a-z_]+)(\{[^}]*\})? ([0-9.e+-]+)$", line)
        if m and m.group(1) == name and ",".join(sorted((m.group(2) or "{}")[1:-1].split(","))) == want:
            return float(m.group(3))
    return 0.0


@pytest.fixture()
def clocked(tmp_path: Path) -> Iterator[tuple[Memory, Clock]]:
    clock = Clock()
    mem = Memory.open(tmp_path / "sched.duckdb", embedder="hashing", clock=clock)
    yield mem, clock
    mem.close()


def test_settings_decide_which_jobs_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    mem = Memory.open(tmp_path / "jobs.duckdb", embedder="hashing")
    try:
        assert build_schedule(mem, ServerSettings()) is None  # default: maintenance off, no S3 configured
        monkeypatch.setenv("STRATAMEM_S3_URL", "http://127.0.0.1:1")
        runner = build_schedule(mem, ServerSettings())
        assert runner is not None and list(runner.jobs) == ["snapshot"] and runner.redis is None
        assert runner.jobs["snapshot"].interval_s == 21600.0  # every 6 h
        assert mem.snapshots.retention == timedelta(days=7)
        monkeypatch.setenv("STRATAMEM_MAINTENANCE_INTERVAL", "1h")
        monkeypatch.setenv("STRATAMEM_SNAPSHOT_INTERVAL", "off")
        runner = build_schedule(mem, ServerSettings(redis_url="redis://127.0.0.1:6379/0", redis_prefix="fleet"))
        assert runner is not None and list(runner.jobs) == ["maintenance"] and runner.lock_prefix == "fleet"
        assert runner.jobs["maintenance"].interval_s == 3600.0 and runner.redis is not None
        runner = build_schedule(
            mem, ServerSettings(maintenance_interval="0.2s", snapshot_interval="12h", snapshots_enabled=False)
        )
        assert runner is not None and {n: j.interval_s for n, j in runner.jobs.items()} == {"maintenance": 0.2}
    finally:
        mem.close()
    monkeypatch.delenv("STRATAMEM_MAINTENANCE_INTERVAL")
    monkeypatch.delenv("STRATAMEM_SNAPSHOT_INTERVAL")
    inmem = Memory.open("memory://", embedder="hashing")  # snapshots need the DuckDB store
    try:
        with caplog.at_level("WARNING", logger="stratamem.server"):
            assert build_schedule(inmem, ServerSettings(snapshot_interval="1h")) is None  # auto: warn, skip
        assert "scheduled snapshots are off: snapshots are not supported by provider inmemory" in caplog.text
        with pytest.raises(MemoryError) as err:
            build_schedule(inmem, ServerSettings(snapshots_enabled=True))
        assert err.value.code.value == "CONFIGURATION_ERROR"
    finally:
        inmem.close()


def test_access_history_days_setting_reaches_the_scheduled_maintenance(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem = Memory.open(tmp_path / "retention.duckdb", embedder="hashing")
    try:
        assert build_schedule(mem, ServerSettings(maintenance_interval="1h")) is not None
        assert mem.lifecycle.config.access_history_days == 30  # unset: the library default
        monkeypatch.setenv("STRATAMEM_ACCESS_HISTORY_DAYS", "7")
        build_schedule(mem, ServerSettings(maintenance_interval="1h"))
        assert mem.lifecycle.config.access_history_days == 7
        build_schedule(mem, ServerSettings(maintenance_interval="1h", access_history_days=0))
        assert mem.lifecycle.config.access_history_days is None  # 0: keep every access event
    finally:
        mem.close()


def test_in_server_maintenance_purges_expired_memory(clocked: tuple[Memory, Clock]) -> None:
    mem, clock = clocked
    key = create_key(mem.engine.provider, "acme", "writer", identifiers={"user_id": "alice"}).key
    app = create_app(mem, ServerSettings(mcp_enabled=False, maintenance_interval="0.2s"))
    runner = app.state.schedule
    assert {n: j.interval_s for n, j in runner.jobs.items()} == {"maintenance": 0.2}
    assert runner.running is False  # started by the server's lifespan, not before
    with InProcessServer(app) as srv, httpx.Client(base_url=srv.url, headers={"X-API-Key": key}, timeout=30) as http:
        assert runner.running is True
        r = http.post(
            "/v1/memories",
            json={
                "content": "Temporary door code is 4711",
                "layer": "user",
                "identifiers": {"userId": "alice"},
                "expiresAt": (T0 + timedelta(hours=1)).isoformat(),
            },
        )
        assert r.status_code == 201, r.text
        mid = r.json()["memory"]["id"]
        assert http.get(f"/v1/memories/{mid}").status_code == 200
        clock.advance(days=2)  # expired for longer than the purge delay (1 day)
        assert http.get(f"/v1/memories/{mid}").status_code == 404
        # no manual call: the server's runner purges it from storage
        wait_for(lambda: mem.engine.provider.get("acme", mid, T0) is None)
        text = http.get("/metrics").text
        assert metric(text, "stratamem_lifecycle_maintenance_items_total", task="ttl_purge") >= 1
        assert metric(text, "stratamem_schedule_runs_total", job="maintenance", outcome="ok") >= 1
    assert runner.running is False  # server stop stopped the runner
    state = runner.state["maintenance"]
    assert state.runs >= 1 and state.failures == 0 and state.running is False


def test_failing_snapshot_job_does_not_take_the_server_down(clocked: tuple[Memory, Clock]) -> None:
    mem, _ = clocked
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    mem.configure_snapshots(
        S3Settings(endpoint_url=f"http://127.0.0.1:{dead}", bucket="nowhere", access_key_id="k", secret_access_key="s")
    )
    mem.add(TenantContext(tenant_id="acme"), "User prefers dark mode", layer="user", identifiers={"user_id": "alice"})
    app = create_app(mem, ServerSettings(mcp_enabled=False, snapshots_enabled=True, snapshot_interval="0.2s"))
    runner = app.state.schedule
    with InProcessServer(app) as srv, httpx.Client(base_url=srv.url, timeout=30) as http:
        wait_for(lambda: runner.state["snapshot"].failures >= 2)
        assert http.get("/ready").status_code == 200
        assert metric(http.get("/metrics").text, "stratamem_schedule_runs_total", job="snapshot", outcome="error") >= 2
    assert (runner.state["snapshot"].last_error or "").startswith("JobFailed: snapshot push failed")
    assert runner.running is False


def test_scheduled_snapshot_is_published_to_s3(clocked: tuple[Memory, Clock], s3: S3Store) -> None:  # noqa: F811
    mem, _ = clocked
    mem.configure_snapshots(store=s3)
    acme = TenantContext(tenant_id="acme")
    mem.add(acme, "User prefers dark mode", layer="user", identifiers={"user_id": "alice"})
    app = create_app(mem, ServerSettings(mcp_enabled=False, snapshots_enabled=True, snapshot_interval="0.2s"))
    runner = app.state.schedule
    assert list(runner.jobs) == ["snapshot"]
    with InProcessServer(app):
        wait_for(lambda: runner.state["snapshot"].runs >= 1)
    assert runner.state["snapshot"].failures == 0, runner.state["snapshot"].last_error
    snaps = mem.snapshots.list("acme")
    assert len(snaps) >= 1
    manifest = mem.snapshots.latest_manifest("acme")
    assert manifest is not None
    assert sum(p.rows for t in manifest.tables if t.name == "memories" for p in t.partitions) == 1


def test_cli_serve_runs_maintenance_and_stops_cleanly(live_db: Path) -> None:
    ctx = TenantContext(tenant_id="acme")
    created = datetime.now(UTC)
    # written four days ago (an expiry in the past is refused), expired three days ago
    seed = Memory.open(live_db, embedder="hashing", clock=lambda: created - timedelta(days=4))
    try:
        mid = seed.add(
            ctx,
            "Temporary door code is 4711",
            layer="user",
            identifiers={"user_id": "alice"},
            expires_at=created - timedelta(days=3),
        ).memory.id
        kept = seed.add(ctx, "User prefers dark mode", layer="user", identifiers={"user_id": "alice"}).memory.id
    finally:
        seed.close()
    srv = LiveServer(live_db, "--maintenance-interval", "0.2s", "--no-snapshots")
    srv.start()
    try:
        wait_for(
            lambda: (
                metric(
                    httpx.get(srv.url + "/metrics", timeout=10).text,
                    "stratamem_lifecycle_maintenance_items_total",
                    task="ttl_purge",
                )
                >= 1
            )
        )
    finally:
        assert srv.proc is not None
        srv.proc.terminate()
        out, _ = srv.proc.communicate(timeout=60)
    # uvicorn re-raises the SIGTERM it handled once shut down: -15 after a clean stop
    assert srv.proc.returncode in (0, -15), out
    assert "schedule: maintenance every 0.2 s" in out
    assert "schedule stopped" in out  # the lifespan stopped the runner before the process ended
    after = Memory.open(live_db, embedder="hashing")
    try:
        assert after.engine.provider.get("acme", mid, created - timedelta(days=4)) is None  # purged, not hidden
        assert after.get(ctx, kept) is not None
    finally:
        after.close()
    bad = run_cli("serve", "--db", str(live_db), "--maintenance-interval", "soon")
    assert bad.returncode == 2 and "error INVALID_PARAMS: maintenance_interval" in bad.stderr
