"""Embedders and the content-hash cache."""

from __future__ import annotations

from typing import Any

from ..errors import ErrorCode, MemoryError
from ..settings import Settings
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


def make_embedder(spec: str | Embedder | None = None, *, settings: Settings | None = None, **options: Any) -> Embedder:
    """Build an embedder from a name.

    ``None`` reads ``STRATAMEM_EMBEDDER`` (default ``onnx``). Names: ``onnx[:DIR]`` (all-MiniLM-L6-v2 on
    ONNX Runtime, no torch; offline), ``onnx-int8[:DIR]`` (its int8-quantised build), ``local`` (the same
    model on sentence-transformers and torch),
    ``hashing`` / ``hashing:DIM``, ``openai`` (``STRATAMEM_EMBEDDING_URL``,
    ``STRATAMEM_EMBEDDING_MODEL``, ``STRATAMEM_EMBEDDING_API_KEY``, ``STRATAMEM_EMBEDDING_DIMENSIONS``).
    """
    if isinstance(spec, Embedder):
        return spec
    settings = settings or Settings()
    name = (spec or settings.embedder or "onnx").strip()
    kind, _, arg = name.partition(":")
    kind = kind.lower()
    if kind == "hashing":
        return HashingEmbedder(int(arg) if arg else int(options.get("dimensions", 384)))
    if kind in ("local", "minilm", "sentence-transformers"):
        return SentenceTransformerEmbedder(arg or options.get("model_path"))
    if kind == "onnx":  # all-MiniLM-L6-v2 on ONNX Runtime (no torch); built into the cache on first use
        return OnnxEmbedder(arg or options.get("model_dir"), settings=settings)
    if kind == "onnx-int8":  # the same with int8 weights (another model id: its vectors differ slightly)
        return OnnxEmbedder(arg or options.get("model_dir"), int8=True, settings=settings)
    if kind == "openai":
        from .openai import OpenAIEmbedder  # noqa: PLC0415  httpx, only for the OpenAI-compatible backend (offline runs never load it)

        base_url = options.get("base_url") or settings.embedding_url
        model = options.get("model") or arg or settings.embedding_model
        if not base_url or not model:
            raise MemoryError(
                ErrorCode.CONFIGURATION_ERROR,
                "the openai embedder needs a base URL and a model (STRATAMEM_EMBEDDING_URL, STRATAMEM_EMBEDDING_MODEL)",
            )
        dims = options.get("dimensions") or settings.embedding_dimensions
        return OpenAIEmbedder(
            base_url,
            model,
            api_key=options.get("api_key") or settings.embedding_api_key,
            dimensions=int(dims) if dims else None,
        )
    raise MemoryError(
        ErrorCode.CONFIGURATION_ERROR,
        f"unknown embedder {name!r}; use onnx, local, hashing[:DIM] or openai",
    )
