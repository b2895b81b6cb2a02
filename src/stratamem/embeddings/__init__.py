"""Embedders (SPEC R-EMB) and the content-hash cache."""

from __future__ import annotations

import os
from typing import Any

from ..errors import ErrorCode, MemoryError
from .base import Embedder, content_hash, normalize_rows
from .cache import EmbeddingCacheStore, EmbeddingService, SharedEmbeddingCache
from .hashing import HashingEmbedder
from .local import SentenceTransformerEmbedder
from .onnx import OnnxEmbedder

__all__ = [
    "Embedder",
    "EmbeddingCacheStore",
    "EmbeddingService",
    "HashingEmbedder",
    "SharedEmbeddingCache",
    "content_hash",
    "make_embedder",
    "normalize_rows",
]


def make_embedder(spec: str | Embedder | None = None, **options: Any) -> Embedder:
    """Build an embedder from a name.

    ``None`` reads ``STRATAMEM_EMBEDDER`` (default ``local``). Names: ``local`` (all-MiniLM-L6-v2,
    offline), ``onnx[:DIR]`` (the same model on ONNX Runtime, no torch),
    ``hashing`` / ``hashing:DIM``, ``openai`` (``STRATAMEM_EMBEDDING_URL``,
    ``STRATAMEM_EMBEDDING_MODEL``, ``STRATAMEM_EMBEDDING_API_KEY``, ``STRATAMEM_EMBEDDING_DIMENSIONS``).
    """
    if isinstance(spec, Embedder):
        return spec
    name = (spec or os.environ.get("STRATAMEM_EMBEDDER") or "local").strip()
    kind, _, arg = name.partition(":")
    kind = kind.lower()
    if kind == "hashing":
        return HashingEmbedder(int(arg) if arg else int(options.get("dimensions", 384)))
    if kind in ("local", "minilm", "sentence-transformers"):
        return SentenceTransformerEmbedder(arg or options.get("model_path"))
    if kind == "onnx":  # all-MiniLM-L6-v2 on ONNX Runtime (no torch); `stratamem models export-onnx` first
        return OnnxEmbedder(arg or options.get("model_dir") or os.environ.get("STRATAMEM_ONNX_DIR"))
    if kind == "openai":
        from .openai import OpenAIEmbedder  # noqa: PLC0415  httpx, only for the OpenAI-compatible backend (offline runs never load it)

        base_url = options.get("base_url") or os.environ.get("STRATAMEM_EMBEDDING_URL")
        model = options.get("model") or arg or os.environ.get("STRATAMEM_EMBEDDING_MODEL")
        if not base_url or not model:
            raise MemoryError(
                ErrorCode.CONFIGURATION_ERROR,
                "the openai embedder needs a base URL and a model (STRATAMEM_EMBEDDING_URL, "
                "STRATAMEM_EMBEDDING_MODEL)",
            )
        dims = options.get("dimensions") or os.environ.get("STRATAMEM_EMBEDDING_DIMENSIONS")
        return OpenAIEmbedder(
            base_url,
            model,
            api_key=options.get("api_key") or os.environ.get("STRATAMEM_EMBEDDING_API_KEY"),
            dimensions=int(dims) if dims else None,
        )
    raise MemoryError(
        ErrorCode.CONFIGURATION_ERROR,
        f"unknown embedder {name!r}; use local, onnx, hashing[:DIM] or openai",
    )
