"""MCP: a real ClientSession over stdio against `stratamem mcp`, and over streamable HTTP against
`stratamem serve` (tenant and identifiers from the API key)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp import ClientSession
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from stratamem import Memory, TenantContext

from .conftest import LiveServer, alice_mcp, cli_key

CATEGORIES = ["preference", "fact", "context", "instruction"]
SEED_TOOLS = {"createMemory", "searchMemory", "updateMemory", "deleteMemory", "listMemory"}
#: remember/forget (seed 003) and lifecycle; the deprecated aliases are listed too (tests/server/test_mcp_tools.py)
EXTRA_TOOLS = {
    "remember",
    "forget",
    "promoteMemory",
    "closeSession",
    "memory_crud",
    "memory_process",
    "memory_promote",
    "close_session",
}


def _data(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        return dict(result.structured_content)
    return dict(json.loads(result.content[0].text))


def _error_text(result: Any) -> str:
    assert result.is_error
    return str(result.content[0].text)


def check_seed_schemas(tools: list[Any]) -> None:
    every = {t.name: t.input_schema for t in tools}
    assert set(every) == SEED_TOOLS | EXTRA_TOOLS
    by_name = {name: schema for name, schema in every.items() if name in SEED_TOOLS}
    create = by_name["createMemory"]
    assert set(create["required"]) == {"content", "category"}
    assert create["properties"]["content"]["type"] == "string"
    assert set(create["properties"]) == {"content", "category", "tags"}
    search = by_name["searchMemory"]
    # the seed's input schema, plus two optional history arguments (current facts are the default)
    assert search["required"] == ["query"]
    assert set(search["properties"]) == {
        "query",
        "limit",
        "category",
        "includeSuperseded",
        "asOf",
        "since",
        "until",
        "tags",
        "tagsMatch",
    }
    assert search["properties"]["limit"]["type"] == "integer" and search["properties"]["limit"]["default"] == 5
    assert set(by_name["updateMemory"]["required"]) == {"id", "content"}
    assert by_name["deleteMemory"]["required"] == ["id"]
    lst = by_name["listMemory"]
    assert not lst.get("required") and lst["properties"]["limit"]["default"] == 20
    for schema in (create, search, lst):
        assert CATEGORIES[0] in json.dumps(schema["properties"]["category"])
    for schema in every.values():  # the model never names the tenant or the identifiers
        assert not {"tenant", "tenantId", "userId", "identifiers", "context"} & set(schema["properties"])


async def exercise(session: ClientSession) -> str:
    await session.initialize()
    check_seed_schemas((await session.list_tools()).tools)
    created = _data(
        await session.call_tool(
            "createMemory", {"content": "User prefers dark mode in editors", "category": "preference", "tags": ["ui"]}
        )
    )
    mid = created["id"]
    assert created["layer"] == "user" and created["category"] == "preference" and created["tags"] == ["ui"]
    await session.call_tool("createMemory", {"content": "The API runs on port 8080", "category": "fact"})
    found = _data(await session.call_tool("searchMemory", {"query": "User prefers dark mode in editors"}))
    assert found["results"][0]["id"] == mid
    only_facts = _data(await session.call_tool("listMemory", {"category": "fact"}))
    assert [m["content"] for m in only_facts["memories"]] == ["The API runs on port 8080"]
    updated = _data(await session.call_tool("updateMemory", {"id": mid, "content": "User prefers light mode"}))
    assert updated["version"] == 2
    missing = await session.call_tool("updateMemory", {"id": "no-such-id", "content": "x"})
    assert "MEMORY_NOT_FOUND" in _error_text(missing)
    bad = await session.call_tool("createMemory", {"content": "x", "category": "gossip"})
    assert bad.is_error
    empty = await session.call_tool("createMemory", {"content": "   ", "category": "fact"})
    assert "INVALID_PARAMS" in _error_text(empty)
    assert "INVALID_PARAMS" in _error_text(await session.call_tool("searchMemory", {"query": "x", "limit": 2.5}))
    assert _data(await session.call_tool("deleteMemory", {"id": mid}))["deleted"] is True
    assert _data(await session.call_tool("listMemory", {}))["totalCount"] == 1
    return str(mid)


def test_mcp_over_stdio(tmp_path: Path, open_mem: Callable[..., Memory]) -> None:
    db = tmp_path / "mcp.duckdb"
    params = alice_mcp(db)

    async def main() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await exercise(session)

    asyncio.run(asyncio.wait_for(main(), 120))
    mem = open_mem(db)
    rows = mem.list(TenantContext(tenant_id="acme"), "user", identifiers={"user_id": "alice"}).memories
    assert [r.content for r in rows] == ["The API runs on port 8080"]
    assert mem.list(TenantContext(tenant_id="default")).total_count == 0


def test_mcp_over_http_with_api_key(live_db: Path, live_server: Callable[[], LiveServer]) -> None:
    key = cli_key(live_db, "acme", "writer", "--user-id", "alice")
    reader = cli_key(live_db, "acme", "reader", "--user-id", "alice")
    no_ids = cli_key(live_db, "acme", "writer")
    srv = live_server()

    async def session_for(k: str | None, body: Callable[[ClientSession], Any]) -> Any:
        headers = {"Authorization": f"Bearer {k}"} if k else {}
        async with (
            create_mcp_http_client(headers=headers) as http,
            streamable_http_client(srv.url + "/mcp", http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            return await body(session)

    async def reader_body(session: ClientSession) -> None:
        await session.initialize()
        denied = await session.call_tool("createMemory", {"content": "x", "category": "fact"})
        assert "FORBIDDEN" in _error_text(denied)
        assert _data(await session.call_tool("listMemory", {}))["totalCount"] == 1

    async def no_ids_body(session: ClientSession) -> None:
        await session.initialize()
        assert "MISSING_IDENTIFIER" in _error_text(await session.call_tool("listMemory", {}))

    async def main() -> None:
        await session_for(key, exercise)
        await session_for(reader, reader_body)
        await session_for(no_ids, no_ids_body)

    asyncio.run(asyncio.wait_for(main(), 120))

    import httpx

    # what the MCP session wrote landed in the key's tenant, under the key's identifiers
    listed = httpx.get(srv.url + "/v1/memories", headers={"X-API-Key": key}).json()
    assert listed["totalCount"] == 1
    assert listed["memories"][0]["tenantId"] == "acme" and listed["memories"][0]["identifiers"]["userId"] == "alice"
    assert listed["memories"][0]["metadata"]["category"] == "fact"
    r = httpx.post(
        srv.url + "/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Accept": "application/json, text/event-stream"},
    )
    assert r.status_code == 401 and r.json()["code"] == "MISSING_TENANT_CONTEXT"
    r = httpx.post(
        srv.url + "/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Accept": "application/json, text/event-stream", "X-API-Key": key + "x"},
    )
    assert r.status_code == 401 and r.json()["code"] == "INVALID_TENANT_CONTEXT"
