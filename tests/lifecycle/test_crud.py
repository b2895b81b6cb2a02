"""The seed-001 ``memory_crud`` contract end to end."""

from __future__ import annotations

from typing import Any

import pytest

from stratamem import Memory, TenantContext

AGENT = TenantContext(tenant_id="acme", principal="agent-7", roles=("agent",))
SYS4 = TenantContext(tenant_id="acme", principal="sys4-bot", roles=("sys4",))
OTHER_TENANT = TenantContext(tenant_id="globex", principal="agent-7")


def crud(mem: Memory, ctx: TenantContext, **req: Any) -> Any:
    return mem.crud(ctx, req)


def test_create_read_update_delete_default_agent_scope(lmem: Memory) -> None:
    created = crud(lmem, AGENT, action="create", layer="long_term",
                   items=[{"content": "prefers concise answers", "tags": ["style"]}])
    assert created.errors == [] and created.has_more is False and created.next_cursor is None
    item = created.items[0]
    assert (item["scope"], item["namespace"], item["layer"], item["version"]) == ("agent", "agent-7", "long_term", 1)
    assert item["conflict"] is False and item["conflict_of"] is None and item["metadata"]["tags"] == ["style"]
    read = crud(lmem, AGENT, action="read", items=[{"id": item["id"]}])
    assert read.items[0]["content"] == "prefers concise answers"
    upd = crud(lmem, AGENT, action="update", if_match=item["etag"], items=[{"id": item["id"], "content": "concise"}])
    assert upd.errors == [] and upd.items[0]["version"] == 2 and upd.items[0]["etag"] != item["etag"]
    gone = crud(lmem, AGENT, action="delete", items=[{"id": item["id"]}])
    assert gone.items == [{"id": item["id"], "deleted": True}]
    again = crud(lmem, AGENT, action="delete", items=[{"id": item["id"]}])
    assert again.items == [{"id": item["id"], "deleted": False}] and again.errors == []
    missing = crud(lmem, AGENT, action="read", items=[{"id": item["id"]}])
    assert [(e.code, e.details["index"]) for e in missing.errors] == [("NOT_FOUND", 0)]


def test_conflict_on_stale_etag_stores_conflict_entry(lmem: Memory) -> None:
    item = crud(lmem, SYS4, action="create", scope="team", namespace="ops", items=[{"content": "oncall: Ann"}]).items[0]
    crud(lmem, AGENT, action="update", scope="team", namespace="ops", items=[{"id": item["id"], "content": "Bob"}])
    res = crud(lmem, AGENT, action="update", scope="team", namespace="ops", if_match=item["etag"],
               items=[{"id": item["id"], "content": "oncall: Cid"}])
    assert res.items == [] and [e.code for e in res.errors] == ["CONFLICT"]
    conflict_id = res.errors[0].details["conflict_id"]
    listed = crud(lmem, AGENT, action="list", scope="team", namespace="ops", filters={"conflict": True})
    assert [(i["id"], i["conflict"], i["conflict_of"], i["content"]) for i in listed.items] == [
        (conflict_id, True, item["id"], "oncall: Cid")]


def test_global_write_needs_privileged_role(lmem: Memory) -> None:
    denied = crud(lmem, AGENT, action="create", scope="global", namespace="acme", items=[{"content": "x"}])
    assert [e.code for e in denied.errors] == ["FORBIDDEN"] and denied.items == []
    rec = lmem.engine.audit.recent(tenant_id="acme", action="memory_crud.create")[-1]
    assert rec.outcome == "denied" and rec.code == "FORBIDDEN"
    ok = crud(lmem, SYS4, action="create", scope="global", namespace="acme", items=[{"content": "company holiday"}])
    assert ok.errors == [] and ok.items[0]["scope"] == "global" and ok.items[0]["namespace"] == "acme"
    # anyone may read global
    assert crud(lmem, AGENT, action="list", scope="global", namespace="acme").items[0]["content"] == "company holiday"
    # another agent's private scope is off limits
    peek = crud(lmem, AGENT, action="list", namespace="agent-9")
    assert [e.code for e in peek.errors] == ["FORBIDDEN"]


def test_promote_agent_to_team_and_global(lmem: Memory) -> None:
    item = crud(lmem, AGENT, action="create", items=[{"content": "retry flaky tests twice"}]).items[0]
    team = crud(lmem, AGENT, action="promote", items=[{"id": item["id"], "target_scope": "team",
                                                         "target_namespace": "qa"}])
    assert team.errors == [] and team.items[0]["scope"] == "team" and team.items[0]["namespace"] == "qa"
    assert team.items[0]["provenance"]["promotedFromId"] == item["id"]
    denied = crud(lmem, AGENT, action="promote", items=[{"id": item["id"], "target_scope": "global",
                                                           "target_namespace": "acme"}])
    assert [e.code for e in denied.errors] == ["FORBIDDEN"]
    down = crud(lmem, SYS4, action="promote", scope="team", namespace="qa",
                items=[{"id": team.items[0]["id"], "target_scope": "agent"}])
    assert [(e.code, e.details["cause"]) for e in down.errors] == [("INVALID_PARAMS", "INVALID_SCOPE_PROMOTION")]


def test_list_pagination_cursor_and_limits(lmem: Memory) -> None:
    for i in range(30):
        crud(lmem, AGENT, action="create", layer="working", items=[{"content": f"note {i}"}])
    crud(lmem, AGENT, action="create", layer="meta", items=[{"content": "meta note"}])
    first = crud(lmem, AGENT, action="list", layer="working")
    assert len(first.items) == 25 and first.has_more is True and first.next_cursor
    second = crud(lmem, AGENT, action="list", layer="working", cursor=first.next_cursor)
    assert len(second.items) == 5 and second.has_more is False and second.next_cursor is None
    assert {i["content"] for i in first.items + second.items} == {f"note {i}" for i in range(30)}
    bad = crud(lmem, AGENT, action="list", cursor="not-a-cursor")
    assert [e.code for e in bad.errors] == ["INVALID_PARAMS"]
    assert [e.code for e in crud(lmem, AGENT, action="list", limit=101).errors] == ["INVALID_PARAMS"]
    assert len(crud(lmem, AGENT, action="list", limit=100).items) == 31


@pytest.mark.parametrize("request_body", [
    {"action": "create", "items": [{"content": f"c{i}"} for i in range(11)]},
    {"action": "create", "scope": "galaxy", "items": [{"content": "x"}]},
    {"action": "explode"},
    {"action": "create", "scope": "team", "items": [{"content": "no namespace"}]},
    {"action": "update", "items": []},
    {"action": "create", "layer": "forever", "items": [{"content": "x"}]},
])
def test_invalid_params(lmem: Memory, request_body: dict[str, Any]) -> None:
    res = lmem.crud(AGENT, request_body)
    assert [e.code for e in res.errors] == ["INVALID_PARAMS"] and res.items == []


def test_bulk_partial_errors_and_tenant_isolation(lmem: Memory) -> None:
    res = crud(lmem, AGENT, action="create", items=[{"content": "ok"}, {"content": ""}, {"content": "fine"}])
    assert [i["content"] for i in res.items] == ["ok", "fine"]
    assert [(e.code, e.details["index"]) for e in res.errors] == [("INVALID_PARAMS", 1)]
    mid = res.items[0]["id"]
    other = crud(lmem, OTHER_TENANT, action="read", items=[{"id": mid}])
    assert [e.code for e in other.errors] == ["NOT_FOUND"]
    actions = [r.action for r in lmem.engine.audit.recent(tenant_id="acme") if r.action.startswith("memory_crud")]
    assert actions == ["memory_crud.create"]
