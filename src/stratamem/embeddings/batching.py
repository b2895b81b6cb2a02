"""Micro-batching of concurrent single-text embeddings (query embeddings of concurrent searches).

Each search embeds one text. When several requests arrive together, running the model once on all
of them is cheaper than one run each (the model's batched throughput is several times its
one-at-a-time rate), so a server shares the model through :class:`MicroBatchingEmbedder`: callers
queue their text and wait; one worker thread takes the first queued text plus every text queued
while the previous batch ran (up to ``max_batch``), embeds them in one call and hands each caller
its row. Without concurrency a batch holds one text and the cost is one thread hand-off.
Multi-text calls (bulk adds) are already batched and go straight to the wrapped embedder. Queries
(:meth:`~.base.Embedder.embed_queries`) and stored contents (``embed``) queue together; a batch runs
each kind through its own method of the wrapped embedder.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field

import numpy as np

from .base import Embedder, Matrix, Vector
from .metrics import QUERY_BATCH_SIZE


@dataclass
class _Request:
    text: str
    #: A search query (``embed_queries``) rather than a content to store (``embed``).
    query: bool = False
    future: Future[Vector] = field(default_factory=Future)


_STOP = object()


class MicroBatchingEmbedder(Embedder):
    """Wraps an embedder; concurrent single-text calls share one model run. Thread-safe."""

    def __init__(self, inner: Embedder, *, max_batch: int = 32, max_wait_s: float = 0.0) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dimensions = inner.dimensions
        self.max_query_chars = inner.max_query_chars
        self.max_batch = max_batch
        #: How long the worker waits for more texts after the first; 0 takes only what is already queued.
        self.max_wait_s = max_wait_s
        self._queue: queue.SimpleQueue[_Request | object] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._worker: threading.Thread | None = None
        self._closed = False
        #: Model calls made by the worker and texts they embedded (texts / batches = mean batch size).
        self.batches = 0
        self.batched_texts = 0

    def embed(self, texts: Sequence[str]) -> Matrix:
        if len(texts) != 1:
            return self.inner.embed(texts)
        return self._queued(_Request(texts[0]))

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        if len(texts) != 1:
            return self.inner.embed_queries(texts)
        return self._queued(_Request(texts[0], query=True))

    def _queued(self, request: _Request) -> Matrix:
        """Queue one text for the worker and wait for its row."""
        self._ensure_worker()
        self._queue.put(request)
        vector = request.future.result()
        out: Matrix = vector.reshape(1, -1)
        return out

    def warm_up(self) -> None:
        self.inner.warm_up()

    def close(self) -> None:
        with self._lock:
            worker, self._worker, self._closed = self._worker, None, True
        if worker is not None:
            self._queue.put(_STOP)
            worker.join(timeout=30)
        while True:  # a text queued after the stop: its caller gets an error instead of waiting forever
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if isinstance(item, _Request):
                item.future.set_exception(RuntimeError("the embedder is closed"))
        self.inner.close()

    def _ensure_worker(self) -> None:
        if self._worker is not None:
            return
        with self._lock:
            if self._closed:
                raise RuntimeError("the embedder is closed")
            if self._worker is None:
                self._worker = threading.Thread(target=self._run, name="stratamem-embed-batcher", daemon=True)
                self._worker.start()

    def _collect(self, first: _Request) -> tuple[list[_Request], bool]:
        """``first`` plus what is queued (waiting up to ``max_wait_s``); True when a stop was read."""
        batch = [first]
        deadline = time.monotonic() + self.max_wait_s
        while len(batch) < self.max_batch:
            try:
                remaining = deadline - time.monotonic()
                item = self._queue.get(timeout=remaining) if remaining > 0 else self._queue.get_nowait()
            except queue.Empty:
                break
            if item is _STOP:
                return batch, True
            assert isinstance(item, _Request)
            batch.append(item)
        return batch, False

    def _run(self) -> None:
        stop = False
        while not stop:
            item = self._queue.get()
            if item is _STOP:
                break
            assert isinstance(item, _Request)
            batch, stop = self._collect(item)
            for query in (True, False):
                self._embed_batch([r for r in batch if r.query == query], query)

    def _embed_batch(self, batch: list[_Request], query: bool) -> None:
        """One model call for the texts of ``batch`` (all of one kind); each caller gets its row or the error."""
        if not batch:
            return
        # The same text asked by several callers is embedded once.
        unique = list(dict.fromkeys(r.text for r in batch))
        try:
            matrix = self.inner.embed_queries(unique) if query else self.inner.embed(unique)
        except BaseException as exc:  # every waiting caller gets the model's error
            for request in batch:
                request.future.set_exception(exc)
            return
        self.batches += 1
        self.batched_texts += len(unique)
        QUERY_BATCH_SIZE.observe(len(unique))
        rows = {text: np.array(matrix[i], dtype=np.float32) for i, text in enumerate(unique)}
        for request in batch:
            request.future.set_result(rows[request.text].copy())
