"""Several ``stratamem serve`` processes on one PostgreSQL and one Redis, driven concurrently.

Three real servers (uvicorn, subprocesses) share a PostgreSQL schema and a Redis prefix. Workers
write on one server and read on the others at once: every acknowledged write is there, a read on
another server right after the acknowledgement sees it (get, list and search, dense and hybrid),
``If-Match`` conflicts are detected across servers, and concurrent conditional updates of one
memory through different servers let exactly one win."""

from __future__ import annotations

import random
import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from stratamem import Memory
from stratamem.server.keys import create_key

from ..coordination.conftest import REDIS_URL
from ..server.conftest import LiveServer

IDS = {"userId": "u1", "projectId": "p1"}
#: Contents are random words, so no memory is close enough to another to supersede it on add.
VOCAB = [
    "apple",
    "river",
    "stone",
    "cloud",
    "engine",
    "violet",
    "harbor",
    "pencil",
    "marble",
    "falcon",
    "copper",
    "tundra",
    "lantern",
    "orbit",
    "meadow",
    "saffron",
    "glacier",
    "cobalt",
    "walnut",
    "prism",
    "ember",
    "quartz",
    "willow",
    "canyon",
    "basalt",
    "juniper",
    "nebula",
    "cedar",
    "thistle",
    "beacon",
    "dune",
    "fjord",
    "garnet",
    "hollow",
    "ivory",
    "jasper",
    "kelp",
    "lagoon",
    "mosaic",
    "nectar",
]
ROUNDS = 8


#: Rate limits far above what the tests send (per key and per tenant).
UNLIMITED = {
    "rate_limit_per_second": "100000",
    "rate_limit_burst": "100000",
    "rate_limit_tenant_per_second": "100000",
    "rate_limit_tenant_burst": "100000",
}


@pytest.fixture()
def fleet(pg_store_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., list[LiveServer]]]:
    """Starts ``n`` servers on the test schema and one Redis prefix; ``env`` adds ``STRATAMEM_*``
    settings (the same on every server)."""
    import redis

    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2).ping()
    except redis.RedisError as exc:
        pytest.skip(f"Redis is not reachable: {exc}")
    prefix = f"stratamem-test-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("STRATAMEM_REDIS_PREFIX", prefix)
    started: list[LiveServer] = []

    def start(n: int = 3, **env: str) -> list[LiveServer]:
        for name, value in env.items():
            monkeypatch.setenv(f"STRATAMEM_{name.upper()}", value)
        Memory.open(pg_store_url, embedder="hashing").close()  # schema created once, before the servers race
        batch = [LiveServer(pg_store_url, "--redis", REDIS_URL) for _ in range(n)]  # type: ignore[arg-type]
        started.extend(batch)
        with ThreadPoolExecutor(n) as pool:
            list(pool.map(lambda s: s.start(), batch))
        return batch

    try:
        yield start
    finally:
        for srv in started:
            srv.stop()
        client = redis.Redis.from_url(REDIS_URL)
        keys = list(client.scan_iter(f"{prefix}*"))
        if keys:
            client.delete(*keys)


@pytest.fixture()
def servers(fleet: Callable[..., list[LiveServer]]) -> list[LiveServer]:
    # One key drives every worker thread; the shared rate limit has its own test below, so it is
    # lifted here (a fast server would otherwise answer 429 and the consistency checks would stop).
    return fleet(3, **UNLIMITED)


def _key(pg_store_url: str) -> str:
    mem = Memory.open(pg_store_url, embedder="hashing")
    try:
        return create_key(mem.engine.provider, "acme", "writer").key
    finally:
        mem.close()


def _all_memories(c: httpx.Client) -> dict[str, str]:
    """Every live memory of the key's tenant, id -> content, read page by page."""
    stored: dict[str, str] = {}
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": 100, **({"cursor": cursor} if cursor else {})}
        page = c.get("/v1/memories", params=params)
        assert page.status_code == 200, page.text
        body = page.json()
        stored.update({m["id"]: m["content"] for m in body["memories"]})
        cursor = body.get("nextCursor")
        if not cursor:
            return stored


