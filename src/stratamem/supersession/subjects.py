"""Whom or what a memory is about (:func:`subject`), and whether two memories are about the same one."""

from __future__ import annotations

import re

from ..retrieval.lexical import tokenize
from .words import BARE_ATTRIBUTES, PARTNERS, RELATIVES, has_change_marker

_LEADING_WORD = re.compile(r"^\s*([A-Z][\w-]*)(?:'s|\u2019s)?\b")
#: Capitalised words that open a sentence without naming whom it is about.
_NOT_A_NAME = frozenset(
    {
        "user",
        "the",
        "we",
        "our",
        "this",
        "that",
        "these",
        "those",
        "my",
        "his",
        "her",
        "their",
        "a",
        "an",
        "it",
        "they",
        "i",
        "you",
        "there",
        "every",
        "each",
        "all",
        "no",
        "some",
    }
)


#: Verbs a fact opens with when it leaves its subject out ("Lives in Hamburg", "Moved to Berlin",
#: "Is a vegetarian", as facts extracted from a conversation are often written): about the scope's
#: owner, like "User …", not about someone named "Lives".
_OPENING_VERBS = frozenset(
    {
        "is",
        "are",
        "was",
        "were",
        "has",
        "have",
        "had",
        "lives",
        "lived",
        "works",
        "worked",
        "uses",
        "used",
        "prefers",
        "preferred",
        "likes",
        "liked",
        "loves",
        "hates",
        "enjoys",
        "wants",
        "needs",
        "plans",
        "owns",
        "drives",
        "eats",
        "drinks",
        "speaks",
        "studies",
        "learns",
        "joined",
        "started",
        "starts",
        "began",
        "got",
        "bought",
        "sold",
        "reports",
        "manages",
        "leads",
        "recently",
        "currently",
        # more verbs and adverbs a fact without its subject opens with ("Plays chess online", "Gave up
        # smoking", "Usually takes the train"); none is also a common first name
        "plays",
        "played",
        "gave",
        "gives",
        "takes",
        "took",
        "goes",
        "went",
        "runs",
        "ran",
        "writes",
        "wrote",
        "reads",
        "watches",
        "teaches",
        "taught",
        "visits",
        "visited",
        "attends",
        "attended",
        "cooks",
        "walks",
        "cycles",
        "swims",
        "travels",
        "commutes",
        "rents",
        "pays",
        "banks",
        "follows",
        "supports",
        "listens",
        "wears",
        "keeps",
        "kept",
        "lost",
        "spends",
        "saves",
        "volunteers",
        "sings",
        "practices",
        "practises",
        "trains",
        "rides",
        "dislikes",
        "avoids",
        "knows",
        "studied",
        "graduated",
        "grew",
        "belongs",
        "earns",
        "makes",
        "does",
        "did",
        "sleeps",
        "wakes",
        "thinks",
        "believes",
        "usually",
        "often",
        "always",
        "never",
        "sometimes",
        "still",
        "also",
        "only",
        "mostly",
        "rarely",
    }
)
_RELATIVE_OPENING = re.compile(
    r"^\s*(?:(?:the\s+)?(?P<owner>[A-Za-z][\w-]*)(?:'s|\u2019s)|my|his|her|their|our)\s+(?P<who>[a-z]+)\b",
    re.IGNORECASE,
)
#: A fact without its subject that opens with a word for a person ("Sister moved to Lisbon",
#: "Daughter Lucia started school"): about that relative of the scope's owner.
_BARE_RELATIVE = re.compile(r"^\s*(?P<who>[A-Za-z]+)\b")
#: The prefix of :func:`subject` for a relative of someone.
RELATIVE = "relative:"


#: A person introduced by a role before what they do ("Our client Emeka Jung switched …", "The new
#: hire Wei Fuchs …", "The user's colleague Umar Zimmermann thinks …"): that person.
_INTRODUCED = re.compile(
    r"^\s*(?:[Tt]he|[Oo]ur|[Mm]y|[Hh]is|[Hh]er|[Tt]heir|[Aa]n?)\s+(?P<role>(?:(?!(?:of|for|at|in|on|with|to|from|by|and)\s)[a-z][\w'\u2019-]*\s+){1,3}?)"
    r"(?P<name>[A-Z][\w-]+(?:\s+[A-Z][\w-]+){0,2})(?=\s+(?:from\s+the\b|[a-z]))"
)


#: A group opened with its name ("The Kestrel team …", "The Lunar Heron project …").
_NAMED_GROUP = re.compile(
    r"^\s*[Tt]he\s+(?P<name>[A-Z][\w-]*(?:\s+[A-Z][\w-]*){0,2})\s+(?:team|project|service|app|squad|account)\b"
)


def relative_parts(who: str) -> tuple[str, str, str]:
    """The relative word, its owner and its name of a :func:`subject` that names a relative."""
    rest, _, name = who.removeprefix(RELATIVE).partition("#")
    word, _, owner = rest.partition("@")
    return word, owner, name


#: A phrase of time or cause before the subject, up to its comma ("Following the tasting, …", "After
#: a long evening with the spreadsheet, Dagny and Aurelio …"): the subject comes after it.
_OPENING_PHRASE = re.compile(
    r"^\s*(?:after|following|since|before|during|until|once|because of|thanks to|due to)\b[^,;:]{1,60},\s*",
    re.IGNORECASE,
)


