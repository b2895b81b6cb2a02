"""``dates.named_window``: the time a question names, and ``context.prefer_dates`` (step 4 of
``retrieval/context.py``): memories outside it lose ``DATE_PENALTY``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from stratamem import MemoryConfig
from stratamem.model import Provenance
from stratamem.providers.base import ScoredEntry
from stratamem.retrieval import context, dates

from .hits import joined, scored


def day(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, tzinfo=UTC)


@pytest.mark.parametrize(
    ("query", "window"),
    [
        ("What did Joanna accomplish in January 2022?", (day(2022, 1, 1), day(2022, 2, 1))),
        ("where did she travel in december, 2022", (day(2022, 12, 1), day(2023, 1, 1))),
        ("What movie did Joanna watch on 1 May, 2022?", (day(2022, 5, 1), day(2022, 5, 8))),
        ("what happened on May 1st, 2022", (day(2022, 5, 1), day(2022, 5, 8))),
        ("the 3rd of Sept 2024 meeting", (day(2024, 9, 3), day(2024, 9, 10))),
        ("deploys on 2025-02-28", (day(2025, 2, 28), day(2025, 3, 7))),
        ("the 2025-02 invoices", (day(2025, 2, 1), day(2025, 3, 1))),
        # the first date named counts
        ("Where was John between August 11 and August 15 2023?", (day(2023, 8, 15), day(2023, 8, 22))),
        ("from March 2021 to June 2021", (day(2021, 3, 1), day(2021, 4, 1))),
    ],
)
def test_a_named_date_is_a_window(query: str, window: tuple[datetime, datetime]) -> None:
    assert dates.named_window(query) == window
    assert window[1] - window[0] in {dates.DAY_WINDOW} or window[0].day == 1


@pytest.mark.parametrize(
    "query",
    [
        "what did Joanna do in May?",  # no year: any May
        "what happened in 2022",  # a year alone is too wide
        "what is on February 30, 2022",  # no such day
        "room 2022-13 is free",  # no such month
        "may I ask what Caroline researched",
    ],
)
def test_no_window_without_a_valid_date_with_a_year(query: str) -> None:
    assert dates.named_window(query) is None


def entry(i: int, score: float, created: datetime, occurred: datetime | None = None) -> ScoredEntry:
    return scored(f"m{i}", f"memory {i}", score, created=created, provenance=Provenance(occurred_at=occurred))


def test_memories_outside_the_window_lose_the_penalty_by_occurred_at_else_created_at() -> None:
    written = day(2026, 1, 10)
    hits: list[context.Hit] = [
        entry(0, 0.78, written, occurred=day(2022, 3, 2)),  # said in March: outside
        entry(1, 0.75, written, occurred=day(2022, 2, 14)),  # inside by its occurred_at
        entry(2, 0.70, day(2022, 2, 20)),  # no occurred_at: inside by created_at
        entry(3, 0.65, written),  # outside by created_at
    ]
    ranked = context.prefer_dates(hits, "what happened in February 2022?")
    penalty = context.DATE_PENALTY
    assert [context.hit_id(h) for h in ranked] == ["m1", "m2", "m0", "m3"]
    assert {context.hit_id(h): round(h.score, 6) for h in ranked} == {
        "m0": round(0.78 - penalty, 6),
        "m1": 0.75,
        "m2": 0.70,
        "m3": round(0.65 - penalty, 6),
    }


def test_a_turn_read_after_the_candidates_is_dated_too_and_scores_stay_at_least_zero() -> None:
    said = joined("t1", ("s1", 1), "Joanna: I finished my screenplay", 0.04, occurred_at=day(2022, 1, 21))
    hits: list[context.Hit] = [entry(0, 0.05, day(2026, 1, 1)), said]
    ranked = context.prefer_dates(hits, "What did Joanna accomplish in January 2022?")
    assert [(context.hit_id(h), round(h.score, 6)) for h in ranked] == [("t1", 0.04), ("m0", 0.0)]


def test_a_memory_that_names_a_date_in_the_window_is_of_that_time() -> None:
    """Written in April about a day in May: a question about that day keeps it."""
    about = entry(0, 0.7, day(2027, 4, 2))
    about.entry.content = "The launch is on 3 May 2027 in Lisbon"
    other = entry(1, 0.75, day(2027, 4, 2))
    other.entry.content = "The launch review was moved to June 2027"
    ranked = context.prefer_dates([about, other], "what happens on May 3, 2027?")
    assert [(context.hit_id(h), round(h.score, 6)) for h in ranked] == [
        ("m0", 0.7),
        ("m1", round(0.75 - context.DATE_PENALTY, 6)),
    ]
    assert dates.mentions("from 2027-05-01 on", (day(2027, 5, 3), day(2027, 5, 10)))
    assert not dates.mentions("in 2027", (day(2027, 5, 3), day(2027, 5, 10)))


def test_no_date_or_a_zero_penalty_changes_nothing() -> None:
    hits: list[context.Hit] = [entry(0, 0.8, day(2026, 1, 1)), entry(1, 0.7, day(2022, 2, 1))]
    assert context.prefer_dates(hits, "what happened last week?") == hits
    assert context.prefer_dates(hits, "what happened in February 2022?", penalty=0.0) == hits


def test_the_config_default_is_the_module_constant_and_the_day_window_a_week() -> None:
    assert MemoryConfig().date_penalty == context.DATE_PENALTY
    assert timedelta(days=7) == dates.DAY_WINDOW
