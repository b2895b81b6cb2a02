"""What the new-amount rule reads as an amount (``supersession/amounts.py``)."""

from __future__ import annotations

import pytest

from stratamem.supersession.amounts import amounts, has_amount_cue, new_amount


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("Sells her honey at £6 a jar", {"money": {"6"}}),
        ("Tickets are 12 pounds for adults and 5 pounds for under-16s", {"money": {"12", "5"}}),
        ("Takes lisinopril 10 mg every morning", {"mg": {"10"}}),
        ("Standup is 10:15 from now on", {"clock": {"10:15"}}),
        ("The kitchen closes at 9:30pm", {"clock": {"9:30pm"}}),
        ("Cut the list to 86 guests", {"guest": {"86"}}),
        ("The budget is 50,000 euros", {"money": {"50000"}}),
    ],
)
def test_amounts_are_read_with_what_they_count(content: str, expected: dict[str, set[str]]) -> None:
    assert amounts(content) == expected


@pytest.mark.parametrize(
    "content",
    [
        "Has lived in Leeds since 2019",  # a year counts nothing
        "The race is on 14 September",  # a day of a month
        "Hosted in eu-central-1",  # part of a code
        "Ticket ZX-5 is open",
        "Room B112",
    ],
)
def test_years_dates_and_codes_are_no_amounts(content: str) -> None:
    assert amounts(content) == {}


def test_an_amount_needs_a_word_that_it_moved_holds_or_is_current() -> None:
    assert not has_amount_cue("Jars of honey go for £7.50")
    assert has_amount_cue("Jars of honey go for £7.50 this season")
    assert has_amount_cue("Under-16s remain at 5 pounds")
    assert not new_amount("Jars of honey go for £7.50", "Sells her honey at £6 a jar")
    assert new_amount("Jars of honey go for £7.50 this season", "Sells her honey at £6 a jar")


def test_the_same_amount_said_again_is_no_new_one() -> None:
    assert not new_amount("Her honey is still £6 a jar", "Sells her honey at £6 a jar")
