"""The seed-001 ``memory_crud`` contract end to end."""

from __future__ import annotations

from typing import Any

import pytest

from stratamem import Memory, TenantContext


@pytest.fixture()
def agent(acme: TenantContext) -> TenantContext:
    return TenantContext(tenant_id=acme.tenant_id, principal="agent-7", roles=("agent",))


@pytest.fixture()
def sys4(acme: TenantContext) -> TenantContext:
    return TenantContext(tenant_id=acme.tenant_id, principal="sys4-bot", roles=("sys4",))


@pytest.fixture()
def other_tenant(globex: TenantContext) -> TenantContext:
    return TenantContext(tenant_id=globex.tenant_id, principal="agent-7")


def crud(mem: Memory, ctx: TenantContext, **req: Any) -> Any:
    return mem.crud(ctx, req)


def test_create_read_update_delete_default_agent_scope(lmem: Memory, agent: TenantContext) -> None:
    created = crud(
        lmem,
        agent,
        action="create",
        layer="long_term",
        items=[{"content": "prefers concise answers", "tags": ["style"]}],
    )
    assert created.errors == [] and created.has_more is False and created.next_cursor is None
    item = created.items[0]
    assert (item["scope"], item["namespace"], item["layer"], item["version"]) == ("agent", "agent-7", "long_term", 1)
    assert item["conflict"] is False and item["conflict_of"] is None and item["metadata"]["tags"] == ["style"]
    read = crud(lmem, agent, action="read", items=[{"id": item["id"]}])
    assert read.items[0]["content"] == "prefers concise answers"
    upd = crud(lmem, agent, action="update", if_match=item["etag"], items=[{"id": item["id"], "content": "concise"}])
    assert upd.errors == [] and upd.items[0]["version"] == 2 and upd.items[0]["etag"] != item["etag"]
    gone = crud(lmem, agent, action="delete", items=[{"id": item["id"]}])
    assert gone.items == [{"id": item["id"], "deleted": True}]
    again = crud(lmem, agent, action="delete", items=[{"id": item["id"]}])
    assert again.items == [{"id": item["id"], "deleted": False}] and again.errors == []
    missing = crud(lmem, agent, action="read", items=[{"id": item["id"]}])
    assert [(e.code, e.details["index"]) for e in missing.errors] == [("NOT_FOUND", 0)]


def test_conflict_on_stale_etag_stores_conflict_entry(lmem: Memory, agent: TenantContext, sys4: TenantContext) -> None:
    item = crud(lmem, sys4, action="create", scope="team", namespace="ops", items=[{"content": "oncall: Ann"}]).items[0]
    crud(lmem, agent, action="update", scope="team", namespace="ops", items=[{"id": item["id"], "content": "Bob"}])
    res = crud(
        lmem,
        agent,
        action="update",
        scope="team",
        namespace="ops",
        if_match=item["etag"],
        items=[{"id": item["id"], "content": "oncall: Cid"}],
    )
    assert res.items == [] and [e.code for e in res.errors] == ["CONFLICT"]
    conflict_id = res.errors[0].details["conflict_id"]
    listed = crud(lmem, agent, action="list", scope="team", namespace="ops", filters={"conflict": True})
    assert [(i["id"], i["conflict"], i["conflict_of"], i["content"]) for i in listed.items] == [
        (conflict_id, True, item["id"], "oncall: Cid")
    ]


def test_global_write_needs_privileged_role(lmem: Memory, agent: TenantContext, sys4: TenantContext) -> None:
    denied = crud(lmem, agent, action="create", scope="global", namespace="acme", items=[{"content": "x"}])
    assert [e.code for e in denied.errors] == ["FORBIDDEN"] and denied.items == []
    rec = lmem.engine.audit.recent(tenant_id=agent.tenant_id, action="memory_crud.create")[-1]
    assert rec.outcome == "denied" and rec.code == "FORBIDDEN"
    ok = crud(lmem, sys4, action="create", scope="global", namespace="acme", items=[{"content": "company holiday"}])
    assert ok.errors == [] and ok.items[0]["scope"] == "global" and ok.items[0]["namespace"] == "acme"
    # anyone may read global
    assert crud(lmem, agent, action="list", scope="global", namespace="acme").items[0]["content"] == "company holiday"
    # another agent's private scope is off limits
    peek = crud(lmem, agent, action="list", namespace="agent-9")
    assert [e.code for e in peek.errors] == ["FORBIDDEN"]


