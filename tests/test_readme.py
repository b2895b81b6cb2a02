"""The README's Python and CLI examples run as written (with the default offline embedder)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README, flags=re.S)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "STRATAMEM_EMBEDDER"}
    env["PYTHONPATH"] = str(ROOT / "src")
    return env


@pytest.mark.model
def test_python_example_runs(tmp_path: Path) -> None:
    code = next(b for b in _blocks("python") if "Memory.open" in b)
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, env=_env(), timeout=300
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].endswith(" True")
    assert lines[1].endswith("user: User prefers dark mode")
    assert lines[2] == "1 ['user', 'project']"
    assert lines[-1] == "MISSING_IDENTIFIER sessionId"


@pytest.mark.model
def test_cli_example_runs(tmp_path: Path) -> None:
    block = next(b for b in _blocks("bash") if b.lstrip().startswith("stratamem add"))
    outputs = []
    for line in block.splitlines():
        cmd = line.split("#", 1)[0].strip()
        if not cmd:
            continue
        # the README quotes only whole arguments, so a simple split on quotes/whitespace is exact
        parts = re.findall(r'"[^"]*"|\S+', cmd)[1:]
        args = [p.strip('"') for p in parts]
        out = subprocess.run(
            [sys.executable, "-m", "stratamem", *args],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env={**_env(), "COLUMNS": "200"},
            timeout=300,
        )
        assert out.returncode == 0, (cmd, out.stderr)
        outputs.append(out.stdout)
    assert "PostgreSQL 16" in outputs[1]  # the search found the memory
    assert (tmp_path / "data" / "acme.jsonl").exists() and (tmp_path / "data" / "copy.duckdb").exists()


def test_readme_stays_short_and_its_links_resolve() -> None:
    """The README is for users (install, examples, links); the rest lives in docs/."""
    assert len(README.splitlines()) < 350
    for target in re.findall(r"\]\(((?:docs|benchmarks)/[^)#]+)", README):
        assert (ROOT / target).exists(), target
