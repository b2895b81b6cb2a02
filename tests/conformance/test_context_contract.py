"""Conversation-aware ranking on every provider: a turn's score takes in its neighbouring turns.

A memory with ``provenance.thread_id`` / ``position`` is re-scored as ``(s + w · n) / (1 + w)``
where ``n`` is the best relevance among the turns of its thread within ``WINDOW`` positions
(``retrieval/context.py``). The provider only ranks by relevance; the contract is that the engine
gives the same re-ranked scores whatever provider holds the turns.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from stratamem import Memory, MemoryConfig, TenantContext
from stratamem.retrieval.context import WINDOW

IDS = {"user_id": "conv"}
#: (thread, position, content): the lighthouse question is answered across turns of thread "s1".
TURNS = [
    ("s1", 0, "Marta: I finally started my new job as a lighthouse keeper on the island"),
    ("s1", 1, "Tom: Really? That sounds lonely"),
    ("s1", 2, "Marta: Not at all, my dog comes with me every morning"),
    ("s1", 3, "Tom: What did you have for dinner"),
    ("s1", 4, "Marta: Pasta with tomatoes and basil"),
    ("s2", 0, "Tom: The weather was awful yesterday"),
    ("s2", 1, "Marta: My dog hates the rain"),
    ("s2", 2, "Tom: Mine too, he hides under the bed"),
]
QUESTION = "Marta lighthouse keeper job island"


def _write(mem: Memory, tenant: TenantContext) -> dict[str, tuple[str, int]]:
    places: dict[str, tuple[str, int]] = {}
    for thread, position, content in TURNS:
        out = mem.add(
            tenant,
            content=content,
            layer="user",
            identifiers=IDS,
            provenance={"thread_id": thread, "position": position},
        )
        places[out.memory.id] = (thread, position)
    return places


def _scores(mem: Memory, tenant: TenantContext) -> dict[str, float]:
    res = mem.search(tenant, QUESTION, identifiers=IDS, layers=["user"], threshold=0.0, limit=20)
    return {r.memory.id: r.score for r in res.results}


def test_neighbours_within_the_window_lift_a_turn(
    open_store: Callable[..., Memory], tenant: TenantContext, provider_name: str
) -> None:
    plain = open_store(config=MemoryConfig(context_weight=0.0))
    places = _write(plain, tenant)
    relevance = _scores(plain, tenant)
    assert set(relevance) == set(places), "every turn is a candidate at threshold 0"
    weight = 0.3
    ctx = open_store(config=MemoryConfig(context_weight=weight))
    rescored = _scores(ctx, tenant)
    floor = min(relevance.values())
    by_place = {place: relevance[mid] for mid, place in places.items()}
    for mid, (thread, position) in places.items():
        neighbour = max(
            by_place.get((thread, position + step), floor) for step in range(-WINDOW, WINDOW + 1) if step != 0
        )
        expected = (relevance[mid] + weight * neighbour) / (1.0 + weight)
        assert rescored[mid] == pytest.approx(expected, abs=2e-6), (provider_name, thread, position)


def test_a_turn_two_places_after_the_match_outranks_its_twin_elsewhere(
    open_store: Callable[..., Memory], tenant: TenantContext
) -> None:
    """ "my dog" is said in both threads; the one two turns after the lighthouse answer (same thread)
    ranks above the one in the other thread, which it could not with the direct neighbours only."""
    mem = open_store(config=MemoryConfig(context_weight=0.3))
    places = _write(mem, tenant)
    scores = _scores(mem, tenant)
    near = next(mid for mid, place in places.items() if place == ("s1", 2))
    far = next(mid for mid, place in places.items() if place == ("s2", 1))
    plain = open_store(config=MemoryConfig(context_weight=0.0))
    relevance = _scores(plain, tenant)
    lift_near, lift_far = scores[near] - relevance[near], scores[far] - relevance[far]
    assert lift_near > lift_far + 0.01, (lift_near, lift_far)


def test_memories_without_a_position_keep_their_relevance(
    open_store: Callable[..., Memory], tenant: TenantContext
) -> None:
    plain = open_store(config=MemoryConfig(context_weight=0.0))
    for _, _, content in TURNS:
        plain.add(tenant, content=content, layer="user", identifiers=IDS)
    ctx = open_store(config=MemoryConfig(context_weight=0.3))
    assert _scores(ctx, tenant) == pytest.approx(_scores(plain, tenant))
