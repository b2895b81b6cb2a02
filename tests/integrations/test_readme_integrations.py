"""The README's Integrations snippets run as written, with the real framework packages."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from stratamem.agent.loop import CONTEXT_HEADER

from .conftest import need

ROOT = Path(__file__).resolve().parents[2]


def _snippets() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Integrations\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


@pytest.mark.parametrize("framework", ["langgraph", "autogen", "openai_agents"])
def test_snippet_runs(framework: str, tmp_path: Path) -> None:
    module, extra = {
        "langgraph": ("langgraph", "langgraph"),
        "autogen": ("autogen_core", "autogen"),
        "openai_agents": ("agents", "openai-agents"),
    }[framework]
    need(module, extra)
    code = next(s for s in _snippets() if f"integrations.{framework}" in s)
    env = {k: v for k, v in os.environ.items() if k != "STRATAMEM_EMBEDDER"} | {"PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300
    )
    assert out.returncode == 0, out.stderr
    if framework == "langgraph":
        assert out.stdout.splitlines() == ["{'content': 'Alice loves pizza'}", "[('memories', 'alice')]"]
    elif framework == "openai_agents":
        assert out.stdout.strip() == "[{'role': 'user', 'content': 'My cat is called Miso'}]"
    else:
        lines = out.stdout.strip().splitlines()
        assert lines[0] == CONTEXT_HEADER
        assert re.fullmatch(r"- \[user\] User prefers answers in TypeScript \(\d{4}-\d{2}-\d{2}\)", lines[1]), lines
