"""The REST router, mounted on a small FastAPI app with trivial dependencies."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi import FastAPI, Header
from fastapi.testclient import TestClient

from stratamem import Memory, TenantContext
from stratamem.server import http_errors
from stratamem.server.graph_routes import graph_router


@pytest.fixture()
def client(mem: Memory) -> Iterator[TestClient]:
    def get_memory() -> Memory:
        return mem

    def get_tenant(x_tenant: str = Header(...)) -> TenantContext:
        return TenantContext(tenant_id=x_tenant, principal="api")

    app = FastAPI()
    http_errors.install(app)
    app.include_router(graph_router(get_memory, get_tenant))
    with TestClient(app) as c:
        yield c


def _snake_keys(value: Any, path: str = "") -> list[str]:
    """Every snake_case key in a JSON document (user metadata excepted)."""
    found: list[str] = []
    if isinstance(value, dict):
        for k, v in value.items():
            if "_" in k:
                found.append(f"{path}.{k}")
            if k != "metadata":
                found += _snake_keys(v, f"{path}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found += _snake_keys(v, f"{path}[{i}]")
    return found


def test_graph_routes(client: TestClient, mem: Memory, acme: TenantContext, add: Callable[..., str]) -> None:
    a = add(acme, "Alice works on Project A.")
    b = add(acme, "Alice found a memory leak.")
    h = {"x-tenant": "acme"}
    r = client.get("/v1/graph/related", params={"node": a, "hops": 2}, headers=h)
    assert r.status_code == 200 and [i["node"]["id"] for i in r.json()["items"]] == [b]
    item = r.json()["items"][0]
    assert item["memory"]["tenantId"] == "acme" and item["memory"]["createdAt"]
    assert [e["relType"] for e in item["edges"]] == ["MENTIONS", "MENTIONS"]
    assert _snake_keys(r.json()) == []
    r = client.get("/v1/graph/path", params={"a": "Project A", "b": "memory leak", "maxHops": 3}, headers=h)
    assert r.status_code == 200 and r.json()["reasoning"] == "Project A ←WORKS_ON— Alice —MENTIONS→ memory leak"
    assert [e["relType"] for e in r.json()["edges"]] == ["WORKS_ON", "MENTIONS"] and _snake_keys(r.json()) == []
    assert (
        client.get("/v1/graph/path", params={"a": "Project A", "b": "memory leak", "maxHops": 1}, headers=h).json()[
            "found"
        ]
        is False
    )
    r = client.get("/v1/graph/neighbors", params={"node": "Alice", "direction": "out"}, headers=h)
    assert {n["node"]["label"] for n in r.json()["neighbors"]} == {"Project A", "memory leak"}
    assert {n["relType"] for n in r.json()["neighbors"]} == {"WORKS_ON", "MENTIONS"}
    r = client.get("/v1/graph/neighbors", params={"node": "Alice", "relType": "works_on"}, headers=h)
    assert [n["node"]["label"] for n in r.json()["neighbors"]] == ["Project A"]
    # camelCase and snake_case query parameters are both accepted
    for key in ("includeEntities", "include_entities"):
        r = client.get("/v1/graph/related", params={"node": "Alice", "hops": 1, key: "true"}, headers=h)
        assert {i["node"]["kind"] for i in r.json()["items"]} == {"memory", "entity"}, key
    r = client.get("/v1/graph/path", params={"a": "Project A", "b": "memory leak", "max_hops": 1}, headers=h)
    assert r.status_code == 200 and r.json()["found"] is False
    r = client.get("/v1/graph/related", params={"node": a}, headers={"x-tenant": "globex"})
    assert r.status_code == 404 and r.json()["code"] == "MEMORY_NOT_FOUND"
    assert "Alice" not in r.text  # nothing of the other tenant leaks into the error
    r = client.get("/v1/graph/related", params={"node": a, "hops": 9}, headers=h)
    assert r.status_code == 400 and r.json()["code"] == "INVALID_PARAMS"
    assert client.get("/health/graph").status_code == 200
    assert client.get("/ready/graph").json() == {"ready": True}


def test_health_reports_disabled_graph(open_mem: Callable[..., Memory]) -> None:
    mem = open_mem("memory://")
    app = FastAPI()
    http_errors.install(app)
    app.include_router(graph_router(lambda: mem, lambda: TenantContext(tenant_id="acme")))
    with TestClient(app) as c:
        assert c.get("/health/graph").status_code == 503
        assert c.get("/ready/graph").status_code == 503
        r = c.get("/v1/graph/related", params={"node": "x"})
        assert r.status_code == 500 and r.json()["code"] == "CONFIGURATION_ERROR"
