"""Which older memories a new memory makes out of date (rule-based, offline).

A memory that states a change ("moved to Berlin", "switched from VS Code to Neovim", "not vegetarian
anymore", "now reports to Bob") supersedes the older memory of the same scope about the same
attribute. The older memory is kept as history (``status == "superseded"``, ``provenance.valid_to``
and ``provenance.superseded_by``) and leaves default search and list; see ``replacements.py``.

Six rules, all on candidates the embedder found similar in the same scope:

* **from … to …**: the new memory states a change and names what it replaces ("moved from Jenkins to
  GitHub Actions", "took over as lead from Sara", "instead of ECS", "replaced Sentry with Datadog",
  "no longer uses Auth0", "left Glovo", "stopped learning Spanish"); every informative word of the
  replaced phrase occurs in the candidate. Such a change replaces what it names and nothing more.
* **change of an attribute**: the new memory carries a change marker (now, no longer, anymore,
  moved, switched, started a new, "User's new …", broke up …) and shares an attribute class
  (residence, employment, manager, diet, plan, relationship, role, the agent's replies, time zone,
  how often something recurs when both name what recurs, and a liking when the two memories are
  much alike) with the candidate; of the
  candidates of one class only the most similar one is superseded (a new fact replaces one old fact
  per attribute). Not when the new memory adds ("also", "as well") or names the value the old one
  states and no other ("Lena's manager Paul Grant now approves her leave" says more about Paul, it
  does not change who the manager is).
* **a new value of a single-valued attribute** (:func:`slot`), with or without a word of change:
  "Ines works at Accenture" replaces "Ines works at Deloitte", "Harbor's database is PostgreSQL 16"
  replaces "… is MySQL 8", "Phone is a Pixel 8" (no owner named) "Phone is a Samsung Galaxy S22",
  "Has three kids" "Has two kids", "The standup is at 10:15" "… at 9:30", "The budget rose to
  £265,000" "The Oakridge renovation budget is £240,000" (a bare attribute named more closely, when
  the scope has one such value); a relative's second value
  ("Ines's sister is Marta"), a value of another kind ("Harbor's database is backed up nightly") and
  the same name with other details ("Works at Bolt on the payments team") do not.
* **a liking reversed**: "Prefers phone calls over email" replaces "Prefers email over calls".
* **a new date of an event** ("The beta release for Marten moved to September 3", "… was pushed to
  17 April", "The platform team moved its standup to 10:15"): replaces the most similar memory that
  opens with the same event and names a date, nothing else.
* **a new value in the same words**, when no rule above applies and nothing replaced is named
  (:func:`_new_value_in_frame`): a change stated by a marker, by when it starts ("From October Ruth
  works Thursday … nights") or by a verb of a new amount or term ("raised her rate to …") replaces
  the scope's memory the embedder finds far closer than any other, when each states a value the
  other does not and the new one repeats most of the older one's other words.

Each compares memories about the same person or thing (:func:`subject`): a memory opening with
another name, a relative, or a person introduced by a role ("Our client Emeka Jung …") is about
someone else than the scope's owner.

The rules are deliberately narrow: a missed change leaves both facts current (the newer one still
ranks by relevance), while a wrong supersession would hide a true fact from default search.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from .model import MemoryEntry
from .retrieval.lexical import tokenize, words

#: Cosine similarity a candidate needs for each rule (the embedder must agree that the two
#: memories are about the same thing).
MIN_COSINE_FROM_TO = 0.25
MIN_COSINE_ATTRIBUTE = 0.25
#: The cosine a candidate needs for the preference class: its words ("prefers", "likes") say that a
#: memory states a liking, not which one ("User now prefers light mode" replaces "User prefers dark
#: mode", 0.82; "Lena now prefers tea over coffee" leaves "Lena prefers replies in British English",
#: 0.52).
PREFERENCE_MIN_COSINE = 0.7
#: The most similar memories of the scope that are checked.
CANDIDATES = 8
#: A new value in the same words (:func:`_new_value_in_frame`): the older memory must be the new
#: one's nearest in the scope by this cosine, and lead the next nearest by this much. The rule has
#: no vocabulary of attributes, so the embedder must single the older memory out.
FRAME_MIN_COSINE = 0.55
FRAME_LEAD = 0.1

_CHANGE = re.compile(
    r"\b(now|no longer|any ?more|switched|switching|moved|moving|relocated|relocating|changed|took over|"
    r"upgraded|downgraded|migrated|rewritten|rewrote|ported|started a new|new job|left|quit|sold|gave up|"
    r"transferred|became|instead|replaced|stopped|"
    r"is no|are no|not any|broke up|divorced|separated|got engaged|got married)\b"
    # "User's new manager is Felix", "my new address": a possessive "new" names a replaced value
    r"|(?:'s|\u2019s|\bmy|\bhis|\bher|\btheir|\bour)\s+new\b",
    re.IGNORECASE,
)
#: A change told by when the new value starts ("From October Ruth works …", "as of 1 May") or by a
#: verb of a new amount or term ("raised her rate to …", "renewed …", "has taken over as …"), without
#: a word of :data:`_CHANGE`; read only by :func:`_new_value_in_frame`.
_ONSET = re.compile(
    r"\b(?:from|as of|starting|effective)\s+(?:next\s+|this\s+)?(?:january|february|march|april|may|june|july|"
    r"august|september|october|november|december|monday|tuesday|wednesday|thursday|friday|saturday|sunday|"
    r"next|tomorrow|today|\d)"
    r"|\b(?:raised|lowered|increased|reduced|renewed|extended|(?:has|have|had) taken over)\b",
    re.IGNORECASE,
)
#: Words after "stopped <verb>ing" that start no object ("stopped working in 2019", "quit smoking
#: after …"): the activity alone is what was given up.
_NOT_AN_OBJECT = (
    r"(?:in|at|on|for|since|because|after|before|and|but|to|with|when|while|as|so|last|this|every|"
    r"the|a|an|his|her|their|my|our|its|altogether|completely|entirely|now|recently)"
)
#: What a change replaces: "(switched) from X to Y", "took over (as lead) from X", "instead of X",
#: "replaced X with Y", "no longer uses X", "left X", "stopped doing X". A plain "from X" ("a message
#: from Kim") names nothing replaced.
_FROM = re.compile(
    r"\bfrom\s+(?P<old>(?:[^,.;]|\.(?=\d))+?)\s+to\b|\btook over\b[^,.;]*?\bfrom\s+(?P<giver>[^,.;]+)"
    # "… instead of ECS", "replaced Sentry with Datadog", "no longer uses Auth0; …"
    r"|\binstead of\s+(?P<instead>[^,.;]+?)(?=\s+(?:and|but|for|because|since)\b|[,.;]|$)"
    r"|\breplaced\s+(?P<replaced>[^,.;]+?)\s+(?:with|by)\b"
    r"|\bno longer\s+(?:uses|use|using|has|have|owns|own|drives|drive|runs|run|[a-z]{2,}s)\s+(?P<dropped>[^,.;]+?)"
    r"(?=\s+(?:and|but|because|since)\b|[,.;]|$)"
    # "left Glovo", "sold the Toyota Yaris": a named thing given up (a capitalised name: "left the
    # office early" names none); "stopped learning Spanish", "quit smoking": an activity given up,
    # with its object when one follows ("stopped taking sugar" gives up sugar, not every "takes")
    r"|\b(?:left|quit|sold)\s+(?:the\s+|his\s+|her\s+|my\s+|their\s+|our\s+)?(?P<left>(?-i:[A-Z])[^,.;]*?)"
    r"(?=\s+(?:and|but|to|for|after|because|since|in|last)\b|[,.;]|$)"
    r"|\b(?:stopped|quit|gave up)\s+(?P<activity>\w+ing(?:\s+(?!" + _NOT_AN_OBJECT + r"\b)[\w-]+)?"
    r"(?:\s+(?-i:[A-Z])[\w-]*)*)"
    # "moved off Redis and uses Memcached now"
    r"|\bmoved\s+(?:away\s+)?off\s+(?P<off>[^,.;]+?)(?=\s+(?:and|but|to|for|because|since)\b|[,.;]|$)",
    re.IGNORECASE,
)

_CLASSES: dict[str, tuple[str, ...]] = {
    "residence": (
        "live",
        "lives",
        "living",
        "moved",
        "relocated",
        "based",
        "resides",
        "reside",
        "home",
        "address",
        "apartment",
        "flat",
    ),
    "employment": (
        "work",
        "works",
        "working",
        "job",
        "employer",
        "employed",
        "career",
        "profession",
        "engineer",
        "analyst",
        "designer",
        "developer",
        "hired",
        "joined",
        "consultant",
    ),
    "manager": ("manager", "reports", "boss", "supervisor", "led", "lead", "leads"),
    "diet": ("vegetarian", "vegan", "pescatarian", "eat", "eats", "eating", "diet", "meat", "fish"),
    "plan": ("plan", "subscription", "tier", "upgraded", "downgraded"),
    "relationship": (
        "married",
        "partner",
        "girlfriend",
        "boyfriend",
        "husband",
        "wife",
        "divorced",
        "engaged",
        "dating",
        "single",
    ),
    "role": ("admin", "administrator", "owner", "contact", "maintainer", "lead"),
    "replies": ("answers", "answer", "replies", "reply", "responses", "response"),
    "timezone": ("timezone", "zone"),
    # words of any liking: which one a memory is about the cosine says (PREFERENCE_MIN_COSINE)
    "preference": (
        "prefer",
        "prefers",
        "preferred",
        "like",
        "likes",
        "love",
        "loves",
        "want",
        "wants",
        "favourite",
        "favorite",
        "enjoy",
        "enjoys",
    ),
}
_CLASS_STEMS: dict[str, frozenset[str]] = {
    name: frozenset(tokenize(" ".join(words))) for name, words in _CLASSES.items()
}
#: How often something recurs ("releases every two weeks", "is weekly", "deploys on Thursdays", "works
#: in two-week sprints"): the class "cadence", which :func:`_attribute_stems` marks with this stem.
_CADENCE_STEM = "@cadence"
_CLASS_STEMS["cadence"] = frozenset({_CADENCE_STEM})
_CADENCE = re.compile(
    r"\bevery\s+(?:other\s+|\w+\s+)?(?:day|week|month|quarter|year|morning|evening|night|weekday|merge|commit|"
    r"push|sprint|release|monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?\b"
    r"|\b(?:daily|weekly|biweekly|fortnightly|monthly|quarterly|nightly|yearly|annually|continuously|sprints?)\b"
    r"|\bon\s+(?:mondays|tuesdays|wednesdays|thursdays|fridays|saturdays|sundays|weekdays|weekends)\b",
    re.IGNORECASE,
)
#: The words that only say how often: two memories of the class must share another one ("releases",
#: "deploys", "rotation"), so "User now runs every morning" leaves "The standup is every day" alone.
_CADENCE_WORDS = frozenset(
    tokenize(
        "every other each day days week weeks month months quarter year morning evening night weekday weekdays "
        "weekend weekends merge commit push daily weekly biweekly fortnightly monthly quarterly "
        "nightly yearly annually continuously once twice one two three four on in at monday tuesday wednesday "
        "thursday friday saturday sunday mondays tuesdays wednesdays thursdays fridays saturdays sundays"
    )
)
#: Words of a class that also say other things ("eats breakfast at 7" is no diet, "leads the
#: payments team" is not who the manager is): they tie two memories to the class only when both
#: use the same word ("The team is now led by Sara" and "The team is led by Tom"), never with another
#: word of the class ("User now leads the payments team" does not replace "User's manager is Giulia
#: Rossi"). A job's name stems to a common word ("designer" to "design" of "the design sprint",
#: "engineer" to "engine", "joined" a meetup): those tie only by the same word too.
_WEAK_STEMS = frozenset(tokenize("eat eats eating lead leads led engineer designer developer consultant hired joined"))


@dataclass(frozen=True)
class Candidate:
    """An active memory of the new memory's scope and its cosine similarity to it."""

    entry: MemoryEntry
    cosine: float


