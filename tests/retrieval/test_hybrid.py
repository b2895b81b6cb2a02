"""Hybrid search: BM25 fused with dense similarity, in the DuckDB and in-memory providers."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest

from stratamem import Memory, MemoryConfig, MemoryError, TenantContext
from stratamem.model import MemoryEntry
from stratamem.retrieval.lexical import bm25_normalized, fuse_scores, query_terms, tokenize

IDS = {"user_id": "u1"}
DOCS = [
    "The deploy key for staging is rotated every Monday",
    "Alice prefers green tea in the morning",
    "Invoice INV-88412 was paid late by the customer",
    "Our team uses feature flags for risky releases",
    "Bob moved to the Lisbon office last spring",
]


@pytest.fixture(params=["duckdb", "memory"])
def store(request: pytest.FixtureRequest, open_mem: Callable[..., Memory], db_path: Path) -> Memory:
    return open_mem(db_path if request.param == "duckdb" else "memory://")


def scores(mem: Memory, ctx: TenantContext, query: str, **kw: Any) -> dict[str, float]:
    res = mem.search(ctx, query, identifiers=IDS, threshold=0.0, limit=100, **kw)
    return {r.memory.content: r.score for r in res.results}


def test_tokenize_drops_stop_words_and_stems() -> None:
    assert tokenize("When did Caroline go to the LGBTQ support groups?") == [
        "carolin",
        "go",
        "lgbtq",
        "support",
        "group",
    ]
    assert tokenize("Invoice INV-88412, 2023") == ["invoic", "inv", "88412", "2023"]
    assert query_terms("paint painting paints") == ["paint"]


def test_bm25_normalized_is_bounded_and_prefers_rare_terms() -> None:
    docs = {
        "a": ({"rare": 1, "common": 1}, 2),
        "b": ({"common": 3}, 3),
        "c": ({"common": 1, "other": 1}, 2),
    }
    lex = bm25_normalized(["rare", "common"], docs)
    assert all(0.0 < v < 1.0 for v in lex.values())
    assert lex["a"] > lex["b"] > 0 and lex["a"] > lex["c"]
    assert bm25_normalized(["absent"], docs) == {}
    for dense in (0.0, 0.3, 0.72, 1.0):
        for lx in (0.0, 0.5, 0.99):
            fused = fuse_scores(dense, lx, 1.0)
            assert dense <= fused <= 1.0
    assert fuse_scores(0.6, 0.5, 0.0) == 0.6


def test_fused_score_never_below_dense_and_boosts_rare_words(store: Memory, acme: TenantContext) -> None:
    store.bulk_add(acme, [{"content": d, "layer": "user", "identifiers": IDS} for d in DOCS])
    query = "which invoice was 88412"
    dense = scores(store, acme, query, hybrid_weight=0.0)
    fused = scores(store, acme, query)
    assert dense.keys() == fused.keys() == set(DOCS)
    for content, score in fused.items():
        assert 0.0 <= score <= 1.0
        assert score >= dense[content] - 1e-9
    target = "Invoice INV-88412 was paid late by the customer"
    assert fused[target] > dense[target] + 0.05
    assert max(fused, key=lambda c: fused[c]) == target
    # memories without a query word keep exactly their dense score
    assert fused["Bob moved to the Lisbon office last spring"] == pytest.approx(
        dense["Bob moved to the Lisbon office last spring"], abs=1e-6
    )


def test_paraphrase_threshold_semantics_hold(store: Memory, acme: TenantContext) -> None:
    store.add(acme, content="alpha beta gamma", layer="user", identifiers=IDS)
    store.add(acme, content="completely unrelated words here", layer="user", identifiers=IDS)
    res = store.search(acme, "alpha beta gamma", identifiers=IDS)
    assert [r.memory.content for r in res.results] == ["alpha beta gamma"]
    assert all(r.score >= 0.7 for r in res.results)


def test_new_memory_searchable_by_words_immediately(store: Memory, acme: TenantContext) -> None:
    store.bulk_add(acme, [{"content": d, "layer": "user", "identifiers": IDS} for d in DOCS])
    before = scores(store, acme, "zorblax quantum ledger")
    assert not any(s > 0.7 for s in before.values())
    store.add(acme, content="The zorblax ledger is archived in room 12", layer="user", identifiers=IDS)
    after = scores(store, acme, "zorblax quantum ledger")
    top = max(after, key=lambda c: after[c])
    assert top == "The zorblax ledger is archived in room 12"
    dense = scores(store, acme, "zorblax quantum ledger", hybrid_weight=0.0)
    assert after[top] > dense[top]


def test_update_and_delete_maintain_the_index(store: Memory, acme: TenantContext) -> None:
    out = store.add(acme, content="The quokka photo is on the shared drive", layer="user", identifiers=IDS).memory
    store.add(acme, content="Weekly sync moved to Thursday", layer="user", identifiers=IDS)
    dense = scores(store, acme, "quokka", hybrid_weight=0.0)
    assert scores(store, acme, "quokka")[out.content] > dense[out.content]
    store.update(acme, out.id, content="The wombat photo is on the shared drive")
    new = "The wombat photo is on the shared drive"
    assert scores(store, acme, "quokka")[new] == pytest.approx(
        scores(store, acme, "quokka", hybrid_weight=0.0)[new], abs=1e-6
    )
    assert scores(store, acme, "wombat")[new] > scores(store, acme, "wombat", hybrid_weight=0.0)[new]
    store.update(acme, out.id, metadata={"tags": ["x"]})  # metadata only: index unchanged
    assert scores(store, acme, "wombat")[new] > scores(store, acme, "wombat", hybrid_weight=0.0)[new]
    store.delete(acme, out.id)
    assert new not in scores(store, acme, "wombat")


def test_tenant_and_scope_isolation_of_lexical_statistics(
    store: Memory, acme: TenantContext, globex: TenantContext
) -> None:
    store.bulk_add(acme, [{"content": d, "layer": "user", "identifiers": IDS} for d in DOCS])
    base = scores(store, acme, "green tea Lisbon")
    # Another tenant (and another user of the same tenant) flooding the same words changes nothing.
    store.bulk_add(
        globex, [{"content": f"green tea Lisbon {i}", "layer": "user", "identifiers": IDS} for i in range(30)]
    )
    store.bulk_add(
        acme,
        [{"content": f"green tea Lisbon {i}", "layer": "user", "identifiers": {"user_id": "u2"}} for i in range(30)],
    )
    assert scores(store, acme, "green tea Lisbon") == pytest.approx(base, abs=1e-9)
    assert not any(c.startswith("green tea") for c in scores(store, acme, "green tea Lisbon"))


def test_filter_applies_before_the_cut_with_hybrid(store: Memory, acme: TenantContext) -> None:
    items = [
        {
            "content": f"release checklist item {i}",
            "layer": "user",
            "identifiers": IDS,
            "metadata": {"tags": ["a" if i % 3 else "b"]},
        }
        for i in range(12)
    ]
    store.bulk_add(acme, items)
    res = store.search(acme, "release checklist", identifiers=IDS, threshold=0.0, limit=3, filter={"tags": ["b"]})
    assert len(res.results) == 3 and res.total_count == 4
    assert all(r.memory.metadata["tags"] == ["b"] for r in res.results)


def test_invalid_hybrid_weight(store: Memory, acme: TenantContext) -> None:
    with pytest.raises(MemoryError) as err:
        store.search(acme, "x", identifiers=IDS, hybrid_weight=1.5)
    assert err.value.code.value == "INVALID_PARAMS"


def test_duckdb_and_inmemory_agree(open_mem: Callable[..., Memory], db_path: Path, acme: TenantContext) -> None:
    duck, inmem = open_mem(db_path), open_mem("memory://")
    for m in (duck, inmem):
        m.bulk_add(acme, [{"content": d, "layer": "user", "identifiers": IDS} for d in DOCS])
    for q in ("deploy key staging", "Alice tea", "customer invoice paid", "nothing matches here"):
        assert scores(duck, acme, q) == pytest.approx(scores(inmem, acme, q), abs=1e-5)


def test_config_weight_zero_is_dense_only(open_mem: Callable[..., Memory], db_path: Path, acme: TenantContext) -> None:
    dense_mem = open_mem(db_path, config=MemoryConfig(hybrid_weight=0.0))
    dense_mem.bulk_add(acme, [{"content": d, "layer": "user", "identifiers": IDS} for d in DOCS])
    assert scores(dense_mem, acme, "invoice 88412") == pytest.approx(
        scores(dense_mem, acme, "invoice 88412", hybrid_weight=0.0), abs=1e-9
    )


class _Boom:
    def after_add(self, tx: Any, entries: Any) -> None:
        raise RuntimeError("boom")

    def after_update(self, tx: Any, entry: MemoryEntry, previous: MemoryEntry) -> None:
        return None

    def after_delete(self, tx: Any, tenant_id: str, ids: Any) -> None:
        return None


def test_rolled_back_write_leaves_no_postings(
    open_mem: Callable[..., Memory], db_path: Path, acme: TenantContext
) -> None:
    mem = open_mem(db_path)
    mem.engine.provider.write_hooks.append(_Boom())
    with pytest.raises(MemoryError):
        mem.add(acme, content="ghost words never committed", layer="user", identifiers=IDS)
    mem.engine.provider.write_hooks.pop()
    mem.close()
    con = duckdb.connect(str(db_path))
    try:
        assert con.execute("SELECT count(*) FROM lexical_postings").fetchone() == (0,)
        assert con.execute("SELECT count(*) FROM memories").fetchone() == (0,)
    finally:
        con.close()


def test_index_backfilled_for_stores_without_it(
    open_mem: Callable[..., Memory], db_path: Path, acme: TenantContext
) -> None:
    mem = open_mem(db_path)
    mem.bulk_add(acme, [{"content": d, "layer": "user", "identifiers": IDS} for d in DOCS])
    expected = scores(mem, acme, "invoice 88412")
    mem.close()
    con = duckdb.connect(str(db_path))  # simulate a store created before migration 6
    con.execute("DROP TABLE lexical_postings")
    con.execute("DELETE FROM schema_version WHERE version = 6")
    con.close()
    again = open_mem(db_path)
    assert scores(again, acme, "invoice 88412") == pytest.approx(expected, abs=1e-9)
