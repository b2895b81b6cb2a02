"""MCP tools worth a model's time: one naming scheme, tool annotations, plain descriptions, integer
limits, errors that start with the code (structured too). A real ClientSession over stdio."""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path
from typing import Any

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from stratamem.mcp.server import DEPRECATED_TOOLS

from .conftest import cli_env
from .test_mcp import _data, _error_text

PRIMARY = {
    "searchMemory",
    "listMemory",
    "createMemory",
    "updateMemory",
    "deleteMemory",
    "remember",
    "forget",
    "promoteMemory",
    "closeSession",
}
#: words of the implementation that mean nothing to a model
JARGON = re.compile(r"\b(seed|gate|skill|layer|tenant|importance|embedding|etag|PII)\b", re.IGNORECASE)


def _params(db: Path, **env: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "stratamem",
            "mcp",
            "--db",
            str(db),
            "--tenant",
            "acme",
            "--user-id",
            "alice",
            "--session-id",
            "s1",
            "--project-id",
            "p1",
            "--layer",
            "user",
        ],
        env={**cli_env(), **env},
    )


async def _check(session: ClientSession) -> None:
    await session.initialize()
    tools = {t.name: t for t in (await session.list_tools()).tools}
    assert set(tools) == PRIMARY | set(DEPRECATED_TOOLS)
    for name, tool in tools.items():
        a = tool.annotations
        assert a is not None and a.read_only_hint is not None and a.destructive_hint is not None, name
        assert a.idempotent_hint is not None and a.open_world_hint is False, name
        if name in PRIMARY:
            assert re.fullmatch(r"[a-z]+([A-Z][a-z]+)*", name), name
            assert tool.description and not JARGON.search(tool.description), (name, tool.description)
            for prop, schema in tool.input_schema["properties"].items():
                assert re.fullmatch(r"[a-z]+([A-Z][a-z]+)*", prop), (name, prop)
                assert "description" in schema, (name, prop)
        else:
            assert tool.description and tool.description.startswith("Deprecated: use "), name
    for name in ("searchMemory", "listMemory"):
        assert tools[name].annotations.read_only_hint is True  # type: ignore[union-attr]
        assert tools[name].input_schema["properties"]["limit"]["type"] == "integer"
    for name in ("deleteMemory", "forget", "closeSession"):
        assert tools[name].annotations.destructive_hint is True  # type: ignore[union-attr]
    assert tools["createMemory"].annotations.destructive_hint is False  # type: ignore[union-attr]

    first = _data(await session.call_tool("createMemory", {"content": "Prefers dark mode", "category": "preference"}))
    await session.call_tool("createMemory", {"content": "Lives in Lisbon", "category": "fact"})
    listed = _data(await session.call_tool("listMemory", {}))
    assert [m["content"] for m in listed["memories"]] == ["Lives in Lisbon", "Prefers dark mode"]  # newest first
    older = _data(await session.call_tool("listMemory", {"order": "oldest", "tags": ["none"], "tagsMatch": "all"}))
    assert older["memories"] == []
    window = _data(await session.call_tool("searchMemory", {"query": "Lisbon", "since": "2999-01-01T00:00:00Z"}))
    assert window["results"] == []
    oldest = _data(await session.call_tool("listMemory", {"order": "oldest"}))
    assert [m["content"] for m in oldest["memories"]] == ["Prefers dark mode", "Lives in Lisbon"]
    promoted = _data(await session.call_tool("promoteMemory", {"id": first["id"], "targetLayer": "project"}))
    assert promoted["promotedFromId"] == first["id"]

    missing = await session.call_tool("updateMemory", {"id": "no-such-id", "content": "x"})
    assert _error_text(missing).startswith("MEMORY_NOT_FOUND: ")
    assert missing.structured_content is not None and missing.structured_content["code"] == "MEMORY_NOT_FOUND"
    assert missing.structured_content["retryable"] is False
    for bad in ({"query": "x", "limit": 2.5}, {"query": "x", "limit": 500}):
        text = _error_text(await session.call_tool("searchMemory", bad))
        assert text.startswith("INVALID_PARAMS: limit"), text
    wrong = _error_text(await session.call_tool("createMemory", {"content": "x", "category": "gossip"}))
    assert wrong.startswith("INVALID_PARAMS: category"), wrong
    closed = _data(await session.call_tool("closeSession", {"sessionId": "s1"}))
    assert "evaluated" in closed


def test_tool_names_annotations_and_errors(tmp_path: Path) -> None:
    async def main() -> None:
        async with (
            stdio_client(_params(tmp_path / "naming.duckdb")) as (read, write),
            ClientSession(read, write) as session,
        ):
            await _check(session)

    asyncio.run(asyncio.wait_for(main(), 180))


def test_deprecated_names_can_be_hidden(tmp_path: Path) -> None:
    async def main() -> set[str]:
        params = _params(tmp_path / "hidden.duckdb", STRATAMEM_MCP_LEGACY_TOOLS="0")
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return {t.name for t in (await session.list_tools()).tools}

    names: Any = asyncio.run(asyncio.wait_for(main(), 180))
    assert names == PRIMARY
