"""`stratamem mcp` over stdio, driven by the MCP Inspector CLI (npm), a client we did not write.

The Inspector lists the tools, calls `createMemory` and `searchMemory`, and gets the coded error
of a bad call; its installation is `tools/mcp-inspector` (`make install-dev` runs `npm ci`).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import require_service

ROOT = Path(__file__).resolve().parents[2]
INSPECTOR = ROOT / "tools" / "mcp-inspector" / "node_modules" / ".bin" / "mcp-inspector"


def _inspect(db: Path, *args: str) -> Any:
    require_service("MCP Inspector", INSPECTOR.exists(), "run `make install-dev` (npm ci in tools/mcp-inspector)")
    server = [
        sys.executable,
        "-m",
        "stratamem",
        "mcp",
        "--db",
        str(db),
        "--tenant",
        "acme",
        "--user-id",
        "alice",
        "--embedder",
        "hashing",
    ]
    out = subprocess.run(
        [str(INSPECTOR), "--cli", *server, *args], capture_output=True, text=True, timeout=180, check=False
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout)


def test_inspector_lists_calls_and_gets_coded_errors(tmp_path: Path) -> None:
    db = tmp_path / "inspector.duckdb"
    tools = {t["name"]: t for t in _inspect(db, "--method", "tools/list")["tools"]}
    assert {"createMemory", "searchMemory", "listMemory", "updateMemory", "deleteMemory"} <= set(tools)
    assert tools["searchMemory"]["annotations"]["readOnlyHint"] is True
    assert tools["deleteMemory"]["annotations"]["destructiveHint"] is True

    created = _inspect(
        db,
        "--method",
        "tools/call",
        "--tool-name",
        "createMemory",
        "--tool-arg",
        "content=Prefers dark mode in every editor",
        "--tool-arg",
        "category=preference",
    )
    assert created["isError"] is False
    memory_id = created["structuredContent"]["id"]

    found = _inspect(db, "--method", "tools/call", "--tool-name", "searchMemory", "--tool-arg", "query=dark mode")
    assert found["isError"] is False
    assert memory_id in json.dumps(found["structuredContent"])

    missing = _inspect(
        db,
        "--method",
        "tools/call",
        "--tool-name",
        "updateMemory",
        "--tool-arg",
        "id=00000000-0000-0000-0000-000000000000",
        "--tool-arg",
        "content=changed",
    )
    assert missing["isError"] is True
    assert missing["content"][0]["text"].startswith("MEMORY_NOT_FOUND")
