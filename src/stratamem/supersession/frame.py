"""A new value stated in the same words as the old one, without a word the other rules know."""

from __future__ import annotations

import re

from ..retrieval.lexical import tokenize
from .words import CALENDAR, GROUP_STEMS, NAME_RUN, restates

#: A change told by when the new value starts ("From October Ruth works …", "as of 1 May") or by a
#: verb of a new amount or term ("raised her rate to …", "renewed …", "has taken over as …"), without
#: a word of :data:`CHANGE`; read only by :func:`new_value_in_frame`.
ONSET = re.compile(
    r"\b(?:from|as of|starting|effective)\s+(?:next\s+|this\s+)?(?:january|february|march|april|may|june|july|"
    r"august|september|october|november|december|monday|tuesday|wednesday|thursday|friday|saturday|sunday|"
    r"next|tomorrow|today|\d)"
    r"|\b(?:raised|lowered|increased|reduced|renewed|extended|(?:has|have|had) taken over)\b",
    re.IGNORECASE,
)


#: A number as written, with what is joined to it ("7pm", "9:30pm", "0.12", "2027").
_NUMBER = re.compile(r"\d[\d.,:]*[a-z]*", re.IGNORECASE)


def _values(content: str) -> set[str]:
    """What a memory states as values: the stems of its names (runs of capitalised words), its
    numbers and its days and months."""
    found = {stem for run in NAME_RUN.finditer(content) for stem in tokenize(run.group(0))}
    for number in _NUMBER.finditer(content):  # as written and as the tokenizer splits it ("50,000")
        found |= {number.group(0).lower().rstrip(".,:"), *tokenize(number.group(0))}
    found |= set(tokenize(content)) & CALENDAR
    return found - {"user"}


#: Units an amount is counted in: two amounts in euros a month are not one attribute for that.
_UNITS = frozenset(
    tokenize("euro euros dollar dollars pound pounds percent per hour hours day days week weeks month months")
    + tokenize("year years")
)


def opening_names(content: str) -> set[str]:
    """The stems of the run of capitalised words a memory opens with ("Zesty Kestrel's p95 …")."""
    run = NAME_RUN.match(content.lstrip())
    return set(tokenize(run.group(0))) if run else set()


def new_value_in_frame(content: str, old: str) -> bool:
    """Whether ``content`` gives a value of ``old`` another one in the same words: each states a
    value the other does not ("Monday, Tuesday and Wednesday nights" / "Thursday, Friday and
    Saturday nights", "0.12 euros per word" / "0.14 euros per word", "Felix Brandt is the sous chef" /
    "Yusuf Demir has taken over as sous chef"), and the new one repeats at least half of the words
    of ``old`` that are not values, units or a group's word ("nights", "per word", "sous chef"; not
    "euros a month" alone: "rent is 900 euros a month" / "pays 40 euros a month for her gym"; nor
    "team": "The Kestrel team's standup is at 9:30" / "… the Kestrel team's retro is at 16:00").
    Not when the new memory names the value ``old`` states (:func:`restates`: "Hugo Martin, the
    tech lead, is now on holiday" says more about the lead), nor when the two open with different
    names ("Zesty Kestrel's p95 latency went from …" / "Zesty Pebble's p95 latency went from …" are
    two projects, though :func:`subject` reads only their first word).
    The caller has checked that the embedder singles ``old`` out."""
    new_values, old_values = _values(content), _values(old)
    if not (new_values - old_values and old_values - new_values) or restates(content, old):
        return False
    new_names, old_names = opening_names(content), opening_names(old)
    if new_names and old_names and not (new_names <= old_names or old_names <= new_names):
        return False
    frame = set(tokenize(old)) - old_values - _UNITS - GROUP_STEMS
    shared = frame & set(tokenize(content))
    return bool(shared) and 2 * len(shared) >= len(frame)
