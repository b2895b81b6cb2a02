"""Event row ids: random version-4 UUIDs, drawn together for the rows of one operation.

Each ``uuid.uuid4()`` is a system call around which CPython releases the GIL; in a busy server
every such call waits for the GIL again. A search writes a row per memory it returned, so its ids
come from one ``os.urandom`` call."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from stratamem import Memory, TenantContext
from stratamem.hygiene import events
from stratamem.providers.duckdb import DuckDBProvider

U1 = {"user_id": "u1"}


def test_event_ids_are_distinct_version_4_uuids() -> None:
    ids = events.event_ids(500)
    assert len(ids) == len(set(ids)) == 500
    for value in ids:
        parsed = uuid.UUID(value)
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122 and str(parsed) == value
    assert events.event_ids(0) == [] and events.event_ids(-1) == []


def test_a_search_draws_its_event_ids_with_one_system_call(
    db_path: Path, acme: TenantContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Memory.open(db_path, embedder="hashing") as mem:
        for i in range(6):
            mem.add(acme, content=f"dark mode note {i} for the editor", layer="user", identifiers=U1)
        calls: list[int] = []
        real = os.urandom

        def counting(n: int) -> bytes:
            calls.append(n)
            return real(n)

        monkeypatch.setattr(events.os, "urandom", counting)
        found = mem.search(acme, "dark mode note", identifiers=U1, threshold=0.0, limit=5).results
        monkeypatch.undo()
        assert len(found) == 5
        assert calls == [16 * 6]  # the search row and five access rows
        provider = mem.engine.provider
        assert isinstance(provider, DuckDBProvider)
        rows = provider.list_memory_events("acme", events=["search", "access"])
        assert sorted(r["event"] for r in rows) == ["access"] * 5 + ["search"]
        assert len({r["id"] for r in rows}) == 6