def test_three_servers_share_one_store(servers: list[LiveServer], pg_store_url: str) -> None:
    headers = {"Authorization": f"Bearer {_key(pg_store_url)}"}
    clients = [httpx.Client(base_url=s.url, headers=headers, timeout=30) for s in servers]
    acked: dict[str, str] = {}  # id -> content of every acknowledged live memory
    deleted: set[str] = set()
    failures: list[str] = []
    lock = threading.Lock()

    def check(cond: bool, what: str) -> None:
        if not cond:
            with lock:
                failures.append(what)

    def search_ids(c: httpx.Client, query: str, **extra: Any) -> list[str]:
        r = c.post("/v1/memories/search", json={"query": query, "identifiers": IDS, "limit": 10, **extra})
        r.raise_for_status()
        return [hit["memory"]["id"] for hit in r.json()["results"]]

    def worker(w: int) -> None:
        a, b, c = clients[w % 3], clients[(w + 1) % 3], clients[(w + 2) % 3]
        for i in range(ROUNDS):
            word = f"zq{w}x{i}{uuid.uuid4().hex[:6]}"  # a term of its own: the search must find this memory
            content = " ".join([word, *random.sample(VOCAB, 6)])
            r = a.post("/v1/memories", json={"content": content, "layer": "user", "identifiers": IDS})
            check(r.status_code == 201, f"add {r.status_code} {r.text}")
            if r.status_code != 201:
                continue
            mid, etag = r.json()["memory"]["id"], r.json()["memory"]["etag"]
            with lock:
                acked[mid] = content
            # read-your-writes on the other servers, right after the acknowledgement
            got = b.get(f"/v1/memories/{mid}")
            check(got.status_code == 200 and got.json()["etag"] == etag, f"get after add on another server: {got.text}")
            check(mid in search_ids(c, content), f"dense search after add misses {mid}")
            check(mid in search_ids(c, word, hybridWeight=0.8, threshold=0), f"hybrid search after add misses {mid}")
            # conditional update on another server, then the stale etag is refused on a third
            new_content = f"{word}e {content}"
            up = b.patch(f"/v1/memories/{mid}", headers={"If-Match": etag}, json={"content": new_content})
            check(up.status_code == 200, f"update {up.status_code} {up.text}")
            if up.status_code != 200:
                continue
            new_etag = up.json()["memory"]["etag"]
            with lock:
                acked[mid] = new_content
            stale = c.patch(f"/v1/memories/{mid}", headers={"If-Match": etag}, json={"content": "lost update"})
            check(stale.status_code == 409, f"stale If-Match on another server: {stale.status_code}")
            seen = a.get(f"/v1/memories/{mid}")
            check(seen.status_code == 200 and seen.json()["content"] == new_content, "stale read after update")
            check(
                mid in search_ids(a, f"{word}e", hybridWeight=0.8, threshold=0),
                "search after update misses the new text",
            )
            if i % 3 == 2:  # delete on one server: gone on the others
                d = c.delete(f"/v1/memories/{mid}", headers={"If-Match": new_etag})
                check(d.status_code == 200 and d.json()["success"], f"delete {d.text}")
                with lock:
                    acked.pop(mid, None)
                    deleted.add(mid)
                check(a.get(f"/v1/memories/{mid}").status_code == 404, "read after delete on another server")
                check(mid not in search_ids(b, new_content), "search after delete on another server")
            elif i % 4 == 1:  # promote on one server: the copy is visible on another
                p = c.post(f"/v1/memories/{mid}/promote", json={"targetLayer": "project", "identifiers": IDS})
                check(p.status_code == 201, f"promote {p.status_code} {p.text}")
                if p.status_code == 201:
                    pid = p.json()["id"]
                    with lock:
                        acked[pid] = p.json()["content"]
                    check(a.get(f"/v1/memories/{pid}").status_code == 200, "promoted copy missing elsewhere")

    with ThreadPoolExecutor(3) as pool:
        list(pool.map(worker, range(3)))

    # one memory, one etag, three servers at once: exactly one conditional update wins
    r = clients[0].post("/v1/memories", json={"content": "contended memory", "layer": "user", "identifiers": IDS})
    mid, etag = r.json()["memory"]["id"], r.json()["memory"]["etag"]
    barrier = threading.Barrier(3)

    def contend(n: int) -> int:
        barrier.wait()
        return (
            clients[n]
            .patch(f"/v1/memories/{mid}", headers={"If-Match": etag}, json={"content": f"winner {n}"})
            .status_code
        )

    with ThreadPoolExecutor(3) as pool:
        codes = sorted(pool.map(contend, range(3)))
    assert codes == [200, 409, 409], codes
    acked[mid] = clients[1].get(f"/v1/memories/{mid}").json()["content"]

    assert failures == []
    # nothing acknowledged is lost, nothing deleted comes back, on every server
    for c in clients:
        stored = _all_memories(c)
        assert stored == acked
        assert not deleted & set(stored)
    for c in clients:
        c.close()


def test_rate_limit_is_one_budget_across_servers(fleet: Callable[..., list[LiveServer]], pg_store_url: str) -> None:
    """A burst of 9 and a refill of one request per 1000 s: the 10th request of the key is refused
    whichever server gets it, and so is every later one, on every server."""
    servers = fleet(3, rate_limit_burst="9", rate_limit_per_second="0.001")
    # the start-up banner names the store without its password
    assert servers[0].proc is not None and servers[0].proc.stdout is not None
    banner = next(line for line in servers[0].proc.stdout if "stratamem serving" in line)
    password = urlsplit(pg_store_url).password
    assert password and password not in banner and "127.0.0.1" in banner
    headers = {"Authorization": f"Bearer {_key(pg_store_url)}"}
    clients = [httpx.Client(base_url=s.url, headers=headers, timeout=30) for s in servers]
    try:
        codes = [clients[i % 3].get("/v1/memories", params={"limit": 1}).status_code for i in range(9)]
        assert codes == [200] * 9  # the budget spread over three servers
        for c in clients:  # over the budget: refused on every server
            r = c.get("/v1/memories", params={"limit": 1})
            assert r.status_code == 429, r.text
            assert r.json()["code"] == "RATE_LIMITED" and r.json()["details"]["scope"] == "credential"
            assert float(r.headers["Retry-After"]) > 0
        # another key has its own budget, on the same servers
        other = httpx.get(f"{servers[1].url}/v1/memories", headers={"Authorization": f"Bearer {_key(pg_store_url)}"})
        assert other.status_code == 200
    finally:
        for c in clients:
            c.close()


