"""OpenAI-compatible HTTP embedder (OpenAI, Ollama, vLLM, TEI …): ``POST {base_url}/embeddings``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np

from ..errors import ErrorCode, MemoryError, RateLimitedError
from .base import Embedder, Matrix, normalize_rows


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


class OpenAIEmbedder(Embedder):
    """Talks the ``/v1/embeddings`` API. ``dimensions`` is probed once when not given."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        dimensions: int | None = None,
        timeout: float = 30.0,
        batch_size: int = 128,
        max_query_chars: int = 8192,
    ) -> None:
        self._base_url = base_url.rstrip("/")
        self._model = model
        self._batch_size = batch_size
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(timeout=timeout, headers=headers)
        self.model_id = f"openai-compatible/{model}"
        self.max_query_chars = max_query_chars
        self._dimensions = dimensions
        # The store needs the dimension when it opens: ask the endpoint once when not configured.
        self.dimensions = dimensions if dimensions is not None else int(self._request(["dimension probe"]).shape[1])
        self._dimensions = self.dimensions

    def _request(self, texts: list[str]) -> Matrix:
        try:
            response = self._client.post(f"{self._base_url}/embeddings", json={"model": self._model, "input": texts})
        except httpx.HTTPError as exc:
            raise MemoryError(
                ErrorCode.EMBEDDING_FAILED,
                f"embedding endpoint unreachable: {type(exc).__name__}",
                operation="embed",
                retryable=True,
            ) from exc
        if response.status_code == 429:
            raise RateLimitedError("embedding endpoint rate limited the request", _retry_after(response))
        if response.status_code >= 500:
            raise MemoryError(
                ErrorCode.EMBEDDING_FAILED,
                f"embedding endpoint answered HTTP {response.status_code}",
                operation="embed",
                retryable=True,
            )
        if response.status_code >= 400:
            raise MemoryError(
                ErrorCode.EMBEDDING_FAILED,
                f"embedding endpoint rejected the request: HTTP {response.status_code}",
                operation="embed",
                details={"status": response.status_code},
                retryable=False,
            )
        try:
            payload: Any = response.json()
            rows = sorted(payload["data"], key=lambda item: item.get("index", 0))
            matrix = np.asarray([row["embedding"] for row in rows], dtype=np.float32)
        except (ValueError, KeyError, TypeError) as exc:
            raise MemoryError(
                ErrorCode.EMBEDDING_FAILED, "embedding endpoint returned a malformed body", operation="embed"
            ) from exc
        if matrix.ndim != 2 or matrix.shape[0] != len(texts):
            raise MemoryError(
                ErrorCode.EMBEDDING_FAILED,
                f"embedding endpoint returned {matrix.shape[0] if matrix.ndim else 0} vectors for {len(texts)} inputs",
                operation="embed",
            )
        return normalize_rows(matrix)

    def embed(self, texts: Sequence[str]) -> Matrix:
        parts = [self._request(list(texts[i : i + self._batch_size])) for i in range(0, len(texts), self._batch_size)]
        matrix = np.vstack(parts) if parts else np.zeros((0, self.dimensions), dtype=np.float32)
        if self._dimensions is None:
            self._dimensions = int(matrix.shape[1])
        elif matrix.shape[1] != self._dimensions:
            raise MemoryError(
                ErrorCode.CONFIGURATION_ERROR,
                f"embedding endpoint returned {matrix.shape[1]} dimensions, configured {self._dimensions}",
                operation="embed",
                details={"expected": self._dimensions, "actual": int(matrix.shape[1])},
            )
        return matrix

    def close(self) -> None:
        self._client.close()
