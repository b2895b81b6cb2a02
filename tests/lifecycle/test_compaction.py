"""Seed 002 §5.4, §8.8, §11 (same-scope compaction), §16 (provenance survives)."""

from __future__ import annotations

import pytest

from stratamem import Memory, MemoryEntry, MemoryError, TenantContext

U = {"user_id": "u1"}


def _three(mem: Memory, ctx: TenantContext) -> list[str]:
    return [
        mem.add(
            ctx,
            text,
            layer="user",
            identifiers=U,
            metadata={"tags": [tag]},
            provenance={"agentId": "scribe", "source": "chat", "confidence": conf},
        ).memory.id
        for text, tag, conf in [
            ("likes tea", "drink", 0.9),
            ("likes green tea", "drink", 0.6),
            ("drinks tea daily", "habit", 0.8),
        ]
    ]


def test_compact_callback_receives_entries(lmem: Memory, acme: TenantContext) -> None:
    ids = _three(lmem, acme)
    seen: list[list[str]] = []

    def summarise(entries: list[MemoryEntry]) -> str:
        seen.append([e.id for e in entries])
        return "Drinks green tea daily"

    out = lmem.compact(acme, ids, summarise)
    assert seen == [ids]
    assert out.content == "Drinks green tea daily" and out.layer.value == "user"
    assert out.provenance.compacted_from_ids == ids and out.metadata["compactedFromIds"] == ids
    assert (out.provenance.agent_id, out.provenance.source, out.provenance.confidence) == ("scribe", "chat", 0.6)
    assert out.tags == ["drink", "habit"]
    assert all(lmem.get(acme, i) is not None for i in ids)  # sources kept by default


def test_compact_deletes_sources_when_asked(lmem: Memory, acme: TenantContext) -> None:
    ids = _three(lmem, acme)
    out = lmem.compact(
        acme, ids, lambda entries: " / ".join(e.content for e in entries), delete_sources=True, tags=["summary"]
    )
    assert out.content == "likes tea / likes green tea / drinks tea daily" and out.tags == ["summary"]
    assert all(lmem.get(acme, i) is None for i in ids)
    assert lmem.list(acme, "user", identifiers=U).total_count == 1


def test_async_callback(lmem: Memory, acme: TenantContext) -> None:
    ids = _three(lmem, acme)

    async def summarise(entries: list[MemoryEntry]) -> str:
        return f"{len(entries)} tea facts"

    assert lmem.compact(acme, ids, summarise).content == "3 tea facts"


def test_callback_error_wrapped(lmem: Memory, acme: TenantContext) -> None:
    ids = _three(lmem, acme)

    def boom(entries: list[MemoryEntry]) -> str:
        raise TimeoutError("llm timed out")

    with pytest.raises(MemoryError) as exc:
        lmem.compact(acme, ids, boom, delete_sources=True)
    assert exc.value.code.value == "COMPACTION_FAILED" and "llm timed out" in exc.value.message
    assert isinstance(exc.value.__cause__, TimeoutError)
    assert all(lmem.get(acme, i) is not None for i in ids)  # nothing lost
    with pytest.raises(MemoryError) as exc2:
        lmem.compact(acme, ids, lambda entries: "  ")
    assert exc2.value.code.value == "COMPACTION_FAILED"


def test_cross_scope_rejected(lmem: Memory, acme: TenantContext) -> None:
    a = lmem.add(acme, "one", layer="user", identifiers=U).memory.id
    b = lmem.add(acme, "two", layer="user", identifiers={"user_id": "u2"}).memory.id
    with pytest.raises(MemoryError) as exc:
        lmem.compact(acme, [a, b], lambda entries: "x")
    assert exc.value.code.value == "INVALID_PARAMS"
    with pytest.raises(MemoryError) as exc2:
        lmem.compact(acme, [a], lambda entries: "x", target_layer="project")
    assert exc2.value.code.value == "INVALID_PARAMS"
    with pytest.raises(MemoryError) as exc3:
        lmem.compact(acme, [], lambda entries: "x")
    assert exc3.value.code.value == "INVALID_PARAMS"
    with pytest.raises(MemoryError) as exc4:
        lmem.compact(acme, [a, "missing"], lambda entries: "x")
    assert exc4.value.code.value == "MEMORY_NOT_FOUND"


def test_promoted_then_compacted_keeps_chain(lmem: Memory, acme: TenantContext) -> None:
    s = lmem.add(
        acme,
        "uses dark mode",
        layer="session",
        identifiers={"user_id": "u1", "session_id": "s1"},
        provenance={"agentId": "ui-agent"},
    ).memory
    p = lmem.promote(acme, s.id, "user")
    other = lmem.add(acme, "uses large fonts", layer="user", identifiers=U).memory
    c = lmem.compact(acme, [p.id, other.id], lambda entries: "UI: dark mode, large fonts")
    assert c.provenance.compacted_from_ids == [p.id, other.id]
    assert c.provenance.agent_id == "ui-agent" and c.provenance.created_in_session_id == "s1"
    p_again = lmem.get(acme, p.id)
    assert p_again is not None and p_again.provenance.promoted_from_id == s.id


def test_delete_by_scope(lmem: Memory, acme: TenantContext, globex: TenantContext) -> None:
    s1 = {"user_id": "u1", "session_id": "s1"}
    for i in range(3):
        lmem.add(acme, f"session note {i}", layer="session", identifiers=s1)
    keep = lmem.add(acme, "other session", layer="session", identifiers={"user_id": "u1", "session_id": "s2"}).memory.id
    keep_user = lmem.add(acme, "user fact", layer="user", identifiers=U).memory.id
    theirs = lmem.add(globex, "globex session", layer="session", identifiers=s1).memory.id
    assert lmem.delete_by_scope(acme, "session", s1) == 3
    assert lmem.delete_by_scope(acme, "session", s1) == 0
    assert lmem.get(acme, keep) is not None and lmem.get(acme, keep_user) is not None
    assert lmem.get(globex, theirs) is not None
    with pytest.raises(MemoryError) as exc:
        lmem.delete_by_scope(acme, "session", {"user_id": "u1"})
    assert exc.value.code.value == "MISSING_IDENTIFIER"