def subject(content: str) -> str | None:
    """Whom or what a memory is about, from how it opens: the (stemmed) name it opens with ("Dana" of
    "Dana moved to Berlin", "Marco" of "Marco's manager …"), ``"relative:<word>"`` for a relative of
    the scope's owner ("relative:sister" of "User's sister moved …", "My sister …") and
    ``"relative:<word>@<name>"`` for one of a named person ("relative:sister@dana" of "Dana's sister
    …"), or None when it opens with a word that names nobody ("The team …", "We moved …", "User
    prefers …", "Lives in Hamburg"). A person introduced by a role is that person, told apart from
    others of the role by name: ``"relative:client#emeka-jung"`` of "Our client Emeka Jung …",
    ``"relative:colleague#umar-zimmermann"`` of "The user's colleague Umar Zimmermann …". A phrase
    of time or cause it opens with is passed over ("Following the tasting, they chose …")."""
    opening = _OPENING_PHRASE.match(content)
    if opening is not None:
        content = content[opening.end() :]
    group = _NAMED_GROUP.match(content)
    if group is not None and (name := tokenize(group.group("name"))):
        return name[0]  # "The Lunar Heron project uses Rust" is about Lunar Heron, as "Lunar Heron …"
    introduced = _INTRODUCED.match(content)
    if introduced is not None and (name := tokenize(introduced.group("name"))):
        return RELATIVE + introduced.group("role").split()[-1].lower() + "#" + "-".join(name)
    relative = _RELATIVE_OPENING.match(content)
    if relative is not None and relative.group("who").lower() in RELATIVES:
        owner = subject(relative.group("owner")) if relative.group("owner") else None
        return RELATIVE + relative.group("who").lower() + (f"@{owner}" if owner else "")
    bare = _BARE_RELATIVE.match(content)
    if bare is not None and bare.group("who").lower() in RELATIVES:
        return RELATIVE + bare.group("who").lower()
    match = _LEADING_WORD.match(content)
    if match is None or match.group(1).lower() in _NOT_A_NAME or match.group(1).lower() in _OPENING_VERBS:
        return None
    if match.group(1).lower() in BARE_ATTRIBUTES:  # "Phone is a Pixel 8": the owner's phone
        return None
    if has_change_marker(match.group(1)):  # "Moved to Berlin", "Switched to Neovim"
        return None
    stems = tokenize(match.group(1))  # "Sessions …" and "Session caching …" open with the same word
    return stems[0] if stems else None


def same_subject(who: str | None, other: str | None) -> bool:
    """Whether a memory about ``other`` can be replaced by one about ``who``. A memory that names
    nobody is about the scope's owner, whom a named one may be (a user's memories say "Dana …" and
    "User …"); a relative is a different person from both, and the same relative ("sister") of the
    owner and of a named person may be one person, of two named people not."""
    if (who or "").startswith(RELATIVE) != (other or "").startswith(RELATIVE):
        return False
    if who is not None and other is not None and who.startswith(RELATIVE):
        word, owner, name = relative_parts(who)
        other_word, other_owner, other_name = relative_parts(other)
        if name and other_name:  # two people named: the same one only by name
            return name == other_name
        return word == other_word and (not owner or not other_owner or owner == other_owner)
    return who is None or other is None or who == other


def about_same(who: str | None, other: str | None, content: str, old: str) -> bool:
    """:func:`same_subject`, or two memories one of which opens with a word the other one holds too:
    a capital that opens a sentence need not be a name ("Stand-up is 9:15 from now on" and "Daily
    stand-up 8:45 in room B112"; "Tickets are 12 pounds …" and "Adult tickets are 14 pounds …"),
    and a name the other memory holds is what both are about. A relative stays another person; two
    names neither memory shares ("Ana switched from Jenkins" and "Ben uses Jenkins") two people."""
    if same_subject(who, other):
        return True
    if (who or "").startswith(RELATIVE) or (other or "").startswith(RELATIVE):
        return False
    return (who is not None and who in set(tokenize(old))) or (other is not None and other in set(tokenize(content)))


def partner_of(who: str | None, other: str | None) -> bool:
    """Whether a memory about ``other`` is about the partner of ``who`` (the scope's owner when None):
    "Lena's partner is called Tom" states whom Lena is with, which "Lena is now dating Sam" changes."""
    if other is None or not other.startswith(RELATIVE) or (who or "").startswith(RELATIVE):
        return False
    word, owner, _ = relative_parts(other)
    return word in PARTNERS and (not owner or who is None or owner == who)


def candidate_subject(old: str, mentioned: set[str]) -> str | None:
    """The :func:`subject` of a candidate, except that a group's fact ("The Helix team lead is Omar
    Haddad") is the scope's own when the new memory names the group ("Priya Nair took over as Helix
    team lead from Omar Haddad"): a person's change about the project may replace it, one that does
    not name it ("William Demir switched from Rust to Splunk") may not."""
    group = _NAMED_GROUP.match(old)
    if group is not None and set(tokenize(group.group("name"))) <= mentioned:
        return None
    return subject(old)
