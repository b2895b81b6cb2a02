"""``stated_name``: the name a memory gives the user, in the write gate's words or an LLM's."""

from __future__ import annotations

import pytest

from stratamem.wording import stated_name


@pytest.mark.parametrize(
    ("content", "name"),
    [
        ("User's name is Dana", "Dana"),
        ("The user's name is Priya Natarajan", "Priya Natarajan"),
        ("the user wants to be called Sam.", "Sam"),
        ("User goes by Alex, not Alexander", "Alex"),
        ("User\u2019s first name is Lena", "Lena"),
    ],
)
def test_a_stated_name_is_read(content: str, name: str) -> None:
    assert stated_name(content) == name


@pytest.mark.parametrize(
    "content",
    ["Dana's name is on the lease", "The user's name is not known", "User's manager is Bob Chen", "Users are called"],
)
def test_other_sentences_state_no_name(content: str) -> None:
    assert stated_name(content) is None
