"""The OpenAPI document is worth generating clients from, ETag / If-Match follow RFC 7232, and /docs
works offline (local Swagger UI assets, rendered in a real headless Chromium when one is installed)."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable
from typing import Any

from fastapi.testclient import TestClient
from openapi_spec_validator import validate

from stratamem import Memory
from stratamem.config import MemoryConfig
from stratamem.model import Layer
from stratamem.server.app import create_app
from stratamem.server.settings import ServerSettings

from ..conftest import require_service
from .conftest import LiveServer

ALICE = {"userId": "alice"}

OPERATION_IDS = {
    ("post", "/v1/memories"): "createMemory",
    ("get", "/v1/memories"): "listMemories",
    ("post", "/v1/memories/search"): "searchMemories",
    ("get", "/v1/memories/{memory_id}"): "getMemory",
    ("patch", "/v1/memories/{memory_id}"): "updateMemory",
    ("delete", "/v1/memories/{memory_id}"): "deleteMemory",
    ("post", "/v1/memories/bulk"): "bulkCreateMemories",
    ("post", "/v1/memories/bulk-delete"): "bulkDeleteMemories",
    ("post", "/v1/keys"): "createApiKey",
    ("get", "/v1/keys"): "listApiKeys",
    ("delete", "/v1/keys/{key_id}"): "revokeApiKey",
    ("get", "/health"): "getHealth",
    ("get", "/ready"): "getReadiness",
    ("get", "/metrics"): "getMetrics",
}


def h(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _doc(client: TestClient) -> dict[str, Any]:
    resp = client.get("/openapi.json")
    assert resp.status_code == 200
    doc: dict[str, Any] = resp.json()
    return doc


def _operations(doc: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(method, path, op) for path, ops in doc["paths"].items() for method, op in ops.items()]


def test_document_is_valid_openapi(client: TestClient) -> None:
    doc = _doc(client)
    validate(doc)  # openapi-spec-validator: the document itself, against the OpenAPI 3.1 schema
    assert doc["openapi"].startswith("3.1")


def test_operation_ids_are_stable_and_camel_case(client: TestClient) -> None:
    ops = _operations(_doc(client))
    ids = [op["operationId"] for _, _, op in ops]
    assert len(ids) == len(set(ids))
    assert all(re.fullmatch(r"[a-z][a-zA-Z]+", i) for i in ids), ids  # no FastAPI default like search_v1_…_post
    found = {(method, path): op["operationId"] for method, path, op in ops}
    for where, expected in OPERATION_IDS.items():
        assert found[where] == expected, where


def test_every_field_route_and_parameter_has_a_description_and_an_example(client: TestClient) -> None:
    doc = _doc(client)
    missing: list[str] = []
    props = 0
    for sname, schema in doc["components"]["schemas"].items():
        for pname, prop in schema.get("properties", {}).items():
            props += 1
            if not prop.get("description") or not (prop.get("examples") or "example" in prop):
                missing.append(f"{sname}.{pname}")
    for method, path, op in _operations(doc):
        if not op.get("summary") or not op.get("description"):
            missing.append(f"{method.upper()} {path}")
        for param in op.get("parameters", []):
            if not param.get("description") or not ("example" in param or param.get("examples")):
                missing.append(f"{method.upper()} {path} ?{param['name']}")
    assert missing == []
    assert props > 100


def test_layers_are_an_enum_and_limits_are_the_servers(
    server_mem: Memory, client: TestClient, make_key: Callable[..., str]
) -> None:
    doc = _doc(client)
    schemas = doc["components"]["schemas"]
    layers = [x.value for x in Layer]
    assert schemas["CreateMemoryRequest"]["properties"]["layer"]["enum"] == layers
    assert schemas["SearchRequest"]["properties"]["layers"]["anyOf"][0]["items"]["enum"] == layers
    list_params = {p["name"]: p for p in doc["paths"]["/v1/memories"]["get"]["parameters"]}
    layer_param = list_params["layer"]["schema"]
    assert layer_param.get("enum", layer_param["anyOf"][0].get("enum")) == layers
    limit = server_mem.engine.max_content_length
    assert limit == 32_000
    assert schemas["CreateMemoryRequest"]["properties"]["content"]["maxLength"] == limit
    assert schemas["UpdateMemoryRequest"]["properties"]["content"]["anyOf"][0]["maxLength"] == limit
    assert schemas["SearchRequest"]["properties"]["query"]["maxLength"] == (
        server_mem.engine.embeddings.embedder.max_query_chars
    )
    assert schemas["BulkCreateRequest"]["properties"]["items"]["maxItems"] == 100
    assert schemas["SearchRequest"]["properties"]["limit"]["anyOf"][0]["maximum"] == 100
    # the documented limit is the one the server enforces
    key = make_key()
    body = {"layer": "user", "identifiers": ALICE}
    assert client.post("/v1/memories", headers=h(key), json={**body, "content": "x" * limit}).status_code == 201
    over = client.post("/v1/memories", headers=h(key), json={**body, "content": "x" * (limit + 1)})
    assert over.status_code == 413 and over.json()["code"] == "CONTENT_TOO_LONG"
    bad_layer = client.post("/v1/memories", headers=h(key), json={**body, "layer": "galaxy", "content": "x"})
    assert bad_layer.status_code == 400 and bad_layer.json()["code"] == "INVALID_LAYER"


def test_limits_follow_the_configuration(tmp_path: Any) -> None:
    mem = Memory.open(tmp_path / "small.duckdb", embedder="hashing", config=MemoryConfig(max_content_length=500))
    try:
        with TestClient(create_app(mem, ServerSettings(mcp_enabled=False, max_bulk_items=7))) as c:
            schemas = _doc(c)["components"]["schemas"]
        assert schemas["CreateMemoryRequest"]["properties"]["content"]["maxLength"] == 500
        assert schemas["BulkDeleteRequest"]["properties"]["ids"]["maxItems"] == 7
    finally:
        mem.close()


def test_etag_header_and_rfc7232_if_match(client: TestClient, make_key: Callable[..., str]) -> None:
    key = make_key()
    created = client.post("/v1/memories", headers=h(key), json={"content": "v1", "layer": "user", "identifiers": ALICE})
    mid, etag1 = created.json()["memory"]["id"], created.json()["memory"]["etag"]
    got = client.get(f"/v1/memories/{mid}", headers=h(key))
    assert got.headers["ETag"] == f'"{etag1}"' == f'"{got.json()["etag"]}"'

    # the quoted form, as a client copies it from the ETag header
    upd = client.patch(
        f"/v1/memories/{mid}", headers={**h(key), "If-Match": got.headers["ETag"]}, json={"content": "v2"}
    )
    assert upd.status_code == 200, upd.text
    etag2 = upd.json()["memory"]["etag"]
    assert upd.headers["ETag"] == f'"{etag2}"' and etag2 != etag1
    # a stale quoted etag: 409 with the same error code as before
    stale = client.patch(f"/v1/memories/{mid}", headers={**h(key), "If-Match": f'"{etag1}"'}, json={"content": "x"})
    assert stale.status_code == 409 and stale.json()["code"] == "CONFLICT"
    # the weak form, a list naming the current one, "*" and the bare etag of earlier clients
    weak = client.patch(f"/v1/memories/{mid}", headers={**h(key), "If-Match": f'W/"{etag2}"'}, json={"content": "v3"})
    assert weak.status_code == 200, weak.text
    etag3 = weak.json()["memory"]["etag"]
    listed = client.patch(
        f"/v1/memories/{mid}", headers={**h(key), "If-Match": f'"{etag1}", W/"{etag3}"'}, json={"content": "v4"}
    )
    assert listed.status_code == 200, listed.text
    assert (
        client.patch(f"/v1/memories/{mid}", headers={**h(key), "If-Match": "*"}, json={"content": "v5"}).status_code
        == 200
    )
    etag5 = client.get(f"/v1/memories/{mid}", headers=h(key)).json()["etag"]
    assert (
        client.patch(f"/v1/memories/{mid}", headers={**h(key), "If-Match": etag5}, json={"content": "v6"}).status_code
        == 200
    )
    # DELETE: a stale weak etag is refused, the current quoted one deletes
    assert client.delete(f"/v1/memories/{mid}", headers={**h(key), "If-Match": f'W/"{etag5}"'}).status_code == 409
    current = client.get(f"/v1/memories/{mid}", headers=h(key)).headers["ETag"]
    gone = client.delete(f"/v1/memories/{mid}", headers={**h(key), "If-Match": current})
    assert gone.status_code == 200 and gone.json()["success"] is True


def test_docs_are_served_from_local_assets(client: TestClient) -> None:
    for page in ("/docs", "/redoc"):
        html = client.get(page).text
        assert not re.search(r"""(src|href)=["']?(https?:)?//""", html), html  # nothing from a CDN
        assets = re.findall(r"""(?:src|href)=["']([^"']+)["']""", html)
        assert assets, html
        for asset in assets:
            resp = client.get(asset)
            assert resp.status_code == 200 and len(resp.content) > 0, asset
    assert "/docs" not in _doc(client)["paths"]


def test_docs_render_in_headless_chromium(live_server: Callable[[], LiveServer]) -> None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    require_service("chromium", browser is not None, "no chromium binary (apt-get install chromium)")
    assert browser is not None
    srv = live_server()
    out = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--virtual-time-budget=15000",
            "--dump-dom",
            srv.url + "/docs",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    dom = out.stdout
    assert "opblock" in dom, out.stderr[-2000:]  # Swagger UI rendered the operations
    assert "Store a memory" in dom and "/v1/memories/search" in dom
    assert "Unable to render this definition" not in dom
