"""Words and names the supersession rules share: change markers, names as written, calendar words and
the vocabularies of relatives, partners and attributes stated without their owner."""

from __future__ import annotations

import re

from ..retrieval.lexical import tokenize
from ..wording import CALENDAR_WORDS

CHANGE = re.compile(
    r"\b(now|no longer|any ?more|switched|switching|moved|moving|relocated|relocating|changed|took over|"
    r"upgraded|downgraded|migrated|rewritten|rewrote|ported|started a new|new job|left|quit|sold|gave up|"
    r"transferred|became|instead|replaced|stopped|"
    r"is no|are no|not any|broke up|divorced|separated|got engaged|got married)\b"
    # "User's new manager is Felix", "my new address": a possessive "new" names a replaced value
    r"|(?:'s|\u2019s|\bmy|\bhis|\bher|\btheir|\bour)\s+new\b",
    re.IGNORECASE,
)


def has_change_marker(content: str) -> bool:
    return CHANGE.search(content) is not None


#: Words for another person, which a possessive opening makes the subject ("User's sister moved to
#: Munich" is about the sister: it does not replace where the user lives). Words for an attribute of
#: the scope's owner ("User's manager …", "User's address …") are not among them.
RELATIVES = frozenset(
    {
        "sister",
        "brother",
        "sibling",
        "mother",
        "mom",
        "mum",
        "father",
        "dad",
        "parent",
        "parents",
        "son",
        "daughter",
        "child",
        "children",
        "kid",
        "kids",
        "wife",
        "husband",
        "partner",
        "girlfriend",
        "boyfriend",
        "fiance",
        "fiancee",
        "friend",
        "colleague",
        "coworker",
        "roommate",
        "flatmate",
        "neighbour",
        "neighbor",
        "cousin",
        "aunt",
        "uncle",
        "niece",
        "nephew",
        "grandmother",
        "grandfather",
        "grandma",
        "grandpa",
    }
)
#: Words that add to what is known rather than replace it ("now also leads", "as well", "moved to
#: Dubai too"; not "too far").
ADDITIVE = re.compile(r"\b(?:also|as well|in addition)\b|\btoo\b(?=\s*(?:[,.;!)]|$))", re.IGNORECASE)
#: A run of capitalised words (a name: "Paul Grant", "St. Mary's Hospital", "PostgreSQL 14").
NAME_RUN = re.compile(r"(?<![\w.])(?:[A-Z][\w'.\u2019-]*)(?:\s+(?:[A-Z][\w'.\u2019-]*|\d[\w.]*))*")


#: Capitalised words that name a time, not a value ("on leave until May").
CALENDAR = frozenset(tokenize(" ".join(sorted(CALENDAR_WORDS))))

#: Verbs that say nothing of what they are about: "Takes metformin 500 mg" and "Takes lisinopril
#: 10 mg" share no counted thing (``amounts.py``), and "stopped going" names nothing given up.
LIGHT_VERBS = frozenset(
    tokenize("take takes have has get gets go goes going make makes pay pays cost costs buy buys use uses")
    + tokenize("spend spends keep keeps need needs charge charges give gives do does doing come comes coming")
)


def name_runs(content: str) -> list[str]:
    """The names a memory states, in order (runs of capitalised words; a month or a day is none)."""
    return [m.group(0).rstrip(".") for m in NAME_RUN.finditer(content) if not set(tokenize(m.group(0))) <= CALENDAR]


def restates(content: str, old: str) -> bool:
    """Whether ``content`` names the value ``old`` states (its last name past its opening word:
    "Paul Grant" of "Lena's manager is Paul Grant") and no name ``old`` does not hold, a month or a
    day it adds aside: "Lena's manager Paul Grant now approves her leave" and "Manager Chen Wei is
    now on leave until May" say more about the manager, they do not change who it is, while "Kim
    left Northwind; Alex Moreno is now the second admin" names the new one."""
    runs = [m.group(0).rstrip(".") for m in NAME_RUN.finditer(old) if m.start() > 0]
    if not runs:
        return False
    value = runs[-1]  # a month may be the value ("the deadline moved to March")
    if re.search(r"(?<!\w)" + re.escape(value) + r"(?!\w)", content) is None:
        return False
    known = set(tokenize(old))
    return all(value in run or set(tokenize(run)) <= known for run in name_runs(content))


#: The head nouns of attributes that hold one value, which :data:`_SLOT_BARE` reads.
BARE_ATTRIBUTES = frozenset(
    [
        "phone",
        "laptop",
        "computer",
        "car",
        "bike",
        "bank",
        "gym",
        "dentist",
        "doctor",
        "gp",
        "therapist",
        "manager",
        "boss",
        "supervisor",
        "mentor",
        "employer",
        "landlord",
        "editor",
        "browser",
        "shell",
        "os",
        "address",
        "email",
        "salary",
        "title",
        "role",
        "position",
        "hometown",
        "birthday",
        "nickname",
        "pronouns",
        "timezone",
        "provider",
        "carrier",
        "isp",
        "school",
        "university",
        "college",
        "major",
        "rent",
        "budget",
        "deadline",
        "database",
        "db",
        "cache",
        "cloud",
        "host",
        "hosting",
        "ci",
        "registry",
        "tracker",
        "channel",
        "owner",
        "lead",
        "sponsor",
    ]
)


GROUP_STEMS = frozenset(tokenize("team project service app squad account user"))


#: Relatives whose naming states the owner's relationship ("Lena's partner is Tom").
PARTNERS = frozenset({"partner", "wife", "husband", "girlfriend", "boyfriend", "fiance", "fiancee"})


DATE_WORDS = (
    r"january|february|march|april|may|june|july|august|september|october|november|december|"
    r"jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|next|tomorrow|q[1-4]|mid|end|early|late"
)


#: The time of a recurring event ("at 10:15", "on Thursdays at 4pm", "every Monday").
TIME_VALUE = re.compile(
    r"^(?:at|on|every|from)\s+(?:other\s+)?(?:\d|(?:" + DATE_WORDS + r"|noon|midnight|weekdays?|weekends?|"
    r"mondays|tuesdays|wednesdays|thursdays|fridays|saturdays|sundays)\b)",
    re.IGNORECASE,
)
