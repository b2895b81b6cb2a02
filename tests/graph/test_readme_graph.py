"""The (README-linked) docs page's knowledge-graph example runs as written and prints what the README says."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "docs" / "knowledge-graph.md").read_text(encoding="utf-8")


def test_graph_example(tmp_path: Path) -> None:
    section = README.split("## Knowledge graph", 1)[1]
    code = re.search(r"```py\n(.*?)```", section, flags=re.S)
    expected = re.search(r"```text\n(.*?)```", section, flags=re.S)
    assert code and expected
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run(
        [sys.executable, "-c", code.group(1)], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout == expected.group(1)
