"""The README's REST (curl) and MCP examples work as written against a real server."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from .conftest import cli_env, free_port

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _section(title: str) -> str:
    return README.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def _blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S)


def _shim(tmp_path: Path, env: dict[str, str]) -> dict[str, str]:
    """A `stratamem` executable on PATH that runs this tree's package."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "stratamem"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m stratamem "$@"\n')
    shim.chmod(0o755)
    return {**env, "PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"}


@pytest.mark.model
def test_readme_rest_curl_examples(tmp_path: Path) -> None:
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed")
    keys_block, curl_block = _blocks(_section("REST API"), "bash")
    port = free_port()
    env = {k: v for k, v in _shim(tmp_path, cli_env()).items() if k != "STRATAMEM_EMBEDDER"}  # default model
    script = "\n".join(
        [
            "set -e",
            keys_block,
            f"stratamem serve --db data/stratamem.duckdb --port {port} --log-level warning >server.log 2>&1 &",
            "SERVER=$!",
            "trap 'kill $SERVER' EXIT",
            f"for i in $(seq 1 300); do curl -sf http://127.0.0.1:{port}/ready >/dev/null && break; sleep 0.2; done",
            *[
                line if line.startswith("KEY=") else f'echo "$({line.split("   #")[0]})"'
                for line in curl_block.strip().splitlines()
            ],
        ]
    ).replace("127.0.0.1:8080", f"127.0.0.1:{port}")
    out = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr + (tmp_path / "server.log").read_text()
    lines = out.stdout.strip().split("\n")
    added, searched, listed, unauth = lines[:4]
    metrics = "\n".join(lines[4:])
    mid = json.loads(added)["memory"]["id"]
    assert json.loads(searched)["results"][0]["memory"]["id"] == mid
    assert json.loads(listed)["totalCount"] == 1
    assert json.loads(unauth)["code"] == "MISSING_TENANT_CONTEXT"
    assert 'memory_operations_total{op="add"} 1.0' in metrics


def test_readme_mcp_stdio_config(tmp_path: Path) -> None:
    section = _section("MCP server")
    command = _blocks(section, "bash")[0].strip()
    config = json.loads(_blocks(section, "json")[0])["mcpServers"]["stratamem"]
    assert command.split() == [config["command"], *config["args"]]
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "stratamem", *config["args"]], env=cli_env(), cwd=str(tmp_path)
    )

    async def main() -> list[str]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            res = await session.call_tool("createMemory", {"content": "README check", "category": "fact"})
            assert not res.is_error
            return [t.name for t in (await session.list_tools()).tools]

    names = asyncio.run(asyncio.wait_for(main(), 120))
    legacy = {"close_session", "memory_crud", "memory_process", "memory_promote"}  # deprecated aliases
    current = {
        "closeSession",
        "createMemory",
        "deleteMemory",
        "forget",
        "listMemory",
        "promoteMemory",
        "remember",
        "searchMemory",
        "updateMemory",
    }
    assert set(names) == current | legacy
    assert all(f"`{name}`" in section for name in current)  # the README names every current tool
    assert (tmp_path / "data" / "stratamem.duckdb").exists()
