"""examples/: each agent runs as written with its real framework package, offline, and prints what a
working memory makes it print."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import need

ROOT = Path(__file__).resolve().parents[2]
EXPECTED = {
    "langgraph_agent": ("langgraph", "langgraph", ["Noted.", "From memory: my cat is called Miso"]),
    "openai_agents_agent": ("agents", "openai-agents", ["I can see 1 user turn(s).", "I can see 2 user turn(s)."]),
    "autogen_agent": ("autogen_core", "autogen", None),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_runs(name: str, tmp_path: Path) -> None:
    module, extra, lines = EXPECTED[name]
    need(module, extra)
    env = {k: v for k, v in os.environ.items() if k != "STRATAMEM_EMBEDDER"} | {"PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / f"{name}.py"), str(tmp_path / "store.duckdb")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    printed = out.stdout.strip().splitlines()
    if lines is not None:
        assert printed == lines
    else:  # the system message with the memories comes after the user's question, the relevant one first
        assert (
            printed[0].startswith("UserMessage: ")
            and printed[1] == "SystemMessage: Memories (hints that may be stale):"
        )
        assert printed[2].startswith("- [user] User prefers answers in TypeScript (")
