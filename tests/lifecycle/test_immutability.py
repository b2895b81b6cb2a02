"""Seed 002 §8.3: "Scope and promotedFromId are immutable after creation" (and §14: provenance chains
such as compactedFromIds are never flattened). Every write path refuses to change them with
INVALID_PARAMS (``details.reason == "immutable"``); promote/compact are the documented way to a new entry."""

from __future__ import annotations

import pytest

from stratamem import Memory, MemoryError, TenantContext

S = {"user_id": "u1", "session_id": "s1"}
U = {"user_id": "u1"}


def _immutable(exc: MemoryError, field: str, mid: str) -> None:
    assert exc.code.value == "INVALID_PARAMS"
    assert exc.message == (f"{field} is immutable after creation; promote or compact to create a new entry instead")
    assert exc.details == {"field": field, "reason": "immutable", "id": mid}
    assert exc.retryable is False


def test_promoted_from_id_cannot_be_changed_or_removed(lmem: Memory, acme: TenantContext) -> None:
    src = lmem.add(acme, "Deploys happen on Fridays", layer="session", identifiers=S).memory
    promoted = lmem.promote(acme, src.id, "user")
    assert promoted.metadata["promotedFromId"] == src.id
    for patch in ({"promotedFromId": "forged-id"}, {"promotedFromId": None}):
        with pytest.raises(MemoryError) as err:
            lmem.update(acme, promoted.id, metadata=patch)
        _immutable(err.value, "metadata.promotedFromId", promoted.id)
    # content, tags and other metadata stay updatable; re-sending the same value is not a change
    out = lmem.update(
        acme, promoted.id, content="Deploys happen on Thursdays", metadata={"tags": ["ops"], "promotedFromId": src.id}
    ).memory
    assert (out.content, out.tags, out.version) == ("Deploys happen on Thursdays", ["ops"], 2)
    stored = lmem.get(acme, promoted.id)
    assert stored is not None
    assert stored.metadata["promotedFromId"] == src.id and stored.provenance.promoted_from_id == src.id
    assert (stored.layer.value, stored.identifiers.user_id) == ("user", "u1")


def test_a_plain_entry_cannot_gain_a_provenance_chain(lmem: Memory, acme: TenantContext) -> None:
    plain = lmem.add(acme, "User prefers dark mode", layer="user", identifiers=U).memory
    for key, value in (("promotedFromId", "x"), ("compactedFromIds", ["a", "b"])):
        with pytest.raises(MemoryError) as err:
            lmem.update(acme, plain.id, metadata={key: value})
        _immutable(err.value, f"metadata.{key}", plain.id)
    got = lmem.get(acme, plain.id)
    assert got is not None and got.version == 1 and "promotedFromId" not in got.metadata


def test_compacted_from_ids_cannot_be_flattened(lmem: Memory, acme: TenantContext) -> None:
    a = lmem.add(acme, "Standup is at nine", layer="user", identifiers=U).memory.id
    b = lmem.add(acme, "Standup moved to ten", layer="user", identifiers=U).memory.id
    merged = lmem.compact(acme, [a, b], lambda entries: "Standup is at ten")
    with pytest.raises(MemoryError) as err:
        lmem.update(acme, merged.id, metadata={"compactedFromIds": [a]})
    _immutable(err.value, "metadata.compactedFromIds", merged.id)
    got = lmem.get(acme, merged.id)
    assert got is not None and got.metadata["compactedFromIds"] == [a, b]


def test_scope_is_immutable_through_the_sdk_and_memory_crud(mem: Memory) -> None:
    t = TenantContext(tenant_id="acme", principal="agent-7")
    with pytest.raises(TypeError):  # update has no layer/identifiers parameters at all
        mem.update(t, "any-id", content="x", layer="org")  # type: ignore[call-arg]
    created = mem.crud(t, {"action": "create", "items": [{"content": "Prefers concise answers"}]})
    mid = created.items[0]["id"]
    res = mem.crud(
        t, {"action": "update", "items": [{"id": mid, "content": "Prefers long answers", "target_scope": "global"}]}
    )
    assert res.items == []
    assert [e.model_dump() for e in res.errors] == [
        {
            "code": "INVALID_PARAMS",
            "message": "the scope of a memory is immutable after creation; use action 'promote' to copy it to a "
            "broader scope",
            "details": {"field": "target_scope", "reason": "immutable", "index": 0},
        }
    ]
    res = mem.crud(t, {"action": "update", "items": [{"id": mid, "metadata": {"promotedFromId": "x"}}]})
    assert [(e.code, e.details) for e in res.errors] == [
        (
            "INVALID_PARAMS",
            {
                "field": "metadata.promotedFromId",
                "reason": "immutable",
                "id": mid,
                "cause": "INVALID_PARAMS",
                "index": 0,
            },
        )
    ]
    got = mem.get(t, mid)
    assert got is not None and (got.content, got.layer.value, got.version) == ("Prefers concise answers", "agent", 1)
