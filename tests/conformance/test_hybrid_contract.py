"""Hybrid search contract (providers/base.py): dense + w · BM25 · (1 - dense), identical on every provider.

Every expectation is computed inside the test: the dense half comes from the same store with
``hybrid_weight=0`` and the lexical half from ``retrieval.lexical`` over the scope's current
contents; the cross-provider test compares against DuckDB and in-memory reference stores built
from the same corpus.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from stratamem import Memory, TenantContext
from stratamem.retrieval.lexical import bm25_normalized, fuse_scores, query_terms, term_counts

U1 = {"user_id": "u1"}
CORPUS = [
    "The deploy key for staging is rotated every Monday",
    "Alice prefers green tea in the morning",
    "Invoice INV-88412 was paid late by the customer",
    "Our team uses feature flags for risky releases",
    "Bob moved to the Lisbon office last spring",
    "Alice and Bob review the staging deploy on Monday mornings",
]
QUERIES = [
    "When was invoice 88412 paid?",
    "Who moved to Lisbon?",
    "staging deploy key rotation",
    "what does Alice drink in the morning",
    "completely unrelated astronomy question",
]
#: Search scores are rounded to 6 decimals by the engine: two providers whose float32 dense scores
#: differ in the 7th digit may round one unit apart. The expected fused score is recomputed from the
#: rounded dense score, and the lexical gate's slope (1 / (GATE_HIGH - GATE_LOW) on the cosine, i.e.
#: 10 on the dense score) multiplies that rounding: the tolerance is ten units of it.
TOL = 1e-5 + 1e-9


def scores(mem: Memory, ctx: TenantContext, query: str, **kw: Any) -> dict[str, float]:
    res = mem.search(ctx, query, identifiers=U1, layers=["user"], threshold=0.0, limit=100, **kw)
    return {r.memory.content: r.score for r in res.results}


def expected(
    mem: Memory, ctx: TenantContext, query: str, contents: Sequence[str], weight: float = 1.0
) -> dict[str, float]:
    """The contract's fused scores, from the store's dense scores and the reference BM25."""
    dense = scores(mem, ctx, query, hybrid_weight=0.0)
    docs = {c: (counts, sum(counts.values())) for c in contents if (counts := term_counts(c))}
    lex = bm25_normalized(query_terms(query), docs)
    return {c: fuse_scores(d, lex.get(c, 0.0), weight) for c, d in dense.items()}


def assert_close(got: dict[str, float], want: dict[str, float]) -> None:
    assert got.keys() == want.keys()
    for content, score in want.items():
        assert got[content] == pytest.approx(score, abs=TOL), content


def test_keyword_search_capability(store: Memory) -> None:
    assert store.capabilities().keyword_search is True


def test_rare_word_and_number_boost(store: Memory, tenant: TenantContext) -> None:
    for doc in CORPUS:
        store.add(tenant, doc, layer="user", identifiers=U1)
    for query in ("When was invoice 88412 paid?", "Who moved to Lisbon?"):
        dense = scores(store, tenant, query, hybrid_weight=0.0)
        fused = scores(store, tenant, query, hybrid_weight=1.0)
        assert fused.keys() == dense.keys() == set(CORPUS)
        for content, score in fused.items():
            assert 0.0 <= score <= 1.0
            assert score >= dense[content] - TOL
        target = CORPUS[2] if "88412" in query else CORPUS[4]
        assert fused[target] > dense[target] + 0.05  # the rare word / number lifts its memory
        assert max(fused, key=lambda c: fused[c]) == target
        for content in CORPUS:
            if not set(query_terms(query)) & set(term_counts(content)):
                assert fused[content] == pytest.approx(dense[content], abs=TOL)  # no shared term: dense only
        assert_close(fused, expected(store, tenant, query, CORPUS))
    half = scores(store, tenant, "invoice 88412", hybrid_weight=0.5)
    assert_close(half, expected(store, tenant, "invoice 88412", CORPUS, weight=0.5))


def test_searchable_right_after_add_update_and_delete(store: Memory, tenant: TenantContext) -> None:
    ids = [store.add(tenant, doc, layer="user", identifiers=U1).memory.id for doc in CORPUS]
    contents = list(CORPUS)
    new = store.add(tenant, "The quokka mascot sticker is on the fridge", layer="user", identifiers=U1).memory
    contents.append(new.content)
    got = scores(store, tenant, "quokka")
    assert got[new.content] > scores(store, tenant, "quokka", hybrid_weight=0.0)[new.content]
    assert_close(got, expected(store, tenant, "quokka", contents))

    # Update: the old words stop matching, the new ones match, statistics follow.
    updated = "The wombat mascot sticker is on the fridge"
    store.update(tenant, new.id, content=updated)
    contents[-1] = updated
    for query in ("quokka", "wombat mascot", "fridge sticker"):
        assert_close(scores(store, tenant, query), expected(store, tenant, query, contents))
    assert scores(store, tenant, "wombat")[updated] > scores(store, tenant, "wombat", hybrid_weight=0.0)[updated]

    # Delete: the memory disappears and N/df/avgdl of the scope no longer count it.
    assert store.delete(tenant, ids[2]).success
    contents.remove(CORPUS[2])
    for query in ("invoice 88412", "staging deploy Monday", "wombat"):
        got = scores(store, tenant, query)
        assert CORPUS[2] not in got
        assert_close(got, expected(store, tenant, query, contents))


def test_scope_and_tenant_statistics_are_separate(
    store: Memory, tenant: TenantContext, other_tenant: TenantContext
) -> None:
    for doc in CORPUS:
        store.add(tenant, doc, layer="user", identifiers=U1)
    # Another tenant (and another user) with the rare word everywhere must not change our scores.
    for i in range(5):
        store.add(other_tenant, f"Lisbon note {i}", layer="user", identifiers=U1)
        store.add(tenant, f"Lisbon note {i}", layer="user", identifiers={"user_id": "u2"})
    assert_close(scores(store, tenant, "Lisbon office"), expected(store, tenant, "Lisbon office", CORPUS))


def test_all_providers_agree_on_one_corpus(
    open_store: Callable[..., Memory], tenant: TenantContext, tmp_path: Path
) -> None:
    store = open_store()
    refs = {
        "inmemory": Memory.open("memory://", embedder="hashing"),
        "duckdb": Memory.open(tmp_path / "hybrid-reference.duckdb", embedder="hashing"),
    }
    try:
        for mem in (store, *refs.values()):
            for doc in CORPUS:
                mem.add(tenant, doc, layer="user", identifiers=U1)
        for query in QUERIES:
            got = scores(store, tenant, query)
            for name, ref in refs.items():
                want = scores(ref, tenant, query)
                assert got.keys() == want.keys(), name
                for content, score in want.items():
                    assert got[content] == pytest.approx(score, abs=TOL), (name, query, content)
    finally:
        for ref in refs.values():
            ref.close()
