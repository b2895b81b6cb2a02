"""A new amount of the same thing: "Jars of honey go for £7.50 this season" after "Sells her honey
at £6 a jar", "Dr. Lindqvist raised his lisinopril to 20 mg" after "Takes lisinopril 10 mg".

An amount is a number with what it counts: money (a currency sign or word), a time of day, or the
word that follows the number ("20 mg", "86 guests", "40 pupils"). Two memories give one thing a
new amount when they count in the same unit, each states an amount of that unit the other does
not, they share a word besides the amounts, and the new one says that something changed or is
current (:data:`AMOUNT_CUE`, a change marker, an onset). Read only on the memory the embedder
singles out as the new one's nearest (the caller checks that), as :func:`frame.new_value_in_frame`."""

from __future__ import annotations

import re

from ..retrieval.lexical import tokenize
from .frame import ONSET, opening_names
from .subjects import subject
from .words import CALENDAR, GROUP_STEMS, LIGHT_VERBS, NAME_RUN, has_change_marker

#: Words that say an amount moved ("put the price up", "cut the list to 86", "revised to"), holds
#: beside one that moved ("under-16s remain at 5 pounds", "still"), or is the current one ("this
#: season", "these days"). The other change words are the markers and onsets the other rules read.
AMOUNT_CUE = re.compile(
    r"\b(?:up|down|cut|rose|risen|fell|fallen|dropped|doubled|halved|revised|increased|reduced|lowered|"
    r"remains?|remained|still|currently|"
    r"these days|this (?:season|year|term|month|week|time))\b",
    re.IGNORECASE,
)

_MONEY_WORDS = frozenset({"pound", "pounds", "euro", "euros", "dollar", "dollars", "quid", "gbp", "eur", "usd"})
#: A number as written: a currency sign before it, decimals, a time of day, a unit word after it.
_AMOUNT = re.compile(
    r"(?P<sign>[£$€])?(?P<num>\d+(?:[.,]\d+)*)(?::(?P<minutes>\d\d))?\s*(?P<ampm>am|pm)?\b"
    r"(?:[ \t]*(?P<unit>[A-Za-z][A-Za-z-]*))?",
    re.IGNORECASE,
)
#: A four-digit year counts nothing ("since 2019", "born 1980").
_YEAR = re.compile(r"^(?:19|20)\d\d$")


def amounts(content: str) -> dict[str, set[str]]:
    """The amounts a memory states, by what they count: ``"money"``, ``"clock"`` or the stem of the
    unit word after the number; a year, a day of a month and a bare number are none."""
    out: dict[str, set[str]] = {}
    for m in _AMOUNT.finditer(content):
        start = m.start()
        if start > 0 and (content[start - 1].isalnum() or content[start - 1] in "-/"):
            continue  # inside a word or a code ("under-16s", "eu-central-1", "ZX-5")
        num, unit = m.group("num").replace(",", ""), m.group("unit")
        unit_stems = tokenize(unit) if unit else []
        unit_stem = unit_stems[0] if unit_stems else None
        if m.group("sign") or (unit is not None and unit.lower() in _MONEY_WORDS):
            kind, value = "money", num
        elif m.group("minutes") or m.group("ampm"):
            kind, value = "clock", f"{num}:{m.group('minutes') or '00'}{(m.group('ampm') or '').lower()}"
        elif _YEAR.match(num) or unit_stem is None or unit_stem in CALENDAR:
            continue
        else:
            kind, value = unit_stem, num
        out.setdefault(kind, set()).add(value)
    return out


#: Units of measure and of time: an amount in them says how much, not of what ("10 mg", "a month").
_MEASURES = frozenset(
    tokenize(
        " ".join(_MONEY_WORDS) + " mg g kg km mi miles ml l litre litres liter liters percent per cent minute minutes "
        "hour hours day days week weeks month months year years times"
    )
)


#: Days and parts of the week: amounts on other days are other occurrences, not a new amount.
_WEEKDAYS = frozenset(tokenize("weekday weekdays weekend weekends")) | CALENDAR


#: Words for whom a price or a count is ("Children's swim lessons are now £8" is a second price
#: beside "Adult swim lessons are £12", not a new one).
_TIERS = frozenset(
    tokenize(
        "adult adults child children kid kids teen teens junior juniors senior seniors student students "
        "member members concession concessions"
    )
)


def _words(content: str) -> set[str]:
    """The memory's words that can name the thing counted: not its numbers, units of measure,
    days, light verbs or a name past its opening; a counted noun ("40 pupils") is one."""
    stems = set(tokenize(content))
    numbers = {t for t in stems if t[:1].isdigit()}
    names = {t for run in NAME_RUN.finditer(content) if run.start() > 0 for t in tokenize(run.group(0))}
    return stems - numbers - names - _MEASURES - _WEEKDAYS - GROUP_STEMS - LIGHT_VERBS


def _shared_thing(content: str, old: str) -> set[str]:
    """The words both memories can name the counted thing by; whom both are about is not one
    ("Dana earns 50,000 euros a year" and "Dana raised 2,000 euros for charity" share only Dana)."""
    shared = _words(content) & _words(old)
    who = subject(content)
    if who is not None and who == subject(old):
        shared.discard(who)
    return shared


def has_amount_cue(content: str) -> bool:
    """Whether the memory says that an amount moved, holds or is the current one (see module doc)."""
    return AMOUNT_CUE.search(content) is not None or has_change_marker(content) or ONSET.search(content) is not None


def new_amount(content: str, old: str) -> bool:
    """Whether ``content`` gives the thing ``old`` counts a new amount (see module doc): "Adult
    tickets are 14 pounds …; under-16s remain at 5 pounds" after "Tickets are 12 pounds for adults
    and 5 pounds for under-16s"; not "Pays 40 euros a month for the gym" after "Rent is 900 euros
    a month" (no word shared besides the amounts), nor an amount said again."""
    if not has_amount_cue(content):
        return False
    new, was = amounts(content), amounts(old)
    new_stems, old_stems = set(tokenize(content)), set(tokenize(old))
    moved = any(
        _same_count(k, j, new_stems, old_stems) and new[k] - was[j] and was[j] - new[k] for k in new for j in was
    )
    if not moved:
        return False
    # two things of one family ("Zesty Pebble's p95 latency" / "Zesty Kestrel's"): a single capital
    # that opens a sentence ("Jars of jam …" / "Sells her jam …") is told apart by the subjects
    names, old_names = opening_names(content), opening_names(old)
    if len(names) > 1 and len(old_names) > 1 and not (names <= old_names or old_names <= names):
        return False
    if (new_stems & _TIERS) - old_stems:  # another tier of the thing: a second amount, not a new one
        return False
    days, old_days = new_stems & _WEEKDAYS, old_stems & _WEEKDAYS
    if days and old_days and days != old_days:  # "18 km on Sundays" beside "5 km on weekdays"
        return False
    return bool(_shared_thing(content, old))


def _same_count(unit: str, other: str, stems: set[str], other_stems: set[str]) -> bool:
    """Whether two amounts count the same thing: one unit, or a counted noun the other memory names
    ("cut the list to 86 guests" and "Guest list stands at 110 people")."""
    if unit == other:
        return True
    if {unit, other} & {"money", "clock"}:
        return False
    return unit in other_stems or other in stems


__all__ = ["AMOUNT_CUE", "amounts", "has_amount_cue", "new_amount"]
