"""The query model of ``search`` and ``list`` on every provider: order, since/until, tags any/all,
include_narrower, and ``update(expires_at=None)`` clearing an expiry."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from stratamem import Memory, MemoryError, TenantContext

U = {"user_id": "dana"}
S = {"user_id": "dana", "session_id": "s1"}
START = datetime(2026, 1, 1, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.at = START

    def __call__(self) -> datetime:
        return self.at


def _seed(mem: Memory, tenant: TenantContext, clock: Clock, n: int = 5) -> list[str]:
    """``n`` user memories one day apart (day 0 … n-1); returns their contents oldest first."""
    texts = []
    for day in range(n):
        clock.at = START + timedelta(days=day)
        text = f"note number {day} about the garden"
        mem.add(tenant, content=text, layer="user", identifiers=U, metadata={"tags": [f"d{day}", "garden"]})
        texts.append(text)
    return texts


def _contents(out: object) -> list[str]:
    if hasattr(out, "memories"):
        return [m.content for m in out.memories]
    return [r.memory.content for r in out.results]  # type: ignore[attr-defined]


def test_list_order_and_paging(open_store: Callable[..., Memory], tenant: TenantContext) -> None:
    clock = Clock()
    mem = open_store(clock=clock)
    texts = _seed(mem, tenant, clock)
    assert _contents(mem.list(tenant, "user", identifiers=U)) == texts
    assert _contents(mem.list(tenant, "user", identifiers=U, order="oldest")) == texts
    newest: list[str] = []
    cursor = None
    while True:
        page = mem.list(tenant, "user", identifiers=U, cursor=cursor, limit=2, order="newest")
        newest += _contents(page)
        assert page.total_count == 5
        cursor = page.next_cursor
        if cursor is None:
            break
    assert newest == texts[::-1]
    with pytest.raises(MemoryError) as exc:  # a cursor belongs to its order
        mem.list(
            tenant,
            "user",
            identifiers=U,
            cursor=mem.list(tenant, "user", identifiers=U, limit=2).next_cursor,
            order="newest",
        )
    assert exc.value.code.value == "INVALID_PARAMS"
    with pytest.raises(MemoryError) as exc:
        mem.list(tenant, "user", identifiers=U, order="relevance")
    assert exc.value.details["field"] == "order"


def test_since_until_on_created_and_updated(open_store: Callable[..., Memory], tenant: TenantContext) -> None:
    clock = Clock()
    mem = open_store(clock=clock)
    texts = _seed(mem, tenant, clock)
    window = {"since": START + timedelta(days=1), "until": (START + timedelta(days=3)).isoformat()}
    assert _contents(mem.list(tenant, "user", identifiers=U, **window)) == texts[1:3]  # type: ignore[arg-type]
    assert mem.list(tenant, "user", identifiers=U, **window).total_count == 2  # type: ignore[arg-type]
    found = mem.search(tenant, "garden note", identifiers=U, threshold=0.0, limit=10, **window)  # type: ignore[arg-type]
    assert sorted(_contents(found)) == sorted(texts[1:3])
    # updated time: touching the oldest memory later moves it into an "updated since" window
    clock.at = START + timedelta(days=10)
    oldest = mem.list(tenant, "user", identifiers=U, limit=1).memories[0]
    mem.update(tenant, oldest.id, metadata={"touched": True})
    recent = mem.list(tenant, "user", identifiers=U, since=START + timedelta(days=9), time_field="updated")
    assert _contents(recent) == [texts[0]]
    assert mem.list(tenant, "user", identifiers=U, since=START + timedelta(days=9)).memories == []
    with pytest.raises(MemoryError) as exc:
        mem.list(tenant, "user", identifiers=U, since=START + timedelta(days=3), until=START)
    assert exc.value.details["field"] == "until"
    with pytest.raises(MemoryError) as exc:
        mem.list(tenant, "user", identifiers=U, since="yesterday")
    assert exc.value.details["field"] == "since"


def test_created_at_filter_is_refused(open_store: Callable[..., Memory], tenant: TenantContext) -> None:
    mem = open_store()
    mem.add(tenant, content="a memory", layer="user", identifiers=U)
    for flt in ({"createdAt": {"gte": "2026-01-01"}}, {"custom": {"updated_at": {"lt": "2027-01-01"}}}):
        with pytest.raises(MemoryError) as exc:
            mem.list(tenant, "user", identifiers=U, filter=flt)
        assert exc.value.code.value == "INVALID_PARAMS"
        assert "since/until" in exc.value.message
        with pytest.raises(MemoryError):
            mem.search(tenant, "memory", identifiers=U, filter=flt)


def test_tags_any_and_all(open_store: Callable[..., Memory], tenant: TenantContext) -> None:
    clock = Clock()
    mem = open_store(clock=clock)
    texts = _seed(mem, tenant, clock, 3)
    tags = {"tags": ["d1", "garden"]}
    assert _contents(mem.list(tenant, "user", identifiers=U, filter=tags)) == texts
    assert _contents(mem.list(tenant, "user", identifiers=U, filter=tags, tags_match="all")) == [texts[1]]
    assert _contents(mem.list(tenant, "user", identifiers=U, filter={**tags, "tagsMatch": "all"})) == [texts[1]]
    found = mem.search(tenant, "garden note", identifiers=U, threshold=0.0, filter=tags, tags_match="all")
    assert _contents(found) == [texts[1]]
    with pytest.raises(MemoryError) as exc:
        mem.list(tenant, "user", identifiers=U, filter=tags, tags_match="most")
    assert exc.value.details["field"] == "tags_match"


def test_include_narrower(open_store: Callable[..., Memory], tenant: TenantContext) -> None:
    clock = Clock()
    mem = open_store(clock=clock)
    mem.add(tenant, content="user fact one", layer="user", identifiers=U)
    clock.at += timedelta(hours=1)
    mem.add(tenant, content="session fact in s1", layer="session", identifiers=S)
    clock.at += timedelta(hours=1)
    mem.add(tenant, content="session fact in s2", layer="session", identifiers={**U, "session_id": "s2"})
    clock.at += timedelta(hours=1)
    mem.add(tenant, content="user fact two", layer="user", identifiers=U)
    # without a session id nothing narrower is discovered
    assert _contents(mem.list(tenant, "user", identifiers=U, include_narrower=True)) == [
        "user fact one",
        "user fact two",
    ]
    # with it: the user's memories plus that session's, merged in order, across pages
    both = mem.list(tenant, "user", identifiers=S, include_narrower=True, limit=2)
    assert _contents(both) == ["user fact one", "session fact in s1"]
    assert both.total_count == 3
    rest = mem.list(tenant, "user", identifiers=S, include_narrower=True, limit=2, cursor=both.next_cursor)
    assert _contents(rest) == ["user fact two"] and rest.next_cursor is None
    newest = mem.list(tenant, "user", identifiers=S, include_narrower=True, order="newest")
    assert _contents(newest) == ["user fact two", "session fact in s1", "user fact one"]
    assert _contents(mem.list(tenant, "user", identifiers=S)) == ["user fact one", "user fact two"]  # opt-in
    found = mem.search(tenant, "fact", identifiers=S, layers=["user"], threshold=0.0, include_narrower=True)
    assert sorted(_contents(found)) == ["session fact in s1", "user fact one", "user fact two"]
    assert {lyr.value for lyr in found.searched_layers} == {"user", "session"}
    with pytest.raises(MemoryError) as exc:
        mem.list(tenant, None, identifiers=S, include_narrower=True)
    assert exc.value.details["field"] == "include_narrower"


def test_search_order_by_time(open_store: Callable[..., Memory], tenant: TenantContext) -> None:
    clock = Clock()
    mem = open_store(clock=clock)
    texts = _seed(mem, tenant, clock, 4)
    newest = mem.search(tenant, "garden note", identifiers=U, threshold=0.0, limit=10, order="newest")
    assert _contents(newest) == texts[::-1]
    oldest = mem.search(tenant, "garden note", identifiers=U, threshold=0.0, limit=10, order="oldest")
    assert _contents(oldest) == texts


def test_update_expires_at_none_clears(open_store: Callable[..., Memory], tenant: TenantContext) -> None:
    clock = Clock()
    mem = open_store(clock=clock)
    expiry = START + timedelta(days=7)
    entry = mem.add(tenant, content="temporary note", layer="user", identifiers=U, expires_at=expiry).memory
    kept = mem.update(tenant, entry.id, content="temporary note, edited").memory
    assert kept.expires_at is not None and kept.expires_at.replace(tzinfo=UTC) == expiry
    cleared = mem.update(tenant, entry.id, expires_at=None).memory
    assert cleared.expires_at is None
    got = mem.get(tenant, entry.id)
    assert got is not None and got.expires_at is None
    clock.at = START + timedelta(days=30)  # it no longer expires
    assert mem.get(tenant, entry.id) is not None


def test_list_expires_before(open_store: Callable[..., Memory], tenant: TenantContext) -> None:
    """``expires_before`` lists the memories with an expiry before that time, in the list's order and
    pages; memories that never expire are left out and expired ones stay out as in any list."""
    clock = Clock()
    mem = open_store(clock=clock)
    day = timedelta(days=1)

    def add(text: str, expires: datetime | None, ids: dict[str, str] = U, tags: list[str] | None = None) -> None:
        clock.at += timedelta(minutes=1)  # distinct creation times: a stable list order
        mem.add(
            tenant,
            content=text,
            layer="user" if ids is U else "session",
            identifiers=ids,
            metadata={"tags": tags or []},
            expires_at=expires,
        )

    add("gone by day one", START + day)
    add("expires on day two", START + 2 * day, tags=["t"])
    add("never expires", None, tags=["t"])
    add("expires on day five", START + 5 * day)
    add("expires on day twenty", START + 20 * day, tags=["t"])
    add("session note, day three", START + 3 * day, ids=S)
    clock.at = START + 1.5 * day  # the first one has expired
    week = START + 7 * day
    soon = mem.list(tenant, "user", identifiers=U, expires_before=week)
    assert _contents(soon) == ["expires on day two", "expires on day five"]
    assert soon.total_count == 2 and soon.next_cursor is None
    for m in soon.memories:
        assert m.expires_at is not None and m.expires_at.replace(tzinfo=m.expires_at.tzinfo or UTC) < week
    # a string (UTC when it has no offset) means the same; newest first is the reverse
    assert _contents(mem.list(tenant, "user", identifiers=U, expires_before="2026-01-08T00:00:00")) == _contents(soon)
    newest = mem.list(tenant, "user", identifiers=U, expires_before=week.isoformat(), order="newest")
    assert _contents(newest) == ["expires on day five", "expires on day two"]
    # pages of one: the cursor carries the filter, and belongs to it
    first = mem.list(tenant, "user", identifiers=U, expires_before=week, limit=1)
    assert _contents(first) == ["expires on day two"] and first.total_count == 2 and first.next_cursor
    second = mem.list(tenant, "user", identifiers=U, expires_before=week, limit=1, cursor=first.next_cursor)
    assert _contents(second) == ["expires on day five"] and second.next_cursor is None
    with pytest.raises(MemoryError) as exc:
        mem.list(tenant, "user", identifiers=U, limit=1, cursor=first.next_cursor)
    assert exc.value.code.value == "INVALID_PARAMS"
    plain = mem.list(tenant, "user", identifiers=U, limit=1).next_cursor
    with pytest.raises(MemoryError) as exc:
        mem.list(tenant, "user", identifiers=U, expires_before=week, limit=1, cursor=plain)
    assert exc.value.code.value == "INVALID_PARAMS"
    # with a metadata filter (evaluated in Python by the SQL providers) and other bounds
    tagged = mem.list(tenant, "user", identifiers=U, filter={"tags": ["t"]}, expires_before=START + 30 * day)
    assert _contents(tagged) == ["expires on day two", "expires on day twenty"]
    assert _contents(mem.list(tenant, "user", identifiers=U, expires_before=START + 2 * day)) == []  # strictly before
    assert _contents(mem.list(tenant, "user", identifiers=U, expires_before=START)) == []  # a past bound: nothing live
    # tenant-wide and with the narrower session scope
    assert _contents(mem.list(tenant, expires_before=START + 4 * day)) == [
        "expires on day two",
        "session note, day three",
    ]
    wide = mem.list(tenant, "user", identifiers=S, include_narrower=True, expires_before=START + 4 * day)
    assert _contents(wide) == ["expires on day two", "session note, day three"]
    for bad in ("next week", 12, "2026-13-01"):
        with pytest.raises(MemoryError) as exc:
            mem.list(tenant, "user", identifiers=U, expires_before=bad)  # type: ignore[arg-type]
        assert exc.value.code.value == "INVALID_PARAMS" and exc.value.details["field"] == "expires_before"
