"""Rate limiting shared through a real Redis: limiter semantics (injected clock), two limiters / two
server apps / two server processes on one budget, memory_crud RATE_LIMITED, Redis down."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import jwt
import pytest
import redis
from fastapi.testclient import TestClient
from prometheus_client import REGISTRY

from stratamem import Memory, TenantContext
from stratamem.config import MemoryConfig
from stratamem.coordination.ratelimit import (
    Bucket,
    LocalRateLimiter,
    RateLimit,
    RateLimiter,
    RedisRateLimiter,
)
from stratamem.crud.skill import MemoryCrudResponse
from stratamem.server.app import create_app
from stratamem.server.keys import create_key
from stratamem.server.settings import ServerSettings

SRC = str(Path(__file__).resolve().parents[2] / "src")
SECRET = "test-secret-for-shared-rate-limits-0123456789"


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture()
def dead_redis_url() -> str:
    """A Redis URL on a loopback port nobody listens on (connection refused)."""
    return f"redis://127.0.0.1:{free_port()}/0"


class WallClock:
    """Injected clock in seconds (for the limiters)."""

    def __init__(self, start: float = 1_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=["local", "redis"])
def make_limiter(request: pytest.FixtureRequest) -> Callable[[WallClock], RateLimiter]:
    if request.param == "local":
        return lambda clock: LocalRateLimiter("test", clock=clock)
    url: str = request.getfixturevalue("redis_url")
    prefix: str = request.getfixturevalue("prefix")
    return lambda clock: RedisRateLimiter(redis.Redis.from_url(url), prefix, "test", clock=clock)


def one(scope: str, ident: str, per_second: float, burst: int) -> list[Bucket]:
    return [Bucket(scope, ident, RateLimit(per_second, burst))]


# ---------------------------------------------------------------------------------- semantics


def test_burst_then_refill_after_the_window(make_limiter: Callable[[WallClock], RateLimiter]) -> None:
    clock = WallClock()
    lim = make_limiter(clock)
    k = one("credential", "key-1", 2.0, 3)
    got = [lim.acquire(k) for _ in range(3)]
    assert [d.allowed for d in got] == [True, True, True]
    assert [d.remaining for d in got] == [2, 1, 0]
    refused = lim.acquire(k)
    assert not refused.allowed and refused.scope == "credential"
    assert refused.retry_after == pytest.approx(0.5, abs=1e-6) and refused.retry_after_ms == 500
    clock.now += 0.25
    assert lim.acquire(k).retry_after == pytest.approx(0.25, abs=1e-6)  # a refusal consumes nothing
    clock.now += 0.25
    assert lim.acquire(k).allowed and not lim.acquire(k).allowed
    clock.now += 10  # a full window later the whole burst is back, no more
    assert [lim.acquire(k).allowed for _ in range(4)] == [True, True, True, False]
    assert lim.acquire(one("credential", "key-2", 2.0, 3)).allowed  # buckets are per id
    assert lim.acquire(one("credential", "key-1", 0.0, 1)).backend == "off"  # 0 disables


def test_several_buckets_all_or_nothing(make_limiter: Callable[[WallClock], RateLimiter]) -> None:
    clock = WallClock()
    lim = make_limiter(clock)

    def req(key: str) -> list[Bucket]:
        return [Bucket("credential", key, RateLimit(1.0, 5)), Bucket("tenant", "acme", RateLimit(1.0, 2))]

    assert lim.acquire(req("a")).allowed and lim.acquire(req("b")).allowed
    refused = lim.acquire(req("a"))
    assert not refused.allowed and refused.scope == "tenant" and refused.retry_after == pytest.approx(1.0, abs=1e-6)
    clock.now += 1.0
    ok = lim.acquire(req("a"))
    assert ok.allowed and ok.remaining == 0  # the tenant bucket is the tightest
    # key a: 3 taken (the refused call took nothing, else 4), 1 refilled in the second → 3 left
    assert lim.acquire([Bucket("credential", "a", RateLimit(1.0, 5))]).remaining == 3


def test_two_redis_limiters_share_one_budget(redis_url: str, prefix: str, rclient: redis.Redis) -> None:
    clock = WallClock()
    a = RedisRateLimiter(redis.Redis.from_url(redis_url), prefix, "http", clock=clock)
    b = RedisRateLimiter(redis.Redis.from_url(redis_url), prefix, "http", clock=clock)
    k = one("credential", "key-1", 0.5, 3)
    assert a.acquire(k).allowed and b.acquire(k).allowed and a.acquire(k).allowed
    assert not b.acquire(k).allowed and not a.acquire(k).allowed
    other = RedisRateLimiter(redis.Redis.from_url(redis_url), prefix + "-other", "http", clock=clock)
    assert other.acquire(k).allowed  # another prefix is another budget
    clock.now += 2.0
    assert b.acquire(k).allowed and not a.acquire(k).allowed
    # keys: prefixed, hashed ids (no raw key id in Redis), TTL = time until the bucket is full again
    keys = sorted(x.decode() for x in rclient.scan_iter(match=f"{prefix}:rl:*"))
    assert keys == [a.key(k[0])] and "key-1" not in keys[0]
    assert 0 < int(rclient.pttl(keys[0])) <= 6_000


def test_redis_clock_without_injection(redis_url: str, prefix: str) -> None:
    lim = RedisRateLimiter(redis.Redis.from_url(redis_url), prefix, "http")  # Redis TIME
    k = one("credential", "k", 0.01, 2)
    assert lim.acquire(k).allowed and lim.acquire(k).allowed
    refused = lim.acquire(k)
    assert not refused.allowed and 99.0 < refused.retry_after <= 100.0 and refused.backend == "redis"


def test_decision_metrics(redis_url: str, prefix: str) -> None:
    lim = RedisRateLimiter(redis.Redis.from_url(redis_url), prefix, "metrics-test", clock=WallClock())
    labels = {"limiter": "metrics-test", "backend": "redis"}
    before = (
        sample("stratamem_ratelimit_decisions_total", **labels, decision="allowed"),
        sample("stratamem_ratelimit_decisions_total", **labels, decision="limited"),
    )
    k = one("credential", "k", 1.0, 1)
    lim.acquire(k), lim.acquire(k), lim.acquire(k)
    assert sample("stratamem_ratelimit_decisions_total", **labels, decision="allowed") == before[0] + 1
    assert sample("stratamem_ratelimit_decisions_total", **labels, decision="limited") == before[1] + 2


# ------------------------------------------------------------------------------- Redis down


def test_redis_down_falls_back_to_per_process_limits(dead_redis_url: str) -> None:
    lim = RedisRateLimiter(
        redis.Redis.from_url(dead_redis_url, socket_connect_timeout=0.5),
        "x",
        "down-test",
        clock=WallClock(),
        cooldown=60.0,
    )
    errors = sample("stratamem_ratelimit_backend_errors_total", limiter="down-test")
    k = one("credential", "k", 1.0, 2)
    first = lim.acquire(k)
    assert first.allowed and first.backend == "fallback"
    assert lim.acquire(k).allowed
    refused = lim.acquire(k)  # never "unlimited": the process enforces the budget alone
    assert not refused.allowed and refused.backend == "fallback" and refused.retry_after == pytest.approx(1.0)
    # one connection error opened the breaker: Redis is not asked again during the cooldown
    assert sample("stratamem_ratelimit_backend_errors_total", limiter="down-test") == errors + 1
    assert lim.breaker.is_open
    assert (
        sample("stratamem_ratelimit_decisions_total", limiter="down-test", backend="fallback", decision="limited") >= 1
    )


def test_redis_back_after_cooldown(redis_url: str, prefix: str, dead_redis_url: str) -> None:
    lim = RedisRateLimiter(redis.Redis.from_url(dead_redis_url), prefix, "flip", clock=WallClock(), cooldown=0.0)
    k = one("credential", "k", 1.0, 5)
    assert lim.acquire(k).backend == "fallback"
    lim.client = redis.Redis.from_url(redis_url)  # Redis is back (same limiter object)
    lim._script = lim.client.register_script(lim._script.script)
    assert lim.acquire(k).backend == "redis" and not lim.breaker.is_open


# ------------------------------------------------------------------------------- REST server


def _jwt(tenant: str = "acme", sub: str = "svc") -> str:
    return jwt.encode({"tenant": tenant, "sub": sub, "exp": int(time.time()) + 600}, SECRET, algorithm="HS256")


@pytest.fixture()
def apps(tmp_path: Path, open_mem: Callable[..., Memory]) -> Iterator[Callable[..., TestClient]]:
    clients: list[TestClient] = []

    def make(**settings: object) -> TestClient:
        mem = open_mem(tmp_path / f"app{len(clients)}.duckdb")  # each app its own store, like separate hosts
        settings.setdefault("mcp_enabled", False)
        settings.setdefault("jwt_secret", SECRET)
        client = TestClient(create_app(mem, ServerSettings(**settings)))  # type: ignore[arg-type]
        client.__enter__()
        clients.append(client)
        return client

    yield make
    for c in clients:
        c.__exit__(None, None, None)


def test_two_server_apps_share_one_budget(apps: Callable[..., TestClient], redis_url: str, prefix: str) -> None:
    one_app = apps(redis_url=redis_url, redis_prefix=prefix, rate_limit_per_second=0.01, rate_limit_burst=2)
    two_app = apps(redis_url=redis_url, redis_prefix=prefix, rate_limit_per_second=0.01, rate_limit_burst=2)
    h = {"Authorization": f"Bearer {_jwt()}"}
    assert one_app.get("/v1/memories", headers=h).status_code == 200
    assert two_app.get("/v1/memories", headers=h).status_code == 200
    for c in (one_app, two_app):
        r = c.get("/v1/memories", headers=h)
        assert r.status_code == 429 and r.json()["code"] == "RATE_LIMITED" and r.json()["retryable"] is True
        assert 99 <= int(r.headers["Retry-After"]) <= 100
        assert r.json()["details"]["scope"] == "credential" and r.json()["details"]["retry_after_ms"] > 99_000
    other = {"Authorization": f"Bearer {_jwt(sub='other')}"}
    assert two_app.get("/v1/memories", headers=other).status_code == 200  # per credential
    assert isinstance(one_app.app.state.limiter, RedisRateLimiter)  # type: ignore[attr-defined]


def test_per_tenant_budget_across_keys(open_mem: Callable[..., Memory]) -> None:
    mem = open_mem()
    settings = ServerSettings(
        mcp_enabled=False,
        rate_limit_per_second=100,
        rate_limit_burst=100,
        rate_limit_tenant_per_second=0.01,
        rate_limit_tenant_burst=3,
    )
    with TestClient(create_app(mem, settings)) as client:
        assert isinstance(client.app.state.limiter, LocalRateLimiter)  # type: ignore[attr-defined]
        keys = [create_key(mem.engine.provider, "acme", "writer").key for _ in range(2)]
        other = create_key(mem.engine.provider, "globex", "writer").key
        codes = [client.get("/v1/memories", headers={"X-API-Key": keys[i % 2]}).status_code for i in range(4)]
        assert codes == [200, 200, 200, 429]
        r = client.get("/v1/memories", headers={"X-API-Key": keys[1]})
        assert r.status_code == 429 and r.json()["details"]["scope"] == "tenant"
        assert client.get("/v1/memories", headers={"X-API-Key": other}).status_code == 200


def test_server_with_redis_down_keeps_serving_with_local_limits(
    apps: Callable[..., TestClient], dead_redis_url: str
) -> None:
    client = apps(redis_url=dead_redis_url, redis_prefix="x", rate_limit_per_second=0.01, rate_limit_burst=2)
    h = {"Authorization": f"Bearer {_jwt()}"}
    assert [client.get("/v1/memories", headers=h).status_code for _ in range(3)] == [200, 200, 429]
    assert client.get("/ready").status_code == 200


def _serve(db: Path, port: int, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "stratamem",
            "serve",
            "--db",
            str(db),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--log-level",
            "warning",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _wait_ready(proc: subprocess.Popen[str], url: str) -> None:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited early: {proc.stdout.read() if proc.stdout else ''}")
        try:
            if httpx.get(url + "/ready", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError("server did not become ready")


def test_two_server_processes_share_one_budget(tmp_path: Path, redis_url: str, prefix: str) -> None:
    env = dict(os.environ)
    env.update(
        {
            "PYTHONPATH": SRC + os.pathsep + env.get("PYTHONPATH", ""),
            "STRATAMEM_EMBEDDER": "hashing",
            "STRATAMEM_REDIS_URL": redis_url,
            "STRATAMEM_REDIS_PREFIX": prefix,
            "STRATAMEM_JWT_SECRET": SECRET,
            "STRATAMEM_RATE_LIMIT_PER_SECOND": "0.01",
            "STRATAMEM_RATE_LIMIT_BURST": "3",
            "STRATAMEM_MCP_ENABLED": "false",
        }
    )
    procs: list[subprocess.Popen[str]] = []
    try:
        urls = []
        for n in range(2):
            port = free_port()
            procs.append(_serve(tmp_path / f"host{n}.duckdb", port, env))
            urls.append(f"http://127.0.0.1:{port}")
        for proc, url in zip(procs, urls, strict=True):
            _wait_ready(proc, url)
        h = {"Authorization": f"Bearer {_jwt()}"}
        codes = [httpx.get(urls[i % 2] + "/v1/memories", headers=h, timeout=10).status_code for i in range(5)]
        assert codes == [200, 200, 200, 429, 429]
    finally:
        for proc in procs:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


# ------------------------------------------------------------------------------- memory_crud


class EngineClock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


AGENT = TenantContext(tenant_id="acme", principal="agent-7", roles=("agent",))
OTHER_AGENT = TenantContext(tenant_id="acme", principal="agent-8", roles=("agent",))


def _create(mem: Memory, ctx: TenantContext, text: str) -> MemoryCrudResponse:
    out: MemoryCrudResponse = mem.crud(ctx, {"action": "create", "items": [{"content": text}]})
    return out


def test_memory_crud_rate_limited_per_principal(open_mem: Callable[..., Memory]) -> None:
    clock = EngineClock()
    mem = open_mem(config=MemoryConfig(crud_rate_limit_per_second=1.0, crud_rate_limit_burst=2), clock=clock)
    assert isinstance(mem.engine.crud_limiter, LocalRateLimiter)
    ok = [_create(mem, AGENT, f"note {i}") for i in range(2)]
    assert all(r.errors == [] and len(r.items) == 1 for r in ok)
    refused = mem.crud(AGENT, {"action": "create", "items": [{"content": "note 3"}]})
    assert refused.items == [] and [e.code for e in refused.errors] == ["RATE_LIMITED"]
    assert refused.errors[0].details == {"retry_after_ms": 1000, "retry_after": 1.0, "scope": "principal"}
    listed = mem.list(AGENT, "agent", identifiers={"agent_id": "agent-7", "user_id": "agent-7"})
    assert sorted(m.content for m in listed.memories) == ["note 0", "note 1"]  # the refused call did nothing
    assert _create(mem, OTHER_AGENT, "theirs").errors == []
    denial = [r for r in mem.engine.audit.recent() if r.code == "RATE_LIMITED"]
    assert denial and denial[-1].action == "memory_crud.create" and denial[-1].outcome == "denied"
    clock.now += timedelta(seconds=1)  # the window refills on the engine's (injected) clock
    assert _create(mem, AGENT, "note 3").errors == []
    assert mem.crud(AGENT, {"action": "list"}).errors[0].code == "RATE_LIMITED"  # reads count too


def test_memory_crud_tenant_budget_shared_through_redis(
    tmp_path: Path, open_mem: Callable[..., Memory], redis_url: str, prefix: str
) -> None:
    clock = EngineClock()
    cfg = MemoryConfig(
        redis_url=redis_url, redis_prefix=prefix, crud_tenant_rate_limit_per_second=0.5, crud_tenant_rate_limit_burst=3
    )
    one_mem = open_mem(tmp_path / "a.duckdb", config=cfg, clock=clock)
    two_mem = open_mem(tmp_path / "b.duckdb", config=cfg, clock=clock)
    assert isinstance(one_mem.engine.crud_limiter, RedisRateLimiter)
    results = [
        _create(one_mem, AGENT, "a1"),
        _create(two_mem, OTHER_AGENT, "b1"),
        _create(one_mem, AGENT, "a2"),
        _create(two_mem, AGENT, "b2"),
    ]
    codes = [[e.code for e in r.errors] for r in results]
    assert codes == [[], [], [], ["RATE_LIMITED"]]
    err = results[3].errors[0]
    assert err.details["scope"] == "tenant" and err.details["retry_after_ms"] == 2000
    globex = TenantContext(tenant_id="globex", principal="agent-7")
    assert _create(two_mem, globex, "theirs").errors == []
    clock.now += timedelta(seconds=2)
    assert _create(two_mem, AGENT, "b2").errors == []


def test_memory_crud_redis_down_still_limits(open_mem: Callable[..., Memory], dead_redis_url: str) -> None:
    mem = open_mem(
        config=MemoryConfig(redis_url=dead_redis_url, crud_rate_limit_per_second=0.01, crud_rate_limit_burst=1)
    )
    assert _create(mem, AGENT, "kept").errors == []
    assert [e.code for e in _create(mem, AGENT, "refused").errors] == ["RATE_LIMITED"]
