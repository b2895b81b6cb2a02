"""``context.prefer_speaker``: when a query names one speaker of the page's turns, the turns of the
other speakers lose ``SPEAKER_PENALTY`` (step 3 of ``retrieval/context.py``)."""

from __future__ import annotations

import pytest

from stratamem import MemoryConfig
from stratamem.model import Provenance
from stratamem.retrieval import context

from .hits import joined, scored

PENALTY = context.SPEAKER_PENALTY


def turn(position: int, content: str, score: float, thread: str | None = "s1") -> context.Hit:
    place = Provenance(thread_id=thread, position=position) if thread else Provenance()
    return scored(f"{thread}-{position:03d}", content, score, provenance=place)


def scores(hits: list[context.Hit]) -> dict[str, float]:
    return {context.hit_id(h): round(h.score, 6) for h in hits}


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("Caroline: I went to the support group yesterday", "Caroline"),
        ("  Dr. Chen: take two a day", "Dr. Chen"),
        ("user: I moved to Berlin", "user"),
        ("Mary Ann Lee: hello", "Mary Ann Lee"),
        ("See https://example.com: it is down", None),  # more than three words before the colon
        ("https://example.com is down", None),
        ("Dana moved to Berlin last month", None),
        ("Meeting at 10:30 tomorrow", None),
        ("2024: a good year", None),
    ],
)
def test_the_speaker_is_the_transcript_prefix(content: str, expected: str | None) -> None:
    assert context.speaker(content) == expected


def test_turns_of_the_speaker_not_named_lose_the_penalty_and_the_page_is_reordered() -> None:
    hits: list[context.Hit] = [
        turn(0, "Melanie: I ran a charity race for the shelter last Sunday", 0.80),
        turn(1, "Caroline: that is great, I ran one too in May", 0.78),
        turn(2, "Caroline: and I painted a sunrise afterwards", 0.50),
    ]
    ranked = context.prefer_speaker(hits, "When did caroline run a charity race?")
    assert scores(ranked) == {"s1-000": round(0.80 - PENALTY, 6), "s1-001": 0.78, "s1-002": 0.50}
    assert [context.hit_id(h) for h in ranked] == ["s1-001", "s1-000", "s1-002"]


def test_a_turn_read_after_the_candidates_is_judged_by_its_text_too() -> None:
    hits: list[context.Hit] = [
        joined("s1-003", ("s1", 3), "Melanie: the race raised a lot", 0.7),
        turn(1, "Caroline: I ran", 0.68),
    ]
    ranked = context.prefer_speaker(hits, "What did Caroline's race raise?")  # a possessive names her too
    assert [context.hit_id(h) for h in ranked] == ["s1-001", "s1-003"]
    assert isinstance(ranked[1], context.JoinedTurn) and ranked[1].score == pytest.approx(0.7 - PENALTY)


@pytest.mark.parametrize(
    "query",
    [
        "Who ran a charity race?",  # names nobody
        "Did Caroline and Melanie both run?",  # names both speakers
        "When did Carol run?",  # a part of a name is not the name
    ],
)
def test_a_query_that_names_no_single_speaker_changes_nothing(query: str) -> None:
    hits: list[context.Hit] = [turn(0, "Melanie: I ran a race", 0.8), turn(1, "Caroline: me too", 0.7)]
    assert context.prefer_speaker(hits, query) == hits


def test_a_label_of_one_letter_or_a_stop_word_is_never_named() -> None:
    """'A' and 'Q' are found as words in most queries ("what is a …"): not a speaker's name."""
    qa: list[context.Hit] = [turn(0, "Q: what is a good editor?", 0.8), turn(1, "A: Neovim", 0.7)]
    assert context.prefer_speaker(qa, "what is a good editor") == qa
    me: list[context.Hit] = [turn(0, "Me: I ran", 0.72), turn(1, "Caroline: me too", 0.7)]
    assert [context.hit_id(h) for h in context.prefer_speaker(me, "did Caroline tell me")] == ["s1-001", "s1-000"]


def test_one_speaker_memories_without_a_place_and_case_are_handled() -> None:
    one_speaker: list[context.Hit] = [turn(0, "Caroline: I ran", 0.8), turn(1, "Caroline: in May", 0.7)]
    assert context.prefer_speaker(one_speaker, "When did Caroline run?") == one_speaker
    # "User" and "user" are one speaker; a memory without a place is never a turn of anyone
    mixed: list[context.Hit] = [
        turn(0, "User: I moved to Berlin", 0.70),
        turn(1, "assistant: noted, Berlin", 0.80),
        turn(2, "user: and I work at Acme", 0.60),
        turn(3, "assistant: a fact without a place", 0.75, thread=None),
    ]
    got = scores(context.prefer_speaker(mixed, "where does the user live?"))
    assert got == {"s1-000": 0.70, "s1-001": round(0.80 - PENALTY, 6), "s1-002": 0.60, "None-003": 0.75}


def test_scores_stay_at_least_zero_and_a_zero_penalty_is_off() -> None:
    hits: list[context.Hit] = [turn(0, "Melanie: hi", 0.02), turn(1, "Caroline: hello", 0.01)]
    assert scores(context.prefer_speaker(hits, "what did Caroline say"))["s1-000"] == 0.0
    assert context.prefer_speaker(hits, "what did Caroline say", penalty=0.0) == hits


def test_the_config_default_is_the_module_constant() -> None:
    assert MemoryConfig().speaker_penalty == context.SPEAKER_PENALTY
