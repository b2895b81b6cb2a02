"""Embeddings: cache by content hash (across restarts, per tenant), dimension checks, HTTP embedder."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from stratamem import ErrorCode, Memory, MemoryConfig, MemoryError, TenantContext
from stratamem.embeddings import HashingEmbedder, make_embedder
from stratamem.embeddings.openai import OpenAIEmbedder

U1 = {"user_id": "u1"}


def test_repeated_content_never_reaches_the_model_twice(mem: Memory, acme: TenantContext) -> None:
    first = mem.add(acme, content="cache me", layer="user", identifiers=U1)
    second = mem.add(acme, content="cache me", layer="user", identifiers=U1)
    assert first.embedding_generated is True and second.embedding_generated is False
    assert mem.engine.embeddings.model_calls == 1


def test_cache_survives_restart(db_path: Path, acme: TenantContext) -> None:
    with Memory.open(db_path, embedder="hashing") as mem:
        mem.add(acme, content="persisted vector", layer="user", identifiers=U1)
    with Memory.open(db_path, embedder="hashing") as mem:
        out = mem.add(acme, content="persisted vector", layer="user", identifiers=U1)
        assert out.embedding_generated is False and mem.engine.embeddings.model_calls == 0


def test_cache_is_per_tenant(mem: Memory, acme: TenantContext, globex: TenantContext) -> None:
    mem.add(acme, content="shared words", layer="user", identifiers=U1)
    # Another tenant storing the same text learns nothing about acme: it is embedded afresh.
    assert mem.add(globex, content="shared words", layer="user", identifiers=U1).embedding_generated is True


def test_deleting_the_last_copy_drops_the_cached_vector(db_path: Path, acme: TenantContext) -> None:
    with Memory.open(db_path, embedder="hashing") as mem:
        a = mem.add(acme, content="forget me", layer="user", identifiers=U1).memory
        b = mem.add(acme, content="forget me", layer="user", identifiers=U1).memory
        mem.delete(acme, a.id)
    with Memory.open(db_path, embedder="hashing") as mem:
        assert mem.add(acme, content="forget me", layer="user", identifiers=U1).embedding_generated is False
        mem.bulk_delete(acme, [b.id] + [m.id for m in mem.list(acme).memories])
    with Memory.open(db_path, embedder="hashing") as mem:
        assert mem.add(acme, content="forget me", layer="user", identifiers=U1).embedding_generated is True


def test_dimension_mismatch_is_configuration_error(db_path: Path, acme: TenantContext) -> None:
    with Memory.open(db_path, embedder="hashing:384") as mem:
        mem.add(acme, content="x", layer="user", identifiers=U1)
    with pytest.raises(MemoryError) as err:
        Memory.open(db_path, embedder="hashing:128")
    assert err.value.code is ErrorCode.CONFIGURATION_ERROR
    assert "384" in err.value.message and "128" in err.value.message
    assert err.value.details["store_dimensions"] == 384 and err.value.details["embedder_dimensions"] == 128
    with Memory.open(db_path, embedder="hashing:384") as mem:  # the store is untouched and still opens
        assert mem.list(acme).total_count == 1


class _OtherModel(HashingEmbedder):
    def __init__(self) -> None:
        super().__init__(384)
        self.model_id = "some-other-model"


def test_model_mismatch_is_configuration_error(db_path: Path) -> None:
    Memory.open(db_path, embedder="hashing").close()
    with pytest.raises(MemoryError) as err:
        Memory.open(db_path, embedder=_OtherModel())
    assert err.value.code is ErrorCode.CONFIGURATION_ERROR
    assert "some-other-model" in err.value.message


def test_hashing_embedder_is_deterministic_and_normalised() -> None:
    emb = HashingEmbedder(64)
    a, b = emb.embed(["hello world", "hello world"])
    assert np.allclose(a, b) and abs(float(np.linalg.norm(a)) - 1.0) < 1e-5
    assert make_embedder("hashing:64").model_id == emb.model_id


def test_unknown_embedder_name() -> None:
    with pytest.raises(MemoryError) as err:
        make_embedder("word2vec")
    assert err.value.code is ErrorCode.CONFIGURATION_ERROR


# ----------------------------------------------------------------- OpenAI-compatible HTTP embedder


class _FakeEmbeddingsAPI:
    """A real local HTTP server speaking POST /v1/embeddings, with scripted failures."""

    def __init__(self) -> None:
        self.script: list[tuple[int, dict[str, str]]] = []  # (status, headers) served before successes
        self.requests: list[dict[str, Any]] = []
        self.auth: list[str | None] = []
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                return

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                api.requests.append(body)
                api.auth.append(self.headers.get("Authorization"))
                if self.path != "/v1/embeddings":
                    self.send_response(404)
                    self.end_headers()
                    return
                if api.script:
                    status, headers = api.script.pop(0)
                    self.send_response(status)
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(b'{"error": "scripted"}')
                    return
                inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
                vecs = HashingEmbedder(16).embed(inputs)
                data = [{"object": "embedding", "index": i, "embedding": v.tolist()} for i, v in enumerate(vecs)]
                payload = json.dumps({"object": "list", "data": data[::-1], "model": body["model"]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture()
def fake_api() -> Iterator[_FakeEmbeddingsAPI]:
    api = _FakeEmbeddingsAPI()
    yield api
    api.close()


def test_openai_embedder_end_to_end(
    fake_api: _FakeEmbeddingsAPI, open_mem: Callable[..., Memory], acme: TenantContext
) -> None:
    emb = OpenAIEmbedder(fake_api.url, "text-embedding-test", api_key="sk-test")
    assert emb.dimensions == 16 and emb.model_id == "openai-compatible/text-embedding-test"
    mem = open_mem(embedder=emb)
    mem.add(acme, content="vectors over http", layer="user", identifiers=U1)
    res = mem.search(acme, "vectors over http", identifiers=U1)
    assert res.results[0].memory.content == "vectors over http" and res.results[0].score > 0.99
    assert fake_api.auth[-1] == "Bearer sk-test"
    assert fake_api.requests[-1]["model"] == "text-embedding-test"


def test_rate_limit_honours_retry_after(
    fake_api: _FakeEmbeddingsAPI, open_mem: Callable[..., Memory], acme: TenantContext
) -> None:
    emb = OpenAIEmbedder(fake_api.url, "m", dimensions=16)
    mem = open_mem(embedder=emb, config=MemoryConfig(retry_initial_delay=0.0))
    fake_api.script = [(429, {"Retry-After": "0.2"})]
    import time

    start = time.perf_counter()
    out = mem.add(acme, content="after a pause", layer="user", identifiers=U1)
    assert out.embedding_generated and time.perf_counter() - start >= 0.2
    fake_api.script = [(429, {"Retry-After": "0"})] * 3
    with pytest.raises(MemoryError) as err:
        mem.add(acme, content="never gets through", layer="user", identifiers=U1)
    assert err.value.code is ErrorCode.RATE_LIMITED and err.value.retryable
    assert err.value.details["retry_after"] == 0.0


def test_server_errors_are_retried_then_embedding_failed(
    fake_api: _FakeEmbeddingsAPI, open_mem: Callable[..., Memory], acme: TenantContext
) -> None:
    mem = open_mem(
        embedder=OpenAIEmbedder(fake_api.url, "m", dimensions=16), config=MemoryConfig(retry_initial_delay=0.0)
    )
    fake_api.script = [(503, {}), (502, {})]
    assert mem.add(acme, content="third time lucky", layer="user", identifiers=U1).embedding_generated
    fake_api.script = [(500, {})] * 3
    with pytest.raises(MemoryError) as err:
        mem.add(acme, content="down for good", layer="user", identifiers=U1)
    assert err.value.code is ErrorCode.EMBEDDING_FAILED and err.value.retryable
    fake_api.script = [(400, {})]
    with pytest.raises(MemoryError) as err:
        mem.add(acme, content="bad request", layer="user", identifiers=U1)
    assert err.value.code is ErrorCode.EMBEDDING_FAILED and not err.value.retryable
    assert mem.list(acme).total_count == 1  # failures stored nothing


def test_unreachable_endpoint() -> None:
    with pytest.raises(MemoryError) as err:
        OpenAIEmbedder("http://127.0.0.1:9/v1", "m", timeout=1)
    assert err.value.code is ErrorCode.EMBEDDING_FAILED
