"""Promotion from both volatile layers (agent and session) at session close, and importance that
moves on update as well as on access."""

from __future__ import annotations

from stratamem import Memory, TenantContext
from stratamem.model import Layer

from .conftest import access

S = {"user_id": "u1", "session_id": "s1"}
AGENT_IN_S1 = {"agent_id": "planner", "user_id": "u1", "session_id": "s1"}


def test_agent_memories_of_the_session_are_evaluated_at_close(lmem: Memory, acme: TenantContext) -> None:
    mine = lmem.add(acme, "minor remark from the planner", layer="agent", identifiers=AGENT_IN_S1).memory
    other_session = lmem.add(
        acme,
        "minor remark, earlier",
        layer="agent",
        identifiers={"agent_id": "planner", "user_id": "u1", "session_id": "s0"},
    ).memory
    other_agent = lmem.add(
        acme,
        "minor remark from the critic",
        layer="agent",
        identifiers={"agent_id": "critic", "user_id": "u1", "session_id": "s1"},
    ).memory
    for mid in (mine.id, other_session.id, other_agent.id):
        access(lmem, acme, mid, 3)  # importance 0.8 == threshold
    result = lmem.close_session(acme, "u1", "s1", agent_id="planner")
    assert result.evaluated == 1
    assert [p.source_id for p in result.promoted] == [mine.id]
    promoted = lmem.get(acme, result.promoted[0].promoted_id)
    assert promoted is not None and promoted.layer == Layer.USER
    assert promoted.metadata["promotedFromId"] == mine.id
    assert lmem.get(acme, mine.id) is not None  # agent memories are not deleted at session close
    again = lmem.close_session(acme, "u1", "s1", agent_id="planner")
    assert again.promoted == []  # closing twice does not copy twice
    assert lmem.close_session(acme, "u1", "s1").evaluated == 0  # without agent_id: session memories only


def test_sensitive_agent_memory_is_blocked(lmem: Memory, acme: TenantContext) -> None:
    src = lmem.add(
        acme,
        "planner note about the user's health",
        layer="agent",
        identifiers=AGENT_IN_S1,
        metadata={"sensitive": True},
    ).memory
    access(lmem, acme, src.id, 5)
    result = lmem.close_session(acme, "u1", "s1", agent_id="planner")
    assert result.promoted == [] and [(b.source_id, b.reason) for b in result.blocked] == [(src.id, "sensitive")]


def test_an_update_raises_importance_like_an_access(lmem: Memory, acme: TenantContext) -> None:
    src = lmem.add(acme, "minor remark", layer="session", identifiers=S).memory
    access(lmem, acme, src.id, 2)  # 0.7: below the 0.8 threshold
    lmem.update(acme, src.id, metadata={"note": "checked"})
    stored = lmem.get(acme, src.id)
    assert stored is not None and stored.access_count == 3  # 2 reads and the update (a read counts after it)
    result = lmem.close_session(acme, "u1", "s1")
    assert [p.source_id for p in result.promoted] == [src.id]
