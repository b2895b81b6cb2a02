"""Input limits that hold on every surface: metadata depth and size, ``expiresAt`` in the past, and a
failed ``If-Match`` that stores nothing. The poisoned-scope repro runs against a real ``stratamem serve``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from stratamem import Memory, MemoryConfig, TenantContext
from stratamem.errors import ErrorCode, MemoryError

from .conftest import LiveServer, cli_key

ACME = TenantContext(tenant_id="acme")
COMPANY = {"companyId": "acme"}


def nested(depth: int) -> dict[str, Any]:
    """``{"a": {"a": … 1}}`` with ``depth`` levels of objects."""
    value: Any = 1
    for _ in range(depth - 1):
        value = {"a": value}
    return {"d": value} if depth > 0 else {}


def test_poisoned_scope_is_refused_and_the_scope_keeps_working(
    live_db: Path, live_server: Callable[[], LiveServer]
) -> None:
    key = cli_key(live_db, "acme", "writer")
    srv = live_server()
    headers = {"X-API-Key": key}
    ok = httpx.post(
        srv.url + "/v1/memories",
        headers=headers,
        timeout=30,
        json={"content": "Deploys happen on Fridays", "layer": "company", "identifiers": COMPANY},
    )
    assert ok.status_code == 201, ok.text
    for depth in (40, 300, 600, 900):
        r = httpx.post(
            srv.url + "/v1/memories",
            headers=headers,
            timeout=30,
            json={"content": "poison", "layer": "company", "identifiers": COMPANY, "metadata": nested(depth)},
        )
        assert 400 <= r.status_code < 500, (depth, r.status_code, r.text)
        assert r.json()["code"] == "INVALID_PARAMS"
    found = httpx.post(
        srv.url + "/v1/memories/search",
        headers=headers,
        timeout=30,
        json={"query": "poison", "identifiers": COMPANY, "threshold": 0},
    )
    assert found.status_code == 200, found.text
    assert [x["memory"]["content"] for x in found.json()["results"]] == ["Deploys happen on Fridays"]
    listed = httpx.get(
        srv.url + "/v1/memories", headers=headers, params={"layer": "company", "companyId": "acme"}, timeout=30
    )
    assert listed.status_code == 200 and listed.json()["totalCount"] == 1
    # an update carrying deep metadata is refused the same way, and the memory is unchanged
    mid = ok.json()["memory"]["id"]
    r = httpx.patch(f"{srv.url}/v1/memories/{mid}", headers=headers, timeout=30, json={"metadata": nested(300)})
    assert r.status_code == 400 and r.json()["code"] == "INVALID_PARAMS"
    got = httpx.get(f"{srv.url}/v1/memories/{mid}", headers=headers, timeout=30)
    assert got.status_code == 200 and got.json()["version"] == 1 and got.json()["metadata"] == {}


def test_metadata_depth_and_size_limits_in_the_sdk(open_mem: Callable[..., Memory]) -> None:
    mem = open_mem()
    ok = mem.add(ACME, "Deep but allowed", layer="user", identifiers={"user_id": "u1"}, metadata=nested(32))
    assert ok.memory.metadata == nested(32)
    for bad in (nested(33), nested(300), {"k": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}):
        with pytest.raises(MemoryError) as exc:
            mem.add(ACME, "Too deep", layer="user", identifiers={"user_id": "u1"}, metadata=bad)
        assert exc.value.code is ErrorCode.INVALID_PARAMS and exc.value.details["field"] == "metadata"
    with pytest.raises(MemoryError) as exc:
        mem.add(ACME, "Too big", layer="user", identifiers={"user_id": "u1"}, metadata={"blob": "x" * (64 * 1024)})
    assert exc.value.code is ErrorCode.INVALID_PARAMS
    with pytest.raises(MemoryError) as exc:
        mem.update(ACME, ok.memory.id, metadata={"extra": nested(40)})
    assert exc.value.code is ErrorCode.INVALID_PARAMS
    with pytest.raises(MemoryError) as exc:  # a bulk add with one bad item stores none of them
        mem.bulk_add(
            ACME,
            [
                {"content": "fine", "layer": "user", "identifiers": {"user_id": "u1"}},
                {"content": "bad", "layer": "user", "identifiers": {"user_id": "u1"}, "metadata": nested(50)},
            ],
        )
    assert exc.value.code is ErrorCode.INVALID_PARAMS and exc.value.details["index"] == 1
    assert mem.list(ACME).total_count == 1


def test_metadata_limits_are_configurable(open_mem: Callable[..., Memory]) -> None:
    mem = open_mem(config=MemoryConfig(max_metadata_depth=4, max_metadata_bytes=2048))
    mem.add(ACME, "Four levels", layer="user", identifiers={"user_id": "u1"}, metadata=nested(4))
    with pytest.raises(MemoryError) as exc:
        mem.add(ACME, "Five levels", layer="user", identifiers={"user_id": "u1"}, metadata=nested(5))
    assert exc.value.code is ErrorCode.INVALID_PARAMS and exc.value.details["max_depth"] == 4
    with pytest.raises(MemoryError) as exc:
        mem.add(ACME, "Too big", layer="user", identifiers={"user_id": "u1"}, metadata={"blob": "x" * 2048})
    assert exc.value.code is ErrorCode.INVALID_PARAMS
    with pytest.raises(ValueError):
        MemoryConfig(max_metadata_depth=0)


@pytest.mark.parametrize("expires", ["2001-01-01T00:00:00Z", 0, -1, 1.5])
def test_expires_at_in_the_past_is_invalid(client: TestClient, make_key: Callable[..., str], expires: object) -> None:
    key = make_key()
    r = client.post(
        "/v1/memories",
        headers={"X-API-Key": key},
        json={
            "content": "Gone before it lands",
            "layer": "user",
            "identifiers": {"userId": "u1"},
            "expiresAt": expires,
        },
    )
    assert r.status_code == 400 and r.json()["code"] == "INVALID_PARAMS", r.text
    assert client.get("/v1/memories", headers={"X-API-Key": key}).json()["totalCount"] == 0
    made = client.post(
        "/v1/memories",
        headers={"X-API-Key": key},
        json={"content": "Stays", "layer": "user", "identifiers": {"userId": "u1"}},
    )
    mid = made.json()["memory"]["id"]
    r = client.patch(f"/v1/memories/{mid}", headers={"X-API-Key": key}, json={"expiresAt": expires})
    assert r.status_code == 400 and r.json()["code"] == "INVALID_PARAMS", r.text


def test_expires_at_in_the_past_is_invalid_in_the_sdk(open_mem: Callable[..., Memory]) -> None:
    mem = open_mem()
    with pytest.raises(MemoryError) as exc:
        mem.add(ACME, "Too late", layer="user", identifiers={"user_id": "u1"}, expires_at="2020-01-01T00:00:00Z")
    assert exc.value.code is ErrorCode.INVALID_PARAMS and exc.value.details["field"] == "expiresAt"
    assert mem.list(ACME).total_count == 0


def test_failed_if_match_stores_nothing_over_rest(client: TestClient, make_key: Callable[..., str]) -> None:
    key = make_key()
    headers = {"X-API-Key": key}
    made = client.post(
        "/v1/memories",
        headers=headers,
        json={"content": "The deploy window is Tuesday", "layer": "user", "identifiers": {"userId": "u1"}},
    )
    mid = made.json()["memory"]["id"]
    stale = client.patch(
        f"/v1/memories/{mid}",
        headers={**headers, "If-Match": "stale"},
        json={"content": "Rejected: the deploy window is Sunday"},
    )
    assert stale.status_code == 409 and stale.json()["code"] == "CONFLICT"
    assert "conflictId" not in stale.json()["details"] and "conflict_id" not in stale.json()["details"]
    listed = client.get("/v1/memories", headers=headers).json()
    assert [m["content"] for m in listed["memories"]] == ["The deploy window is Tuesday"]
    found = client.post(
        "/v1/memories/search",
        headers=headers,
        json={"query": "Rejected: the deploy window is Sunday", "identifiers": {"userId": "u1"}, "threshold": 0},
    ).json()
    assert all("Rejected" not in x["memory"]["content"] for x in found["results"])


def test_conflict_entries_never_show_in_default_search(open_mem: Callable[..., Memory]) -> None:
    """The SDK keeps the seed-001 conflict entry for review, but a default search never returns it."""
    mem = open_mem()
    made = mem.add(ACME, "The deploy window is Tuesday", layer="user", identifiers={"user_id": "u1"})
    with pytest.raises(MemoryError) as exc:
        mem.update(ACME, made.memory.id, content="Rejected: the deploy window is Sunday", if_match="stale")
    conflict_id = exc.value.details["conflict_id"]
    found = mem.search(ACME, "Rejected: the deploy window is Sunday", identifiers={"user_id": "u1"}, threshold=0)
    assert conflict_id not in [r.memory.id for r in found.results]
    assert [r.memory.id for r in found.results] == [made.memory.id]
    assert [m.id for m in mem.lifecycle.conflicts(ACME).memories] == [conflict_id]


def _deep_text(depth: int, leaf: str = "1") -> str:
    """Raw JSON nested ``depth`` objects deep (built as text: the encoder itself would recurse)."""
    return '{"a":' * depth + leaf + "}" * depth


@pytest.mark.parametrize("depth", [40, 300, 3000, 20000])
def test_deep_and_wide_json_never_gives_a_5xx(client: TestClient, make_key: Callable[..., str], depth: int) -> None:
    key = make_key()
    headers = {"X-API-Key": key, "Content-Type": "application/json"}
    deep = _deep_text(depth)
    ids = '{"userId": "u1"}'
    bodies = [
        ("POST", "/v1/memories", f'{{"content": "x", "layer": "user", "identifiers": {ids}, "metadata": {deep}}}'),
        ("POST", "/v1/memories", f'{{"content": "x", "layer": "user", "identifiers": {deep}}}'),
        ("POST", "/v1/memories", deep),
        (
            "POST",
            "/v1/memories/bulk",
            f'{{"items": [{{"content": "x", "layer": "user", "identifiers": {ids}, "metadata": {deep}}}]}}',
        ),
        ("POST", "/v1/memories/search", f'{{"query": "x", "identifiers": {ids}, "filter": {{"custom": {deep}}}}}'),
        ("PATCH", "/v1/memories/nope", f'{{"metadata": {deep}}}'),
        ("POST", "/v1/keys", f'{{"role": "reader", "identifiers": {deep}}}'),
    ]
    for method, path, body in bodies:
        r = client.request(method, path, headers=headers, content=body.encode())
        assert r.status_code < 500, (method, path, depth, r.status_code, r.text[:300])
        if path != "/v1/memories/search":  # a deep filter is only read, never stored: may succeed
            assert r.status_code >= 400, (method, path, depth, r.text[:300])
        if r.status_code >= 400:
            assert set(r.json()) == {"code", "message", "operation", "details", "retryable"}
    deep_filter = '{"custom": ' + _deep_text(min(depth, 1500)) + "}"
    r = client.get("/v1/memories", headers=headers, params={"filter": deep_filter})
    assert r.status_code < 500, r.text[:300]
    wide = {f"k{i}": i for i in range(20000)}
    r = client.post(
        "/v1/memories",
        headers={"X-API-Key": key},
        json={"content": "x", "layer": "user", "identifiers": {"userId": "u1"}, "metadata": wide},
    )
    assert r.status_code in (400, 413), r.text[:300]
    assert client.get("/v1/memories", headers={"X-API-Key": key}).json()["totalCount"] == 0
