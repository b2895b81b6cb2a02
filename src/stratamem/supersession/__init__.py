"""Which older memories a new memory makes out of date (rule-based, offline).

A memory that states a change ("moved to Berlin", "switched from VS Code to Neovim", "not vegetarian
anymore", "now reports to Bob") supersedes the older memory of the same scope about the same
attribute. The older memory is kept as history (``status == "superseded"``, ``provenance.valid_to``
and ``provenance.superseded_by``) and leaves default search and list; see ``replacements.py``.

Eight rules, all on candidates the embedder found similar in the same scope:

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
* **a named value that ended**, beside what comes instead ("The Copper Kettles cancelled; a DJ
  plays", "Marta Quinn has stepped down; Ravi Patel …", "Zoho Books is no longer used", "Linda had
  to withdraw; Rosa Kim is our Audrey now"): replaces
  the most similar memory that holds the name and shares another word with the new one, what the
  name was ("The race officer is Marta Quinn"), not one that shares only the name ("Marta Quinn
  plays golf": her stepping down is not the end of what is said about her).
* **a new value in the same words**, when no rule above applies and nothing replaced is named
  (:func:`new_value_in_frame`): a change stated by a marker, by when it starts ("From October Ruth
  works Thursday … nights") or by a verb of a new amount or term ("raised her rate to …") replaces
  the scope's memory the embedder finds far closer than any other, when each states a value the
  other does not and the new one repeats most of the older one's other words.
* **a new amount of the same thing**, on the same terms (:func:`amounts.new_amount`): "Jars of
  honey go for £7.50 this season" replaces "Sells her honey at £6 a jar", when both count in one
  unit (money, a time of day, "mg", "guests"), each states an amount the other does not, they share
  a word for what is counted, and the new one says the amount moved, holds beside one that moved,
  or is the current one; not an amount of another thing ("metformin 500 mg" beside "lisinopril 10
  mg"), on other days, or for other people ("Children's swim lessons are now £8").

Each compares memories about the same person or thing (:func:`subject`): a memory opening with
another name, a relative, or a person introduced by a role ("Our client Emeka Jung …") is about
someone else than the scope's owner; a capitalised opening word the other memory holds too
("Stand-up is 9:15 from now on" / "Daily stand-up 8:45 in room B112") is not another name
(:func:`subjects.about_same`; for the **from … to** rule and the last two).

The rules are deliberately narrow: a missed change leaves both facts current (the newer one still
ranks by relevance), while a wrong supersession would hide a true fact from default search.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..model import MemoryEntry
from ..retrieval.lexical import tokenize
from ..wording import stated_name
from .amounts import amounts, has_amount_cue, new_amount
from .changes import (
    PREFERS_OVER,
    Replaced,
    attribute_stems,
    ended,
    replaced,
    reversed_liking,
    shared_classes,
    shares_what_recurs,
)
from .events import dates_event, rescheduled
from .frame import ONSET, new_value_in_frame
from .slots import Slot, gives_new_value, new_value, slot
from .subjects import RELATIVE, about_same, candidate_subject, partner_of, same_subject, subject
from .words import ADDITIVE, has_change_marker, restates

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
#: A new value in the same words (:func:`new_value_in_frame`): the older memory must be the new
#: one's nearest in the scope by this cosine, and lead the next nearest by this much. The rule has
#: no vocabulary of attributes, so the embedder must single the older memory out.
FRAME_MIN_COSINE = 0.55
FRAME_LEAD = 0.1


@dataclass(frozen=True)
class Candidate:
    """An active memory of the new memory's scope and its cosine similarity to it."""

    entry: MemoryEntry
    cosine: float


@dataclass(frozen=True)
class Cues:
    """What a memory says that the rules read, read once per memory (:func:`cues`): a word of change,
    the value of a single-valued attribute, an event's new date, a reversed liking, when a new value
    starts, a named value that ended, a new amount."""

    marker: bool
    stated: Slot | None
    event: set[str] | None
    prefers: bool
    onset: bool
    ends: list[Replaced]
    counted: bool

    @property
    def any(self) -> bool:
        """Whether the memory is compared with its scope at all (a cheap pre-check: only a memory
        stating a change, the value of a single-valued attribute or an event's new date is)."""
        return (
            self.marker
            or self.stated is not None
            or self.event is not None
            or self.prefers
            or self.onset
            or bool(self.ends)
            or self.counted
        )


