"""The MCP tools beyond the seed-003 five: memory_crud (seed 001), memory_process / remember / forget
(seed 003 write gate), memory_promote and close_session (lifecycle). Real ClientSessions: over stdio
against `stratamem mcp`, and over streamable HTTP against `stratamem serve` for tenant isolation."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from stratamem import Memory, TenantContext

from .conftest import LiveServer, cli_env, cli_key
from .test_mcp import _data, _error_text

ALICE_S1 = {"user_id": "alice", "session_id": "s1"}


def _seed_sessions(db: Path) -> tuple[str, str]:
    """Two session memories of alice/s1: one to promote explicitly, one important enough for close_session."""
    mem = Memory.open(db, embedder="hashing")
    try:
        t = TenantContext(tenant_id="acme", principal="seed")
        note = mem.add(t, "Ask alice@example.com about the launch", layer="session", identifiers=ALICE_S1).memory.id
        hot = mem.add(t, "Deploys happen on Fridays", layer="session", identifiers=ALICE_S1).memory.id
        for _ in range(4):
            assert mem.get(t, hot) is not None  # importance 0.5*4/5 + 0.5*2^(-seconds/7 days) ≈ 0.9
        return note, hot
    finally:
        mem.close()


async def _exercise_new_tools(session: ClientSession, note: str, hot: str) -> None:
    await session.initialize()
    # -- memory_crud ---------------------------------------------------------------------------
    created = _data(
        await session.call_tool(
            "memory_crud",
            {
                "action": "create",
                "layer": "long_term",
                "items": [{"content": "Prefers concise answers", "tags": ["style"]}],
            },
        )
    )
    assert created["errors"] == [] and len(created["items"]) == 1
    item = created["items"][0]
    assert (item["scope"], item["layer"], item["content"], item["version"]) == (
        "agent",
        "long_term",
        "Prefers concise answers",
        1,
    )
    assert item["metadata"]["tags"] == ["style"] and item["provenance"]["source"] == "memory_crud"
    listed = _data(await session.call_tool("memory_crud", {"action": "list", "layer": "long_term"}))
    assert [i["id"] for i in listed["items"]] == [item["id"]] and listed["has_more"] is False
    assert listed["next_cursor"] is None
    updated = _data(
        await session.call_tool(
            "memory_crud",
            {
                "action": "update",
                "items": [{"id": item["id"], "content": "Prefers short answers"}],
                "if_match": item["etag"],
            },
        )
    )
    assert updated["errors"] == [] and updated["items"][0]["version"] == 2
    stale = _data(
        await session.call_tool(
            "memory_crud",
            {
                "action": "update",
                "items": [{"id": item["id"], "content": "Prefers long answers"}],
                "if_match": item["etag"],
            },
        )
    )
    assert [e["code"] for e in stale["errors"]] == ["CONFLICT"]
    moved = _data(
        await session.call_tool(
            "memory_crud", {"action": "update", "items": [{"id": item["id"], "content": "x", "target_scope": "global"}]}
        )
    )
    assert [(e["code"], e["details"]["reason"]) for e in moved["errors"]] == [("INVALID_PARAMS", "immutable")]
    denied = _data(
        await session.call_tool(
            "memory_crud",
            {
                "action": "create",
                "scope": "global",
                "namespace": "acme-corp",
                "items": [{"content": "Company holiday"}],
            },
        )
    )
    assert [e["code"] for e in denied["errors"]] == ["FORBIDDEN"] and denied["items"] == []
    gone = _data(await session.call_tool("memory_crud", {"action": "delete", "items": [{"id": item["id"]}]}))
    assert gone["items"] == [{"id": item["id"], "deleted": True}]
    bad = await session.call_tool("memory_crud", {"action": "explode"})
    assert bad.is_error
    # -- memory_process / remember / forget --------------------------------------------------------
    dog = _data(await session.call_tool("memory_process", {"text": "My dog is named Max"}))
    assert (dog["action"], dog["content"], dog["category"], dog["source"]) == (
        "created",
        "User's dog is named Max",
        "fact",
        "inferred",
    )
    noise = _data(await session.call_tool("memory_process", {"text": "I am tired today"}))
    assert (noise["action"], noise["reason"]) == ("ignored", "emotional state")
    kept = _data(await session.call_tool("remember", {"text": "Remember that my favourite editor is Helix"}))
    assert (kept["action"], kept["content"], kept["source"]) == (
        "created",
        "User's favourite editor is Helix",
        "explicit",
    )
    forgot = _data(await session.call_tool("forget", {"text": "Forget my dog's name"}))
    assert (forgot["action"], forgot["count"], forgot["memory_ids"]) == ("deleted", 1, [dog["memory_id"]])
    # -- memory_promote / close_session ---------------------------------------------------------
    promoted = _data(await session.call_tool("memory_promote", {"id": note, "target_layer": "user"}))
    assert (promoted["layer"], promoted["content"], promoted["promotedFromId"]) == (
        "user",
        "Ask [REDACTED_EMAIL] about the launch",
        note,
    )
    down = await session.call_tool("memory_promote", {"id": promoted["id"], "target_layer": "session"})
    assert "INVALID_SCOPE_PROMOTION: cannot promote from 'user' to 'session'" in _error_text(down)
    closed = _data(await session.call_tool("close_session", {}))
    assert (closed["evaluated"], closed["target_layer"], closed["expiring"]) == (2, "user", 2)
    assert [(p["source_id"], round(p["importance"], 3)) for p in closed["promoted"]] == [(hot, 0.9)]
    assert closed["blocked"] == []


def test_new_tools_over_stdio(tmp_path: Path, open_mem: Callable[..., Memory]) -> None:
    db = tmp_path / "tools.duckdb"
    note, hot = _seed_sessions(db)
    params = StdioServerParameters(
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
            "--layer",
            "user",
        ],
        env=cli_env(),
    )

    async def main() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await _exercise_new_tools(session, note, hot)

    asyncio.run(asyncio.wait_for(main(), 180))
    mem = open_mem(db)
    t = TenantContext(tenant_id="acme")
    users = {e.content for e in mem.list(t, "user", identifiers={"user_id": "alice"}).memories}
    assert users == {
        "Ask [REDACTED_EMAIL] about the launch",
        "Deploys happen on Fridays",
        "User's favourite editor is Helix",
    }


def test_new_tools_keep_tenants_and_users_apart(live_db: Path, live_server: Callable[[], LiveServer]) -> None:
    mem = Memory.open(live_db, embedder="hashing")
    try:
        acme = TenantContext(tenant_id="acme", principal="seed")
        secret = mem.add(acme, "User's dog is named Max", layer="user", identifiers={"user_id": "alice"}).memory.id
        bobs = mem.add(
            acme, "Bob's session note", layer="session", identifiers={"user_id": "bob", "session_id": "s1"}
        ).memory.id
        alices = mem.add(acme, "Alice's session note", layer="session", identifiers=ALICE_S1).memory.id
    finally:
        mem.close()
    acme_key = cli_key(live_db, "acme", "writer", "--user-id", "alice", "--session-id", "s1")
    globex_key = cli_key(live_db, "globex", "writer", "--user-id", "alice", "--session-id", "s1")
    reader = cli_key(live_db, "acme", "reader", "--user-id", "alice")
    srv = live_server()

    async def session_for(key: str, body: Callable[[ClientSession], Any]) -> Any:
        async with (
            create_mcp_http_client(headers={"Authorization": f"Bearer {key}"}) as http,
            streamable_http_client(srv.url + "/mcp", http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return await body(session)

    async def as_globex(session: ClientSession) -> None:
        # same userId and sessionId, other tenant: nothing of acme is visible or touched
        read = _data(await session.call_tool("memory_crud", {"action": "read", "items": [{"id": secret}]}))
        assert [e["code"] for e in read["errors"]] == ["NOT_FOUND"] and read["items"] == []
        listed = _data(await session.call_tool("memory_crud", {"action": "list"}))
        assert listed["items"] == [] and listed["errors"] == []
        promoted = await session.call_tool("memory_promote", {"id": secret, "target_layer": "project"})
        assert f"MEMORY_NOT_FOUND: no memory with id {secret!r}" in _error_text(promoted)
        forgot = _data(await session.call_tool("forget", {"text": "Forget my dog's name"}))
        assert (forgot["action"], forgot["count"]) == ("deleted", 0)
        closed = _data(await session.call_tool("close_session", {}))
        assert (closed["evaluated"], closed["expiring"]) == (0, 0)

    async def as_acme(session: ClientSession) -> None:
        # another user's memory of the same tenant cannot be promoted into alice's scope
        other = await session.call_tool("memory_promote", {"id": bobs, "target_layer": "user"})
        assert f"MEMORY_NOT_FOUND: no memory with id {bobs!r}" in _error_text(other)
        mine = _data(await session.call_tool("memory_promote", {"id": alices, "target_layer": "user"}))
        assert (mine["layer"], mine["promotedFromId"]) == ("user", alices)

    async def as_reader(session: ClientSession) -> None:
        denied = _data(await session.call_tool("memory_crud", {"action": "create", "items": [{"content": "x"}]}))
        assert denied == {
            "items": [],
            "next_cursor": None,
            "has_more": False,
            "errors": [
                {
                    "code": "FORBIDDEN",
                    "message": "this credential may not write memories",
                    "details": {"action": "create"},
                }
            ],
        }
        assert "FORBIDDEN: this credential may not write memories" in _error_text(
            await session.call_tool("remember", {"text": "Remember I like tea"})
        )
        assert _data(await session.call_tool("memory_crud", {"action": "list"}))["errors"] == []

    async def main() -> None:
        await session_for(globex_key, as_globex)
        await session_for(acme_key, as_acme)
        await session_for(reader, as_reader)

    asyncio.run(asyncio.wait_for(main(), 180))
    srv.stop()
    after = Memory.open(live_db, embedder="hashing")
    try:
        acme = TenantContext(tenant_id="acme")
        assert after.get(acme, secret) is not None  # globex's forget did not reach acme
        assert after.list(TenantContext(tenant_id="globex")).total_count == 0
        promoted = [
            e
            for e in after.list(acme, "user", identifiers={"user_id": "alice"}).memories
            if e.provenance.promoted_from_id
        ]
        assert [e.provenance.promoted_from_id for e in promoted] == [alices]
    finally:
        after.close()
