"""The ONNX Runtime embedder: same vectors as sentence-transformers, no torch at run time."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from stratamem import Memory, MemoryError, TenantContext
from stratamem.embeddings import Embedder, make_embedder
from stratamem.embeddings.onnx import OnnxEmbedder

pytestmark = pytest.mark.model
SRC = str(Path(__file__).resolve().parents[2] / "src")
TEXTS = [
    "User prefers dark mode",
    "what color theme does the user like",
    "x",
    "Grüße aus München, 2023 — naïve café ☕",
    "Caroline: I went to a LGBTQ support group yesterday and it was so powerful. " * 40,  # > 256 tokens
]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}


@pytest.fixture(scope="session")
def onnx_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Exported once per session through the real CLI command."""
    out = tmp_path_factory.mktemp("onnx") / "all-MiniLM-L6-v2"
    proc = subprocess.run([sys.executable, "-m", "stratamem", "models", "export-onnx", "--out", str(out)],
                          capture_output=True, text=True, env=_env(), timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "exported ONNX model" in proc.stdout
    assert (out / "model.onnx").exists() and (out / "tokenizer.json").exists()
    return out


def test_matches_sentence_transformers(onnx_dir: Path, minilm: Embedder) -> None:
    onnx = make_embedder(f"onnx:{onnx_dir}")
    assert isinstance(onnx, OnnxEmbedder)
    assert onnx.model_id == minilm.model_id and onnx.dimensions == minilm.dimensions == 384
    a, b = onnx.embed(TEXTS), minilm.embed(TEXTS)
    assert a.shape == b.shape == (len(TEXTS), 384)
    assert float(np.abs(a - b).max()) < 1e-5
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    # batching and order do not change a vector
    single = np.vstack([onnx.embed([t]) for t in reversed(TEXTS)])[::-1]
    assert float(np.abs(single - a).max()) < 1e-5
    assert onnx.embed([]).shape == (0, 384)


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


def test_runtime_does_not_import_torch(onnx_dir: Path) -> None:
    code = (
        "import sys\n"
        "from stratamem import Memory, TenantContext\n"
        f"mem = Memory.open('memory://', embedder='onnx:{onnx_dir}')\n"
        "t = TenantContext(tenant_id='a', principal='p')\n"
        "mem.bulk_add(t, [{'content': f'note {i}', 'layer': 'user', 'identifiers': {'user_id': 'u'}} "
        "for i in range(5)])\n"
        "res = mem.search(t, 'note 3', identifiers={'user_id': 'u'})\n"
        "assert res.results and res.results[0].memory.content == 'note 3', res\n"
        "assert 'torch' not in sys.modules and 'sentence_transformers' not in sys.modules\n"
        "print('ok')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(), timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]


def test_store_built_with_local_opens_with_onnx(onnx_dir: Path, minilm: Embedder, tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    t = TenantContext(tenant_id="acme", principal="u1")
    with Memory.open(path, embedder=minilm) as mem:
        mem.add(t, content="User prefers dark mode", layer="user", identifiers={"user_id": "u1"})
    with Memory.open(path, embedder=f"onnx:{onnx_dir}") as mem:
        res = mem.search(t, "what color theme does the user like", identifiers={"user_id": "u1"})
        assert [r.memory.content for r in res.results] == ["User prefers dark mode"]


def test_missing_export_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(MemoryError) as err:
        make_embedder(f"onnx:{tmp_path / 'nothing'}")
    assert err.value.code.value == "CONFIGURATION_ERROR"
    assert "export-onnx" in err.value.message
