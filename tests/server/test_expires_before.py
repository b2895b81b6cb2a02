"""``expiresBefore`` on the list surfaces of a live ``stratamem serve``: the REST route (paging,
validation, OpenAPI, a restricted key), ``stratamem.Client`` and the MCP ``listMemory`` tool."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from stratamem import Client, MemoryError, TenantContext

from .conftest import LiveServer, cli_key
from .test_mcp import _data, _error_text

ALICE = {"layer": "user", "userId": "alice"}


def _contents(resp: httpx.Response) -> list[str]:
    assert resp.status_code == 200, resp.text
    return [m["content"] for m in resp.json()["memories"]]


def test_expires_before_on_a_live_server(live_db: Path, live_server: Callable[[], LiveServer]) -> None:
    admin = cli_key(live_db, "acme", "admin")
    alice = cli_key(live_db, "acme", "writer", "--user-id", "alice")
    bob = cli_key(live_db, "acme", "reader", "--user-id", "bob")
    srv = live_server()
    now = datetime.now(UTC)
    week = (now + timedelta(days=7)).isoformat()
    h = {"Authorization": f"Bearer {admin}"}
    with httpx.Client(base_url=srv.url, timeout=60) as http:
        for text, days, user in (
            ("alice: in two days", 2, "alice"),
            ("alice: never", None, "alice"),
            ("alice: in five days", 5, "alice"),
            ("alice: in twenty days", 20, "alice"),
            ("bob: in three days", 3, "bob"),
        ):
            body: dict[str, Any] = {"content": text, "layer": "user", "identifiers": {"userId": user}}
            if days is not None:
                body["expiresAt"] = (now + timedelta(days=days)).isoformat()
            r = http.post("/v1/memories", json=body, headers=h)
            assert r.status_code == 201, r.text

        # the filter is the server's: a page of one holds the first match, the cursor the next
        soon = http.get("/v1/memories", params={**ALICE, "expiresBefore": week}, headers=h)
        assert _contents(soon) == ["alice: in two days", "alice: in five days"] and soon.json()["totalCount"] == 2
        first = http.get("/v1/memories", params={**ALICE, "expiresBefore": week, "limit": 1}, headers=h)
        assert _contents(first) == ["alice: in two days"] and first.json()["totalCount"] == 2
        cursor = first.json()["nextCursor"]
        second = http.get(
            "/v1/memories", params={**ALICE, "expiresBefore": week, "limit": 1, "cursor": cursor}, headers=h
        )
        assert _contents(second) == ["alice: in five days"] and second.json()["nextCursor"] is None
        reused = http.get("/v1/memories", params={**ALICE, "limit": 1, "cursor": cursor}, headers=h)
        assert reused.status_code == 400 and reused.json()["code"] == "INVALID_PARAMS"  # the cursor is the filter's
        for bad in ("next week", "2026-13-01"):
            r = http.get("/v1/memories", params={**ALICE, "expiresBefore": bad}, headers=h)
            assert r.status_code == 400 and r.json()["code"] == "INVALID_PARAMS", r.text
        # tenant-wide with a key limited to bob: bob's expiring memory only
        bobs = http.get("/v1/memories", params={"expiresBefore": week}, headers={"Authorization": f"Bearer {bob}"})
        assert _contents(bobs) == ["bob: in three days"] and bobs.json()["totalCount"] == 1
        # described in the OpenAPI document
        params = {p["name"]: p for p in http.get("/openapi.json").json()["paths"]["/v1/memories"]["get"]["parameters"]}
        assert "expiresAt" in params["expiresBefore"]["description"]
        assert params["expiresBefore"]["schema"]["anyOf"][0]["format"] == "date-time"

    # stratamem.Client sends it as the same query parameter
    with Client(srv.url, api_key=admin) as client:
        t = TenantContext(tenant_id="acme")
        page = client.list(t, "user", identifiers={"user_id": "alice"}, expires_before=now + timedelta(days=7))
        assert [m.content for m in page.memories] == ["alice: in two days", "alice: in five days"]
        with pytest.raises(MemoryError) as exc:
            client.list(t, "user", identifiers={"user_id": "alice"}, expires_before="soon")
        assert exc.value.code.value == "INVALID_PARAMS"

    # the MCP listMemory tool, with the key's user
    async def mcp_body() -> None:
        async with (
            create_mcp_http_client(headers={"Authorization": f"Bearer {alice}"}) as http_client,
            streamable_http_client(srv.url + "/mcp", http_client=http_client) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            tools = {t.name: t for t in (await session.list_tools()).tools}
            assert "expiresBefore" in tools["listMemory"].input_schema["properties"]
            listed = _data(await session.call_tool("listMemory", {"expiresBefore": week, "order": "oldest"}))
            assert [m["content"] for m in listed["memories"]] == ["alice: in two days", "alice: in five days"]
            assert all(m["expiresAt"] < week for m in listed["memories"])
            bad = await session.call_tool("listMemory", {"expiresBefore": "someday"})
            assert _error_text(bad).startswith("INVALID_PARAMS")

    asyncio.run(asyncio.wait_for(mcp_body(), 120))
