"""Fast offline embedder: all-MiniLM-L6-v2 on ONNX Runtime + Hugging Face ``tokenizers``; no torch.

``stratamem models export-onnx`` runs once where torch is installed (the ``local`` extra): it exports
the transformer of the bundled sentence-transformers model to ``model.onnx`` in a cache directory
and copies its ``tokenizer.json`` beside it. At run time only ``onnxruntime``, ``tokenizers`` and
numpy are used: tokenise (truncate to the model's 256 tokens, pad per batch), run the graph, mean-pool
over the attention mask and L2-normalise — the same pipeline as sentence-transformers, so vectors
agree to < 1e-5 and a store built with ``local`` can be opened with ``onnx`` (same ``model_id``).

Cache directory: ``STRATAMEM_ONNX_DIR``, else ``$XDG_CACHE_HOME/stratamem/onnx/all-MiniLM-L6-v2``
(``~/.cache/...``).
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ErrorCode, MemoryError
from .base import Embedder, Matrix, normalize_rows
from .local import DEFAULT_MODEL_NAME, bundled_model_path

MANIFEST = "stratamem_onnx.json"


def default_onnx_dir() -> Path:
    env = os.environ.get("STRATAMEM_ONNX_DIR")
    if env:
        return Path(env)
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "stratamem" / "onnx" / DEFAULT_MODEL_NAME


def export_onnx(out_dir: str | Path | None = None, model_path: str | Path | None = None, *,
                opset: int = 17) -> Path:
    """Export the sentence-transformers model to ``out_dir/model.onnx`` (needs torch); returns the dir."""
    try:
        import torch  # noqa: PLC0415  local extra (torch), export only
        from transformers import AutoModel  # noqa: PLC0415  local extra (transformers), export only
    except ImportError as exc:
        raise MemoryError(ErrorCode.CONFIGURATION_ERROR,
                          "exporting to ONNX needs torch and transformers: pip install 'stratamem[local]'",
                          operation="export-onnx") from exc
    src = Path(model_path) if model_path else bundled_model_path()
    out = Path(out_dir) if out_dir else default_onnx_dir()
    out.mkdir(parents=True, exist_ok=True)
    st_config = json.loads((src / "sentence_bert_config.json").read_text()) \
        if (src / "sentence_bert_config.json").exists() else {}
    max_len = int(st_config.get("max_seq_length", 256))
    model = AutoModel.from_pretrained(str(src))
    model.eval()
    dims = int(model.config.hidden_size)
    sample = {
        "input_ids": torch.ones((2, 8), dtype=torch.long),
        "attention_mask": torch.ones((2, 8), dtype=torch.long),
        "token_type_ids": torch.zeros((2, 8), dtype=torch.long),
    }

    class _Encoder(torch.nn.Module):
        """Keyword call of the transformer, returning only ``last_hidden_state``."""

        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.inner(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state

    tmp = out / "model.onnx.tmp"
    with torch.no_grad():
        torch.onnx.export(
            _Encoder(model),
            (sample["input_ids"], sample["attention_mask"], sample["token_type_ids"]),
            str(tmp),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["last_hidden_state"],
            dynamic_axes={name: {0: "batch", 1: "sequence"} for name in sample}
            | {"last_hidden_state": {0: "batch", 1: "sequence"}},
            opset_version=opset,
            dynamo=False,
        )
    os.replace(tmp, out / "model.onnx")
    shutil.copyfile(src / "tokenizer.json", out / "tokenizer.json")
    manifest = {"model_id": f"sentence-transformers/{src.name if model_path else DEFAULT_MODEL_NAME}",
                "dimensions": dims, "max_seq_length": max_len, "pooling": "mean", "normalize": True}
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2))
    return out


class OnnxEmbedder(Embedder):
    """all-MiniLM-L6-v2 on ONNX Runtime. Loads lazily; thread-safe; length-sorted batches."""

    def __init__(self, model_dir: str | Path | None = None, *, batch_size: int = 64,
                 threads: int | None = None, spinning: bool = False, fast_queries: bool = True) -> None:
        self._dir = Path(model_dir) if model_dir else default_onnx_dir()
        self._batch_size = batch_size
        self._threads = threads
        #: ONNX Runtime's worker threads busy-wait after each run unless told not to; on a small
        #: machine they then take the cores the search and the store need right after the query
        #: embedding (measured on 2 cores: a search's store work and index search ~2.5x slower).
        #: Not spinning also lets the engine prepare a batch's rows on the idle cycles of its embedding.
        self._spinning = spinning
        #: Single texts (queries) run on a second session whose workers spin during the run and stop
        #: when it returns (``session.force_spinning_stop``): no thread wake-ups between operators.
        #: Measured on 2 cores: a query embedding 3.1 -> 2.1 ms alone, 4.6 -> 3.6 ms inside a search;
        #: the cost is a second copy of the model in memory (~90 MB) once a single text was embedded.
        self._fast_queries = fast_queries
        self._lock = threading.Lock()
        self._session: Any = None
        self._query_session: Any = None
        self._tokenizer: Any = None
        manifest = self._manifest()
        self.model_id = str(manifest["model_id"])
        self.dimensions = int(manifest["dimensions"])
        self._max_len = int(manifest.get("max_seq_length", 256))
        self.max_query_chars = 2048

    def _manifest(self) -> dict[str, Any]:
        path = self._dir / MANIFEST
        if not path.exists() or not (self._dir / "model.onnx").exists():
            raise MemoryError(
                ErrorCode.CONFIGURATION_ERROR,
                f"no exported ONNX model in {self._dir}; run `stratamem models export-onnx` once (needs the "
                "'local' extra with torch), or set STRATAMEM_ONNX_DIR",
                operation="embed", details={"path": str(self._dir)},
            )
        data: dict[str, Any] = json.loads(path.read_text())
        return data

    def _load(self) -> tuple[Any, Any]:
        with self._lock:
            if self._session is None:
                try:
                    import onnxruntime as ort  # noqa: PLC0415  onnx extra
                    from tokenizers import Tokenizer  # noqa: PLC0415  onnx extra
                except ImportError as exc:
                    raise MemoryError(ErrorCode.CONFIGURATION_ERROR,
                                      "the onnx embedder needs the 'onnx' extra: pip install 'stratamem[onnx]'",
                                      operation="embed") from exc
                tokenizer = Tokenizer.from_file(str(self._dir / "tokenizer.json"))
                tokenizer.enable_truncation(max_length=self._max_len)
                tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
                config = {} if self._spinning else {"session.intra_op.allow_spinning": "0",
                                                    "session.inter_op.allow_spinning": "0"}
                self._session = self._new_session(ort, config)
                self._tokenizer = tokenizer
            return self._session, self._tokenizer

    def _load_query_session(self) -> Any:
        """The single-text session (``fast_queries``), created on first use."""
        self._load()
        with self._lock:
            if self._query_session is None:
                import onnxruntime as ort  # noqa: PLC0415  onnx extra

                self._query_session = self._new_session(
                    ort, {"session.intra_op.allow_spinning": "1", "session.force_spinning_stop": "1"})
            return self._query_session

    def _new_session(self, ort: Any, config: dict[str, str]) -> Any:
        options = ort.SessionOptions()
        if self._threads:
            options.intra_op_num_threads = self._threads
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        for key, value in config.items():
            options.add_session_config_entry(key, value)
        return ort.InferenceSession(str(self._dir / "model.onnx"), options, providers=["CPUExecutionProvider"])

    def _run(self, session: Any, tokenizer: Any, texts: list[str]) -> Matrix:
        encodings = tokenizer.encode_batch(texts)
        ids = np.asarray([e.ids for e in encodings], dtype=np.int64)
        mask = np.asarray([e.attention_mask for e in encodings], dtype=np.int64)
        types = np.asarray([e.type_ids for e in encodings], dtype=np.int64)
        hidden = session.run(["last_hidden_state"],
                             {"input_ids": ids, "attention_mask": mask, "token_type_ids": types})[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return normalize_rows(pooled)

    def embed(self, texts: Sequence[str]) -> Matrix:
        session, tokenizer = self._load()
        items = list(texts)
        if not items:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        if len(items) == 1 and self._fast_queries:
            return self._run(self._load_query_session(), tokenizer, items)
        # Sort by length so each batch pads to similar lengths (as sentence-transformers does).
        order = sorted(range(len(items)), key=lambda i: -len(items[i]))
        out = np.zeros((len(items), self.dimensions), dtype=np.float32)
        for start in range(0, len(order), self._batch_size):
            idx = order[start : start + self._batch_size]
            out[idx] = self._run(session, tokenizer, [items[i] for i in idx])
        return out
