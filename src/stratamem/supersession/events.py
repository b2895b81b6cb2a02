"""An event given a new date ("The beta release moved to September 3") and the memory it replaces."""

from __future__ import annotations

import re

from ..retrieval.lexical import tokenize
from .words import DATE_WORDS, GROUP_STEMS, name_runs

#: An event given another date ("The beta release for Marten moved to September 3", "The Kestrel
#: deadline was pushed to 17 April"): what moved, and that it moved to a time.
_RESCHEDULED = re.compile(
    r"^\s*(?P<what>.+?)\s+(?:was\s+|has\s+been\s+|is\s+|got\s+)?(?:moved|pushed|postponed|rescheduled|"
    r"delayed|shifted|brought\s+forward)\s+(?:back\s+|out\s+)?to\s+(?:the\s+)?(?:\d|(?:" + DATE_WORDS + r")\b)",
    re.IGNORECASE,
)
#: The same said of who moved it ("The platform team moved its standup to 10:15", "Lena moved her
#: dentist appointment to Thursday"): the event is the object, the mover's name a word of it.
_RESCHEDULED_OBJECT = re.compile(
    r"^\s*(?P<who>.+?)\s+(?:has\s+)?(?:moved|pushed|postponed|rescheduled|delayed|shifted)\s+"
    r"(?:the|its|our|their|his|her|my)\s+(?P<what>[\w' -]+?)\s+(?:back\s+|out\s+)?to\s+(?:the\s+)?"
    r"(?:\d|(?:" + DATE_WORDS + r")\b)",
    re.IGNORECASE,
)


def rescheduled(content: str) -> set[str] | None:
    """The informative words of the event a memory gives another date, or None: "The Kestrel deadline
    moved to April" → {kestrel, deadline}; not a person or a name alone ("Dana was moved to 3B")."""
    found = _RESCHEDULED.match(content)
    if found is None:
        moved = _RESCHEDULED_OBJECT.match(content)
        if moved is None:
            return None
        what = set(tokenize(moved.group("what"))) | set(tokenize(" ".join(name_runs(moved.group("who")))))
        return (what - GROUP_STEMS) or None
    if not re.search(r"\b[a-z]{3,}", found.group("what")):
        return None
    what = set(tokenize(found.group("what")))
    return what or None


#: What a memory opens with, up to its verb and within its first clause ("Roof replacement" of "Roof
#: replacement is scheduled …").
_LEAD = re.compile(
    r"^\s*(?P<lead>[^,;]+?)\s+(?:is|are|was|were|has|have|had|will|starts?|begins?|happens?|takes|runs|"
    r"opens|closes|ends|falls|moved|pushed|postponed|rescheduled|delayed|shifted)\b",
    re.IGNORECASE,
)
_DATED = re.compile(r"\d|\b(?:" + DATE_WORDS + r")\b", re.IGNORECASE)


def dates_event(old: str, event: set[str]) -> bool:
    """Whether ``old`` gives the date of the event a memory moves: it names the event, opens with it
    and names a date ("The Kestrel deadline is 3 April" for "The Kestrel deadline moved to 17 April").
    A memory that names the event in passing ("A bat survey found a roost, so no roof work is allowed
    between May and August" for "Roof work has been moved to September") says something else about it."""
    lead = _LEAD.match(old)
    return (
        lead is not None
        and _DATED.search(old) is not None
        and event <= set(tokenize(old))
        and bool(set(tokenize(lead.group("lead"))) & event)
    )
