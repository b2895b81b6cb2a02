"""Principals and grants inside one tenant: a credential bound to alice (plus explicit grants) reads
and changes only alice's scopes and the shared scopes granted to it, on every surface; a denied id
looks exactly like a missing one. Repros of the issue over REST and MCP, then a property test."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from stratamem import Memory, MemoryError, TenantContext
from stratamem.errors import ErrorCode
from stratamem.model import Grant
from stratamem.server.app import create_app
from stratamem.server.keys import create_key
from stratamem.server.settings import ServerSettings

from .conftest import LiveServer, cli_key
from .test_mcp import _data, _error_text

TRUSTED = TenantContext(tenant_id="acme", principal="seed")
BOB = {"user_id": "bob"}


def _seed(mem: Memory) -> dict[str, str]:
    return {
        "bob": mem.add(TRUSTED, "Bob's salary is confidential", layer="user", identifiers=BOB).memory.id,
        "alice": mem.add(TRUSTED, "Alice prefers tea", layer="user", identifiers={"user_id": "alice"}).memory.id,
        "t1": mem.add(TRUSTED, "Team one deploys on Fridays", layer="team", identifiers={"team_id": "t1"}).memory.id,
        "t2": mem.add(TRUSTED, "Team two deploys on Mondays", layer="team", identifiers={"team_id": "t2"}).memory.id,
        "bob_session": mem.add(
            TRUSTED, "Bob's session note", layer="session", identifiers={**BOB, "session_id": "s1"}
        ).memory.id,
    }


def test_rest_key_bound_to_alice_cannot_touch_bob(
    server_mem: Memory, client: TestClient, make_key: Callable[..., str]
) -> None:
    ids = _seed(server_mem)
    h = {"X-API-Key": make_key(user_id="alice")}
    # read: bob's memory looks exactly like a missing one
    bob = client.get(f"/v1/memories/{ids['bob']}", headers=h)
    missing = client.get("/v1/memories/no-such-id", headers=h)
    assert bob.status_code == missing.status_code == 404
    assert {**bob.json(), "details": {}, "message": ""} == {**missing.json(), "details": {}, "message": ""}
    assert client.get(f"/v1/memories/{ids['alice']}", headers=h).status_code == 200
    # search / list of bob's scope: refused; alice's own: only alice's
    r = client.post("/v1/memories/search", headers=h, json={"query": "salary", "identifiers": {"userId": "bob"}})
    assert r.status_code == 403 and r.json()["code"] == "FORBIDDEN"
    r = client.get("/v1/memories", headers=h, params={"layer": "user", "userId": "bob"})
    assert r.status_code == 403
    listed = client.get("/v1/memories", headers=h).json()
    assert [m["id"] for m in listed["memories"]] == [ids["alice"]] and listed["totalCount"] == 1
    found = client.post(
        "/v1/memories/search",
        headers=h,
        json={"query": "Bob's salary is confidential", "identifiers": {"userId": "alice"}, "threshold": 0},
    ).json()
    assert [x["memory"]["id"] for x in found["results"]] == [ids["alice"]]
    # write: patch/delete of bob's memory change nothing; adding to bob's scope is refused
    r = client.patch(f"/v1/memories/{ids['bob']}", headers=h, json={"content": "Bob earns nothing"})
    assert r.status_code == 404 and r.json()["code"] == "MEMORY_NOT_FOUND"
    assert client.delete(f"/v1/memories/{ids['bob']}", headers=h).status_code == 200
    # ids outside the grant are reported exactly like ids that do not exist
    assert client.post("/v1/memories/bulk-delete", headers=h, json={"ids": [ids["bob"], ids["t1"]]}).json() == {
        "deleted": 0,
        "failed": [],
        "failures": [],
        "notFound": [ids["bob"], ids["t1"]],
    }
    r = client.post(
        "/v1/memories", headers=h, json={"content": "Bob is fired", "layer": "user", "identifiers": {"userId": "bob"}}
    )
    assert r.status_code == 403
    r = client.post(
        "/v1/memories/bulk",
        headers=h,
        json={
            "items": [
                {"content": "ok", "layer": "user", "identifiers": {"userId": "alice"}},
                {"content": "Bob is fired", "layer": "team", "identifiers": {"teamId": "t1"}},
            ]
        },
    )
    assert r.status_code == 403
    bob_entry = server_mem.get(TRUSTED, ids["bob"])
    assert bob_entry is not None and bob_entry.content == "Bob's salary is confidential" and bob_entry.version == 1
    assert server_mem.get(TRUSTED, ids["t1"]) is not None
    assert (
        server_mem.list(TRUSTED, "user", identifiers={"user_id": "alice"}).total_count == 1
    )  # the bulk stored nothing
    # graph traversal spans every scope: refused to a restricted key
    assert client.get("/v1/graph/related", headers=h, params={"node": ids["alice"]}).status_code == 403


def test_explicit_grants_and_tenant_wide_keys(server_mem: Memory, client: TestClient) -> None:
    ids = _seed(server_mem)
    prov = server_mem.engine.provider
    team = {"X-API-Key": create_key(prov, "acme", "writer", identifiers={"user_id": "alice"}, grants=["team:t1"]).key}
    assert client.get(f"/v1/memories/{ids['t1']}", headers=team).status_code == 200
    assert client.get(f"/v1/memories/{ids['t2']}", headers=team).status_code == 404
    r = client.patch(f"/v1/memories/{ids['t1']}", headers=team, json={"content": "Team one deploys on Thursdays"})
    assert r.status_code == 200
    r = client.post(
        "/v1/memories/search",
        headers=team,
        json={"query": "deploys", "identifiers": {"userId": "alice", "teamId": "t1"}, "threshold": 0},
    )
    assert r.status_code == 200 and {x["memory"]["id"] for x in r.json()["results"]} <= {ids["alice"], ids["t1"]}
    listed = client.get("/v1/memories", headers=team).json()
    assert {m["id"] for m in listed["memories"]} == {ids["alice"], ids["t1"]}
    # a service key bound to nothing and an admin key see the whole tenant
    for role in ("writer", "admin"):
        wide = {"X-API-Key": create_key(prov, "acme", role).key}
        assert client.get("/v1/memories", headers=wide).json()["totalCount"] == 5
    admin = {"X-API-Key": create_key(prov, "acme", "admin").key}
    made = client.post(
        "/v1/keys",
        headers=admin,
        json={"role": "reader", "identifiers": {"userId": "carol"}, "grants": ["project:p1", "object:ticket/*"]},
    )
    assert made.status_code == 201 and made.json()["grants"] == ["project:p1", "object:ticket/*"]
    assert made.json()["identifiers"] == {"userId": "carol"}
    bad = client.post("/v1/keys", headers=admin, json={"role": "reader", "grants": ["planet:mars"]})
    assert bad.status_code == 400 and bad.json()["code"] == "INVALID_PARAMS"


def test_cli_key_with_user_id_and_grant(live_db: Path, live_server: Callable[[], LiveServer]) -> None:
    key = cli_key(live_db, "acme", "writer", "--user-id", "alice", "--grant", "team:t1")
    seed = Memory.open(live_db, embedder="hashing")
    try:
        ids = _seed(seed)
    finally:
        seed.close()
    srv = live_server()
    h = {"X-API-Key": key}
    assert httpx.get(f"{srv.url}/v1/memories/{ids['bob']}", headers=h).status_code == 404
    assert httpx.get(f"{srv.url}/v1/memories/{ids['t1']}", headers=h).status_code == 200
    assert httpx.get(f"{srv.url}/v1/memories/{ids['t2']}", headers=h).status_code == 404


def test_sdk_enforces_a_grant_when_given(open_mem: Callable[..., Memory]) -> None:
    mem = open_mem()
    ids = _seed(mem)
    alice = TenantContext(tenant_id="acme", principal="alice", grant=Grant.parse(["team:t1"], {"user_id": "alice"}))
    assert mem.get(alice, ids["bob"]) is None and mem.get(alice, ids["t1"]) is not None
    with pytest.raises(MemoryError) as exc:
        mem.update(alice, ids["bob"], content="changed")
    assert exc.value.code is ErrorCode.MEMORY_NOT_FOUND
    mem.delete(alice, ids["bob"])
    assert mem.get(TRUSTED, ids["bob"]) is not None
    with pytest.raises(MemoryError) as exc:
        mem.add(alice, "x", layer="team", identifiers={"team_id": "t2"})
    assert exc.value.code is ErrorCode.FORBIDDEN
    with pytest.raises(MemoryError) as exc:
        mem.lifecycle.promote(alice, ids["bob_session"], "user", {"user_id": "alice"})
    assert exc.value.code is ErrorCode.MEMORY_NOT_FOUND
    with pytest.raises(MemoryError) as exc:
        mem.lifecycle.compact(alice, [ids["bob"]], lambda entries: "merged")
    assert exc.value.code is ErrorCode.MEMORY_NOT_FOUND
    with pytest.raises(MemoryError) as exc:
        mem.stats(alice)
    assert exc.value.code is ErrorCode.FORBIDDEN
    assert {e.id for e in mem.export(alice)} == {ids["alice"], ids["t1"]}
    assert len(list(mem.export(TRUSTED))) == 5  # no grant: a trusted in-process caller
    res = mem.crud(alice, {"action": "list", "scope": "team", "namespace": "t2"})
    assert res.items == [] and res.errors and res.errors[0].code == "FORBIDDEN"


def test_mcp_bound_to_alice_cannot_touch_bob(live_db: Path, live_server: Callable[[], LiveServer]) -> None:
    key = cli_key(live_db, "acme", "writer", "--user-id", "alice")
    seed = Memory.open(live_db, embedder="hashing")
    try:
        ids = _seed(seed)
    finally:
        seed.close()
    srv = live_server()

    async def body(session: ClientSession) -> None:
        await session.initialize()
        upd = await session.call_tool("updateMemory", {"id": ids["bob"], "content": "Bob earns nothing"})
        assert "MEMORY_NOT_FOUND" in _error_text(upd)
        gone = _data(await session.call_tool("deleteMemory", {"id": ids["bob"]}))
        assert gone["deleted"] is False
        for scope, namespace in (("team", "t2"), ("team", "t1"), ("agent", "other-agent")):
            listed = _data(
                await session.call_tool("memory_crud", {"action": "list", "scope": scope, "namespace": namespace})
            )
            assert listed["items"] == [], listed
        for action, item in (
            ("update", {"id": ids["t2"], "content": "hijacked"}),
            ("delete", {"id": ids["t2"]}),
            ("read", {"id": ids["t2"]}),
            ("create", {"content": "planted"}),
        ):
            res = _data(
                await session.call_tool(
                    "memory_crud", {"action": action, "scope": "team", "namespace": "t2", "items": [item]}
                )
            )
            if action == "delete":  # idempotent: a denied id reads as one already gone
                assert res["items"] == [{"id": ids["t2"], "deleted": False}], res
            else:
                assert res["items"] == [] and res["errors"], (action, res)
        promo = await session.call_tool("memory_promote", {"id": ids["bob_session"], "target_layer": "user"})
        assert "MEMORY_NOT_FOUND" in _error_text(promo)

    async def main() -> None:
        async with (
            create_mcp_http_client(headers={"X-API-Key": key}) as http,
            streamable_http_client(srv.url + "/mcp", http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await body(session)

    asyncio.run(asyncio.wait_for(main(), 120))
    srv.stop()  # one process owns the embedded store
    after = Memory.open(live_db, embedder="hashing")
    try:
        for name in ("bob", "t2", "bob_session"):
            entry = after.get(TRUSTED, ids[name])
            assert entry is not None and entry.version == 1, name
        assert after.list(TRUSTED, "team", identifiers={"team_id": "t2"}).total_count == 1
    finally:
        after.close()


# ------------------------------------------------------------------------------- property test
USERS = ("alice", "bob", "carol")
TEAMS = ("t1", "t2")
#: Each principal's grant: its own user plus some shared scopes.
PRINCIPALS: dict[str, list[str]] = {"alice": ["team:t1"], "bob": ["team:t1", "team:t2"], "carol": []}
SCOPES: list[tuple[str, dict[str, str]]] = (
    [("user", {"userId": u}) for u in USERS]
    + [("team", {"teamId": t}) for t in TEAMS]
    + [("session", {"userId": u, "sessionId": "s1"}) for u in USERS]
)


def _allowed(principal: str, layer: str, ids: dict[str, str]) -> bool:
    if layer in ("user", "session"):
        return ids["userId"] == principal
    return f"team:{ids['teamId']}" in PRINCIPALS[principal]


op_strategy = st.tuples(
    st.sampled_from(sorted(PRINCIPALS)),
    st.sampled_from(["add", "get", "update", "delete", "search", "list", "list_all"]),
    st.integers(0, len(SCOPES) - 1),
    st.integers(0, 50),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(op_strategy, min_size=5, max_size=25))
def test_no_read_or_write_outside_a_grant_over_rest(
    open_mem: Callable[..., Memory], tmp_path_factory: Any, ops: list[tuple[str, str, int, int]]
) -> None:
    mem = open_mem(tmp_path_factory.mktemp("grants") / "p.duckdb")
    try:
        keys = {
            p: create_key(mem.engine.provider, "acme", "writer", identifiers={"user_id": p}, grants=g).key
            for p, g in PRINCIPALS.items()
        }
        # every scope starts with one memory written by a trusted caller
        stored: dict[str, tuple[str, dict[str, str], str]] = {}
        for layer, ids in SCOPES:
            snake = {"userId": "user_id", "teamId": "team_id", "sessionId": "session_id"}
            entry = mem.add(
                TRUSTED,
                f"seed {layer} {sorted(ids.values())}",
                layer=layer,
                identifiers={snake[k]: v for k, v in ids.items()},
            ).memory
            stored[entry.id] = (layer, ids, entry.content)
        with TestClient(create_app(mem, ServerSettings(mcp_enabled=False, rate_limit_per_second=0))) as client:
            for principal, action, scope_i, pick in ops:
                h = {"X-API-Key": keys[principal]}
                layer, ids = SCOPES[scope_i]
                allowed = _allowed(principal, layer, ids)
                target = sorted(stored)[pick % len(stored)] if stored else "none"
                t_allowed = target in stored and _allowed(principal, stored[target][0], stored[target][1])
                if action == "add":
                    r = client.post(
                        "/v1/memories",
                        headers=h,
                        json={"content": f"{principal} wrote {pick}", "layer": layer, "identifiers": ids},
                    )
                    assert r.status_code == (201 if allowed else 403), r.text
                    if allowed:
                        stored[r.json()["memory"]["id"]] = (layer, ids, f"{principal} wrote {pick}")
                elif action == "get":
                    r = client.get(f"/v1/memories/{target}", headers=h)
                    assert r.status_code == (200 if t_allowed else 404)
                elif action == "update":
                    r = client.patch(f"/v1/memories/{target}", headers=h, json={"content": f"{principal} edit {pick}"})
                    assert r.status_code == (200 if t_allowed else 404), r.text
                    if t_allowed:
                        stored[target] = (*stored[target][:2], f"{principal} edit {pick}")
                elif action == "delete":
                    r = client.delete(f"/v1/memories/{target}", headers=h)
                    assert r.status_code == 200
                    if t_allowed:
                        stored.pop(target)
                elif action in ("search", "list"):
                    if action == "search":
                        r = client.post(
                            "/v1/memories/search",
                            headers=h,
                            json={"query": "wrote seed edit", "identifiers": ids, "layers": [layer], "threshold": 0},
                        )
                        seen = [x["memory"] for x in r.json().get("results", [])]
                    else:
                        r = client.get("/v1/memories", headers=h, params={"layer": layer, **ids})
                        seen = r.json().get("memories", [])
                    assert r.status_code == (200 if allowed else 403), r.text
                    assert all(_allowed(principal, m["layer"], m["identifiers"]) for m in seen)
                else:
                    r = client.get("/v1/memories", headers=h, params={"limit": 100})
                    seen = r.json()["memories"]
                    assert {m["id"] for m in seen} == {
                        i for i, (lyr, s, _c) in stored.items() if _allowed(principal, lyr, s)
                    }
        # nothing outside a grant changed: every stored memory has the content the model expects
        for mid, (_layer, _ids, content) in stored.items():
            entry = mem.get(TRUSTED, mid)
            assert entry is not None and entry.content == content
        assert mem.list(TRUSTED, limit=100).total_count == len(stored)
    finally:
        mem.close()


# ------------------------------------------------------------------------------- property test over MCP
MCP_ACTIONS = ["create", "update", "delete", "search", "list", "crud_list", "crud_update", "crud_delete"]


def test_no_read_or_write_outside_a_grant_over_mcp(live_db: Path, live_server: Callable[[], LiveServer]) -> None:
    keys = {
        p: cli_key(live_db, "acme", "writer", "--user-id", p, *[a for g in gs for a in ("--grant", g)])
        for p, gs in PRINCIPALS.items()
    }
    admin = cli_key(live_db, "acme", "admin")
    seed = Memory.open(live_db, embedder="hashing")
    try:
        for layer, ids in SCOPES:
            snake = {"userId": "user_id", "teamId": "team_id", "sessionId": "session_id"}
            seed.add(
                TRUSTED,
                f"seed {layer} {sorted(ids.values())}",
                layer=layer,
                identifiers={snake[k]: v for k, v in ids.items()},
            )
    finally:
        seed.close()
    srv = live_server()
    wide = {"X-API-Key": admin}

    def snapshot() -> dict[str, dict[str, Any]]:
        rows = httpx.get(srv.url + "/v1/memories", headers=wide, params={"limit": 100}, timeout=30).json()
        return {m["id"]: m for m in rows["memories"]}

    def in_grant(principal: str, m: dict[str, Any]) -> bool:
        return _allowed(principal, m["layer"], m["identifiers"])

    async def run(ops: list[tuple[str, str, int, int]]) -> None:
        for principal, action, team_i, pick in ops:
            before = snapshot()
            target = sorted(before)[pick % len(before)]
            allowed = in_grant(principal, before[target])
            team = TEAMS[team_i % len(TEAMS)]
            async with (
                create_mcp_http_client(headers={"X-API-Key": keys[principal]}) as http,
                streamable_http_client(srv.url + "/mcp", http_client=http) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                if action == "create":
                    _data(
                        await session.call_tool(
                            "createMemory", {"content": f"{principal} note {pick}", "category": "fact"}
                        )
                    )
                elif action == "update":
                    res = await session.call_tool("updateMemory", {"id": target, "content": f"{principal} {pick}"})
                    assert res.is_error is (not allowed)
                elif action == "delete":
                    assert _data(await session.call_tool("deleteMemory", {"id": target}))["deleted"] is allowed
                elif action in ("search", "list"):
                    args = {"query": "seed note"} if action == "search" else {}
                    out = _data(await session.call_tool("searchMemory" if action == "search" else "listMemory", args))
                    seen = [before.get(x["id"]) for x in out.get("results", out.get("memories", []))]
                    assert all(m is None or in_grant(principal, m) for m in seen)
                else:
                    crud_action = action.removeprefix("crud_")
                    args: dict[str, Any] = {"action": crud_action, "scope": "team", "namespace": team}
                    if crud_action != "list":
                        args["items"] = [
                            {"id": target, "content": f"{principal} crud {pick}"}
                            if crud_action == "update"
                            else {"id": target}
                        ]
                    out = _data(await session.call_tool("memory_crud", args))
                    granted_team = f"team:{team}" in PRINCIPALS[principal]
                    for item in out["items"]:
                        if "content" in item:
                            assert granted_team and item.get("namespace", team) == team, (principal, out)
            after = snapshot()
            for mid, m in before.items():  # nothing outside the principal's grant changed or vanished
                if not in_grant(principal, m):
                    assert mid in after and after[mid]["version"] == m["version"], (principal, action, m)
            for mid, m in after.items():  # anything new is inside the grant
                if mid not in before:
                    assert in_grant(principal, m), (principal, action, m)

    @settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(
        st.lists(
            st.tuples(
                st.sampled_from(sorted(PRINCIPALS)), st.sampled_from(MCP_ACTIONS), st.integers(0, 1), st.integers(0, 50)
            ),
            min_size=3,
            max_size=8,
        )
    )
    def check(ops: list[tuple[str, str, int, int]]) -> None:
        asyncio.run(asyncio.wait_for(run(ops), 300))

    check()
