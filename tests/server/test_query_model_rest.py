"""The query model over REST: order, since/until, tagsMatch, includeNarrower, expiresAt null clears."""

from __future__ import annotations

from collections.abc import Callable

from fastapi.testclient import TestClient


def test_query_model_over_rest(client: TestClient, make_key: Callable[..., str]) -> None:
    h = {"X-API-Key": make_key()}
    ids = {"userId": "alice"}
    made = []
    for i, tags in enumerate((["a"], ["a", "b"], ["b"])):
        r = client.post(
            "/v1/memories",
            headers=h,
            json={"content": f"garden note {i}", "layer": "user", "identifiers": ids, "metadata": {"tags": tags}},
        )
        assert r.status_code == 201, r.text
        made.append(r.json()["memory"])
    r = client.post(
        "/v1/memories",
        headers=h,
        json={"content": "session garden note", "layer": "session", "identifiers": {**ids, "sessionId": "s1"}},
    )
    assert r.status_code == 201

    def contents(resp: object) -> list[str]:
        body = resp.json()  # type: ignore[attr-defined]
        return (
            [m["content"] for m in body["memories"]]
            if "memories" in body
            else [x["memory"]["content"] for x in body["results"]]
        )

    newest = client.get("/v1/memories", headers=h, params={"layer": "user", "userId": "alice", "order": "newest"})
    assert contents(newest) == ["garden note 2", "garden note 1", "garden note 0"]
    both = client.get(
        "/v1/memories",
        headers=h,
        params=[("layer", "user"), ("userId", "alice"), ("tag", "a"), ("tag", "b"), ("tagsMatch", "all")],
    )
    assert contents(both) == ["garden note 1"]
    narrower = client.get(
        "/v1/memories",
        headers=h,
        params={"layer": "user", "userId": "alice", "sessionId": "s1", "includeNarrower": "true"},
    )
    assert len(contents(narrower)) == 4
    later = client.get(
        "/v1/memories", headers=h, params={"layer": "user", "userId": "alice", "since": "2999-01-01T00:00:00Z"}
    )
    assert later.status_code == 200 and contents(later) == []
    bad = client.get(
        "/v1/memories",
        headers=h,
        params={"layer": "user", "userId": "alice", "filter": '{"createdAt": {"gte": "2026-01-01"}}'},
    )
    assert bad.status_code == 400 and bad.json()["code"] == "INVALID_PARAMS"
    found = client.post(
        "/v1/memories/search",
        headers=h,
        json={
            "query": "garden note",
            "identifiers": ids,
            "threshold": 0,
            "order": "oldest",
            "layers": ["user"],
            "filter": {"tags": ["a", "b"]},
            "tagsMatch": "all",
        },
    )
    assert found.status_code == 200 and contents(found) == ["garden note 1"]

    mid = made[0]["id"]
    set_ = client.patch(f"/v1/memories/{mid}", headers=h, json={"expiresAt": "2999-01-01T00:00:00Z"})
    assert set_.json()["memory"]["expiresAt"] is not None
    kept = client.patch(f"/v1/memories/{mid}", headers=h, json={"content": "garden note zero"})
    assert kept.json()["memory"]["expiresAt"] is not None
    cleared = client.patch(f"/v1/memories/{mid}", headers=h, json={"expiresAt": None})
    assert cleared.status_code == 200 and cleared.json()["memory"]["expiresAt"] is None
