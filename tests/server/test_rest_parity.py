"""REST parity: every public ``Memory`` method has a REST route (route name = method name) unless it
is on the short exclusion list below, and the routes answer like the SDK, error codes included."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import httpx
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from stratamem import Memory, MemoryError, TenantContext

from .conftest import LiveServer, cli_key

#: Public ``Memory`` members without a route of their own, and why.
EXCLUDED = {
    "open": "opens a store in the calling process; a server already is one",
    "engine": "the in-process engine object, not an operation",
    "close": "closes the server's store: the server's own lifecycle",
    "open_from_snapshot": "starts a new in-process store from S3 snapshots",
    "configure_snapshots": "server-wide S3 settings come from the server's environment",
    "graph": "its operations are the /v1/graph/* routes (graph_routes.py)",
    "lifecycle": "an accessor: its operations have the routes of the Memory methods",
    "hygiene": "an accessor: its operations have the routes of the Memory methods",
    # agent loop utilities: in-process helpers around a model call, not store operations
    "system_contract": "static prompt text for the caller's own model; no store access",
    "format_context": "pure formatting of results the client already holds from /v1/search",
    "process_conversation": "a loop over /v1/process, one call per user message of the turn",
    # embedded observation (telemetry/observe.py): the server always observes and serves /metrics
    "observation": "in-process telemetry state of an embedded store; the server's is always on",
    "metrics_text": "GET /metrics (getMetrics) serves the same Prometheus text",
    "encryption_key": "the key of encryption at rest is configuration of the process, never sent over HTTP",
}

ALICE = {"userId": "alice"}
ACME = TenantContext(tenant_id="acme", principal="test")


def h(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def api_routes(routes: Iterable[Any]) -> Iterator[APIRoute]:
    """Every APIRoute of an app, including those of included routers."""
    for route in routes:
        if isinstance(route, APIRoute):
            yield route
        sub = getattr(route, "original_router", None)  # recent FastAPI wraps included routers
        if sub is not None:
            yield from api_routes(sub.routes)


def test_every_sdk_method_has_a_route(client: TestClient, server_mem: Memory) -> None:
    routes = list(api_routes(client.app.routes))  # type: ignore[attr-defined]
    names = {r.name for r in routes}
    members = {name for name, _ in inspect.getmembers(Memory)} | set(vars(server_mem))  # + instance attributes
    public = {name for name in members if not name.startswith("_")}
    missing = sorted(public - names - set(EXCLUDED))
    assert missing == [], f"Memory methods without a REST route: {missing}"
    assert set(EXCLUDED) <= public  # the list names only real members
    paths = {r.path for r in routes}
    assert {"/v1/graph/related", "/v1/graph/path", "/v1/graph/neighbors"} <= paths


def test_write_gate_routes(client: TestClient, make_key: Callable[..., str], server_mem: Memory) -> None:
    key = make_key()
    created = client.post("/v1/process", headers=h(key), json={"text": "I prefer window seats", "identifiers": ALICE})
    assert created.status_code == 200, created.text
    assert created.json()["action"] == "created"
    assert (
        client.post("/v1/remember", headers=h(key), json={"text": "My dog is called Rex", "identifiers": ALICE}).json()[
            "action"
        ]
        == "created"
    )
    forgot = client.post("/v1/forget", headers=h(key), json={"text": "forget my dog", "identifiers": ALICE})
    assert forgot.status_code == 200 and forgot.json()["action"] == "deleted", forgot.text
    # the same error code as the SDK for the same bad input
    bad = client.post("/v1/remember", headers=h(key), json={"text": "x", "layer": "session", "identifiers": ALICE})
    try:
        server_mem.remember(ACME, "x", identifiers={"user_id": "alice"}, layer="session")
    except MemoryError as exc:
        assert bad.json()["code"] == exc.code.value
    else:
        raise AssertionError("the SDK accepted a session write without a session id")
    reader = make_key(role="reader")
    denied = client.post("/v1/remember", headers=h(reader), json={"text": "x", "identifiers": ALICE})
    assert denied.status_code == 403 and denied.json()["code"] == "FORBIDDEN"


def test_lifecycle_routes(client: TestClient, make_key: Callable[..., str]) -> None:
    key = make_key()

    def add(content: str, **ids: str) -> str:
        r = client.post(
            "/v1/memories",
            headers=h(key),
            json={
                "content": content,
                "layer": "session" if "sessionId" in ids else "user",
                "identifiers": {"userId": "alice", **ids},
            },
        )
        assert r.status_code == 201, r.text
        return str(r.json()["memory"]["id"])

    a, b = add("User likes tea"), add("User likes green tea")
    promoted = client.post(
        f"/v1/memories/{a}/promote", headers=h(key), json={"targetLayer": "project", "identifiers": {"projectId": "p1"}}
    )
    assert promoted.status_code == 201 and promoted.json()["layer"] == "project", promoted.text
    down = client.post(
        f"/v1/memories/{a}/promote",
        headers=h(key),
        json={"targetLayer": "session", "identifiers": {"userId": "alice", "sessionId": "s"}},
    )
    assert down.status_code == 400 and down.json()["code"] == "INVALID_SCOPE_PROMOTION"
    assert (
        client.post(
            "/v1/memories/nope/promote",
            headers=h(key),
            json={"targetLayer": "project", "identifiers": {"projectId": "p1"}},
        ).status_code
        == 404
    )

    compacted = client.post(
        "/v1/memories/compact", headers=h(key), json={"sourceIds": [a, b], "content": "User likes tea, green tea most"}
    )
    assert compacted.status_code == 201, compacted.text
    assert sorted(compacted.json()["provenance"]["compactedFromIds"]) == sorted([a, b])

    fb = client.post("/v1/feedback", headers=h(key), json={"memoryIds": [b], "reward": -1})
    assert fb.status_code == 200, fb.text
    assert client.post("/v1/prune", headers=h(key), json={"dryRun": True}).json()["dry_run"] is True

    c = add("temporary note")
    assert client.post("/v1/memories/soft-delete", headers=h(key), json={"ids": [c]}).json() == {"ids": [c]}
    assert client.get(f"/v1/memories/{c}", headers=h(key)).status_code == 404
    assert client.post("/v1/memories/restore", headers=h(key), json={"ids": [c]}).json() == {"ids": [c]}
    assert client.get(f"/v1/memories/{c}", headers=h(key)).status_code == 200

    add("session note one", sessionId="s1")
    closed = client.post("/v1/sessions/s1/close", headers=h(key), json={"userId": "alice"})
    assert closed.status_code == 200 and closed.json()["evaluated"] >= 1, closed.text
    scoped = client.post(
        "/v1/memories/delete-by-scope",
        headers=h(key),
        json={"layer": "session", "identifiers": {"userId": "alice", "sessionId": "s1"}},
    )
    assert scoped.status_code == 200 and scoped.json()["deleted"] >= 1, scoped.text
    assert client.get("/v1/conflicts", headers=h(key)).status_code == 200

    # maintenance and policy changes are for admin keys
    forbidden = client.post("/v1/maintenance", headers=h(key))
    assert forbidden.status_code == 403 and forbidden.json()["code"] == "FORBIDDEN"
    admin = make_key(role="admin")
    report = client.post("/v1/maintenance", headers=h(admin))
    assert report.status_code == 200 and [t["tenant_id"] for t in report.json()["tenants"]] == ["acme"]


def test_hygiene_routes(client: TestClient, make_key: Callable[..., str]) -> None:
    key, admin = make_key(), make_key(role="admin")
    assert client.get("/v1/policies", headers=h(key)).json()["pii_mode"] == "allow"
    assert client.patch("/v1/policies", headers=h(key), json={"denyPatterns": ["project x"]}).status_code == 403
    set_ = client.patch("/v1/policies", headers=h(admin), json={"denyPatterns": ["project x"], "piiMode": "redact"})
    assert set_.status_code == 200 and set_.json()["deny_patterns"] == ["project x"], set_.text
    refused = client.post("/v1/remember", headers=h(key), json={"text": "project x is secret", "identifiers": ALICE})
    assert refused.status_code == 422 and refused.json()["code"] == "POLICY_VIOLATION", refused.text
    assert client.delete("/v1/policies", headers=h(admin)).json()["deny_patterns"] == []
    report = client.get("/v1/health-report", headers=h(key))
    assert report.status_code == 200 and report.json()["tenant_id"] == "acme"


def test_store_routes_and_ndjson_export(client: TestClient, make_key: Callable[..., str]) -> None:
    key = make_key()
    ids = set()
    for i in range(3):
        r = client.post(
            "/v1/memories", headers=h(key), json={"content": f"fact {i}", "layer": "user", "identifiers": ALICE}
        )
        ids.add(r.json()["memory"]["id"])
    with client.stream("GET", "/v1/export", headers=h(key)) as resp:
        assert resp.status_code == 200 and resp.headers["content-type"].startswith("application/x-ndjson")
        lines = [json.loads(line) for line in resp.iter_lines() if line]
    assert {e["id"] for e in lines} == ids and all("embedding" not in e for e in lines)
    with_vectors = client.get("/v1/export?includeEmbeddings=true", headers=h(key)).text.splitlines()
    assert len(json.loads(with_vectors[0])["embedding"]) == 384
    other = make_key(tenant="globex")
    assert client.get("/v1/export", headers=h(other)).text == ""  # another tenant's export is empty
    assert client.get("/v1/stats", headers=h(key)).json()["byLayer"] == {"user": 3}
    assert client.get("/v1/capabilities", headers=h(key)).json()["embeddingDimensions"] == 384
    layers = client.get("/v1/layers?userId=alice&projectId=p", headers=h(key)).json()["layers"]
    assert layers == [x.value for x in Memory.get_accessible_layers({"user_id": "alice", "project_id": "p"})]
    emb = client.post("/v1/embeddings", headers=h(key), json={"text": "hello"}).json()
    assert emb["dimensions"] == 384 == len(emb["embedding"])
    crud = client.post("/v1/crud", headers=h(key), json={"action": "list", "scope": "agent", "user_id": "alice"})
    assert crud.status_code == 200 and set(crud.json()) == {"items", "next_cursor", "has_more", "errors"}


def test_export_streams_ndjson_over_real_http(live_db: Path, live_server: Callable[[], LiveServer]) -> None:
    key = cli_key(live_db, "acme", "writer")
    srv = live_server()
    items: list[dict[str, Any]] = [
        {"content": f"streamed fact {i}", "layer": "user", "identifiers": ALICE} for i in range(250)
    ]
    for start in range(0, len(items), 100):
        r = httpx.post(
            srv.url + "/v1/memories/bulk", headers=h(key), json={"items": items[start : start + 100]}, timeout=60
        )
        assert r.status_code == 201, r.text
    with httpx.stream("GET", srv.url + "/v1/export", headers=h(key), timeout=60) as resp:
        assert resp.status_code == 200 and resp.headers["content-type"].startswith("application/x-ndjson")
        assert "content-length" not in resp.headers  # streamed (chunked), not buffered
        rows = [json.loads(line) for line in resp.iter_lines() if line]
    assert sorted(r["content"] for r in rows) == sorted(i["content"] for i in items)
    stamps = [r["createdAt"] for r in rows]
    assert stamps == sorted(stamps)  # oldest first
    unauth = httpx.get(srv.url + "/v1/export", timeout=30)
    assert unauth.status_code == 401 and unauth.json()["code"] == "MISSING_TENANT_CONTEXT"
