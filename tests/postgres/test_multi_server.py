"""Several ``stratamem serve`` processes on one PostgreSQL and one Redis, driven concurrently.

Three real servers (uvicorn, subprocesses) share a PostgreSQL schema and a Redis prefix. Workers
write on one server and read on the others at once: every acknowledged write is there, a read on
another server right after the acknowledgement sees it (get, list and search, dense and hybrid),
``If-Match`` conflicts are detected across servers, and concurrent conditional updates of one
memory through different servers let exactly one win."""

from __future__ import annotations

import random
import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

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


@pytest.fixture()
def servers(pg_store_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[LiveServer]]:
    import redis

    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2).ping()
    except redis.RedisError as exc:
        pytest.skip(f"Redis is not reachable: {exc}")
    prefix = f"stratamem-test-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("STRATAMEM_REDIS_PREFIX", prefix)
    Memory.open(pg_store_url, embedder="hashing").close()  # schema created once, before the servers race
    started = [LiveServer(pg_store_url, "--redis", REDIS_URL) for _ in range(3)]  # type: ignore[arg-type]
    with ThreadPoolExecutor(3) as pool:
        list(pool.map(lambda s: s.start(), started))
    try:
        yield started
    finally:
        for srv in started:
            srv.stop()
        client = redis.Redis.from_url(REDIS_URL)
        keys = list(client.scan_iter(f"{prefix}*"))
        if keys:
            client.delete(*keys)


def _key(pg_store_url: str) -> str:
    mem = Memory.open(pg_store_url, embedder="hashing")
    try:
        return create_key(mem.engine.provider, "acme", "writer").key
    finally:
        mem.close()


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
                break
        assert stored == acked
        assert not deleted & set(stored)
    for c in clients:
        c.close()