def cues(content: str) -> Cues:
    """The :class:`Cues` of the memory ``content``."""
    return Cues(
        marker=has_change_marker(content),
        stated=slot(content),
        event=rescheduled(content),
        prefers=PREFERS_OVER.search(content) is not None,
        onset=ONSET.search(content) is not None,
        ends=ended(content),
        counted=bool(amounts(content)) and has_amount_cue(content),
    )


def superseded(
    content: str,
    candidates: Sequence[Candidate],
    read: Cues | None = None,
    owner: Callable[[], str | None] | None = None,
) -> list[MemoryEntry]:
    """The candidates that the memory ``content`` makes out of date (see module doc). A candidate that
    opens with another name is about someone else ("Ana switched from Jenkins" leaves "Ben uses
    Jenkins" alone), as scopes shared by several people hold. ``read``: the memory's :func:`cues`,
    when the caller has them; ``owner``: the name of the person the scope is kept for, when it has one
    (asked only when the memory opens with a name and no candidate states the owner's)."""
    read = cues(content) if read is None else read
    phrases = replaced(content)
    if not (phrases or read.any):
        return []
    names = {c.entry.id: n for c in candidates if (n := stated_name(c.entry.content)) is not None}
    if stated_name(content) is None:
        # the memory that gives the user's name is replaced only by one that gives a name: what else
        # it says may change ("… drives for a carrier based out of Joplin"), the name does not
        candidates = [c for c in candidates if c.entry.id not in names]
    marker, stated, event, prefers = read.marker, read.stated, read.event, read.prefers
    onset, ends, counted = read.onset, read.ends, read.counted
    if event is not None:
        # a new date replaces the same event's date (the most similar memory that names the event),
        # not the same date said again
        same = [
            c
            for c in candidates
            if c.cosine >= MIN_COSINE_ATTRIBUTE
            and dates_event(c.entry.content, event)
            and not restates(content, c.entry.content)
        ]
        return [max(same, key=lambda c: c.cosine).entry] if same else []
    who = subject(content)
    mentioned = set(tokenize(content))
    others = {c.entry.id: candidate_subject(c.entry.content, mentioned) for c in candidates}
    owned = _owners_facts(who, candidates, others, list(names.values()), owner)
    slots: dict[str, Slot | None] = {}  # each candidate's slot, read once by either rule that needs it

    def slot_of(entry: MemoryEntry) -> Slot | None:
        if entry.id not in slots:
            slots[entry.id] = slot(entry.content)
        return slots[entry.id]

    out: dict[str, MemoryEntry] = {}
    if stated is not None and not ADDITIVE.search(content):
        # "Ines works at Accenture" gives "works at" another value than "Ines works at Deloitte"
        closer: list[MemoryEntry] = []  # naming the attribute more closely than the new memory does
        for cand in candidates:
            was = slot_of(cand.entry)
            if cand.cosine >= MIN_COSINE_ATTRIBUTE and new_value(stated, was, who, others[cand.entry.id]):
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
                and same_subject(who, others[cand.entry.id])
                and reversed_liking(content, cand.entry.content)
            ):
                out[cand.entry.id] = cand.entry
        if out:
            return list(out.values())
    for cand in candidates:
        other = others[cand.entry.id]
        if cand.cosine < MIN_COSINE_FROM_TO:
            continue
        alike = about_same(who, other, content, cand.entry.content)
        stems = set(tokenize(cand.entry.content))
        # "Kim left Northwind" says where Kim no longer is, not the scope's owner ("User works at Northwind")
        owners = who is not None and other is None
        if any(
            (alike or p.handover) and p.named_in(cand.entry.content, stems) and not (owners and p.left) for p in phrases
        ):
            out[cand.entry.id] = cand.entry
    if ends and not out:
        # "Marta Quinn has stepped down; Ravi Patel runs the races" replaces the most similar memory
        # that holds the name and shares another word with it, what the name was ("The race officer
        # is Marta Quinn"); not one that shares only the name ("Marta Quinn plays golf")
        context = set(tokenize(content))
        for phrase in ends:
            holding = [
                c
                for c in candidates
                if c.cosine >= MIN_COSINE_FROM_TO
                and phrase.named_in(c.entry.content, stems := set(tokenize(c.entry.content)))
                and (stems & context) - phrase.words
            ]
            if holding:
                holder = max(holding, key=lambda c: c.cosine).entry
                out[holder.id] = holder
    # a change that names what it replaces ("moved from Azure to AWS") replaces that and nothing more
    if marker and not out and not ADDITIVE.search(content):
        new_stems = attribute_stems(content, who, stated)
        best: dict[str, Candidate] = {}
        for cand in candidates:
            if cand.cosine < MIN_COSINE_ATTRIBUTE:
                continue
            other = others[cand.entry.id]
            if cand.entry.id in owned:
                continue  # the owner's fact, not the named person's ("Marcus Ode moved into …")
            if same_subject(who, other):
                classes = shared_classes(new_stems, attribute_stems(cand.entry.content, who, slot_of(cand.entry)))
            elif partner_of(who, other):  # only a change of the relationship replaces it
                classes = shared_classes(new_stems, set(tokenize(cand.entry.content))) & {"relationship"}
            else:
                continue
            for name in classes:
                if name == "preference" and cand.cosine < PREFERENCE_MIN_COSINE:
                    continue
                if name == "cadence" and not shares_what_recurs(content, cand.entry.content):
                    continue
                if name not in best or cand.cosine > best[name].cosine:
                    best[name] = cand
        for name, cand in best.items():
            # a memory that names the current value says more about it, it does not change it; a
            # change of relationship names the partner it ends ("User and Clara divorced")
            if name == "relationship" or not restates(content, cand.entry.content):
                out.setdefault(cand.entry.id, cand.entry)
    if (
        not out
        and not phrases
        and not ends
        and (marker or onset or counted)
        and candidates
        and not ADDITIVE.search(content)
    ):
        # no rule's vocabulary names the attribute: a new value in the same words, or a new amount
        # of the same thing, replaces the one memory the embedder finds far closer than any other (a
        # change that names what it replaces, "switched from gRPC to Metabase", replaces that and
        # nothing more)
        nearest, *rest = sorted(candidates, key=lambda c: c.cosine, reverse=True)
        runner_up = rest[0].cosine if rest else 0.0
        if (
            nearest.cosine >= FRAME_MIN_COSINE
            and nearest.cosine - runner_up >= FRAME_LEAD
            and about_same(who, others[nearest.entry.id], content, nearest.entry.content)
            and (
                ((marker or onset) and new_value_in_frame(content, nearest.entry.content))
                or (counted and new_amount(content, nearest.entry.content))
            )
        ):
            out[nearest.entry.id] = nearest.entry
    return list(out.values())


