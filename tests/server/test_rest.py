"""REST API through TestClient: CRUD, bulk, list, search, error mapping, bad input, OpenAPI."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fastapi import APIRouter, Depends, FastAPI
from fastapi.testclient import TestClient

from stratamem import Memory, TenantContext
from stratamem.errors import ErrorCode, MemoryError
from stratamem.server.app import create_app
from stratamem.server.deps import get_memory, get_tenant
from stratamem.server.http_errors import STATUS
from stratamem.server.settings import ServerSettings

ALICE = {"userId": "alice"}


def h(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def test_crud_roundtrip_camel_case(client: TestClient, make_key: Callable[..., str]) -> None:
    key = make_key()
    r = client.post(
        "/v1/memories",
        headers=h(key),
        json={
            "content": "User prefers dark mode",
            "layer": "user",
            "identifiers": ALICE,
            "metadata": {"tags": ["ui"], "category": "preference"},
            "expiresAt": None,
        },
    )
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["embeddingGenerated"] is True
    mem = body["memory"]
    assert mem["tenantId"] == "acme" and mem["identifiers"]["userId"] == "alice" and "createdAt" in mem
    mid, etag = mem["id"], mem["etag"]

    got = client.get(f"/v1/memories/{mid}", headers={"X-API-Key": key})
    assert got.status_code == 200 and got.json()["content"] == "User prefers dark mode"

    stale = client.patch(f"/v1/memories/{mid}", headers={**h(key), "If-Match": "nope"}, json={"content": "x"})
    assert stale.status_code == 409 and stale.json()["code"] == "CONFLICT"
    upd = client.patch(
        f"/v1/memories/{mid}",
        headers={**h(key), "If-Match": etag},
        json={"content": "User prefers light mode", "metadata": {"category": "fact"}},
    )
    assert upd.status_code == 200, upd.text
    assert upd.json()["embeddingRegenerated"] is True
    assert upd.json()["memory"]["version"] == 2 and upd.json()["memory"]["metadata"]["tags"] == ["ui"]

    found = client.post(
        "/v1/memories/search",
        headers=h(key),
        json={"query": "User prefers light mode", "identifiers": ALICE, "limit": 5},
    )
    assert found.status_code == 200, found.text
    res = found.json()
    assert res["results"][0]["memory"]["id"] == mid and res["searchedLayers"] == ["user"]
    assert 0 <= res["results"][0]["score"] <= 1 and res["totalCount"] >= 1

    assert client.delete(f"/v1/memories/{mid}", headers=h(key)).json() == {"success": True}
    gone = client.get(f"/v1/memories/{mid}", headers=h(key))
    assert gone.status_code == 404 and gone.json()["code"] == "MEMORY_NOT_FOUND"


def test_list_pagination_filters_and_bulk(client: TestClient, make_key: Callable[..., str]) -> None:
    key = make_key()
    items = [
        {
            "content": f"fact number {i}",
            "layer": "project",
            "identifiers": {"projectId": "p1"},
            "metadata": {"tags": ["even" if i % 2 == 0 else "odd"]},
        }
        for i in range(7)
    ]
    r = client.post("/v1/memories/bulk", headers=h(key), json={"items": items})
    assert r.status_code == 201, r.text
    ids = [x["memory"]["id"] for x in r.json()["results"]]
    assert len(ids) == 7

    page1 = client.get("/v1/memories", headers=h(key), params={"layer": "project", "projectId": "p1", "limit": 3})
    assert page1.status_code == 200, page1.text
    p1 = page1.json()
    assert p1["totalCount"] == 7 and len(p1["memories"]) == 3 and p1["nextCursor"]
    page2 = client.get(
        "/v1/memories",
        headers=h(key),
        params={"layer": "project", "projectId": "p1", "limit": 3, "cursor": p1["nextCursor"]},
    )
    assert [m["id"] for m in page2.json()["memories"]] == ids[3:6]
    bad_cursor = client.get("/v1/memories", headers=h(key), params={"cursor": "garbage"})
    assert bad_cursor.status_code == 400 and bad_cursor.json()["code"] == "INVALID_PARAMS"

    odd = client.get("/v1/memories", headers=h(key), params={"tag": "odd"})
    assert odd.json()["totalCount"] == 3
    flt = client.get("/v1/memories", headers=h(key), params={"filter": '{"tags": ["even"]}'})
    assert flt.json()["totalCount"] == 4
    bad_flt = client.get("/v1/memories", headers=h(key), params={"filter": "[1"})
    assert bad_flt.status_code == 400 and bad_flt.json()["details"]["field"] == "filter"

    deleted = client.post("/v1/memories/bulk-delete", headers=h(key), json={"ids": ids[:4]})
    assert deleted.status_code == 200 and deleted.json()["deleted"] == 4
    assert client.get("/v1/memories", headers=h(key)).json()["totalCount"] == 3


def test_bulk_over_limit_is_invalid_params(client: TestClient, make_key: Callable[..., str]) -> None:
    key = make_key()
    items = [{"content": f"m{i}", "layer": "user", "identifiers": ALICE} for i in range(101)]
    r = client.post("/v1/memories/bulk", headers=h(key), json={"items": items})
    assert r.status_code == 400 and r.json()["code"] == "INVALID_PARAMS" and r.json()["details"]["max_items"] == 100
    r = client.post("/v1/memories/bulk-delete", headers=h(key), json={"ids": [f"x{i}" for i in range(101)]})
    assert r.status_code == 400 and r.json()["code"] == "INVALID_PARAMS"
    assert client.get("/v1/memories", headers=h(key)).json()["totalCount"] == 0


@pytest.mark.parametrize(
    ("kwargs", "body", "code", "status"),
    [
        ({"content": b"{not json", "headers": {"content-type": "application/json"}}, None, "INVALID_PARAMS", 400),
        ({}, {"content": 5, "layer": "user"}, "INVALID_PARAMS", 400),
        ({}, {"content": "x", "layer": "user", "identifiers": {"userId": ["a"]}}, "INVALID_PARAMS", 400),
        ({}, {"content": "x", "layer": "user", "unknownField": 1}, "INVALID_PARAMS", 400),
        ({}, {"content": "x", "layer": "planet", "identifiers": ALICE}, "INVALID_LAYER", 400),
        ({}, {"content": "x", "layer": "session", "identifiers": ALICE}, "MISSING_IDENTIFIER", 400),
        ({}, {"content": "  ", "layer": "user", "identifiers": ALICE}, "INVALID_PARAMS", 400),
        ({}, {"content": "x" * 40_000, "layer": "user", "identifiers": ALICE}, "CONTENT_TOO_LONG", 413),
        ({}, {"content": "x", "layer": "user", "identifiers": ALICE, "importance": 7}, "INVALID_PARAMS", 400),
        ({}, [1, 2], "INVALID_PARAMS", 400),
    ],
)
def test_bad_input_gets_a_code_never_500(
    client: TestClient, make_key: Callable[..., str], kwargs: dict[str, object], body: object, code: str, status: int
) -> None:
    key = make_key()
    headers = {**h(key), **kwargs.pop("headers", {})}  # type: ignore[dict-item]
    r = (
        client.post("/v1/memories", headers=headers, json=body, **kwargs)
        if body is not None
        else client.post("/v1/memories", headers=headers, **kwargs)
    )  # type: ignore[arg-type]
    assert r.status_code == status, r.text
    err = r.json()
    assert err["code"] == code and set(err) == {"code", "message", "operation", "details", "retryable"}


def test_search_validation(client: TestClient, make_key: Callable[..., str]) -> None:
    key = make_key()
    for body, code in [
        ({"query": ""}, "INVALID_PARAMS"),
        ({"query": "q"}, "MISSING_IDENTIFIER"),
        ({"query": "q", "identifiers": ALICE, "threshold": 3}, "INVALID_PARAMS"),
        ({"query": "q", "identifiers": ALICE, "limit": 0}, "INVALID_PARAMS"),
        ({"query": "q" * 5000, "identifiers": ALICE}, "QUERY_TOO_LONG"),
        ({"query": "q", "identifiers": ALICE, "layers": ["nope"]}, "INVALID_LAYER"),
        ({"query": "q", "identifiers": ALICE, "recencyBoost": 1.5}, "INVALID_PARAMS"),
        ({"query": "q", "identifiers": ALICE, "importanceBoost": -1}, "INVALID_PARAMS"),
        ({"query": "q", "identifiers": ALICE, "hybridWeight": 2}, "INVALID_PARAMS"),
    ]:
        r = client.post("/v1/memories/search", headers=h(key), json=body)
        assert r.status_code == 400 and r.json()["code"] == code, (body, r.text)


def test_body_size_limit(make_client: Callable[..., TestClient], make_key: Callable[..., str]) -> None:
    client = make_client(max_body_bytes=2048)
    key = make_key()
    big = {"content": "y" * 5000, "layer": "user", "identifiers": ALICE}
    r = client.post("/v1/memories", headers=h(key), json=big)
    assert r.status_code == 413 and r.json()["code"] == "CONTENT_TOO_LONG"
    assert r.json()["details"]["max_length"] == 2048

    def chunks():  # no Content-Length: the streamed size is counted
        for _ in range(5):
            yield b"x" * 1000

    r = client.post("/v1/memories", headers={**h(key), "content-type": "application/json"}, content=chunks())
    assert r.status_code == 413 and r.json()["code"] == "CONTENT_TOO_LONG"


def test_every_error_code_maps_to_one_status_and_extra_router_is_one_line(server_mem: Memory) -> None:
    def feature_router(get_mem: Callable[..., Memory], get_ctx: Callable[..., TenantContext]) -> APIRouter:
        router = APIRouter(prefix="/v1/feature")

        @router.get("/raise/{code}")
        def raise_code(code: str, mem: Memory = Depends(get_mem), ctx: TenantContext = Depends(get_ctx)) -> None:
            assert isinstance(mem, Memory)
            raise MemoryError(code, "boom", operation="feature", details={"retry_after": 2.5})

        @router.get("/whoami")
        def whoami(ctx: TenantContext = Depends(get_ctx)) -> dict[str, str]:
            return {"tenant": ctx.tenant_id}

        return router

    from stratamem.server.keys import create_key

    key = create_key(server_mem.engine.provider, "acme", "reader").key
    app: FastAPI = create_app(
        server_mem, ServerSettings(mcp_enabled=False), extra_routers=[feature_router(get_memory, get_tenant)]
    )
    with TestClient(app) as client:
        assert client.get("/v1/feature/whoami", headers=h(key)).json() == {"tenant": "acme"}
        assert client.get("/v1/feature/whoami").json()["code"] == "MISSING_TENANT_CONTEXT"
        for code in ErrorCode:
            r = client.get(f"/v1/feature/raise/{code.value}", headers=h(key))
            assert r.status_code == STATUS[code], code
            body = r.json()
            assert body["code"] == code.value and body["operation"] == "feature" and body["message"] == "boom"
            assert isinstance(body["retryable"], bool)
            if code is ErrorCode.RATE_LIMITED:
                assert r.headers["Retry-After"] == "3" and body["retryable"] is True
    assert len(set(STATUS.values())) > 5


def test_openapi_documents_error_responses(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    assert "ErrorBody" in spec["components"]["schemas"]
    for path, ops in spec["paths"].items():
        if not path.startswith("/v1/"):
            continue
        for method, op in ops.items():
            for status in ("400", "401", "403", "413", "429", "503"):
                ref = op["responses"][status]["content"]["application/json"]["schema"]["$ref"]
                assert ref.endswith("/ErrorBody"), (path, method, status)
            assert "MISSING_TENANT_CONTEXT" in op["responses"]["401"]["description"]
    get_op = spec["paths"]["/v1/memories/{memory_id}"]["get"]
    assert "MEMORY_NOT_FOUND" in get_op["responses"]["404"]["description"]


def test_unknown_route_and_method_use_the_error_body(client: TestClient) -> None:
    r = client.get("/v1/nowhere")
    assert r.status_code == 404 and set(r.json()) == {"code", "message", "operation", "details", "retryable"}
    r = client.put("/v1/memories")
    assert r.status_code == 405 and r.json()["code"] == "INVALID_PARAMS"


def test_health_ready(client: TestClient) -> None:
    health = client.get("/health")
    assert health.status_code == 200 and health.json()["status"] == "healthy" and "latencyMs" in health.json()
    ready = client.get("/ready")
    assert ready.status_code == 200 and ready.json()["schemaVersion"] >= 2


def test_search_weights_and_boosts(client: TestClient, make_key: Callable[..., str]) -> None:
    """hybridWeight, recencyBoost and importanceBoost reach the engine (docs/concepts.md "Scores")."""
    key = make_key()
    for content, importance in [("Deploys happen on Tuesdays", 0.0), ("Deploys freeze in December", 1.0)]:
        r = client.post(
            "/v1/memories",
            headers=h(key),
            json={"content": content, "layer": "user", "identifiers": ALICE, "importance": importance},
        )
        assert r.status_code == 201, r.text

    def scores(**extra: float) -> dict[str, float]:
        r = client.post(
            "/v1/memories/search",
            headers=h(key),
            json={"query": "when do deploys happen", "identifiers": ALICE, "threshold": 0, **extra},
        )
        assert r.status_code == 200, r.text
        return {x["memory"]["content"]: x["score"] for x in r.json()["results"]}

    plain = scores()
    dense = scores(hybridWeight=0)
    assert all(dense[c] <= plain[c] for c in plain) and dense != plain
    boosted = scores(importanceBoost=0.5)
    assert boosted["Deploys freeze in December"] == pytest.approx(plain["Deploys freeze in December"], abs=2e-6)
    assert boosted["Deploys happen on Tuesdays"] < plain["Deploys happen on Tuesdays"]
    assert scores(recencyBoost=1.0) == pytest.approx(plain, abs=2e-6)  # written just now: nothing to discount
