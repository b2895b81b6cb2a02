"""``stratamem models export-onnx``: one-time export of the default model for the ``onnx`` embedder."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..embeddings.onnx import export_onnx
from .common import coded_errors, console


def register(app: typer.Typer) -> None:
    models = typer.Typer(help="Embedding model utilities.", no_args_is_help=True)

    @models.command("export-onnx")
    def export_onnx_cmd(
        out: Annotated[Path | None, typer.Option("--out", "-o", help="target directory (default: the cache "
                                                 "directory the onnx embedder reads, STRATAMEM_ONNX_DIR)")] = None,
        model_path: Annotated[Path | None, typer.Option("--model-path", help="a sentence-transformers model "
                                                        "folder (default: the bundled all-MiniLM-L6-v2)")] = None,
    ) -> None:
        """Export all-MiniLM-L6-v2 to ONNX (needs torch once); then use embedder 'onnx' without torch."""

        with coded_errors():
            target = export_onnx(out, model_path)
        console.print(f"exported ONNX model to {target} (use embedder='onnx' or STRATAMEM_EMBEDDER=onnx"
                      + (f" with STRATAMEM_ONNX_DIR={target})" if out else ")"))

    app.add_typer(models, name="models")
