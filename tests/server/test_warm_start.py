"""Warm start: the server loads and runs the embedding model before it accepts connections."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from stratamem import Memory
from stratamem.embeddings.onnx import OnnxEmbedder
from stratamem.server.app import create_app
from stratamem.server.keys import create_key
from stratamem.server.settings import ServerSettings

from .conftest import LiveServer

pytestmark = pytest.mark.model


def test_model_is_loaded_and_run_before_the_app_serves(tmp_path: Path, minilm: OnnxEmbedder) -> None:
    embedder = OnnxEmbedder()  # the default model, not yet loaded
    assert embedder._session is None and embedder._query_session is None
    with Memory.open(tmp_path / "warm.duckdb", embedder=embedder) as mem:
        app = create_app(mem, ServerSettings(mcp_enabled=False))
        assert embedder._session is None  # creating the app does not load it: the startup does
        with TestClient(app) as client:
            assert embedder._session is not None and embedder._query_session is not None
            ready = client.get("/ready")
            assert ready.status_code == 200
            assert ready.json()["embedder"] == "sentence-transformers/all-MiniLM-L6-v2"


def test_live_server_with_the_default_embedder_is_ready_warm(tmp_path: Path, minilm: OnnxEmbedder) -> None:
    """``stratamem serve`` with the default embedder: /ready names the model; the first search works."""
    db = tmp_path / "live.duckdb"
    with Memory.open(db, embedder=minilm) as mem:
        key = create_key(mem.engine.provider, "acme", "writer").key
    server = LiveServer(db, "--embedder", "onnx")
    started = time.monotonic()
    server.start()
    try:
        assert time.monotonic() - started < 60
        with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {key}"}, timeout=30) as http:
            assert http.get("/ready").json()["embedder"] == "sentence-transformers/all-MiniLM-L6-v2"
            r = http.post(
                "/v1/memories",
                json={"content": "User prefers dark mode", "layer": "user", "identifiers": {"userId": "u1"}},
            )
            assert r.status_code in (200, 201), r.text
            s = http.post(
                "/v1/memories/search",
                json={"query": "what color theme does the user like", "identifiers": {"userId": "u1"}},
            )
            assert s.status_code == 200, s.text
            assert s.json()["results"][0]["memory"]["content"] == "User prefers dark mode"
    finally:
        server.stop()
