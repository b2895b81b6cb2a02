"""Micro-batching of concurrent query embeddings: same vectors as unbatched, fewer model calls."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from prometheus_client import REGISTRY

from stratamem.embeddings import Embedder, HashingEmbedder
from stratamem.embeddings.base import Matrix
from stratamem.embeddings.batching import MicroBatchingEmbedder


class _Recording(HashingEmbedder):
    """The hashing embedder, recording each call's batch and taking ``delay`` seconds per call."""

    def __init__(self, delay: float = 0.0, fail_on: str | None = None) -> None:
        super().__init__(384)
        self.delay = delay
        self.fail_on = fail_on
        self.calls: list[list[str]] = []
        self.closed = False
        self._calls_lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> Matrix:
        with self._calls_lock:
            self.calls.append(list(texts))
        time.sleep(self.delay)
        if self.fail_on is not None and self.fail_on in texts:
            raise ValueError(f"cannot embed {self.fail_on!r}")
        return super().embed(texts)

    def close(self) -> None:
        self.closed = True


def _concurrently(embedder: Embedder, texts: list[str], workers: int = 16) -> list[np.ndarray]:
    start = threading.Barrier(workers)

    def one(text: str) -> np.ndarray:
        if len(texts) >= workers:
            with contextlib.suppress(threading.BrokenBarrierError):
                start.wait(timeout=5)
        return embedder.embed([text])[0]

    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(one, texts))


def _histogram(name: str) -> float:
    return REGISTRY.get_sample_value(f"stratamem_embedding_query_batch_size_{name}") or 0.0


def test_concurrent_single_texts_share_model_calls_and_get_their_own_vectors() -> None:
    runs_before, texts_before = _histogram("count"), _histogram("sum")
    inner = _Recording(delay=0.02)
    batching = MicroBatchingEmbedder(inner, max_batch=8)
    texts = [f"query number {i}" for i in range(64)] + ["query number 3"] * 4  # a repeated text
    got = _concurrently(batching, texts)
    reference = HashingEmbedder(384).embed(texts)
    assert np.array_equal(np.vstack(got), reference)
    assert batching.model_id == inner.model_id and batching.dimensions == 384
    sizes = [len(c) for c in inner.calls]
    assert max(sizes) <= 8 and max(sizes) > 1  # batches formed, never larger than max_batch
    assert len(inner.calls) < len(texts)
    assert batching.batched_texts == sum(sizes) and batching.batches == len(inner.calls)
    assert all(len(set(c)) == len(c) for c in inner.calls)  # a text is embedded once per batch
    assert _histogram("count") - runs_before == len(inner.calls)  # exported on /metrics
    assert _histogram("sum") - texts_before == sum(sizes)
    batching.close()
    assert inner.closed


def test_one_caller_at_a_time_is_one_text_per_call() -> None:
    inner = _Recording()
    batching = MicroBatchingEmbedder(inner)
    for i in range(5):
        assert np.array_equal(batching.embed_one(f"t{i}"), HashingEmbedder(384).embed_one(f"t{i}"))
    assert inner.calls == [[f"t{i}"] for i in range(5)]
    batching.close()


def test_multi_text_calls_go_straight_to_the_model() -> None:
    inner = _Recording()
    batching = MicroBatchingEmbedder(inner)
    out = batching.embed(["a", "b", "c"])
    assert np.array_equal(out, HashingEmbedder(384).embed(["a", "b", "c"]))
    assert inner.calls == [["a", "b", "c"]] and batching.batches == 0
    assert batching.embed([]).shape == (0, 384)


def test_a_model_error_reaches_every_caller_of_the_batch_and_the_worker_goes_on() -> None:
    inner = _Recording(delay=0.02, fail_on="bad")
    batching = MicroBatchingEmbedder(inner)
    with pytest.raises(ValueError, match="bad"):
        batching.embed(["bad"])
    assert np.array_equal(batching.embed_one("good"), HashingEmbedder(384).embed_one("good"))
    batching.close()


def test_closed_embedder_refuses_new_texts() -> None:
    batching = MicroBatchingEmbedder(_Recording())
    batching.embed_one("x")
    batching.close()
    with pytest.raises(RuntimeError, match="closed"):
        batching.embed_one("y")


@pytest.mark.model
def test_batched_onnx_vectors_equal_unbatched(minilm: Embedder) -> None:
    texts = [f"what did Caroline say about topic {i}?" for i in range(24)]
    batching = MicroBatchingEmbedder(minilm, max_batch=8)
    got = np.vstack(_concurrently(batching, texts, workers=8))
    alone = np.vstack([minilm.embed([t]) for t in texts])
    assert float(np.abs(got - alone).max()) < 1e-5
    assert 0 < batching.batches <= len(texts)
