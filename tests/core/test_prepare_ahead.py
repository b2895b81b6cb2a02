"""Adds prepared ahead of their transaction (``MemoryProvider.prepare_add``, ``PreparingWriteHook``).

A batch of ``MemoryEngine.prepare_ahead_min`` items or more is embedded while another thread builds
its rows, postings and graph. These tests check that this changes nothing in what is stored, that a
dictionary change between the preparation and the commit is honoured, and that a failed or
mismatched preparation only means the work is done in the transaction.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from stratamem import Memory, MemoryEntry, TenantContext
from stratamem.model import AddMemoryInput

T = TenantContext(tenant_id="acme")
U = {"user_id": "u1"}
TEXTS = [
    f"{who} works on {what} and migrated to {where} after the {why} incident on day {i}."
    for i, (who, what, where, why) in enumerate(
        (w, s, p, r)
        for w in ("Alice Chen", "Bob Okafor", "Chiara Rossi", "Dmitri Ivanov")
        for s in ("Billing", "Search", "Auth")
        for p in ("Kubernetes", "Nomad", "Hetzner")
        for r in ("timeout", "disk")
    )
]


@pytest.fixture()
def stores(tmp_path: Path) -> Iterator[tuple[Memory, Memory]]:
    ahead = Memory.open(tmp_path / "ahead.duckdb", embedder="hashing")
    inline = Memory.open(tmp_path / "inline.duckdb", embedder="hashing")
    inline.engine.prepare_ahead_min = 10**9  # everything in the transaction, as before
    yield ahead, inline
    ahead.close()
    inline.close()


def _rows(mem: Memory, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    with mem.engine.provider._read() as cur:  # type: ignore[attr-defined]
        return sorted(cur.execute(sql, list(params)).fetchall())


def _content_of(mem: Memory) -> dict[str, str]:
    return dict(_rows(mem, "SELECT id, content FROM memories WHERE tenant_id = ?", [T.tenant_id]))


def _stored(mem: Memory) -> dict[str, list[tuple[Any, ...]]]:
    """Everything an add writes, with memory ids replaced by the memory's content (ids are random)."""
    content = _content_of(mem)
    tid = [T.tenant_id]

    def by_content(rows: list[tuple[Any, ...]], *cols: int) -> list[tuple[Any, ...]]:
        return sorted(tuple(content.get(v, v) if i in cols else v for i, v in enumerate(r)) for r in rows)

    return {
        "memories": _rows(
            mem, "SELECT content, content_hash, layer, scope, status, version FROM memories WHERE tenant_id = ?", tid
        ),
        "postings": by_content(
            _rows(
                mem, "SELECT term, memory_id, tf, length, layer, scope FROM lexical_postings WHERE tenant_id = ?", tid
            ),
            1,
        ),
        "entities": _rows(mem, "SELECT entity_id, name, norm_name, type FROM entities WHERE tenant_id = ?", tid),
        "nodes": by_content(_rows(mem, "SELECT node_id, layer, label FROM memory_nodes WHERE tenant_id = ?", tid), 0),
        "mentions": by_content(
            _rows(mem, "SELECT memory_id, target_id, rel_type FROM memory_edges WHERE tenant_id = ?", tid), 0
        ),
        "relations": by_content(
            _rows(mem, "SELECT source_id, target_id, rel_type, memory_id FROM entity_edges WHERE tenant_id = ?", tid), 3
        ),
        "cache": _rows(mem, "SELECT content_hash FROM embedding_cache WHERE tenant_id = ?", tid),
    }


