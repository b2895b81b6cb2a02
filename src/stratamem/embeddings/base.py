"""Embedder protocol: text in, L2-normalised float32 vectors out."""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

Vector = npt.NDArray[np.float32]
Matrix = npt.NDArray[np.float32]


def content_hash(text: str) -> str:
    """The content hash used for embedding caching and duplicate detection."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def normalize_rows(matrix: npt.ArrayLike) -> Matrix:
    arr = np.asarray(matrix, dtype=np.float32)
    if arr.ndim == 1:
        arr = arr.reshape(1, -1)
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out: Matrix = (arr / norms).astype(np.float32, copy=False)
    return out


class Embedder(ABC):
    """A text embedding model.

    ``model_id`` names the model and its version; a store remembers it and refuses to be opened
    with a different one (vectors of two models are not comparable).
    """

    model_id: str
    dimensions: int
    #: Longest query text accepted (characters); longer queries get QUERY_TOO_LONG.
    max_query_chars: int = 2048

    @abstractmethod
    def embed(self, texts: Sequence[str]) -> Matrix:
        """Embed a batch; returns an (n, dimensions) array of unit vectors."""

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        """Embed search queries; by default as :meth:`embed` does.

        An embedder may run queries on a faster approximation of its model whose vectors stay close
        enough to :meth:`embed`'s to rank the same memories (:class:`~.onnx.OnnxEmbedder`: int8
        weights). Stored memories are always embedded by :meth:`embed`.
        """
        return self.embed(texts)

    def embed_one(self, text: str) -> Vector:
        row: Vector = self.embed([text])[0]
        return row

    def warm_up(self) -> None:
        """Load the model and run it once, so the first real request does not pay for either."""
        self.embed_one("warm-up")

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources (HTTP clients, models)."""