def has_change_marker(content: str) -> bool:
    return _CHANGE.search(content) is not None


def may_supersede(content: str) -> bool:
    """Cheap pre-check: only a memory stating a change, the value of a single-valued attribute or an
    event's new date is compared with its scope."""
    return (
        has_change_marker(content)
        or slot(content) is not None
        or _rescheduled(content) is not None
        or _PREFERS_OVER.search(content) is not None
        or _ONSET.search(content) is not None
    )


def _classes(stems: set[str]) -> set[str]:
    return {name for name, words in _CLASS_STEMS.items() if stems & words}


def _shared_classes(new: set[str], old: set[str]) -> set[str]:
    """The attribute classes two memories share: each names the class with a word of its own that is
    not weak, or both with the same weak word (:data:`_WEAK_STEMS`)."""
    shared = _classes(new - _WEAK_STEMS) & _classes(old - _WEAK_STEMS)
    return shared | _classes(new & old & _WEAK_STEMS)


@dataclass(frozen=True)
class _Replaced:
    """A phrase naming what a change replaces: its informative words (stems), its names as written
    (lower-cased: a stem of a name may be another word, "Dentally" → "dental"), and whether it is a
    thing its subject left ("left Glovo", "sold the Yaris")."""

    words: set[str]
    names: set[str]
    left: bool

    def named_in(self, old: str, stems: set[str]) -> bool:
        """Whether the older memory ``old`` (of informative words ``stems``) holds the phrase."""
        return self.words <= stems and self.names <= set(words(old.lower()))