def test_promote_agent_to_team_and_global(lmem: Memory, agent: TenantContext, sys4: TenantContext) -> None:
    item = crud(lmem, agent, action="create", items=[{"content": "retry flaky tests twice"}]).items[0]
    team = crud(
        lmem, agent, action="promote", items=[{"id": item["id"], "target_scope": "team", "target_namespace": "qa"}]
    )
    assert team.errors == [] and team.items[0]["scope"] == "team" and team.items[0]["namespace"] == "qa"
    assert team.items[0]["provenance"]["promotedFromId"] == item["id"]
    denied = crud(
        lmem, agent, action="promote", items=[{"id": item["id"], "target_scope": "global", "target_namespace": "acme"}]
    )
    assert [e.code for e in denied.errors] == ["FORBIDDEN"]
    down = crud(
        lmem,
        sys4,
        action="promote",
        scope="team",
        namespace="qa",
        items=[{"id": team.items[0]["id"], "target_scope": "agent"}],
    )
    assert [(e.code, e.details["cause"]) for e in down.errors] == [("INVALID_PARAMS", "INVALID_SCOPE_PROMOTION")]


def test_list_pagination_cursor_and_limits(lmem: Memory, agent: TenantContext) -> None:
    for i in range(30):
        crud(lmem, agent, action="create", layer="working", items=[{"content": f"note {i}"}])
    crud(lmem, agent, action="create", layer="meta", items=[{"content": "meta note"}])
    first = crud(lmem, agent, action="list", layer="working")
    assert len(first.items) == 25 and first.has_more is True and first.next_cursor
    second = crud(lmem, agent, action="list", layer="working", cursor=first.next_cursor)
    assert len(second.items) == 5 and second.has_more is False and second.next_cursor is None
    assert {i["content"] for i in first.items + second.items} == {f"note {i}" for i in range(30)}
    bad = crud(lmem, agent, action="list", cursor="not-a-cursor")
    assert [e.code for e in bad.errors] == ["INVALID_PARAMS"]
    assert [e.code for e in crud(lmem, agent, action="list", limit=101).errors] == ["INVALID_PARAMS"]
    assert len(crud(lmem, agent, action="list", limit=100).items) == 31


@pytest.mark.parametrize(
    "request_body",
    [
        {"action": "create", "items": [{"content": f"c{i}"} for i in range(11)]},
        {"action": "create", "scope": "galaxy", "items": [{"content": "x"}]},
        {"action": "explode"},
        {"action": "create", "scope": "team", "items": [{"content": "no namespace"}]},
        {"action": "update", "items": []},
        {"action": "create", "layer": "forever", "items": [{"content": "x"}]},
    ],
)
def test_invalid_params(lmem: Memory, request_body: dict[str, Any], agent: TenantContext) -> None:
    res = lmem.crud(agent, request_body)
    assert [e.code for e in res.errors] == ["INVALID_PARAMS"] and res.items == []


def test_bulk_partial_errors_and_tenant_isolation(
    lmem: Memory, agent: TenantContext, other_tenant: TenantContext
) -> None:
    res = crud(lmem, agent, action="create", items=[{"content": "ok"}, {"content": ""}, {"content": "fine"}])
    assert [i["content"] for i in res.items] == ["ok", "fine"]
    assert [(e.code, e.details["index"]) for e in res.errors] == [("INVALID_PARAMS", 1)]
    mid = res.items[0]["id"]
    other = crud(lmem, other_tenant, action="read", items=[{"id": mid}])
    assert [e.code for e in other.errors] == ["NOT_FOUND"]
    actions = [
        r.action for r in lmem.engine.audit.recent(tenant_id=agent.tenant_id) if r.action.startswith("memory_crud")
    ]
    assert actions == ["memory_crud.create"]
