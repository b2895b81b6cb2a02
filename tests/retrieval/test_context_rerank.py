"""``context.rerank``: a turn's score mixes in its most relevant neighbours within ``WINDOW`` places."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from stratamem.model import Layer, LayerIdentifiers, MemoryEntry, Provenance
from stratamem.providers.base import ScoredEntry
from stratamem.retrieval import context

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def turn(position: int, score: float, thread: str = "s1") -> ScoredEntry:
    entry = MemoryEntry(
        id=f"{thread}-{position:03d}",
        tenant_id="t",
        content=f"turn {position}",
        layer=Layer.SESSION,
        identifiers=LayerIdentifiers(user_id="u", session_id="s"),
        created_at=NOW,
        updated_at=NOW,
        etag="e",
        content_hash="h",
        provenance=Provenance(thread_id=thread, position=position),
    )
    return ScoredEntry(entry, score)


def scores(hits: list[context.Hit]) -> dict[str, float]:
    return {context.hit_id(h): round(h.score, 6) for h in hits}


def test_one_neighbour_is_the_most_relevant_within_the_window() -> None:
    hits = [turn(0, 0.9), turn(1, 0.5), turn(2, 0.7), turn(5, 0.4), turn(0, 0.8, thread="s2")]
    got = scores(context.rerank(hits, 0.3))
    floor = 0.4  # the lowest score stands in for a neighbour not among the hits
    assert got["s1-001"] == round((0.5 + 0.3 * 0.9) / 1.3, 6)
    assert got["s1-002"] == round((0.7 + 0.3 * 0.9) / 1.3, 6)  # two places away still counts
    assert got["s1-005"] == round((0.4 + 0.3 * floor) / 1.3, 6)  # nothing within two places
    assert got["s2-000"] == round((0.8 + 0.3 * floor) / 1.3, 6)  # another thread is not a neighbour


def test_two_neighbours_sum_the_two_most_relevant() -> None:
    hits = [turn(0, 0.9), turn(1, 0.5), turn(2, 0.7), turn(3, 0.2)]
    got = scores(context.rerank(hits, 0.2, neighbours=2))
    assert got["s1-001"] == round((0.5 + 0.2 * (0.9 + 0.7)) / 1.4, 6)
    assert got["s1-003"] == round((0.2 + 0.2 * (0.7 + 0.5)) / 1.4, 6)
    ranked = context.rerank(hits, 0.2, neighbours=2)
    assert [h.score for h in ranked] == sorted((h.score for h in ranked), reverse=True)


def test_turns_without_a_place_keep_their_score_and_weight_zero_changes_nothing() -> None:
    plain = turn(0, 0.6)
    plain.entry.provenance = Provenance()
    hits = [plain, turn(1, 0.9), turn(2, 0.3)]
    assert scores(context.rerank(hits, 0.3))["s1-000"] == 0.6
    assert context.rerank(hits, 0.0) == hits


@pytest.mark.parametrize("neighbours", [0, 2 * context.WINDOW + 1])
def test_a_neighbour_count_outside_the_window_is_refused(neighbours: int) -> None:
    with pytest.raises(ValueError, match="neighbours"):
        context.rerank([turn(0, 0.5)], 0.3, neighbours=neighbours)