def _replaced(content: str) -> list[_Replaced]:
    """Each replaced phrase of a memory that states a change."""
    if not has_change_marker(content):
        return []
    out: list[_Replaced] = []
    for m in _FROM.finditer(content):
        phrase = next(g for g in m.groups() if g)
        if stems := set(tokenize(phrase)):
            names = {w.lower() for w in words(phrase) if w[0].isupper()}
            out.append(_Replaced(stems, names, m.group("left") is not None))
    return out


def replaced_phrases(content: str) -> list[set[str]]:
    """The informative words of each replaced phrase ("from X to …", "took over from X", "instead of
    X", …) of a memory that states a change."""
    return [phrase.words for phrase in _replaced(content)]


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
#: Words for another person, which a possessive opening makes the subject ("User's sister moved to
#: Munich" is about the sister: it does not replace where the user lives). Words for an attribute of
#: the scope's owner ("User's manager …", "User's address …") are not among them.
_RELATIVES = frozenset(
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


def _relative_parts(who: str) -> tuple[str, str, str]:
    """The relative word, its owner and its name of a :func:`subject` that names a relative."""
    rest, _, name = who.removeprefix(RELATIVE).partition("#")
    word, _, owner = rest.partition("@")
    return word, owner, name


def subject(content: str) -> str | None:
    """Whom or what a memory is about, from how it opens: the (stemmed) name it opens with ("Dana" of
    "Dana moved to Berlin", "Marco" of "Marco's manager …"), ``"relative:<word>"`` for a relative of
    the scope's owner ("relative:sister" of "User's sister moved …", "My sister …") and
    ``"relative:<word>@<name>"`` for one of a named person ("relative:sister@dana" of "Dana's sister
    …"), or None when it opens with a word that names nobody ("The team …", "We moved …", "User
    prefers …", "Lives in Hamburg"). A person introduced by a role is that person, told apart from
    others of the role by name: ``"relative:client#emeka-jung"`` of "Our client Emeka Jung …",
    ``"relative:colleague#umar-zimmermann"`` of "The user's colleague Umar Zimmermann …"."""
    group = _NAMED_GROUP.match(content)
    if group is not None and (name := tokenize(group.group("name"))):
        return name[0]  # "The Lunar Heron project uses Rust" is about Lunar Heron, as "Lunar Heron …"
    introduced = _INTRODUCED.match(content)
    if introduced is not None and (name := tokenize(introduced.group("name"))):
        return RELATIVE + introduced.group("role").split()[-1].lower() + "#" + "-".join(name)
    relative = _RELATIVE_OPENING.match(content)
    if relative is not None and relative.group("who").lower() in _RELATIVES:
        owner = subject(relative.group("owner")) if relative.group("owner") else None
        return RELATIVE + relative.group("who").lower() + (f"@{owner}" if owner else "")
    bare = _BARE_RELATIVE.match(content)
    if bare is not None and bare.group("who").lower() in _RELATIVES:
        return RELATIVE + bare.group("who").lower()
    match = _LEADING_WORD.match(content)
    if match is None or match.group(1).lower() in _NOT_A_NAME or match.group(1).lower() in _OPENING_VERBS:
        return None
    if match.group(1).lower() in _BARE_ATTRIBUTES:  # "Phone is a Pixel 8": the owner's phone
        return None
    if has_change_marker(match.group(1)):  # "Moved to Berlin", "Switched to Neovim"
        return None
    stems = tokenize(match.group(1))  # "Sessions …" and "Session caching …" open with the same word
    return stems[0] if stems else None


def _same_subject(who: str | None, other: str | None) -> bool:
    """Whether a memory about ``other`` can be replaced by one about ``who``. A memory that names
    nobody is about the scope's owner, whom a named one may be (a user's memories say "Dana …" and
    "User …"); a relative is a different person from both, and the same relative ("sister") of the
    owner and of a named person may be one person, of two named people not."""
    if (who or "").startswith(RELATIVE) != (other or "").startswith(RELATIVE):
        return False
    if who is not None and other is not None and who.startswith(RELATIVE):
        word, owner, name = _relative_parts(who)
        other_word, other_owner, other_name = _relative_parts(other)
        if name and other_name:  # two people named: the same one only by name
            return name == other_name
        return word == other_word and (not owner or not other_owner or owner == other_owner)
    return who is None or other is None or who == other


#: "moved the standup", "moved her appointment": "moved" with an object is no change of residence.
_MOVED_SOMETHING = re.compile(
    r"\b(?:moved|moves|move|moving|relocated|relocates|relocate|relocating)\s+(?:the|her|his|my|our|their|its|a|an|this|that)\b",
    re.IGNORECASE,
)
#: "is a nurse at St. Mary's", "works as a teacher for Lincoln High": a job held at a named place.
_JOB_AT = re.compile(r"\b(?i:is|am|was|are)\s+(?i:an?)\s+[\w -]{1,40}?\s+(?:at|for)\s+[A-Z]")
#: Words that add to what is known rather than replace it ("now also leads", "as well", "moved to
#: Dubai too"; not "too far").
_ADDITIVE = re.compile(r"\b(?:also|as well|in addition)\b|\btoo\b(?=\s*(?:[,.;!)]|$))", re.IGNORECASE)
#: A run of capitalised words (a name: "Paul Grant", "St. Mary's Hospital", "PostgreSQL 14").
_NAME_RUN = re.compile(r"(?<![\w.])(?:[A-Z][\w'.\u2019-]*)(?:\s+(?:[A-Z][\w'.\u2019-]*|\d[\w.]*))*")


def _attribute_stems(content: str, who: str | None, stated: Slot | None) -> set[str]:
    """The stems the attribute classes are read from: a relative's word names whom the memory is
    about, not what changed ("User's partner works at Google now" is about employment); "moved"
    with an object ("moved the standup to 10am") is no change of residence; a job held at a named
    place ("is a nurse at St. Mary's") is about employment whatever the job's name; the name a
    single-valued attribute is given is its value, not a word of a class ("User's title is Marketing
    Manager" is about no manager). ``stated`` is the memory's :func:`slot`, read once by the caller."""
    stems = set(tokenize(content))
    if stated is not None and stated.named and not stated.timing:
        stems -= set(tokenize(stated.value)) - set(tokenize(stated.attribute))
    if _CADENCE.search(content):
        stems.add(_CADENCE_STEM)
    if who is not None and who.startswith(RELATIVE):
        stems -= set(tokenize(_relative_parts(who)[0]))
    if _MOVED_SOMETHING.search(content):
        stems -= {"move", "reloc"}
    if _JOB_AT.search(content):
        stems.add("work")
    return stems


#: Capitalised words that name a time, not a value ("on leave until May").
_CALENDAR = frozenset(
    tokenize(
        "january february march april may june july august september october november december "
        "monday tuesday wednesday thursday friday saturday sunday"
    )
)


def _name_runs(content: str) -> list[str]:
    """The names a memory states, in order (runs of capitalised words; a month or a day is none)."""
    return [m.group(0).rstrip(".") for m in _NAME_RUN.finditer(content) if not set(tokenize(m.group(0))) <= _CALENDAR]


def _restates(content: str, old: str) -> bool:
    """Whether ``content`` names the value ``old`` states (its last name past its opening word:
    "Paul Grant" of "Lena's manager is Paul Grant") and no name ``old`` does not hold, a month or a
    day it adds aside: "Lena's manager Paul Grant now approves her leave" and "Manager Chen Wei is
    now on leave until May" say more about the manager, they do not change who it is, while "Kim
    left Northwind; Alex Moreno is now the second admin" names the new one."""
    runs = [m.group(0).rstrip(".") for m in _NAME_RUN.finditer(old) if m.start() > 0]
    if not runs:
        return False
    value = runs[-1]  # a month may be the value ("the deadline moved to March")
    if re.search(r"(?<!\w)" + re.escape(value) + r"(?!\w)", content) is None:
        return False
    known = set(tokenize(old))
    return all(value in run or set(tokenize(run)) <= known for run in _name_runs(content))


#: Who a statement of an attribute is about: nobody named ("Lives in Lisbon"), or a run of capitalised
#: words, perhaps with the word for a group ("Ines", "User", "Ines Costa", "The Orbit team").
_SLOT_OWNER = (
    r"(?P<owner>[Tt]he\s+user|"
    r"(?:[A-Z][\w.-]*)(?:\s+[A-Z][\w.-]*){0,2}(?:\s+(?:team|project|service|app|squad|account))?)"
)
#: The verbs that give an attribute its value: what it is ("is", "goes through PagerDuty", "is handled
#: by"), or where it is ("Kestrel's CI runs on Buildkite", "docs are kept in Notion"): a second
#: attribute of the same noun ("Orbit's database is PostgreSQL 16" and "… runs on a db.r6g.xlarge").
_SLOT_VERB = (
    r"\s+(?:(?P<where>runs on|run on|is kept in|are kept in|is stored in|are stored in|lives in|live in)|"
    # an amount that changed states its new value as "is" does ("The budget rose to £265,000")
    r"(?:rose|fell|dropped|increased|decreased|grew|went up|went down) to|"
    r"(?:is|are|was|were) (?:now )?(?:down|up) to|(?:was|were|has been|have been) (?:raised|cut|reduced|lowered) to|"
    r"goes through|go through|is handled by|are handled by|is|are)\s+(?:(?:called|named)\s+)?"
)
#: "Ines's manager is Rui Costa", "User's dog's name is Max", "Harbor's database is PostgreSQL 16".
_SLOT_POSSESSIVE = re.compile(
    r"^\s*"
    + _SLOT_OWNER
    + r"(?:'s|\u2019s)\s+(?P<attr>(?:[A-Za-z][\w'\u2019-]*\s+){0,3}?(?:[a-z][\w'\u2019-]*|[A-Z]{2,5}))"
    + _SLOT_VERB
    + r"(?P<value>.+?)[.!]?\s*$"
)
#: An attribute stated without its owner, as facts extracted from a conversation are ("Phone is a
#: Pixel 8", "Internet provider is Vodafone", "The standup is at 9:30"); only for the attributes of
#: :data:`_BARE_ATTRIBUTES`, since "Dana is a nurse" has the same shape.
_SLOT_BARE = re.compile(
    # a name after the article is whose attribute it is ("The Oakridge renovation budget is …")
    r"^\s*(?:(?:[Tt]he|[Oo]ur|[Mm]y)\s+(?P<owner>(?:[A-Z][\w-]*\s+)+)?)?"
    r"(?P<attr>[A-Za-z][a-z][\w'-]*(?:\s+[a-z][\w'-]*){0,2})" + _SLOT_VERB + r"(?P<value>.+?)[.!]?\s*$"
)
#: The head nouns of attributes that hold one value, which :data:`_SLOT_BARE` reads.
_BARE_ATTRIBUTES = frozenset(
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
#: Recurring events whose time is one value ("The standup is at 10:15", "The Kestrel team's retro is
#: on Thursdays"): a value that opens with "at", "on" or "every" is their time.
_EVENTS = frozenset(
    [
        "standup",
        "stand-up",
        "retro",
        "retrospective",
        "sync",
        "meeting",
        "one-on-one",
        "1:1",
        "planning",
        "review",
        "demo",
        "lunch",
        "call",
        "check-in",
        "all-hands",
        "hours",
        "class",
        "lesson",
        "practice",
        "rehearsal",
        "session",
        "appointment",
    ]
)
#: "Has three kids", "Kestrel has 4 engineers": a count that holds one value.
_NUMBERS = {
    w: str(i)
    for i, w in enumerate(
        ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"]
    )
}
_SLOT_COUNT = re.compile(
    r"^\s*(?:"
    + _SLOT_OWNER
    + r"\s+)?(?i:has|have|has got|owns)\s+(?P<value>\d+|(?i:"
    + "|".join(_NUMBERS)
    + r"))\s+(?P<attr>[a-z][\w-]*)[.!]?\s*$"
)
#: "Ines works at Accenture", "Based in Gothenburg", "Harbor is hosted on Fly.io", "Drives a Kia".
_SLOT_RELATION = re.compile(
    r"^\s*(?:" + _SLOT_OWNER + r"\s+)?(?:(?i:now|currently)\s+)?"
    r"(?P<attr>(?i:lives in|is based in|based in|is located in|works at|works for|"
    r"is employed at|is employed by|works as|reports to|is managed by|is married to|is from|comes from|"
    r"was born in|was born on|is hosted on|is hosted at|is deployed on|is deployed to|is led by|is run by|"
    r"is owned by|wants to be called|drives|banks with|studies at|is studying at|commutes by|is insured with|"
    r"is insured by))\s+(?P<value>.+?)[.!]?\s*$"
)
#: "User is on the Notion Plus plan": the plan.
_SLOT_PLAN = re.compile(
    r"^\s*(?:" + _SLOT_OWNER + r"\s+)?(?i:is\s+on)\s+(?:the\s+)?(?P<value>.+?)\s+(?P<attr>plan)[.!]?\s*$"
)
#: "Orbit uses GitHub Actions for CI", "Uses Vim as main editor": the tool of one purpose.
_SLOT_TOOL = re.compile(
    r"^\s*(?:" + _SLOT_OWNER + r"\s+)?(?i:uses)\s+(?P<value>.+?)\s+(?P<attr>(?:for|as)\s+"
    r"(?:(?:the|a|his|her|their|its|our|my)\s+)?(?:main\s+|primary\s+|default\s+)?(?i:[a-z])[\w -]*?)[.!]?\s*$"
)
#: "Prefers window seats", "User prefers dark mode": which kind of a thing is liked, one at a time
#: ("Prefers aisle seats" replaces it; "Prefers green tea" and "… black coffee" are two likings).
_SLOT_LIKING = re.compile(
    r"^\s*(?:" + _SLOT_OWNER + r"\s+)?(?:(?i:now)\s+)?(?i:prefers)\s+(?P<value>[\w-]+)\s+(?P<attr>[a-z][\w-]*)[.!]?\s*$"
)
#: One attribute said in other words, or in the other form ("works at" and "User's employer is").
_SLOT_ALIASES = {
    "is based in": "lives in",
    "based in": "lives in",
    "is located in": "lives in",
    "works for": "works at",
    "is employed at": "works at",
    "is employed by": "works at",
    "employer": "works at",
    "reports to": "manager",
    "is managed by": "manager",
    "boss": "manager",
    "comes from": "is from",
    "is hosted at": "is hosted on",
    "is deployed to": "is deployed on",
    "is run by": "is led by",
    "lead": "is led by",
    "team lead": "is led by",
    "is owned by": "owner",
}
#: Words a value of an attribute never opens with: a negation, an addition, a change (the change
#: rule reads those), a preposition ("drives to work" names no car).
_NOT_A_VALUE = re.compile(
    r"^(?:not|no|never|also|too|one|now|still|currently|to|into|around|with|at|in|on|by|for|from)\b", re.IGNORECASE
)
#: The longest value, in words: a longer one is a sentence about the attribute, not its value.
_SLOT_VALUE_WORDS = 6


@dataclass(frozen=True)
class Slot:
    """An attribute that holds one value, and the value a memory gives it."""

    owner: str | None
    attribute: str
    value: str

    #: The value is a time or a count ("at 10:15", "3"): one kind, whatever its letters.
    timing: bool = False
    #: Stated without a possessive or a relation ("The budget is …", :data:`_SLOT_BARE`)
    bare: bool = False

    def same_attribute(self, other: Slot) -> bool:
        """Whether two slots state the same attribute: the same words, or, stated bare, one names
        it more closely ("The budget" and "The renovation budget"; "The marketing budget" and "The
        renovation budget" are two)."""
        if self.attribute == other.attribute:
            return True
        if not (self.bare and other.bare):
            return False
        short, long = sorted((self.attribute.split(), other.attribute.split()), key=len)
        return len(short) == 1 and long[-1] == short[0]

    def same_owner(self, other: Slot) -> bool:
        """Whether two slots can be about one owner: the same name, a team or project and its name
        ("The Kestrel team" and "Kestrel"), or one of them names nobody or the neutral "User" ("The
        API's owner …" and "The CLI's owner …" are two attributes)."""
        owners = {_owner_key(self.owner), _owner_key(other.owner)}
        return len(owners) == 1 or "user" in owners

    @property
    def named(self) -> bool:
        """Whether the value is a name (a capital or a digit: "PostgreSQL 16", "iPhone 15"), not a
        word ("green", "the data team"), or a phrase about the attribute ("backed up nightly"); a
        time or a count is of its own kind, taken as a name."""
        return self.timing or re.search(r"[A-Z0-9]", self.value) is not None


_GROUP_STEMS = frozenset(tokenize("team project service app squad account user"))
_GROUP_WORDS = re.compile(r"^(?:the\s+)?(.*?)(?:\s+(?:team|project|service|app|squad|account))?$")


def _owner_key(owner: str | None) -> str:
    """An owner as compared: lowercase, without "The" and the word for a group ("The Kestrel team"
    is "kestrel"); nobody named is the scope's owner, "user"."""
    if owner is None:
        return "user"
    key = _GROUP_WORDS.sub(r"\1", owner.lower().strip())
    return key or "user"


def _singular(word: str) -> str:
    """A noun's last word without a plural "s" ("alerts" → "alert", "kids" → "kid"; not "ss", "us")."""
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def slot(content: str) -> Slot | None:
    """The single-valued attribute ``content`` states and its value, or None: a possessive ("Ines's
    manager is Rui Costa", "User's favourite colour is blue") whose attribute is no relative (a
    second sister is no new sister) or a relation that holds one value ("works at", "lives in",
    "reports to", "is hosted on"); the value without its article ("an iPhone 15")."""
    text = content.strip().replace("\u2019", "'")
    found = (
        _SLOT_POSSESSIVE.match(text)
        or _SLOT_RELATION.match(text)
        or _SLOT_PLAN.match(text)
        or _SLOT_TOOL.match(text)
        or _SLOT_COUNT.match(text)
        or _SLOT_LIKING.match(text)
        or _SLOT_BARE.match(text)
    )
    if found is None:
        return None
    words = re.sub(
        r"\b(?:the|a|his|her|their|its|our|my|main|primary|default)\s+", "", found.group("attr").lower()
    ).split()
    if found.re is _SLOT_TOOL:  # "uses CircleCI for CI" is what "'s CI is Jenkins" states
        words = words[1:]
    if not words:
        return None
    if found.re is not _SLOT_RELATION and found.re is not _SLOT_PLAN:  # a noun: one or several alike
        words[-1] = _singular(words[-1])
    if found.re is _SLOT_BARE and words[-1] not in _BARE_ATTRIBUTES and words[-1] not in _EVENTS:
        return None
    if found.re is _SLOT_POSSESSIVE and words[-1] in _RELATIVES and words[-1] not in _PARTNERS:
        return None
    value = re.sub(r"^(?i:an?|the|now|currently)\s+", "", found.group("value").strip())
    timing = found.re is _SLOT_COUNT or (words[-1] in _EVENTS and _TIME_VALUE.match(value) is not None)
    if found.re is _SLOT_COUNT:
        value = _NUMBERS.get(value.lower(), value)
    elif not timing and _NOT_A_VALUE.match(value):
        return None
    if found.re is _SLOT_BARE and not timing and words[-1] in _EVENTS:
        return None  # "The standup is short" names no time
    if len(value.split()) > _SLOT_VALUE_WORDS:
        return None
    attribute = " ".join("favourite" if w == "favorite" else w for w in words)
    if found.re is _SLOT_LIKING:
        attribute = "prefers " + attribute
    if found.groupdict().get("where"):
        attribute += " (where)"
    owner = (found.groupdict().get("owner") or "").strip() or None
    return Slot(owner, _SLOT_ALIASES.get(attribute, attribute), value, timing, bare=found.re is _SLOT_BARE)


def gives_new_value(content: str, old: str) -> bool:
    """Whether ``content`` gives the single-valued attribute ``old`` states (:func:`slot`) another
    value of the same kind, about the same subject: "Ines works at Accenture" after "Ines works at
    Deloitte"; not the same value said again or with more ("works at Deloitte on the audit team"),
    not a phrase for a name ("Harbor's database is backed up nightly"), not someone else's."""
    return _new_value(slot(content), slot(old), subject(content), subject(old))


def _new_value(new: Slot | None, old: Slot | None, who: str | None, other: str | None) -> bool:
    """:func:`gives_new_value` on slots and subjects already read."""
    if new is None or old is None or not new.same_attribute(old):
        return False
    if new.named != old.named or not new.same_owner(old) or not _same_subject(who, other):
        return False
    if new.named and not new.timing:
        # the same name with other details is the same value ("Bolt on the payments team" and "Bolt as
        # a backend developer"); a longer name is another ("Senior Marketing Manager")
        first, was = _name_runs(new.value)[:1], _name_runs(old.value)[:1]
        if first and was:
            return first[0].lower() != was[0].lower()
    return old.value.lower() not in new.value.lower()


#: Relatives whose naming states the owner's relationship ("Lena's partner is Tom").
_PARTNERS = frozenset({"partner", "wife", "husband", "girlfriend", "boyfriend", "fiance", "fiancee"})


def _partner_of(who: str | None, other: str | None) -> bool:
    """Whether a memory about ``other`` is about the partner of ``who`` (the scope's owner when None):
    "Lena's partner is called Tom" states whom Lena is with, which "Lena is now dating Sam" changes."""
    if other is None or not other.startswith(RELATIVE) or (who or "").startswith(RELATIVE):
        return False
    word, owner, _ = _relative_parts(other)
    return word in _PARTNERS and (not owner or who is None or owner == who)


_DATE_WORDS = (
    r"january|february|march|april|may|june|july|august|september|october|november|december|"
    r"jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|next|tomorrow|q[1-4]|mid|end|early|late"
)
#: An event given another date ("The beta release for Marten moved to September 3", "The Kestrel
#: deadline was pushed to 17 April"): what moved, and that it moved to a time.
_RESCHEDULED = re.compile(
    r"^\s*(?P<what>.+?)\s+(?:was\s+|has\s+been\s+|is\s+|got\s+)?(?:moved|pushed|postponed|rescheduled|"
    r"delayed|shifted|brought\s+forward)\s+(?:back\s+|out\s+)?to\s+(?:the\s+)?(?:\d|(?:" + _DATE_WORDS + r")\b)",
    re.IGNORECASE,
)
#: The same said of who moved it ("The platform team moved its standup to 10:15", "Lena moved her
#: dentist appointment to Thursday"): the event is the object, the mover's name a word of it.
_RESCHEDULED_OBJECT = re.compile(
    r"^\s*(?P<who>.+?)\s+(?:has\s+)?(?:moved|pushed|postponed|rescheduled|delayed|shifted)\s+"
    r"(?:the|its|our|their|his|her|my)\s+(?P<what>[\w' -]+?)\s+(?:back\s+|out\s+)?to\s+(?:the\s+)?"
    r"(?:\d|(?:" + _DATE_WORDS + r")\b)",
    re.IGNORECASE,
)


#: The time of a recurring event ("at 10:15", "on Thursdays at 4pm", "every Monday").
_TIME_VALUE = re.compile(
    r"^(?:at|on|every|from)\s+(?:other\s+)?(?:\d|(?:" + _DATE_WORDS + r"|noon|midnight|weekdays?|weekends?|"
    r"mondays|tuesdays|wednesdays|thursdays|fridays|saturdays|sundays)\b)",
    re.IGNORECASE,
)


def _rescheduled(content: str) -> set[str] | None:
    """The informative words of the event a memory gives another date, or None: "The Kestrel deadline
    moved to April" → {kestrel, deadline}; not a person or a name alone ("Dana was moved to 3B")."""
    found = _RESCHEDULED.match(content)
    if found is None:
        moved = _RESCHEDULED_OBJECT.match(content)
        if moved is None:
            return None
        what = set(tokenize(moved.group("what"))) | set(tokenize(" ".join(_name_runs(moved.group("who")))))
        return (what - _GROUP_STEMS) or None
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
_DATED = re.compile(r"\d|\b(?:" + _DATE_WORDS + r")\b", re.IGNORECASE)


def _dates_event(old: str, event: set[str]) -> bool:
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


def _shares_what_recurs(content: str, old: str) -> bool:
    """Whether two memories that say how often something happens name the same thing ("Helix now
    releases every Monday" and "Helix releases every two weeks" share "releases"): a word of both that
    is not about how often, a name (the owner's: "Helix", "The Kestrel team"), or the change."""
    shared = set(tokenize(content)) & set(tokenize(old))
    shared -= _CADENCE_WORDS | _GROUP_STEMS
    shared -= set(tokenize(" ".join(m.group(0) for m in _CHANGE.finditer(content))))
    shared -= set(tokenize(" ".join(_name_runs(content))))
    return bool(shared)


#: A liking stated against another ("Prefers phone calls over email", "Likes coffee more than tea");
#: not "wants": "Wants the agent to answer briefly" states no liking of one thing over another.
_PREFERS_OVER = re.compile(
    r"\b(?:prefers?|likes?)\s+(?!to\s)(?P<liked>[^,.;]+?)\s+(?:over|to|rather than|more than)\s+"
    r"(?P<over>[^,.;]+?)[.!]?\s*$",
    re.IGNORECASE,
)
#: What a memory states is liked ("Prefers email over calls" → "email", "Likes tea").
_PREFERRED = re.compile(
    r"\b(?:prefers?|likes?|wants?)\s+(?!to\s)(?P<liked>[^,.;]+?)(?=\s+(?:over|to|rather than|more than)\b|[,.;!]|$)",
    re.IGNORECASE,
)


def _reversed_liking(content: str, old: str) -> bool:
    """Whether ``content`` prefers something over what ``old`` states is liked: "Prefers phone calls
    over email" after "Prefers email over calls"; not a liking of something else or a narrower one
    ("Prefers green tea over black tea" after "Prefers tea")."""
    new = _PREFERS_OVER.search(content)
    was = _PREFERRED.search(old)
    if new is None or was is None:
        return False
    over = set(tokenize(new.group("over")))
    liked = set(tokenize(was.group("liked")))
    return bool(over) and over <= liked and not set(tokenize(new.group("liked"))) <= liked


#: A number as written, with what is joined to it ("7pm", "9:30pm", "0.12", "2027").
_NUMBER = re.compile(r"\d[\d.,:]*[a-z]*", re.IGNORECASE)


def _values(content: str) -> set[str]:
    """What a memory states as values: the stems of its names (runs of capitalised words), its
    numbers and its days and months."""
    found = {stem for run in _NAME_RUN.finditer(content) for stem in tokenize(run.group(0))}
    for number in _NUMBER.finditer(content):  # as written and as the tokenizer splits it ("50,000")
        found |= {number.group(0).lower().rstrip(".,:"), *tokenize(number.group(0))}
    found |= set(tokenize(content)) & _CALENDAR
    return found - {"user"}


#: Units an amount is counted in: two amounts in euros a month are not one attribute for that.
_UNITS = frozenset(
    tokenize("euro euros dollar dollars pound pounds percent per hour hours day days week weeks month months")
    + tokenize("year years")
)


def _opening_names(content: str) -> set[str]:
    """The stems of the run of capitalised words a memory opens with ("Zesty Kestrel's p95 …")."""
    run = _NAME_RUN.match(content.lstrip())
    return set(tokenize(run.group(0))) if run else set()


def _new_value_in_frame(content: str, old: str) -> bool:
    """Whether ``content`` gives a value of ``old`` another one in the same words: each states a
    value the other does not ("Monday, Tuesday and Wednesday nights" / "Thursday, Friday and
    Saturday nights", "0.12 euros per word" / "0.14 euros per word", "Felix Brandt is the sous chef" /
    "Yusuf Demir has taken over as sous chef"), and the new one repeats at least half of the words
    of ``old`` that are not values, units or a group's word ("nights", "per word", "sous chef"; not
    "euros a month" alone: "rent is 900 euros a month" / "pays 40 euros a month for her gym"; nor
    "team": "The Kestrel team's standup is at 9:30" / "… the Kestrel team's retro is at 16:00").
    Not when the new memory names the value ``old`` states (:func:`_restates`: "Hugo Martin, the
    tech lead, is now on holiday" says more about the lead), nor when the two open with different
    names ("Zesty Kestrel's p95 latency went from …" / "Zesty Pebble's p95 latency went from …" are
    two projects, though :func:`subject` reads only their first word).
    The caller has checked that the embedder singles ``old`` out."""
    new_values, old_values = _values(content), _values(old)
    if not (new_values - old_values and old_values - new_values) or _restates(content, old):
        return False
    new_names, old_names = _opening_names(content), _opening_names(old)
    if new_names and old_names and not (new_names <= old_names or old_names <= new_names):
        return False
    frame = set(tokenize(old)) - old_values - _UNITS - _GROUP_STEMS
    shared = frame & set(tokenize(content))
    return bool(shared) and 2 * len(shared) >= len(frame)


def _candidate_subject(old: str, mentioned: set[str]) -> str | None:
    """The :func:`subject` of a candidate, except that a group's fact ("The Helix team lead is Omar
    Haddad") is the scope's own when the new memory names the group ("Priya Nair took over as Helix
    team lead from Omar Haddad"): a person's change about the project may replace it, one that does
    not name it ("William Demir switched from Rust to Splunk") may not."""
    group = _NAMED_GROUP.match(old)
    if group is not None and set(tokenize(group.group("name"))) <= mentioned:
        return None
    return subject(old)


def superseded(content: str, candidates: Sequence[Candidate]) -> list[MemoryEntry]:
    """The candidates that the memory ``content`` makes out of date (see module doc). A candidate that
    opens with another name is about someone else ("Ana switched from Jenkins" leaves "Ben uses
    Jenkins" alone), as scopes shared by several people hold."""
    phrases = _replaced(content)
    marker = has_change_marker(content)
    stated = slot(content)
    event = _rescheduled(content)
    prefers = _PREFERS_OVER.search(content) is not None
    onset = _ONSET.search(content) is not None
    if not phrases and not marker and stated is None and event is None and not prefers and not onset:
        return []
    if event is not None:
        # a new date replaces the same event's date (the most similar memory that names the event),
        # not the same date said again
        same = [
            c
            for c in candidates
            if c.cosine >= MIN_COSINE_ATTRIBUTE
            and _dates_event(c.entry.content, event)
            and not _restates(content, c.entry.content)
        ]
        return [max(same, key=lambda c: c.cosine).entry] if same else []
    who = subject(content)
    mentioned = set(tokenize(content))
    others = {c.entry.id: _candidate_subject(c.entry.content, mentioned) for c in candidates}
    slots: dict[str, Slot | None] = {}  # each candidate's slot, read once by either rule that needs it

    def slot_of(entry: MemoryEntry) -> Slot | None:
        if entry.id not in slots:
            slots[entry.id] = slot(entry.content)
        return slots[entry.id]

    out: dict[str, MemoryEntry] = {}
    if stated is not None and not _ADDITIVE.search(content):
        # "Ines works at Accenture" gives "works at" another value than "Ines works at Deloitte"
        closer: list[MemoryEntry] = []  # naming the attribute more closely than the new memory does
        for cand in candidates:
            was = slot_of(cand.entry)
            if cand.cosine >= MIN_COSINE_ATTRIBUTE and _new_value(stated, was, who, others[cand.entry.id]):
                if was is not None and was.attribute != stated.attribute:
                    closer.append(cand.entry)
                else:
                    out[cand.entry.id] = cand.entry
        if len(closer) == 1:  # "The budget" is the scope's one budget; of two, it names neither
            out[closer[0].id] = closer[0]
        if out:
            return list(out.values())
    if prefers:
        # "Prefers phone calls over email" reverses "Prefers email over calls"
        for cand in candidates:
            if (
                cand.cosine >= MIN_COSINE_FROM_TO
                and _same_subject(who, others[cand.entry.id])
                and _reversed_liking(content, cand.entry.content)
            ):
                out[cand.entry.id] = cand.entry
        if out:
            return list(out.values())
    for cand in candidates:
        other = others[cand.entry.id]
        if cand.cosine < MIN_COSINE_FROM_TO or not _same_subject(who, other):
            continue
        stems = set(tokenize(cand.entry.content))
        # "Kim left Northwind" says where Kim no longer is, not the scope's owner ("User works at Northwind")
        owners = who is not None and other is None
        if any(p.named_in(cand.entry.content, stems) and not (owners and p.left) for p in phrases):
            out[cand.entry.id] = cand.entry
    # a change that names what it replaces ("moved from Azure to AWS") replaces that and nothing more
    if marker and not out and not _ADDITIVE.search(content):
        new_stems = _attribute_stems(content, who, stated)
        best: dict[str, Candidate] = {}
        for cand in candidates:
            if cand.cosine < MIN_COSINE_ATTRIBUTE:
                continue
            other = others[cand.entry.id]
            if _same_subject(who, other):
                classes = _shared_classes(new_stems, _attribute_stems(cand.entry.content, who, slot_of(cand.entry)))
            elif _partner_of(who, other):  # only a change of the relationship replaces it
                classes = _shared_classes(new_stems, set(tokenize(cand.entry.content))) & {"relationship"}
            else:
                continue
            for name in classes:
                if name == "preference" and cand.cosine < PREFERENCE_MIN_COSINE:
                    continue
                if name == "cadence" and not _shares_what_recurs(content, cand.entry.content):
                    continue
                if name not in best or cand.cosine > best[name].cosine:
                    best[name] = cand
        for name, cand in best.items():
            # a memory that names the current value says more about it, it does not change it; a
            # change of relationship names the partner it ends ("User and Clara divorced")
            if name == "relationship" or not _restates(content, cand.entry.content):
                out.setdefault(cand.entry.id, cand.entry)
    if not out and not phrases and (marker or onset) and candidates and not _ADDITIVE.search(content):
        # no rule's vocabulary names the attribute: a new value in the same words replaces the one
        # memory the embedder finds far closer than any other (a change that names what it replaces,
        # "switched from gRPC to Metabase", replaces that and nothing more)
        nearest, *rest = sorted(candidates, key=lambda c: c.cosine, reverse=True)
        runner_up = rest[0].cosine if rest else 0.0
        if (
            nearest.cosine >= FRAME_MIN_COSINE
            and nearest.cosine - runner_up >= FRAME_LEAD
            and _same_subject(who, others[nearest.entry.id])
            and _new_value_in_frame(content, nearest.entry.content)
        ):
            out[nearest.entry.id] = nearest.entry
    return list(out.values())
