"""The add and search routes serialise the engine's output themselves (``routes.json_response``):
their bodies must be what FastAPI's ``response_model`` would have produced, i.e. the body validated
into the response model and dumped in JSON mode by alias gives the body back unchanged."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi.testclient import TestClient
from pydantic import BaseModel

from stratamem.model import AddMemoryOutput, SearchMemoryOutput


def canonical(model: type[BaseModel], body: Any) -> Any:
    return model.model_validate(body).model_dump(mode="json", by_alias=True)


def test_add_and_search_bodies_are_the_response_models(client: TestClient, make_key: Callable[..., str]) -> None:
    headers = {"Authorization": f"Bearer {make_key()}"}
    added = client.post(
        "/v1/memories",
        headers=headers,
        json={
            "content": "The backend runs on PostgreSQL 16 — «café» ünïcode",
            "layer": "user",
            "identifiers": {"userId": "u1"},
            "metadata": {"source": "chat", "n": 1.5, "nested": {"a": [1, None]}},
            "provenance": {"threadId": "t1", "position": 3},
        },
    )
    assert added.status_code == 201 and added.headers["content-type"] == "application/json"
    body = added.json()
    assert body["memory"]["provenance"]["threadId"] == "t1" and "expiresAt" in body["memory"]
    assert body["memory"]["content"].endswith("«café» ünïcode")
    assert body == canonical(AddMemoryOutput, body)

    found = client.post(
        "/v1/memories/search",
        headers=headers,
        json={"query": "which database", "identifiers": {"userId": "u1"}, "threshold": 0},
    )
    assert found.status_code == 200 and found.headers["content-type"] == "application/json"
    body = found.json()
    assert body["results"] and body["results"][0]["memory"]["id"] == added.json()["memory"]["id"]
    assert body == canonical(SearchMemoryOutput, body)
