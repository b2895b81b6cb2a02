"""Small text utilities of the hygiene layer: key terms and overlap measures (duplicate detection)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..wording import STOP_WORDS

_WORD = re.compile(r"[a-z0-9][a-z0-9+#]*(?:['\u2019][a-z]+)?")


#: Words that say the same thing about a preference map to one term, so paraphrases overlap.
SYNONYMS: dict[str, str] = {
    "like": "like",
    "prefer": "like",
    "love": "like",
    "enjoy": "like",
    "favorite": "like",
    "favourite": "like",
    "fond": "like",
    "adore": "like",
    "fan": "like",
    "preferred": "like",
    "preference": "like",
    "hate": "dislike",
    "detest": "dislike",
    "loathe": "dislike",
    "stand": "dislike",
    "called": "name",
    "named": "name",
    "job": "work",
    "employer": "work",
    "employed": "work",
    "company": "work",
    "allergy": "allergic",
    "allergies": "allergic",
    "reside": "live",
    "home": "live",
    "based": "live",
}


def stem(word: str) -> str:
    """A deliberately light English stemmer: possessives, plurals, -ing/-ed, a few irregulars."""
    w = word.replace("\u2019", "'")
    if w.endswith("'s"):
        w = w[:-2]
    w = w.rstrip("'")
    if len(w) > 4 and w.endswith("ies"):
        w = w[:-3] + "y"
    elif len(w) > 4 and w.endswith(("sses", "shes", "ches", "xes")):
        w = w[:-2]
    elif len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    if len(w) > 5 and w.endswith("ing"):
        w = w[:-3]
        if len(w) > 2 and w[-1] == w[-2]:
            w = w[:-1]
    elif len(w) > 4 and w.endswith("ed"):
        w = w[:-2] if not w.endswith("eed") else w[:-1]
        if len(w) > 2 and w[-1] == w[-2] and w[-1] not in "ls":
            w = w[:-1]
    elif len(w) > 3 and w.endswith("e") and not w.endswith(("ee", "ue")):
        w = w[:-1]
    return w


def _canonical(word: str) -> str:
    bare = word.replace("\u2019", "'").removesuffix("'s")
    if bare in SYNONYMS:
        return stem(SYNONYMS[bare])
    s = stem(word)
    for form in (s, s + "e"):
        if form in SYNONYMS:
            return stem(SYNONYMS[form])
    return s


def key_terms(text: str) -> set[str]:
    """Content words of ``text``, stemmed, stop words and "user" removed, synonyms merged."""
    out: set[str] = set()
    for raw in _WORD.findall(text.lower()):
        if raw in STOP_WORDS or raw.replace("\u2019", "'") in STOP_WORDS:
            continue
        term = _canonical(raw)
        if term and term not in STOP_WORDS:
            out.add(term)
    return out


def jaccard(a: Iterable[str], b: Iterable[str]) -> float:
    sa, sb = set(a), set(b)
    if not sa and not sb:
        return 1.0
    return len(sa & sb) / len(sa | sb)


def containment(query: Iterable[str], target: Iterable[str]) -> float:
    """Share of the query's terms present in the target."""
    sq, st = set(query), set(target)
    return len(sq & st) / len(sq) if sq else 0.0


_NAME_CLAUSE = r"(?:'s (?:first |full |given )?name\b| wants to be called\b| is called\b| goes by\b)"
_LEADING_USER = re.compile(r"^User\b(?!" + _NAME_CLAUSE + ")")


def name_user(content: str, name: str | None) -> str:
    """A formatted memory that opens with the neutral "User" rewritten to open with the user's name
    ("User prefers dark mode" → "Dana prefers dark mode"); the statement of the name itself and
    memories that do not open with "User" are returned as they are."""
    if not name:
        return content
    return _LEADING_USER.sub(lambda _m: name, content, count=1)


def neutral(content: str, name: str | None) -> str:
    """The inverse of :func:`name_user`: every mention of the user's name as "User", so memories
    written before and after the name was known compare alike (key terms, ``fact_slot``)."""
    if not name:
        return content
    return re.sub(r"(?<![\w'])" + re.escape(name) + r"(?![\w-])", "User", content)
