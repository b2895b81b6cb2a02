"""REST accepts other APIs' scope names: layer ``workspace`` and identifier ``workspaceId``."""

from __future__ import annotations

from collections.abc import Callable

from fastapi.testclient import TestClient


def h(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def test_workspace_layer_and_workspace_id_over_rest(client: TestClient, make_key: Callable[..., str]) -> None:
    key = make_key()
    r = client.post(
        "/v1/memories",
        headers=h(key),
        json={
            "content": "Deploys go out on Tuesdays",
            "layer": "workspace",
            "identifiers": {"workspaceId": "w1"},
        },
    )
    assert r.status_code == 201, r.text
    mem = r.json()["memory"]
    assert mem["layer"] == "project" and mem["identifiers"]["projectId"] == "w1"
    listed = client.get("/v1/memories", headers=h(key), params={"layer": "workspace", "workspaceId": "w1"})
    assert listed.status_code == 200, listed.text
    assert [m["id"] for m in listed.json()["memories"]] == [mem["id"]]
    found = client.post(
        "/v1/memories/search",
        headers=h(key),
        json={
            "query": "Deploys go out on Tuesdays",
            "identifiers": {"workspaceId": "w1"},
            "layers": ["workspace"],
            "threshold": 0,
        },
    )
    assert found.status_code == 200, found.text
    assert [x["memory"]["id"] for x in found.json()["results"]] == [mem["id"]]
    bad = client.post(
        "/v1/memories",
        headers=h(key),
        json={
            "content": "x",
            "layer": "workspace",
            "identifiers": {"workspaceId": "w1", "projectId": "p2"},
        },
    )
    assert bad.status_code == 400 and bad.json()["code"] == "INVALID_PARAMS", bad.text
    unknown = client.post(
        "/v1/memories", headers=h(key), json={"content": "x", "layer": "bogus", "identifiers": {"workspaceId": "w1"}}
    )
    assert unknown.status_code == 400 and unknown.json()["code"] == "INVALID_LAYER"
