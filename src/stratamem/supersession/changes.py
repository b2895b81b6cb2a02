"""Changes told in words: a replaced value named ("from X to Y"), an attribute class shared with a
change marker, a liking reversed."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..retrieval.lexical import tokenize, words
from .slots import Slot
from .subjects import RELATIVE, relative_parts
from .words import CHANGE, GROUP_STEMS, LIGHT_VERBS, NAME_RUN, has_change_marker, name_runs

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
    r"\bfrom\s+(?P<old>(?:[^,.;]|\.(?=\d))+?)\s+to\b|\btook over\b[^,.;]*?\bfrom\s+(?P<giver>[^,.;]+?)"
    # "… from Oliver in May": the giver, not when
    r"(?=\s+(?:in|on|at|last|this|next|since|after|before|until|when|because|and|but)\b|[,.;]|$)"
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
    # "stopped going to choir": where she went, not the verb
    r"|\b(?:stopped|quit|gave up)\s+(?:going|coming|heading)\s+(?:out\s+)?(?:to|for)\s+"
    r"(?:the\s+|his\s+|her\s+|my\s+|their\s+|our\s+)?(?P<went>[\w-]+(?:\s+(?-i:[A-Z])[\w-]*)*)"
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
#: in two-week sprints"): the class "cadence", which :func:`attribute_stems` marks with this stem.
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


def _classes(stems: set[str]) -> set[str]:
    return {name for name, words in _CLASS_STEMS.items() if stems & words}


def shared_classes(new: set[str], old: set[str]) -> set[str]:
    """The attribute classes two memories share: each names the class with a word of its own that is
    not weak, or both with the same weak word (:data:`_WEAK_STEMS`)."""
    shared = _classes(new - _WEAK_STEMS) & _classes(old - _WEAK_STEMS)
    return shared | _classes(new & old & _WEAK_STEMS)


@dataclass(frozen=True)
class Replaced:
    """A phrase naming what a change replaces: its informative words (stems), its names as written
    (lower-cased: a stem of a name may be another word, "Dentally" → "dental"), and whether it is a
    thing its subject left ("left Glovo", "sold the Yaris"). A hand-over ("Rachel took over as dive
    officer from Oliver") names the person who gave the role, whoever the older memory opens with,
    and the ``role``, a word of which that memory must hold too ("Oliver is the dive officer", not
    the list of the lab's members that names Oliver)."""

    words: set[str]
    names: set[str]
    left: bool
    handover: bool = False
    role: frozenset[str] = frozenset()

    def named_in(self, old: str, stems: set[str]) -> bool:
        """Whether the older memory ``old`` (of informative words ``stems``) holds the phrase."""
        return (
            self.words <= stems and (not self.role or bool(self.role & stems)) and self.names <= set(words(old.lower()))
        )


def replaced(content: str) -> list[Replaced]:
    """Each replaced phrase of a memory that states a change."""
    if not has_change_marker(content):
        return []
    out: list[Replaced] = []
    for m in _FROM.finditer(content):
        phrase = next(g for g in m.groups() if g)
        # a light verb alone names nothing given up ("stopped going": not every "go" of the scope)
        if (stems := set(tokenize(phrase))) and not stems <= LIGHT_VERBS:
            names = {w.lower() for w in words(phrase) if w[0].isupper()}
            handover = m.group("giver") is not None
            role = _ROLE.search(m.group(0)) if handover else None
            out.append(
                Replaced(
                    stems,
                    names,
                    m.group("left") is not None,
                    handover=handover,
                    role=frozenset(tokenize(role.group("role"))) if role else frozenset(),
                )
            )
    return out


#: Ends that may follow a name's "'s" standing for "has" ("Ffion's pulled out"); any other word after
#: "'s" is something of the name's ("Ana's gym closed down" ends the gym, not Ana).
_CONTRACTED_ENDS = (
    r"(?:pulled out|dropped out|bowed out|stepped down|resigned|retired|withdrawn|quit|gone|moved on|"
    r"left(?=\s*(?:[,.;]|$)))\b"
)
#: Someone whose place a newly named person takes: "Manny is booked up, so Kelsey Tran has replaced
#: him", "Mrs Quinn has jury service; Ben Harrow is taking her place". The one replaced is the first
#: name of the memory, before the one who replaces.
_TAKES_PLACE = re.compile(
    r"\b(?:(?:has|have|had|is|are|was|were)\s+)?(?:replaced|replacing|replace|stepping in for|stepped in for"
    r"|steps in for)\s+(?:him|her|them)"
    # the person, not something of theirs ("will replace her laptop")
    r"(?=\s*(?:[,.;:!)-]|$)|\s+(?:as|on|at|in|for|from|with|until|till|while|this|next|now|and|but)\b)"
    r"|\b(?:taking|takes|took|taken|take)\s+(?:over\s+)?(?:his|her|their)\s+(?:place|spot|role|slot)\b"
    r"|\bin\s+(?:his|her|their)\s+place\b",
    re.IGNORECASE,
)

#: A named thing said to have ended ("The Copper Kettles cancelled", "Marta Quinn has stepped down",
#: "Zoho Books is no longer used", "Olive Tree Kitchen went out of business", "her Lightroom
#: subscription lapsed"): the name, one word of what of it ended, and the words that say so. Not a
#: possessive ("Ana's gym closed" ends the gym, not Ana), and "left" only at a clause's end ("Petra
#: has left;"), not "left the office early".
_ENDED = re.compile(
    r"(?P<ended>" + NAME_RUN.pattern + r")"
    r"(?:(?<!['\u2019]s)(?:\s+(?!(?:has|have|had|is|are|was|were|got|been)\b)[a-z]+)?\s+"
    r"(?:(?:has|have|had|is|are|was|were|got|been)\s+)*"
    # "Ffion's pulled out", "Marlene's retired": "'s" for "has" right before the end
    r"|['\u2019]s\s+(?:been\s+|just\s+|now\s+|finally\s+)?(?=" + _CONTRACTED_ENDS + r"))"
    r"(?:cancell?ed|called off|stepped down|resigned|retired|went (?:out of business|bust|under)|closed down|"
    r"shut down|lapsed|expired|discontinued|no longer (?:used|in use|available|running|operating)|"
    # a person who left the role, or moved on from it ("Linda had to withdraw; Rosa Kim is our Audrey")
    r"(?:to )?withdraw|withdrew|withdrawn|pulled out|dropped out|bowed out|moved (?:across|over|on)|"
    # a thing put aside for another ("the R5 is just the backup body now")
    r"(?:just|only|now) (?:the|a|our|my|her|his|their) (?:backup|spare|reserve)"
    r"|left(?=\s*(?:[,.;]|$)))(?!\w)"
    # "The Anchor cancelled its music nights": the name did the cancelling, it did not end
    r"(?!\s+(?:its|the|a|an|his|her|their|our|my|all|some)\b)"
)


#: The role of a hand-over: "took over as dive officer from …", "took over the file from …".
_ROLE = re.compile(r"\btook over\s+(?:as\s+)?(?P<role>.*?)\s*\bfrom\b", re.IGNORECASE)
_POSSESSIVE = re.compile(r"['\u2019]s$")

#: Number words, which open a sentence capitalised without naming anything ("Two families withdrew").
_COUNTS = frozenset(
    tokenize("one two three four five six seven eight nine ten eleven twelve several many few both all some")
)


def ended(content: str) -> list[Replaced]:
    """Each named thing ``content`` says has ended, as a phrase of what a change replaces, when the
    memory also says what comes instead (another name, or a word of change): "The Copper Kettles
    cancelled; a DJ plays at 8pm", not "Walter retired in May"."""
    phrases = [
        _POSSESSIVE.sub("", m.group("ended"))
        for m in _ENDED.finditer(content)
        if set(tokenize(m.group("ended"))) - _COUNTS
    ]
    place = _TAKES_PLACE.search(content)
    if place is not None:
        before = [run for run in name_runs(content[: place.start()]) if set(tokenize(run)) - _COUNTS]
        if len(before) >= 2:  # the one replaced, then the one who replaces
            phrases.append(_POSSESSIVE.sub("", before[0]))
    if not phrases:
        return []
    ends = set(phrases)
    if not has_change_marker(content) and not {_POSSESSIVE.sub("", r) for r in name_runs(content)} - ends:
        return []
    out: list[Replaced] = []
    for phrase in dict.fromkeys(phrases):
        names = {w.lower() for w in words(phrase) if tokenize(w)}
        out.append(Replaced(set(tokenize(phrase)), names, left=False))
    return out


def replaced_phrases(content: str) -> list[set[str]]:
    """The informative words of each replaced phrase ("from X to …", "took over from X", "instead of
    X", …) of a memory that states a change."""
    return [phrase.words for phrase in replaced(content)]


#: "moved the standup", "moved her appointment": "moved" with an object is no change of residence.
_MOVED_SOMETHING = re.compile(
    r"\b(?:moved|moves|move|moving|relocated|relocates|relocate|relocating)\s+(?:the|her|his|my|our|their|its|a|an|this|that)\b",
    re.IGNORECASE,
)
#: "is a nurse at St. Mary's", "works as a teacher for Lincoln High": a job held at a named place.
_JOB_AT = re.compile(r"\b(?i:is|am|was|are)\s+(?i:an?)\s+[\w -]{1,40}?\s+(?:at|for)\s+[A-Z]")


def attribute_stems(content: str, who: str | None, stated: Slot | None) -> set[str]:
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
        stems -= set(tokenize(relative_parts(who)[0]))
    if _MOVED_SOMETHING.search(content):
        stems -= {"move", "reloc"}
    if _JOB_AT.search(content):
        stems.add("work")
    return stems


def shares_what_recurs(content: str, old: str) -> bool:
    """Whether two memories that say how often something happens name the same thing ("Helix now
    releases every Monday" and "Helix releases every two weeks" share "releases"): a word of both that
    is not about how often, a name (the owner's: "Helix", "The Kestrel team"), or the change."""
    shared = set(tokenize(content)) & set(tokenize(old))
    shared -= _CADENCE_WORDS | GROUP_STEMS
    shared -= set(tokenize(" ".join(m.group(0) for m in CHANGE.finditer(content))))
    shared -= set(tokenize(" ".join(name_runs(content))))
    return bool(shared)


#: A liking stated against another ("Prefers phone calls over email", "Likes coffee more than tea");
#: not "wants": "Wants the agent to answer briefly" states no liking of one thing over another.
PREFERS_OVER = re.compile(
    r"\b(?:prefers?|likes?)\s+(?!to\s)(?P<liked>[^,.;]+?)\s+(?:over|to|rather than|more than)\s+"
    r"(?P<over>[^,.;]+?)[.!]?\s*$",
    re.IGNORECASE,
)
#: What a memory states is liked ("Prefers email over calls" → "email", "Likes tea").
_PREFERRED = re.compile(
    r"\b(?:prefers?|likes?|wants?)\s+(?!to\s)(?P<liked>[^,.;]+?)(?=\s+(?:over|to|rather than|more than)\b|[,.;!]|$)",
    re.IGNORECASE,
)


def reversed_liking(content: str, old: str) -> bool:
    """Whether ``content`` prefers something over what ``old`` states is liked: "Prefers phone calls
    over email" after "Prefers email over calls"; not a liking of something else or a narrower one
    ("Prefers green tea over black tea" after "Prefers tea")."""
    new = PREFERS_OVER.search(content)
    was = _PREFERRED.search(old)
    if new is None or was is None:
        return False
    over = set(tokenize(new.group("over")))
    liked = set(tokenize(was.group("liked")))
    return bool(over) and over <= liked and not set(tokenize(new.group("liked"))) <= liked