def _owners_facts(
    who: str | None,
    candidates: Sequence[Candidate],
    others: dict[str, str | None],
    names: Sequence[str],
    owner: Callable[[], str | None] | None,
) -> set[str]:
    """The candidates about the scope's owner that a memory about the named person ``who`` cannot
    change through a word of its attribute class: in a scope kept for someone by name (a candidate
    states it, or ``owner`` gives it) that is not ``who``, the facts that name nobody and do not hold
    ``who`` either. "Marcus Ode moved into Sandy Park Road" in Priya's scope shares "moved" and
    "flats" with "Owns three rental flats: … 41 Sandy Park Road", which is Priya's; "Kim left
    Northwind; Alex Moreno is now the second admin" still replaces "The second admin on Sam's
    account is Kim", which holds Kim. Only the attribute-class rule asks: a change that names what
    it replaces, or a new amount of the thing both name ("Dr. Aguilar bumped the metformin up to
    1000 mg"), is about the owner's value whoever made it."""
    if who is None or who.startswith(RELATIVE):
        return set()
    known = set(tokenize(" ".join(names)))
    if not known and owner is not None and (name := owner()):
        known = set(tokenize(name))
    if not known or who in known:
        return set()
    return {c.entry.id for c in candidates if others[c.entry.id] is None and who not in set(tokenize(c.entry.content))}


__all__ = [
    "CANDIDATES",
    "FRAME_LEAD",
    "FRAME_MIN_COSINE",
    "MIN_COSINE_ATTRIBUTE",
    "MIN_COSINE_FROM_TO",
    "PREFERENCE_MIN_COSINE",
    "Candidate",
    "Cues",
    "Slot",
    "cues",
    "gives_new_value",
    "has_change_marker",
    "restates",
    "slot",
    "subject",
    "superseded",
]