def _count_calls(monkeypatch: pytest.MonkeyPatch, obj: Any, name: str) -> list[int]:
    calls: list[int] = []
    real = getattr(obj, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(obj, name, counted)
    return calls


def _items(texts: Sequence[str]) -> list[dict[str, Any]]:
    return [{"content": t, "layer": "user", "identifiers": U} for t in texts]


def test_prepared_batches_store_exactly_what_inline_batches_store(
    stores: tuple[Memory, Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    ahead, inline = stores
    prepared_calls = _count_calls(monkeypatch, ahead.graph.store, "after_add_prepared")  # type: ignore[union-attr]
    inline_calls = _count_calls(monkeypatch, inline.graph.store, "after_add_prepared")  # type: ignore[union-attr]
    for mem in (ahead, inline):
        for start in range(0, len(TEXTS), 36):  # later batches meet the names of earlier ones
            mem.bulk_add(T, _items(TEXTS[start : start + 36]))
    assert len(prepared_calls) == 2 and inline_calls == []
    got, want = _stored(ahead), _stored(inline)
    assert got["entities"] and got["relations"] and got["postings"]  # the comparison covers real rows
    assert got == want
    for query in ("Chiara works on Auth with Nomad", "disk incident", "Hetzner"):
        a = ahead.search(T, query, identifiers=U, layers=["user"], limit=5, threshold=0.0)
        b = inline.search(T, query, identifiers=U, layers=["user"], limit=5, threshold=0.0)
        assert [(r.memory.content, round(r.score, 9)) for r in a.results] == [
            (r.memory.content, round(r.score, 9)) for r in b.results
        ]


def _entries(mem: Memory, texts: Sequence[str]) -> list[MemoryEntry]:
    eng = mem.engine
    entries = [eng._prepare(T, AddMemoryInput(content=t, layer="user", identifiers=U), "bulk_add") for t in texts]
    vectors, _ = eng.embeddings.embed_contents(T.tenant_id, texts, "bulk_add", persist=False)
    for entry, vec in zip(entries, vectors, strict=True):
        entry.embedding = [float(x) for x in vec]
    return entries


def _mentioned_names(mem: Memory, memory_id: str) -> set[str]:
    return {
        r[0]
        for r in _rows(
            mem,
            "SELECT e.name FROM memory_edges m JOIN entities e ON e.tenant_id = m.tenant_id "
            "AND e.entity_id = m.target_id WHERE m.tenant_id = ? AND m.memory_id = ?",
            [T.tenant_id, memory_id],
        )
    }


def test_a_name_that_enters_the_dictionary_after_preparing_is_still_recognised(stores: tuple[Memory, Memory]) -> None:
    mem, _ = stores
    provider = mem.engine.provider
    entries = _entries(mem, ["we deployed zorblax to production today"])
    prepared = provider.prepare_add(entries)
    assert prepared is not None
    plan = prepared.hooks[id(mem.graph.store)].plan  # type: ignore[union-attr]
    assert not any(e["norm"] == "zorblax" for e in plan.entities)  # unknown when prepared
    mem.add(T, "Zorblax is built by Acme Corp.", layer="user", identifiers=U)  # another writer adds the name meanwhile
    provider.add(entries, prepared=prepared)
    assert _mentioned_names(mem, entries[0].id) == {"Zorblax"}  # extracted again, against the new dictionary


def test_the_dictionary_is_read_once_when_nothing_was_committed_since(
    stores: tuple[Memory, Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    mem, _ = stores
    provider = mem.engine.provider
    mem.add(T, "Zorblax is built by Acme Corp.", layer="user", identifiers=U)
    entries = _entries(mem, ["we deployed zorblax to production today"])
    reads = _count_calls(monkeypatch, mem.graph.store, "_known")
    prepared = provider.prepare_add(entries)
    assert prepared is not None and reads == [1]
    # a search between the two only appends bookkeeping rows (access statistics, its event)
    assert mem.search(T, "zorblax", identifiers=U, layers=["user"], threshold=0.0).results
    provider.flush_appends()  # type: ignore[attr-defined]
    provider.add(entries, prepared=prepared)
    assert reads == [1]  # the dictionary read ahead still held: not read again in the transaction
    assert _mentioned_names(mem, entries[0].id) == {"Zorblax"}
    later = _entries(mem, ["zorblax runs on Nomad now"])
    prepared = provider.prepare_add(later)
    mem.add(T, "Nomad is part of the platform.", layer="user", identifiers=U)  # a commit in between: read again
    reads.clear()
    provider.add(later, prepared=prepared)
    assert reads == [1]
    assert _mentioned_names(mem, later[0].id) == {"Zorblax", "Nomad"}


def test_preparation_made_for_other_entries_is_not_used(stores: tuple[Memory, Memory]) -> None:
    mem, _ = stores
    provider = mem.engine.provider
    stale = provider.prepare_add(_entries(mem, ["Alice Chen prefers tea over coffee"]))
    entries = _entries(mem, ["Bob Okafor prefers coffee over tea"])
    provider.add(entries, prepared=stale)
    assert _content_of(mem) == {entries[0].id: "Bob Okafor prefers coffee over tea"}
    names = _mentioned_names(mem, entries[0].id)
    assert "Bob Okafor" in names and "Alice Chen" not in names
    terms = {r[0] for r in _rows(mem, "SELECT term FROM lexical_postings WHERE memory_id = ?", [entries[0].id])}
    assert "bob" in terms and "alice" not in terms


class _BrokenPreparation:
    def __init__(self) -> None:
        self.added: list[str] = []

    def prepare_add(self, reader: Any, entries: Sequence[MemoryEntry]) -> Any:
        raise RuntimeError("cannot prepare")

    def after_add_prepared(
        self, tx: Any, entries: Sequence[MemoryEntry], prepared: Any, *, unchanged: bool = False
    ) -> None:
        raise AssertionError("nothing was prepared")

    def after_add(self, tx: Any, entries: Sequence[MemoryEntry]) -> None:
        self.added += [e.id for e in entries]

    def after_update(self, tx: Any, entry: MemoryEntry, previous: MemoryEntry) -> None: ...

    def after_delete(self, tx: Any, tenant_id: str, ids: Sequence[str]) -> None: ...


def test_a_failed_preparation_does_the_work_in_the_transaction(
    stores: tuple[Memory, Memory], caplog: pytest.LogCaptureFixture
) -> None:
    mem, _ = stores
    hook = _BrokenPreparation()
    mem.engine.provider.write_hooks.append(hook)
    with caplog.at_level(logging.WARNING, logger="stratamem"):
        out = mem.bulk_add(T, _items(TEXTS[:40]))
    assert hook.added == [r.memory.id for r in out.results]
    assert any(
        "preparing the add ahead" in r.getMessage() and "cannot prepare" in r.getMessage() for r in caplog.records
    )
    stored = _stored(mem)
    assert len(stored["memories"]) == 40 and stored["entities"] and stored["postings"]


def test_small_adds_are_not_prepared_on_another_thread(
    stores: tuple[Memory, Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    mem, _ = stores
    calls = _count_calls(monkeypatch, mem.engine.provider, "prepare_add")
    mem.bulk_add(T, _items(TEXTS[: mem.engine.prepare_ahead_min - 1]))
    assert calls == []
    mem.bulk_add(T, _items(TEXTS[40 : 40 + mem.engine.prepare_ahead_min]))
    assert calls == [1]