def _schedule_runs(url: str, job: str) -> dict[str, float]:
    """``stratamem_schedule_runs_total`` of one server by outcome."""
    from prometheus_client.parser import text_string_to_metric_families

    out: dict[str, float] = {"ok": 0.0, "error": 0.0, "skipped": 0.0}
    for family in text_string_to_metric_families(httpx.get(f"{url}/metrics", timeout=30).text):
        for sample in family.samples:
            if sample.name == "stratamem_schedule_runs_total" and sample.labels.get("job") == job:
                out[sample.labels["outcome"]] += sample.value
    return out


def test_scheduled_jobs_run_on_one_server_at_a_time(fleet: Callable[..., list[LiveServer]]) -> None:
    """Maintenance every 2 s on three servers sharing a Redis: the fleet runs it about once per
    interval (a Redis lock plus a "done this interval" key), not three times; the other servers
    count their turns as skipped."""
    interval = 2.0
    t0 = time.monotonic()
    servers = fleet(3, maintenance_interval="2s", schedule_run_at_start="true", schedule_lock_ttl="10")
    time.sleep(3 * interval)
    runs = [_schedule_runs(s.url, "maintenance") for s in servers]
    elapsed = time.monotonic() - t0
    ok = sum(r["ok"] for r in runs)
    skipped = sum(r["skipped"] for r in runs)
    assert sum(r["error"] for r in runs) == 0, runs
    assert ok >= 1, runs
    assert skipped >= 2, runs  # every server ran its start-up turn; at most one of them actually ran it
    # uncoordinated, every server would run every turn: about 3 * elapsed / interval runs
    assert ok <= elapsed / (0.8 * interval) + 1, (runs, elapsed)


def test_killing_a_server_mid_load_loses_nothing_acknowledged(
    fleet: Callable[..., list[LiveServer]], pg_store_url: str
) -> None:
    """Writers spread adds and conditional updates over three servers; one server gets SIGKILL in
    the middle. Every write acknowledged before (or after) the kill is on the two survivors; a
    write in flight on the killed server is either there or was never acknowledged."""
    servers = fleet(3, **UNLIMITED)
    headers = {"Authorization": f"Bearer {_key(pg_store_url)}"}
    clients = [httpx.Client(base_url=s.url, headers=headers, timeout=30) for s in servers]
    acked: dict[str, set[str]] = {}  # id -> the contents it may have (an update cut by the kill: either)
    lock = threading.Lock()
    stop = threading.Event()

    def writer(w: int) -> None:
        i = 0
        while not stop.is_set():
            i += 1
            content = f"kill{w}x{i} " + " ".join(random.sample(VOCAB, 6))
            try:
                r = clients[(w + i) % 3].post(
                    "/v1/memories", json={"content": content, "layer": "user", "identifiers": IDS}
                )
            except httpx.TransportError:
                continue  # the killed server: never acknowledged, nothing owed
            if r.status_code != 201:
                continue
            mid, etag = r.json()["memory"]["id"], r.json()["memory"]["etag"]
            with lock:
                acked[mid] = {content}
            try:
                up = clients[(w + i + 1) % 3].patch(
                    f"/v1/memories/{mid}", headers={"If-Match": etag}, json={"content": f"{content} v2"}
                )
            except httpx.TransportError:
                with lock:  # cut by the kill: it may or may not have committed
                    acked[mid].add(f"{content} v2")
                continue
            if up.status_code == 200:
                with lock:
                    acked[mid] = {f"{content} v2"}

    with ThreadPoolExecutor(4) as pool:
        futures = [pool.submit(writer, w) for w in range(4)]
        deadline = time.monotonic() + 60
        while len(acked) < 30 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert servers[0].proc is not None
        servers[0].proc.send_signal(signal.SIGKILL)
        servers[0].proc.wait(timeout=30)
        before_kill = len(acked)
        while len(acked) < before_kill + 15 and time.monotonic() < deadline:
            time.sleep(0.1)
        stop.set()
        for f in futures:
            f.result()

    survivors = clients[1:]
    for c in survivors:
        stored = _all_memories(c)
        missing = [mid for mid in acked if mid not in stored]
        assert missing == [], f"{len(missing)} acknowledged memories lost"
        for mid, content in acked.items():
            assert stored[mid] in content, (mid, stored[mid], content)
    assert len(acked) > before_kill  # the survivors kept taking writes after the kill
    for c in clients:
        c.close()
