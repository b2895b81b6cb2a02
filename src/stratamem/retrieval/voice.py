"""Questions in the user's voice, asked of memories about the user.

The personal layers (agent, user, session) hold facts about the user in the third person: with the
user's name ("Dana moved to Berlin") or with the neutral "User" ("User moved to Berlin"), the form
the write gate and most agents use while the name is unknown. An agent often searches with the
user's own message, in the first person: "where do I live now?". For all-MiniLM-L6-v2 the subject
weighs as much as the content: that question's fused score with "Dana moved to Berlin" is about 0.61,
under the default threshold, while "where does Dana live now?" finds it first above it. The same holds
the other way round: "what theme does alice like" ranks "Alice's favourite editor is Neovim" above
"User prefers dark mode" because of the shared name.

So a search of a personal layer may ask the question in other words that refer to the user
(:func:`phrasings`): as asked; about "the user"; about the user's name, taken from the ``user_id``
when it is one (:func:`name_from_id`), else, for a first-person or pronoun question, the name a
memory of the user's scope states ("User's name is Dana", the write gate's form) or, when none does,
the name most of its memories call their person by (:func:`usual_name`: "Ruth works nights", "Never
book Ruth on a Sunday"). Each personal scope is searched with the phrasing that moves the question
most towards the scope's centroid (:func:`closest`), that is, the way most of that scope's memories
speak of the user. A scope where fewer than half of the memories name the user at all, by a name,
"user" or "she" / "his" (facts written without their subject, "Lives in Osaka") is searched with the
person left out (:func:`without_person`): there the user's words only pull the question towards the
few memories that contain them, such as the statement of the name. Layers about something else
(project, team, org, company, object) get the question as asked.

A question that names the user speaks of them in the third person; its "I" is the asker (an agent
asking "how should I talk to Priya"), so its first-person words are left alone and only the name
may be replaced by "the user". A question that speaks of someone as "she", "he", "her" or "his",
naming no one before the pronoun ("what sport does her son play?", :func:`by_pronoun`), is about the
scope's person as well (an agent asking about its user, or about the person a scope is kept for);
a pronoun moves a vector too little for the centroid to choose between the name and "the user",
so the engine asks it the way most of the scope's memories name the user; as asked when most of
them say "she" or "her" and fewer than half use a name or "user".
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

from ..layers import PERSONAL_LAYERS
from ..wording import CALENDAR_WORDS
from .lexical import STOPWORDS

_I = re.IGNORECASE
#: "me" after a request to the assistant ("tell me about Mars", "show me the logs") is only whom to
#: answer, not what the question is about; "what do you know about me" is about the user.
_ADDRESSED = "tell|show|give|send|help|let|get|find|bring|teach|explain|ask|pass|hand"
_FIRST_PERSON = re.compile(
    r"\b(?:i|my|mine|myself)\b|\bi['\u2019](?:m|ve|d|ll)\b|(?<!\w)(?!(?:" + _ADDRESSED + r")\s)\w+\s+me\b|^me\b", _I
)
#: "do I live" -> "does Dana live": auxiliaries before "I", and their third-person form.
_AUXILIARIES = {
    "am": "is",
    "do": "does",
    "have": "has",
    "was": "was",
    "were": "was",
    "did": "did",
    "can": "can",
    "could": "could",
    "should": "should",
    "shall": "shall",
    "will": "will",
    "would": "would",
    "may": "may",
    "might": "might",
    "must": "must",
}
_AUX_I = re.compile(r"\b(" + "|".join(_AUXILIARIES) + r")\s+i\b", _I)
_CONTRACTIONS = (
    (re.compile(r"\bi'm\b", _I), "is"),
    (re.compile(r"\bi've\b", _I), "has"),
    (re.compile(r"\bi'd\b", _I), "would"),
    (re.compile(r"\bi'll\b", _I), "will"),
    (re.compile(r"\bi am\b", _I), "is"),
)
#: A user id that reads as a first name: letters, an inner hyphen or apostrophe, 2 to 30 characters.
_NAME_ID = re.compile(r"[A-Za-z][A-Za-z'-]{0,28}[A-Za-z]")


def first_person(query: str) -> bool:
    """Whether the query speaks in the first person (I, me, my, mine, myself, I'm …)."""
    return _FIRST_PERSON.search(query.replace("\u2019", "'")) is not None


def about(query: str, who: str) -> str:
    """The query with its first-person words about ``who``: "where do I live?" -> "where does Dana
    live?", "what's my job?" -> "what's Dana's job?"."""
    s = query.replace("\u2019", "'")
    s = _AUX_I.sub(lambda m: f"{_AUXILIARIES[m.group(1).lower()]} {who}", s)
    for pattern, verb in _CONTRACTIONS:
        s = pattern.sub(f"{who} {verb}", s)
    s = re.sub(r"\b(?:my|mine)\b", f"{who}'s", s, flags=_I)
    s = re.sub(r"\b(?:me|myself)\b", who, s, flags=_I)
    return re.sub(r"\bi\b", who, s, flags=_I)


#: The third-person singular pronouns; reflexives ("himself") are left alone, as they repeat a subject.
PRONOUNS = ("she", "he", "her", "hers", "him", "his")
_PRONOUN = re.compile(r"\b(?:" + "|".join(PRONOUNS) + r")\b", _I)
#: "her" is the possessive before a word of what it owns ("her son"), the object before a function
#: word or the end ("text her after …", "employs her?").
_OWNED_AFTER = re.compile(
    r"\s+(?!(?:a|an|the|and|or|but|to|for|from|after|before|about|at|by|in|into|of|off|on|onto|over|since"
    r"|than|that|then|through|till|until|up|with|without|when|while|if|as|so)\b)[a-z]",
    _I,
)
#: A capitalised word after the question's first: a name the pronoun may refer to instead of the user.
_CAPITALISED = re.compile(r"(?<!^)(?<![.?!]\s)\b[A-Z][\w'-]+")


def by_pronoun(query: str) -> bool:
    """Whether the query speaks of someone as "she", "he", "her", "his" … without naming anyone
    before the pronoun ("what sport does her boy play", but not "what does Ola plan after her
    degree"): asked of a personal scope, the pronoun is the scope's person."""
    found = _PRONOUN.search(query)
    return found is not None and _CAPITALISED.search(query[: found.start()]) is None


def about_pronoun(query: str, who: str) -> str:
    """The query with its third-person pronouns about ``who``: "what sport does her boy play" ->
    "what sport does Priya's boy play", "when can we call him" -> "when can we call Tomasz"."""

    def named(match: re.Match[str]) -> str:
        word = match.group(0).lower()
        if word in ("his", "hers"):
            return f"{who}'s"
        if word == "her":
            return f"{who}'s" if _OWNED_AFTER.match(match.string, match.end()) else who
        return who

    return _PRONOUN.sub(named, query.replace("\u2019", "'"))


def name_from_id(user_id: str | None) -> str | None:
    """The user's first name when the user id is one ("dana" -> "Dana"), else None ("u-1042",
    "dana@example.com")."""
    if not user_id or not _NAME_ID.fullmatch(user_id):
        return None
    return user_id[0].upper() + user_id[1:]


#: A capitalised word, without its "'s": a name, or a sentence's first word.
_CAPITAL_WORD = re.compile(r"\b([A-Z][a-z][\w-]*)(?:['\u2019]s\b)?")
#: Capitalised words that are no one's name: function words, the neutral "User", the words an
#: instruction opens with, days and months.
_NOT_NAMES = STOPWORDS | {
    "user",
    "never",
    "always",
    "please",
    *CALENDAR_WORDS,
}
#: The share of a scope's memories that must name its person for :func:`usual_name` to take it, and
#: how many times more often than any other name.
USUAL_SHARE = 1 / 3
USUAL_LEAD = 1.5


def usual_name(contents: Sequence[str]) -> str | None:
    """The name ``contents`` (a scope's memories) call their person by when they never state it
    ("Ruth works nights", "Never book Ruth on a Sunday", "Ruth's husband …"): the name at least
    :data:`USUAL_SHARE` of them and at least three use, :data:`USUAL_LEAD` times as many as the next
    name; else None (a scope about "User", facts without their subject, two people named alike)."""
    counts: dict[str, int] = {}
    for text in contents:
        for word in {m.group(1) for m in _CAPITAL_WORD.finditer(text)}:
            if word.lower() not in _NOT_NAMES:
                counts[word] = counts.get(word, 0) + 1
    ranked = sorted(counts.values(), reverse=True)
    if not ranked or ranked[0] < max(3, USUAL_SHARE * len(contents)):
        return None
    if len(ranked) > 1 and ranked[0] < USUAL_LEAD * ranked[1]:
        return None
    return max(counts, key=lambda word: counts[word])


def _name_words(name: str) -> re.Pattern[str]:
    return re.compile(r"\b" + re.escape(name) + r"\b", _I)


#: The kinds of phrasing: the question as asked, about "the user", about the user's name, about
#: nobody (the person left out, as facts extracted from a conversation leave out their subject:
#: "Lives in Osaka", "Prefers green tea").
ASKED, THE_USER, NAME, NOBODY = "asked", "the user", "name", "nobody"

_THE_USER = re.compile(r"\b(?:the\s+)?user\b", _I)
_PERSON_WORDS = re.compile(r"\b(?:i['\u2019](?:m|ve|d|ll)|i|me|my|mine|myself)\b", _I)


def without_person(query: str, person: re.Pattern[str]) -> str:
    """The query with the words ``person`` finds left out, with their "'s" ("where does Kenji live?"
    -> "where does live?", "what's my job?" -> "what's job?"): ungrammatical, but what is left is
    what the question asks about."""
    text = re.sub(r"(?:" + person.pattern + r")(?:['\u2019]s)?", " ", query, flags=_I)
    return re.sub(r"\s+", " ", text).strip(" ,")


def user_words(name: str | None) -> tuple[str, ...]:
    """The words a memory names the user with: the name when known, and "user"."""
    return (name, "user") if name else ("user",)


def mentions(contents: Iterable[str], words: Sequence[str]) -> int:
    """How many of ``contents`` name the user with one of ``words``."""
    pattern = re.compile(r"\b(?:" + "|".join(re.escape(w) for w in words) + r")\b", _I)
    return sum(1 for text in contents if pattern.search(text))


#: How a question refers to the user (:func:`refers`).
BY_NAME, FIRST_PERSON, AS_USER, BY_PRONOUN = "by name", "first person", "as the user", "by pronoun"


def refers(query: str, name: str | None) -> str | None:
    """How the query refers to the user, ``name`` the user's name when known: by that name, in the
    first person, as "the user", by a third-person pronoun (:func:`by_pronoun`), or not at all
    (None). The first that applies: "how should I talk to Priya" names Priya, and its "I" is the
    asker; "what did I tell her" is in the first person, and "her" someone else."""
    if name and _name_words(name).search(query):
        return BY_NAME
    if first_person(query):
        return FIRST_PERSON
    if _THE_USER.search(query):
        return AS_USER
    return BY_PRONOUN if by_pronoun(query) else None


def phrasings(query: str, name: str | None, how: str | None = None) -> list[tuple[str, str]]:
    """``(kind, text)`` of the query as asked, then of the same question in the other ways personal
    memories refer to the user, and without the person (:data:`NOBODY`), ``name`` the user's name when
    known, ``how`` the query's :func:`refers` of that name when the caller has it. A question about
    "the user" gets only the one without the person; one that does not refer to the user, none."""
    how = refers(query, name) if how is None else how
    if how == BY_NAME and name:  # the user in the third person: the name, or "the user"
        named = _name_words(name)
        out = [(ASKED, query), (THE_USER, named.sub(lambda m: "the user", query))]
        person = named
    elif how in (FIRST_PERSON, BY_PRONOUN):
        rephrase = about if how == FIRST_PERSON else about_pronoun
        out = [(ASKED, query), (THE_USER, rephrase(query, "the user"))]
        if name:
            out.append((NAME, rephrase(query, name)))
        person = _PERSON_WORDS if how == FIRST_PERSON else _PRONOUN
    elif how == AS_USER:
        out = [(ASKED, query)]
        person = _THE_USER
    else:
        return [(ASKED, query)]
    bare = without_person(query, person)
    if bare:
        out.append((NOBODY, bare))
    unique: dict[str, str] = {}  # text -> kind: a rephrasing equal to another is asked once
    for kind, text in out:
        unique.setdefault(text, kind)
    return [(kind, text) for text, kind in unique.items()]


class ScopeForms:
    """A value decided per scope and kept while the scope's centroid has the same row count: the
    kind of phrasing each personal scope took, by the kinds offered (chosen on the scope's first such
    question, which embeds every phrasing, so that later questions embed only the phrasing they use),
    and the name a user scope's memories state ("" for none). Bounded; least recent first out.
    """

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._chosen: OrderedDict[tuple[str, ...], tuple[int, str]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, ...], rows: int) -> str | None:
        with self._lock:
            found = self._chosen.get(key)
            if found is None or found[0] != rows:
                return None
            self._chosen.move_to_end(key)
            return found[1]

    def put(self, key: tuple[str, ...], rows: int, kind: str) -> None:
        with self._lock:
            self._chosen[key] = (rows, kind)
            self._chosen.move_to_end(key)
            while len(self._chosen) > self._size:
                self._chosen.popitem(last=False)


