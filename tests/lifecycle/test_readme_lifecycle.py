"""The (README-linked) docs page's Lifecycle example runs as written and prints what its comments say."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_lifecycle_example_runs(tmp_path: Path) -> None:
    readme = (ROOT / "docs" / "lifecycle.md").read_text(encoding="utf-8")
    (code,) = [b for b in re.findall(r"```python\n(.*?)```", readme, flags=re.S) if "close_session" in b]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 0, out.stderr
    expected = [
        line.split("# ", 1)[1].strip() for line in code.splitlines() if line.startswith("print(") and "# " in line
    ]
    assert out.stdout.splitlines() == expected
