"""A single-valued attribute a memory states and its value (:func:`slot`): "Ines works at Deloitte"."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .subjects import same_subject, subject
from .words import BARE_ATTRIBUTES, PARTNERS, RELATIVES, TIME_VALUE, name_runs

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
#: :data:`BARE_ATTRIBUTES`, since "Dana is a nurse" has the same shape.
_SLOT_BARE = re.compile(
    # a name after the article is whose attribute it is ("The Oakridge renovation budget is …")
    r"^\s*(?:(?:[Tt]he|[Oo]ur|[Mm]y)\s+(?P<owner>(?:[A-Z][\w-]*\s+)+)?)?"
    r"(?P<attr>[A-Za-z][a-z][\w'-]*(?:\s+[a-z][\w'-]*){0,2})" + _SLOT_VERB + r"(?P<value>.+?)[.!]?\s*$"
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
    if found.re is _SLOT_BARE and words[-1] not in BARE_ATTRIBUTES and words[-1] not in _EVENTS:
        return None
    if found.re is _SLOT_POSSESSIVE and words[-1] in RELATIVES and words[-1] not in PARTNERS:
        return None
    value = re.sub(r"^(?i:an?|the|now|currently)\s+", "", found.group("value").strip())
    timing = found.re is _SLOT_COUNT or (words[-1] in _EVENTS and TIME_VALUE.match(value) is not None)
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
    return new_value(slot(content), slot(old), subject(content), subject(old))


def new_value(new: Slot | None, old: Slot | None, who: str | None, other: str | None) -> bool:
    """:func:`gives_new_value` on slots and subjects already read."""
    if new is None or old is None or not new.same_attribute(old):
        return False
    if new.named != old.named or not new.same_owner(old) or not same_subject(who, other):
        return False
    if new.named and not new.timing:
        # the same name with other details is the same value ("Bolt on the payments team" and "Bolt as
        # a backend developer"); a longer name is another ("Senior Marketing Manager")
        first, was = name_runs(new.value)[:1], name_runs(old.value)[:1]
        if first and was:
            return first[0].lower() != was[0].lower()
    return old.value.lower() not in new.value.lower()
