"""Query-time boosts (retrieval/boosts.py) on every provider: recency and importance re-rank the
relevance ranking, scores are relevance times the documented factors, the threshold applies to the
relevance, and the boosted top k is the one a full re-ranking gives."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from stratamem import Memory, MemoryConfig, TenantContext
from stratamem.errors import MemoryError
from stratamem.lifecycle import LifecycleConfig

U1 = {"user_id": "u1"}
T0 = datetime(2026, 1, 1, tzinfo=UTC)


class Clock:
    def __init__(self, at: datetime) -> None:
        self.at = at

    def __call__(self) -> datetime:
        return self.at


def _all(mem: Memory, ctx: TenantContext, query: str, **kw: float) -> dict[str, float]:
    res = mem.search(ctx, query, identifiers=U1, layers=["user"], threshold=0.0, limit=100, **kw)
    return {r.memory.content: r.score for r in res.results}


def test_recency_boost_prefers_the_newer_fact(open_store: Callable[..., Memory], tenant: TenantContext) -> None:
    clock = Clock(T0)
    # both facts stay current (no supersession), so the boost alone orders them
    mem = open_store(clock=clock, config=MemoryConfig(detect_supersession=False))
    old = "Alex's favourite colour is blue"
    new = "Alex's favourite colour is green"
    mem.add(tenant, old, layer="user", identifiers=U1)
    clock.at = T0 + timedelta(days=60)  # two half-lives later
    mem.add(tenant, new, layer="user", identifiers=U1)
    query = "Alex's favourite colour is blue"  # matches the stale fact best

    plain = _all(mem, tenant, query)
    assert plain[old] > plain[new]
    boosted = mem.search(tenant, query, identifiers=U1, layers=["user"], threshold=0.0, recency_boost=0.8)
    assert [r.memory.content for r in boosted.results] == [new, old]
    scores = {r.memory.content: r.score for r in boosted.results}
    # 0.5 ** (60 / 30) = 0.25 -> factor 1 - 0.8 * 0.75 = 0.4; the fresh memory keeps its relevance
    assert scores[old] == pytest.approx(plain[old] * 0.4, abs=2e-6)
    assert scores[new] == pytest.approx(plain[new], abs=2e-6)
    # weight 0 is the plain ranking
    assert _all(mem, tenant, query, recency_boost=0.0) == plain


def test_importance_boost_and_half_life_from_config(open_store: Callable[..., Memory], tenant: TenantContext) -> None:
    clock = Clock(T0)
    mem = open_store(
        clock=clock, config=MemoryConfig(importance_boost=0.5, recency_boost=0.5, recency_half_life_days=10.0)
    )
    mem.lifecycle.config = LifecycleConfig(track_access=False)  # importance stays as given at add time
    mem.add(tenant, "The staging deploy key rotates every Monday", layer="user", identifiers=U1, importance=1.0)
    mem.add(tenant, "The staging deploy key is kept in the vault", layer="user", identifiers=U1, importance=0.0)
    clock.at = T0 + timedelta(days=10)
    query = "staging deploy key"
    entries = {e.content: e for e in mem.list(tenant, "user", identifiers=U1, limit=10).memories}
    plain = _all(mem, tenant, query, importance_boost=0.0, recency_boost=0.0)
    got = _all(mem, tenant, query)
    for content, relevance in plain.items():
        importance = entries[content].importance
        factor = (1 - 0.5 * (1 - 0.5)) * (1 - 0.5 * (1 - importance))  # one half-life; importance weight 0.5
        assert got[content] == pytest.approx(relevance * factor, abs=2e-6), content
    assert next(iter(got)) == "The staging deploy key rotates every Monday"


def test_threshold_applies_to_relevance_and_total_is_unchanged(
    open_store: Callable[..., Memory], tenant: TenantContext
) -> None:
    clock = Clock(T0)
    mem = open_store(clock=clock)
    mem.bulk_add(
        tenant,
        [
            {
                "content": f"Project Falcon note {i}: the budget review moved to Friday",
                "layer": "user",
                "identifiers": U1,
            }
            for i in range(5)
        ],
    )
    clock.at = T0 + timedelta(days=365)
    query = "Project Falcon budget review"
    plain = mem.search(tenant, query, identifiers=U1, layers=["user"], threshold=0.6)
    boosted = mem.search(tenant, query, identifiers=U1, layers=["user"], threshold=0.6, recency_boost=1.0)
    assert plain.results and all(r.score >= 0.6 for r in plain.results)
    # a year old: the boosted score is far below the threshold, but the memory is still a match
    assert {r.memory.id for r in boosted.results} == {r.memory.id for r in plain.results}
    assert all(r.score < 0.01 for r in boosted.results)
    assert boosted.total_count == plain.total_count


def test_boosted_top_k_equals_a_full_reranking(open_store: Callable[..., Memory], tenant: TenantContext) -> None:
    """More candidates than the first fetch (4 · limit, at least 40): old, highly relevant memories
    must not hide newer ones further down the relevance ranking."""
    clock = Clock(T0)
    mem = open_store(clock=clock, config=MemoryConfig(dedup_threshold=1.0))  # no result merged away as similar
    words = [
        "amber",
        "birch",
        "cobalt",
        "delta",
        "ember",
        "fjord",
        "garnet",
        "harbor",
        "indigo",
        "juniper",
        "kestrel",
        "lagoon",
        "meadow",
        "nickel",
        "onyx",
        "prairie",
        "quartz",
        "raven",
        "sierra",
        "tundra",
    ]
    for day in range(0, 80, 2):  # 40 batches, newest last
        clock.at = T0 + timedelta(days=day)
        mem.bulk_add(
            tenant,
            [
                {
                    "content": f"{words[(day // 2) % 20]} {words[(day // 2 + 7 * k + 3) % 20]} "
                    f"{words[(day + k) % 20]} {day} {k}: rollout of the billing service",
                    "layer": "user",
                    "identifiers": U1,
                }
                for k in range(2)
            ],
        )
    clock.at = T0 + timedelta(days=80)
    query = "billing service rollout"
    everything = mem.search(tenant, query, identifiers=U1, layers=["user"], threshold=0.0, limit=100, hybrid_weight=1.0)
    assert everything.total_count == len(everything.results) == 80
    now = clock.at
    want = sorted(
        (
            (r.score * (1 - 0.9 * (1 - 0.5 ** ((now - r.memory.updated_at).total_seconds() / 86400 / 30))), r.memory.id)
            for r in everything.results
        ),
        key=lambda t: (-t[0], t[1]),
    )
    got = mem.search(tenant, query, identifiers=U1, layers=["user"], threshold=0.0, limit=5, recency_boost=0.9)
    assert [r.memory.id for r in got.results] == [mid for _, mid in want[:5]]
    assert [r.score for r in got.results] == pytest.approx([s for s, _ in want[:5]], abs=2e-6)


@pytest.mark.parametrize("field", ["recency_boost", "importance_boost", "hybrid_weight"])
@pytest.mark.parametrize("value", [-0.1, 1.5, True, "0.5"])
def test_bad_weights_are_rejected(store: Memory, tenant: TenantContext, field: str, value: object) -> None:
    with pytest.raises(MemoryError) as err:
        store.search(tenant, "anything", identifiers=U1, **{field: value})  # type: ignore[arg-type]
    assert err.value.code.value == "INVALID_PARAMS"
    assert err.value.details["field"] == field