def closest(vectors: npt.NDArray[np.float32], centroid: npt.NDArray[np.float32]) -> int:
    """The index of the phrasing that moves the question (row 0) most nearly the way of the scope's
    centroid: the cosine of each rephrasing's change ``v_i - v_0`` with the centroid, 0 for the
    question as asked (kept when no rephrasing moves towards the scope; the first on a tie).

    The change, not the phrasing's own similarity to the centroid: a name moves a vector further
    than "the user" does, so two memories of eight naming the user would otherwise win over six about
    "User" (measured in ``tests/conformance/test_ranking_contract.py``).
    """
    change = vectors - vectors[0]
    norms = np.sqrt(np.einsum("ij,ij->i", change, change))
    toward = np.divide(change @ centroid, norms, out=np.zeros(len(vectors), dtype=np.float32), where=norms > 1e-6)
    return int(np.argmax(toward))


__all__ = [
    "ASKED",
    "AS_USER",
    "BY_NAME",
    "BY_PRONOUN",
    "FIRST_PERSON",
    "NAME",
    "NOBODY",
    "PERSONAL_LAYERS",
    "THE_USER",
    "ScopeForms",
    "about",
    "about_pronoun",
    "by_pronoun",
    "closest",
    "first_person",
    "mentions",
    "name_from_id",
    "phrasings",
    "refers",
    "user_words",
    "without_person",
]
