"""list: opaque cursors, totals, filters, stability under concurrent inserts."""

from __future__ import annotations

import pytest

from stratamem import ErrorCode, Memory, MemoryError, TenantContext

U1 = {"user_id": "u1"}


def _fill(mem: Memory, ctx: TenantContext, n: int, **extra: object) -> list[str]:
    items = [
        {
            "content": f"memory {i}",
            "layer": "user",
            "identifiers": U1,
            "metadata": {"n": i, "tags": ["even" if i % 2 == 0 else "odd"]},
            **extra,
        }
        for i in range(n)
    ]
    return [r.memory.id for r in mem.bulk_add(ctx, items).results]


def test_pages_cover_everything_once(mem: Memory, acme: TenantContext) -> None:
    ids = _fill(mem, acme, 23)
    seen: list[str] = []
    cursor = None
    while True:
        page = mem.list(acme, layer="user", identifiers=U1, cursor=cursor, limit=10)
        assert page.total_count == 23
        seen += [m.id for m in page.memories]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert sorted(seen) == sorted(ids) and len(seen) == 23


def test_default_limit_is_50(mem: Memory, acme: TenantContext) -> None:
    _fill(mem, acme, 60)
    page = mem.list(acme, layer="user", identifiers=U1)
    assert len(page.memories) == 50 and page.next_cursor is not None and page.total_count == 60


def test_stable_under_concurrent_inserts(mem: Memory, acme: TenantContext) -> None:
    original = set(_fill(mem, acme, 10))
    page1 = mem.list(acme, layer="user", identifiers=U1, limit=4)
    _fill(mem, acme, 5)  # inserted while the caller is paging
    seen = [m.id for m in page1.memories]
    cursor = page1.next_cursor
    while cursor:
        page = mem.list(acme, layer="user", identifiers=U1, cursor=cursor, limit=4)
        seen += [m.id for m in page.memories]
        cursor = page.next_cursor
    assert len(seen) == len(set(seen))  # no duplicates
    assert original <= set(seen)  # nothing skipped


def test_filters_on_list(mem: Memory, acme: TenantContext) -> None:
    _fill(mem, acme, 10)
    even = mem.list(acme, layer="user", identifiers=U1, filter={"tags": ["even"]}, limit=3)
    assert even.total_count == 5 and len(even.memories) == 3
    rest = mem.list(acme, layer="user", identifiers=U1, filter={"tags": ["even"]}, limit=3, cursor=even.next_cursor)
    assert len(rest.memories) == 2 and rest.next_cursor is None
    assert all(m.metadata["n"] % 2 == 0 for m in even.memories + rest.memories)
    ranged = mem.list(acme, layer="user", identifiers=U1, filter={"custom": {"n": {"gte": 3, "lt": 6}}})
    assert sorted(m.metadata["n"] for m in ranged.memories) == [3, 4, 5]


def test_invalid_cursors(mem: Memory, acme: TenantContext) -> None:
    _fill(mem, acme, 3)
    page = mem.list(acme, layer="user", identifiers=U1, limit=1)
    for bad in ("garbage", "", "eyJ2IjoxfQ", page.next_cursor[:-3] + "xyz"):  # type: ignore[index]
        with pytest.raises(MemoryError) as err:
            mem.list(acme, layer="user", identifiers=U1, cursor=bad, limit=1)
        assert err.value.code is ErrorCode.INVALID_PARAMS
    with pytest.raises(MemoryError) as err:  # a cursor of another query
        mem.list(acme, layer="user", identifiers={"user_id": "u2"}, cursor=page.next_cursor)
    assert err.value.code is ErrorCode.INVALID_PARAMS


def test_other_tenant_sees_nothing(mem: Memory, acme: TenantContext, globex: TenantContext) -> None:
    _fill(mem, acme, 3)
    assert mem.list(globex, layer="user", identifiers=U1).total_count == 0
    assert mem.list(globex).memories == []


def test_list_without_layer_lists_the_tenant(mem: Memory, acme: TenantContext) -> None:
    _fill(mem, acme, 2)
    mem.add(acme, content="team rule", layer="team", identifiers={"teamId": "t"})
    assert mem.list(acme).total_count == 3
