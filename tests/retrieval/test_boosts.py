"""retrieval/boosts.py: the boost factors and the exact boosted top k from relevance-ranked fetches."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stratamem.model import Layer, LayerIdentifiers, MemoryEntry
from stratamem.providers.base import ScoredEntry, SearchPage
from stratamem.retrieval.boosts import Boosts, boosted_page

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def entry(i: int, age_days: float, importance: float = 0.0) -> MemoryEntry:
    at = NOW - timedelta(days=age_days)
    return MemoryEntry(
        id=f"m{i:04d}",
        tenant_id="t",
        content=f"memory {i}",
        layer=Layer.USER,
        identifiers=LayerIdentifiers(user_id="u"),
        created_at=at,
        updated_at=at,
        etag="e",
        importance=importance,
        content_hash="h",
    )


def test_factors() -> None:
    b = Boosts(recency=0.4, importance=0.5, half_life_days=30.0)
    assert b.factor(entry(1, 0.0, 1.0), NOW) == pytest.approx(1.0)
    assert b.factor(entry(1, 30.0, 1.0), NOW) == pytest.approx(1 - 0.4 * 0.5)
    assert b.factor(entry(1, 0.0, 0.2), NOW) == pytest.approx(1 - 0.5 * 0.8)
    assert b.factor(entry(1, 60.0, 0.0), NOW) == pytest.approx((1 - 0.4 * 0.75) * 0.5)
    # a memory "from the future" (clock skew) counts as fresh, never above its relevance
    assert b.factor(entry(1, -5.0, 1.0), NOW) == pytest.approx(1.0)
    assert not Boosts().active and Boosts(importance=0.1).active


hits_st = st.lists(st.tuples(st.floats(0.0, 1.0), st.floats(0.0, 400.0), st.floats(0.0, 1.0)), min_size=0, max_size=300)


@settings(max_examples=150, deadline=None)
@given(
    hits=hits_st,
    limit=st.integers(1, 30),
    recency=st.floats(0.0, 1.0),
    importance=st.floats(0.0, 1.0),
    cap=st.sampled_from([50, 2000]),
)
def test_boosted_page_is_the_full_reranking(
    hits: list[tuple[float, float, float]], limit: int, recency: float, importance: float, cap: int
) -> None:
    boosts = Boosts(recency=recency, importance=importance)
    ranked = sorted(
        (ScoredEntry(entry(i, age, imp), score) for i, (score, age, imp) in enumerate(hits)),
        key=lambda h: (-h.score, h.entry.id),
    )
    fetched: list[int] = []

    def search(n: int) -> SearchPage:  # a provider: the top n by relevance, and the count of matches
        fetched.append(n)
        return SearchPage(hits=ranked[:n], total=len(ranked))

    page = boosted_page(search, limit, boosts, NOW, max_candidates=cap)
    assert page.total == len(ranked)
    assert all(0.0 <= h.score <= 1.0 for h in page.hits)
    if len(ranked) <= cap:  # within the cap the answer is exact
        want = boosts.rerank(ranked, NOW)[:limit]
        assert [h.entry.id for h in page.hits] == [h.entry.id for h in want]
    else:  # past it, the best of the cap's candidates
        assert [h.entry.id for h in page.hits] == [h.entry.id for h in boosts.rerank(ranked[:cap], NOW)[:limit]]
    assert fetched[0] == min(cap, max(4 * limit, 40)) and all(n <= cap for n in fetched)
    assert fetched == sorted(fetched)


def test_fetches_more_only_when_an_unseen_memory_could_win() -> None:
    # 200 matches by decreasing relevance; the 150 most relevant are a year old, the rest fresh.
    ranked = [ScoredEntry(entry(i, 365.0 if i < 150 else 0.0), 0.99 - i * 0.001) for i in range(200)]
    calls: list[int] = []

    def search(n: int) -> SearchPage:
        calls.append(n)
        return SearchPage(hits=ranked[:n], total=len(ranked))

    page = boosted_page(search, 5, Boosts(recency=0.9), NOW)
    assert calls == [40, 160]  # at 160 the last relevance (0.831) is below the 5th boosted score (0.836)
    assert [h.entry.id for h in page.hits] == [f"m{i:04d}" for i in range(150, 155)]
    calls.clear()
    page = boosted_page(search, 5, Boosts(recency=0.01), NOW)  # a light boost: the first fetch decides
    assert calls == [40] and [h.entry.id for h in page.hits] == [f"m{i:04d}" for i in range(5)]
