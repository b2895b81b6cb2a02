"""English wording shared by the core and the features: function words, and the sentence in which a
memory states the user's name.

``hygiene`` uses both (key terms, the name the write gate writes facts about); the engine reads the
stated name to ask a first-person question about the user (``retrieval/voice.py``). They live here,
outside ``hygiene``, because the engine imports no feature.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime

STOP_WORDS: frozenset[str] = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "if",
        "then",
        "else",
        "of",
        "to",
        "in",
        "on",
        "at",
        "by",
        "for",
        "with",
        "about",
        "from",
        "as",
        "into",
        "over",
        "under",
        "up",
        "down",
        "out",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "am",
        "do",
        "does",
        "did",
        "doing",
        "have",
        "has",
        "had",
        "having",
        "will",
        "would",
        "shall",
        "should",
        "can",
        "could",
        "may",
        "might",
        "must",
        "i",
        "me",
        "my",
        "mine",
        "myself",
        "we",
        "us",
        "our",
        "ours",
        "you",
        "your",
        "yours",
        "he",
        "him",
        "his",
        "she",
        "her",
        "hers",
        "it",
        "its",
        "they",
        "them",
        "their",
        "theirs",
        "this",
        "that",
        "these",
        "those",
        "there",
        "here",
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "when",
        "where",
        "why",
        "how",
        "all",
        "any",
        "both",
        "each",
        "few",
        "more",
        "most",
        "other",
        "some",
        "such",
        "no",
        "nor",
        "not",
        "only",
        "own",
        "same",
        "so",
        "than",
        "too",
        "very",
        "just",
        "also",
        "really",
        "still",
        "now",
        "user",
        "user's",
        "users",
        "please",
        "remember",
        "forget",
        "note",
        "that's",
        "it's",
        "i'm",
        "i've",
        "i'd",
        "i'll",
        "don't",
        "doesn't",
        "didn't",
        "im",
        "ive",
        "id",
        "thing",
        "things",
        "stuff",
        "something",
        "anything",
        "everything",
        "lot",
        "lots",
        "kind",
        "sort",
        "actually",
        "basically",
    ]
)


#: The formatted statement of the user's name: "User's name is Dana", "User wants to be called Dee".
#: It keeps the neutral "User" on purpose: it is the one memory that links "User" to the name.
_NAME_FACT = re.compile(
    r"^(?:[Tt]he )?[Uu]ser(?:'s (?:first |full |given )?name is| wants to be called| is called| goes by) "
    r"(?P<name>[A-Za-z][\w'\u2019-]*(?: [A-Z][\w'\u2019-]*){0,2})\s*(?:$|[,.;!])"
)


def stated_name(content: str) -> str | None:
    """The name a formatted memory gives the user ("User's name is Dana", "The user's name is Priya
    Natarajan" → "Dana", "Priya Natarajan"), or None."""
    m = _NAME_FACT.match(content.strip().replace("\u2019", "'"))
    if m is None:
        return None
    name = m.group("name")
    if name.split()[0].lower() in STOP_WORDS or name.lower() in {"not", "unknown", "private"}:
        return None
    return name[:1].upper() + name[1:]


#: The words a search for the memory that states the user's name asks with.
NAME_STATEMENT = "User's name is"

#: The English names of the months and days, lower case: capitalised words that name a time, not a
#: person or a value ("on leave until May"). Spelled out rather than read from the ``calendar``
#: module, whose names follow the process's locale while the memories are read as English.
CALENDAR_WORDS = frozenset(
    {
        *("january", "february", "march", "april", "may", "june", "july", "august"),
        *("september", "october", "november", "december"),
        *("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"),
    }
)


def newest_stated_name(memories: Iterable[tuple[datetime, str]]) -> str | None:
    """The name stated by the newest of ``(created_at, content)`` that states one, or None."""
    stated = [(at, name) for at, content in memories if (name := stated_name(content))]
    return max(stated)[1] if stated else None
