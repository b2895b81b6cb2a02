"""Current facts and history on every surface: REST, MCP (stdio) and the CLI.

``supersedes`` marks an older memory as replaced; default search/list return current memories, and
``includeSuperseded`` / ``asOf`` (``--include-superseded`` / ``--as-of``) return history.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from mcp import ClientSession
from mcp.client.stdio import stdio_client

from stratamem import Memory, TenantContext

from .conftest import alice_mcp, cli_env

ALICE = {"userId": "alice"}


def h(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def test_rest_supersedes_and_history(client: TestClient, make_key: Callable[..., str]) -> None:
    key = make_key()
    old = client.post(
        "/v1/memories",
        headers=h(key),
        json={"content": "Alice lives in Hamburg", "layer": "user", "identifiers": ALICE},
    ).json()["memory"]
    created = client.post(
        "/v1/memories",
        headers=h(key),
        json={
            "content": "Alice lives in Berlin",
            "layer": "user",
            "identifiers": ALICE,
            "supersedes": [old["id"]],
            "provenance": {"threadId": "chat-1", "position": 3},
        },
    )
    assert created.status_code == 201, created.text
    new = created.json()
    assert new["superseded"] == [old["id"]] and new["memory"]["provenance"]["position"] == 3

    def search(**extra: Any) -> list[str]:
        r = client.post(
            "/v1/memories/search",
            headers=h(key),
            json={"query": "where does Alice live", "identifiers": ALICE, "threshold": 0, **extra},
        )
        assert r.status_code == 200, r.text
        return [x["memory"]["content"] for x in r.json()["results"]]

    assert search() == ["Alice lives in Berlin"]
    assert set(search(includeSuperseded=True)) == {"Alice lives in Hamburg", "Alice lives in Berlin"}
    before = (datetime.fromisoformat(new["memory"]["createdAt"]) - timedelta(microseconds=1)).isoformat()
    assert search(asOf=before) == ["Alice lives in Hamburg"]

    listed = client.get("/v1/memories", headers=h(key), params={"layer": "user", "userId": "alice"}).json()
    assert [m["content"] for m in listed["memories"]] == ["Alice lives in Berlin"]
    history = client.get(
        "/v1/memories", headers=h(key), params={"layer": "user", "userId": "alice", "includeSuperseded": "true"}
    ).json()
    assert {m["content"] for m in history["memories"]} == {"Alice lives in Hamburg", "Alice lives in Berlin"}
    got = client.get(f"/v1/memories/{old['id']}", headers=h(key)).json()
    assert got["status"] == "superseded" and got["provenance"]["supersededBy"] == new["memory"]["id"]
    bad = client.post(
        "/v1/memories/search", headers=h(key), json={"query": "x", "identifiers": ALICE, "asOf": "not a time"}
    )
    assert bad.status_code in (400, 422) and bad.json()["code"] == "INVALID_PARAMS"


def test_mcp_search_history(tmp_path: Path, open_mem: Callable[..., Memory]) -> None:
    db = tmp_path / "mcp.duckdb"
    mem = open_mem(db)
    ctx = TenantContext(tenant_id="acme")
    old = mem.add(ctx, "Alice lives in Hamburg", layer="user", identifiers={"user_id": "alice"}).memory
    mem.add(ctx, "Alice lives in Berlin", layer="user", identifiers={"user_id": "alice"}, supersedes=[old.id])
    mem.close()
    params = alice_mcp(db)

    async def main() -> tuple[dict[str, Any], dict[str, Any]]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            current = await session.call_tool("searchMemory", {"query": "where does Alice live"})
            history = await session.call_tool(
                "searchMemory", {"query": "where does Alice live", "includeSuperseded": True}
            )
            return (
                dict(current.structured_content or json.loads(current.content[0].text)),
                dict(history.structured_content or json.loads(history.content[0].text)),
            )

    current, history = asyncio.run(asyncio.wait_for(main(), 120))
    assert [r["content"] for r in current["results"]] == ["Alice lives in Berlin"]
    replaced = [r for r in history["results"] if r["content"] == "Alice lives in Hamburg"]
    assert replaced and replaced[0]["status"] == "superseded" and replaced[0]["supersededBy"]


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "stratamem", *args],
        capture_output=True,
        text=True,
        env=cli_env(),
        timeout=120,
        check=False,
    )


def test_cli_supersedes_and_history(tmp_path: Path) -> None:
    db = str(tmp_path / "cli.duckdb")
    common = ["--db", db, "-t", "acme", "--user-id", "alice", "--embedder", "hashing"]
    first = run_cli("add", "Alice lives in Hamburg", *common, "--json")
    assert first.returncode == 0, first.stderr
    old_id = json.loads(first.stdout)["memory"]["id"]
    second = run_cli("add", "Alice lives in Berlin", *common, "--supersedes", old_id, "--json")
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout)["superseded"] == [old_id]
    current = run_cli("list", *common, "--layer", "user", "--json")
    assert [m["content"] for m in json.loads(current.stdout)["memories"]] == ["Alice lives in Berlin"]
    history = run_cli("list", *common, "--layer", "user", "--include-superseded", "--json")
    assert len(json.loads(history.stdout)["memories"]) == 2
    then = (datetime.now(UTC) - timedelta(days=1)).isoformat()
    past = run_cli("search", "where does Alice live", *common, "--threshold", "0", "--as-of", then, "--json")
    assert past.returncode == 0, past.stderr
    assert json.loads(past.stdout)["results"] == []
