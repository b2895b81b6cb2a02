"""The (README-linked) docs page's "Hygiene and governance" examples run as written (default offline embedder)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "hygiene.md").read_text(encoding="utf-8")
SECTION = DOC.split("## Hygiene and governance", 1)[1].split("\n## ", 1)[0]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("STRATAMEM_EMBEDDER", "STRATAMEM_LLM_URL")}
    env["PYTHONPATH"] = str(ROOT / "src")
    env["COLUMNS"] = "200"
    return env


@pytest.mark.model
def test_hygiene_python_example(tmp_path: Path) -> None:
    (code,) = re.findall(r"```python\n(.*?)```", SECTION, flags=re.S)
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, env=_env(), timeout=300
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "created",
        "updated",
        "emotional state",
        "User's dog's name is Rex",
        "1",
        "Ping me at [REDACTED_EMAIL]",
        "UNSAFE_CONTENT",
        "{'inferred': 1, 'explicit': 0, 'other': 1}",
    ]


@pytest.mark.model
def test_hygiene_cli_example(tmp_path: Path) -> None:
    (block,) = re.findall(r"```bash\n(.*?)```", SECTION, flags=re.S)
    outputs = []
    for line in block.strip().splitlines():
        args = [p.strip('"') for p in re.findall(r'"[^"]*"|\S+', line)[1:]]
        out = subprocess.run(
            [sys.executable, "-m", "stratamem", *args],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env=_env(),
            timeout=300,
        )
        assert out.returncode == 0, (line, out.stderr)
        outputs.append(out.stdout)
    assert "project x" in outputs[1] and outputs[2].startswith("created")
    assert "deleted count=1" in outputs[3] and "total memories" in outputs[4]
