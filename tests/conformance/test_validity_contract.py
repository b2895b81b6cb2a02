"""Current facts win, history is kept: superseded memories on every provider.

A memory that replaces an older one (explicitly with ``supersedes=[id]``, or detected from its words:
"moved to Berlin", "switched from X to Y") marks the older one ``superseded`` with
``provenance.superseded_by`` / ``valid_to``. Default search and list return current memories only;
``include_superseded=True`` and ``as_of=<time>`` return history; ``get`` still reads a superseded id.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stratamem import Memory, MemoryConfig, MemoryEntry, MemoryError, TenantContext

U = {"user_id": "dana"}


class Clock:
    def __init__(self) -> None:
        self.at = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.at


def contents(res: object) -> list[str]:
    return [r.memory.content for r in res.results]  # type: ignore[attr-defined]


def test_explicit_supersedes_marks_history(open_store: Callable[..., Memory], tenant: TenantContext) -> None:
    clock = Clock()
    mem = open_store(clock=clock)
    old = mem.add(tenant, content="Dana lives in Hamburg", layer="user", identifiers=U).memory
    clock.at += timedelta(days=30)
    new = mem.add(tenant, content="Dana lives in Berlin", layer="user", identifiers=U, supersedes=[old.id])
    assert new.superseded == [old.id]

    current = mem.search(tenant, "Dana lives in Hamburg", identifiers=U, threshold=0.0)
    assert contents(current) == ["Dana lives in Berlin"]
    history = mem.search(tenant, "Dana lives in Hamburg", identifiers=U, threshold=0.0, include_superseded=True)
    assert set(contents(history)) == {"Dana lives in Hamburg", "Dana lives in Berlin"}

    got = mem.get(tenant, old.id)
    assert got is not None and got.status == "superseded"
    assert got.provenance.superseded_by == new.memory.id
    assert got.provenance.valid_to == new.memory.created_at

    assert [m.content for m in mem.list(tenant, layer="user", identifiers=U).memories] == ["Dana lives in Berlin"]
    listed = mem.list(tenant, layer="user", identifiers=U, include_superseded=True).memories
    assert {m.content for m in listed} == {"Dana lives in Hamburg", "Dana lives in Berlin"}


def test_as_of_returns_what_was_current_then(open_store: Callable[..., Memory], tenant: TenantContext) -> None:
    clock = Clock()
    mem = open_store(clock=clock)
    t0 = clock.at
    old = mem.add(tenant, content="Dana lives in Hamburg", layer="user", identifiers=U).memory
    clock.at = t0 + timedelta(days=30)
    mem.add(tenant, content="Dana lives in Berlin", layer="user", identifiers=U, supersedes=[old.id])
    clock.at = t0 + timedelta(days=60)
    q = "where does Dana live"
    assert contents(mem.search(tenant, q, identifiers=U, threshold=0.0, as_of=t0 + timedelta(days=10))) == [
        "Dana lives in Hamburg"
    ]
    assert contents(
        mem.search(tenant, q, identifiers=U, threshold=0.0, as_of=(t0 + timedelta(days=40)).isoformat())
    ) == ["Dana lives in Berlin"]
    assert contents(mem.search(tenant, q, identifiers=U, threshold=0.0, as_of=t0 - timedelta(days=1))) == []
    listed = mem.list(tenant, layer="user", identifiers=U, as_of=t0 + timedelta(days=10)).memories
    assert [m.content for m in listed] == ["Dana lives in Hamburg"]


def test_bad_history_parameters_are_invalid_params(open_store: Callable[..., Memory], tenant: TenantContext) -> None:
    mem = open_store()
    with pytest.raises(MemoryError) as err:
        mem.search(tenant, "x", identifiers=U, as_of="last tuesday")
    assert err.value.code == "INVALID_PARAMS" and err.value.details["field"] == "as_of"
    with pytest.raises(MemoryError) as err:
        mem.add(tenant, content="x", layer="user", identifiers=U, supersedes=["no-such-id"])
    assert err.value.code == "MEMORY_NOT_FOUND"


def test_a_write_naming_no_memory_to_supersede_stores_nothing(
    open_store: Callable[..., Memory], tenant: TenantContext
) -> None:
    """The memories a write replaces are found before anything is stored: an id that names no
    current memory fails the write, and no new memory is left behind."""
    mem = open_store()
    with pytest.raises(MemoryError) as err:
        mem.add(tenant, content="Dana lives in Berlin", layer="user", identifiers=U, supersedes=["no-such-id"])
    assert err.value.code == "MEMORY_NOT_FOUND" and err.value.details["id"] == "no-such-id"
    items = [
        {"content": "Dana lives in Hamburg", "layer": "user", "identifiers": U},
        {"content": "Dana lives in Berlin", "layer": "user", "identifiers": U, "supersedes": ["no-such-id"]},
    ]
    with pytest.raises(MemoryError) as err:
        mem.bulk_add(tenant, items)
    assert err.value.code == "MEMORY_NOT_FOUND" and err.value.details["index"] == 1
    assert mem.list(tenant, layer="user", identifiers=U, include_superseded=True).memories == []
    # an id already replaced is no longer current: naming it again fails the same way
    old = mem.add(tenant, content="Dana lives in Hamburg", layer="user", identifiers=U).memory
    mem.add(tenant, content="Dana lives in Berlin", layer="user", identifiers=U, supersedes=[old.id])
    with pytest.raises(MemoryError) as err:
        mem.add(tenant, content="Dana lives in Paris", layer="user", identifiers=U, supersedes=[old.id])
    assert err.value.code == "MEMORY_NOT_FOUND"
    listed = mem.list(tenant, layer="user", identifiers=U, include_superseded=True).memories
    assert sorted(m.content for m in listed) == ["Dana lives in Berlin", "Dana lives in Hamburg"]


class _FailingUpdates:
    """A write hook that fails every update, inside the write that makes it."""

    def after_add(self, tx: object, entries: object) -> None:
        return None

    def after_update(self, tx: object, entry: object, previous: object) -> None:
        raise ValueError("an update that fails")

    def after_delete(self, tx: object, tenant_id: str, ids: object) -> None:
        return None


@pytest.mark.parametrize("grouped", [True, False])
def test_a_memory_and_the_one_it_replaces_are_written_together(
    open_store: Callable[..., Memory], tenant: TenantContext, grouped: bool
) -> None:
    """When marking the older memory fails, the new one is not stored either (one transaction)."""
    mem = open_store(config=MemoryConfig(retry_max_attempts=1, group_adds=grouped))
    old = mem.add(tenant, content="Dana lives in Hamburg", layer="user", identifiers=U).memory
    mem.engine.provider.write_hooks.append(_FailingUpdates())
    with pytest.raises(MemoryError) as err:
        mem.add(tenant, content="Dana lives in Berlin", layer="user", identifiers=U, supersedes=[old.id])
    assert err.value.code == "PROVIDER_ERROR"
    listed = mem.list(tenant, layer="user", identifiers=U, include_superseded=True).memories
    assert [(m.content, m.status, m.version) for m in listed] == [("Dana lives in Hamburg", "active", 1)]


def test_a_replacement_keeps_the_accesses_recorded_after_it_was_read(
    open_store: Callable[..., Memory], tenant: TenantContext
) -> None:
    """Marking a memory superseded writes its validity, not the access statistics of the copy the
    writer read: an access recorded in between still counts."""
    mem = open_store()
    provider = mem.engine.provider
    old = mem.add(tenant, content="Dana lives in Hamburg", layer="user", identifiers=U).memory
    now = mem.engine.now()
    read = provider.get(tenant.tenant_id, old.id, now, include_embedding=True)
    assert read is not None and read.access_count == 0
    provider.record_access(tenant.tenant_id, {old.id: 0.7}, now)  # after the writer's read
    newer = read.model_copy(update={"id": "dana-berlin", "content": "Dana lives in Berlin", "content_hash": "sha"})
    assert provider.add_replacing([newer], [(_marked(read, newer), read)]) == [True]
    got = provider.get(tenant.tenant_id, old.id, now, statuses=("superseded",))
    assert got is not None and got.provenance.superseded_by == "dana-berlin" and got.version == 2
    assert got.access_count == 1
    # a replacement of a version another writer changed meanwhile is not applied
    again = read.model_copy(update={"id": "dana-paris", "content": "Dana lives in Paris", "content_hash": "sha2"})
    assert provider.add_replacing([again], [(_marked(read, again), read)]) == [False]


def _marked(old: MemoryEntry, new: MemoryEntry) -> MemoryEntry:
    """``old`` as a replacement of ``add_replacing`` marks it: superseded by ``new``, next version."""
    provenance = old.provenance.model_copy(update={"superseded_by": new.id, "valid_to": new.created_at})
    return old.model_copy(
        update={"status": "superseded", "provenance": provenance, "version": old.version + 1, "etag": "e2"}
    )


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    plan=st.lists(
        st.tuples(st.sampled_from(["city", "diet", "job", "pet", "car"]), st.integers(min_value=0, max_value=9999)),
        min_size=1,
        max_size=12,
    )
)
def test_a_superseded_memory_is_never_returned_by_default(
    open_store: Callable[..., Memory], plan: list[tuple[str, int]]
) -> None:
    """Random histories: each write of an attribute replaces that attribute's previous memory."""
    mem = open_store(config=None)
    ctx = TenantContext(tenant_id=f"prop-{uuid.uuid4().hex[:10]}", principal="u1")
    latest: dict[str, str] = {}
    written: dict[str, str] = {}  # id -> content
    for attribute, value in plan:
        previous = [latest[attribute]] if attribute in latest else None
        content = f"Dana's {attribute} is number {value} ({len(written)})"
        out = mem.add(ctx, content=content, layer="user", identifiers=U, supersedes=previous)
        latest[attribute] = out.memory.id
        written[out.memory.id] = content
    current = set(latest.values())
    for memory_id, content in written.items():
        res = mem.search(ctx, content, identifiers=U, threshold=0.0, limit=100)
        assert {r.memory.id for r in res.results} <= current
        history = mem.search(ctx, content, identifiers=U, threshold=0.0, limit=100, include_superseded=True)
        assert history.results[0].memory.id == memory_id
    assert {m.id for m in mem.list(ctx, layer="user", identifiers=U, limit=100).memories} == current
    everything = mem.list(ctx, layer="user", identifiers=U, limit=100, include_superseded=True).memories
    assert {m.id for m in everything} == set(written)


@pytest.mark.model
@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Dana lives in Hamburg", "Dana moved to Berlin last month"),
        ("Dana is a vegetarian", "Dana is not vegetarian anymore, she eats fish now"),
        ("CI runs on Jenkins", "We moved CI from Jenkins to GitHub Actions"),
        ("Marco's manager is Giulia Rossi", "Marco now reports to Bob Chen after the reorg"),
        ("Marco uses VS Code as his editor", "Marco switched from VS Code to Neovim"),
        # facts written without their subject, as extracted from a conversation: about the user
        ("Lives in Hamburg", "Moved to Berlin last month"),
        ("User's sister lives in Rome", "Dana's sister moved to Milan"),
        # a change whose words are far from the old fact's (cosine about 0.3)
        ("User's manager is Giulia Rossi", "User now reports to Bob Chen"),
        ("User's manager is Giulia Rossi", "User's new manager is Bob Chen"),
        # the replaced value named: "instead of", "replaced … with", "no longer uses", "left", "sold"
        ("The API is hosted on Heroku", "The API is now hosted on Render instead of Heroku"),
        ("We track errors with Rollbar", "We replaced Rollbar with Sentry for error tracking"),
        ("Dana logs in with Okta", "Dana no longer uses Okta; she logs in with a passkey"),
        ("Works as an analyst at Deloitte", "Left Deloitte and now works at a startup"),
        ("Dana drives a Volkswagen Golf", "Dana sold the Volkswagen Golf and now cycles"),
        ("Dana is learning Portuguese", "Dana stopped learning Portuguese this spring"),
        ("Walter takes two sugars in his tea", "Walter has stopped taking sugar in his tea"),
        # an amount that changed; a transfer to another base
        ("The Oakridge renovation budget is £240,000", "The budget rose to £265,000 after the asbestos removal"),
        ("Priya is a first officer based at Manchester Airport", "Priya transferred to the Bristol base in August"),
        ("The SDK is licensed under GPL 3.0", "The SDK switched its licence from GPL 3.0 to MIT"),
        # a job held at a named place, whatever the job's name; the end of a relationship
        ("Dana is a teacher at Lincoln High", "Dana started a new job at a bakery"),
        ("Dana's boyfriend is called Leo", "Dana broke up with Leo and is now dating Max"),
        ("Dana is married to Chris", "Dana and Chris divorced in the spring"),
        ("The second admin on the account is Kim", "Kim left Northwind; Alex Moreno is now the second admin"),
        # how the agent answers, the time zone, and a liking restated (much alike)
        ("Dana prefers replies in French", "Dana now wants replies in German"),
        ("Dana is in the Paris time zone", "Dana is now in the Tokyo time zone"),
        ("Dana prefers dark mode", "Dana now prefers light mode"),
        # "too" that does not add; a job at a named place stated without its subject
        ("Dana lives in Leeds", "The commute was too long, so Dana moved to York"),
        ("Is a nurse at St. Mary's Hospital", "Started a new job at a private clinic"),
        # a month is a value of its own, not only a time a detail is dated by
        ("The Kestrel deadline moved to March", "The Kestrel deadline moved to April"),
        ("The Kestrel beta release is on 3 March", "The Kestrel beta release was pushed to 17 April"),
        # a new value of an attribute that holds one, without a word of change
        ("Dana works at Deloitte", "Dana works at Accenture"),
        ("Dana's manager is Carla Mendes", "Dana's manager is Rui Costa"),
        ("User's favorite language is Python", "User's favourite language is Rust"),
        ("User's dog's name is Rex", "User's dog's name is Max"),
        ("Lives in Porto", "Lives in Lisbon"),
        ("Harbor's database is MySQL 8", "Harbor's database is PostgreSQL 16"),
        ("Dana's phone is a Pixel 7", "Dana's phone is an iPhone 15"),
        ("Based in Oslo", "Based in Bergen"),
        ("The Atlas team is led by Helen Park", "The Atlas team is led by Omar Haddad"),
        ("Dana is on the Notion Free plan", "Dana is on the Notion Plus plan"),
        ("Atlas uses Jenkins for CI", "Atlas uses CircleCI for CI"),
        ("Dana drives a Honda Civic", "Dana drives a Kia Niro"),
        ("User reports to Kim Lee", "User's manager is Dan Ortiz"),
        # an attribute stated without its owner, a bank, a count, a meeting's time, a team and its name
        ("Phone is a Samsung Galaxy S22", "Phone is a Pixel 8"),
        ("Internet provider is Telekom", "Internet provider is Vodafone"),
        ("Dana banks with HDFC", "Dana banks with ICICI"),
        ("Has two kids", "Has three kids"),
        ("The Kestrel team's standup is at 9:30", "The Kestrel team's standup is at 10:15"),
        ("The Kestrel team is led by Helen Park", "Kestrel is led by Omar Haddad"),
        ("Kestrel's CI runs on GitHub Actions", "Kestrel's CI runs on Buildkite"),
        ("Kestrel's on-call alerts go through PagerDuty", "Kestrel uses Opsgenie for on-call alerts"),
        ("The user works at Unilever", "The user works at Heineken"),
        ("User's title is Marketing Manager", "User's title is Senior Marketing Manager"),
        # a fact without its subject that opens with a verb; what was given up or moved off
        ("Plays chess online", "Gave up playing chess online"),
        ("Plays tennis on weekends", "No longer plays tennis, took up padel instead"),
        ("Kestrel uses Redis for caching", "Kestrel moved off Redis and uses Memcached for caching now"),
        # a liking reversed; how often something recurs
        ("Prefers email over calls", "Prefers phone calls over email"),
        ("Prefers window seats", "Prefers aisle seats"),
        ("Helix releases every two weeks on Tuesday", "Helix now releases every Monday"),
        ("The Kestrel team works in two-week sprints", "The Kestrel team moved to one-week sprints"),
        # an event moved by someone: the event is the object
        ("The platform team's standup is at 9:30", "The platform team moved its standup to 10:15"),
        ("Dana's dentist appointment is on Tuesday", "Dana moved her dentist appointment to Thursday"),
        # a new value in the same words, told by when it starts or by a verb of a new amount or term
        ("Dana's shifts are Monday and Tuesday nights", "From October Dana works Thursday and Friday nights"),
        ("Dana charges 40 euros per hour for tutoring", "Dana raised her tutoring rate to 45 euros per hour"),
        (
            "Dana's first-aid certificate expires in June 2025",
            "Dana renewed her first-aid certificate; it is valid until June 2028",
        ),
        ("Felix Brandt is the sous chef", "Felix left and Yusuf Demir has taken over as sous chef"),
        ("The kitchen closes at 10pm", "From November the kitchen closes at 9:30pm"),
        # a named value said to have ended, beside what comes instead
        ("The wedding band is the Copper Kettles, playing from 8pm", "The Copper Kettles cancelled; a DJ plays at 8pm"),
        ("The club's race officer is Marta Quinn", "Marta Quinn has stepped down; Ravi Patel runs the races now"),
        ("Invoices are sent from Zoho Books", "Zoho Books is no longer used; invoices go out from Xero"),
        ("Catering is booked with Olive Tree Kitchen", "Olive Tree Kitchen went out of business, so Fennel Co caters"),
        ("Dana edits her photos in Lightroom", "Dana moved to Capture One after her Lightroom subscription lapsed"),
        ("Our main contact at Halden Foods is Petra Lund", "Petra Lund has left; Jonas Berg is the new contact"),
        ("Hannah Brook plays the organ for the choir", "Hannah Brook has retired from the choir; Leo Grant now plays"),
        # a person who left the role or moved on from it
        ("Nina Park plays Maria in the school musical", "Nina Park had to withdraw after a sprain; Jo Lee plays Maria"),
        (
            "The Saturday shift lead is Omar Haddad",
            "Omar Haddad has moved across to the warehouse team; Lena Fox leads the Saturday shift now",
        ),
        ("Marco runs the last leg of the relay", "Marco dropped out of the relay; Ines Ruiz runs the last leg"),
        # "'s" for "has" before the end ("Ffion's pulled out"), not a possessive
        ("The relay's anchor is Tomas Berg", "Tomas's pulled out. Ines Ruiz is our relay anchor"),
        ("Booking clerk is Marlene at Northway, ext 3", "Marlene's retired. Kyle Brennan does the booking, ext 7"),
        # a person another one "has replaced" or whose place another takes
        (
            "The club electrician is Manny Ortiz",
            "Manny is booked up all summer, so Kelsey Tran has replaced him as club electrician",
        ),
        (
            "Staff on the museum trip: Mr Okoye, Ms Lowe and Mrs Quinn",
            "Mrs Quinn has jury service that week; Ben Harrow is taking her place on the museum trip",
        ),
        # "took over … from" a person, whatever time phrase follows the name
        ("Oliver is the club's dive officer", "Rachel Soames took over as dive officer from Oliver in May"),
        # a thing put aside for another
        ("Shoots mostly on a Nikon Z6", "Bought a Nikon Z8; the Z6 is just the backup now"),
        # a new amount of the same thing, said to have moved, to hold beside it, or to be the current one
        ("Sells her jam at £4 a jar at the market", "Jars of jam are £4.50 this summer; she put the price up"),
        ("Takes metformin 500 mg twice a day", "Her GP raised the metformin to 1000 mg twice a day"),
        ("The guest list has 120 names on it", "They cut the guest list to 95 names"),
        ("Claiming £18,400 for remedial work to the roof", "Claim revised to £23,750 after a second roof survey"),
        (
            "Season tickets are 80 pounds for adults and 40 pounds for students",
            "Adult season tickets are 95 pounds; students remain at 40 pounds",
        ),
        (
            "18 volunteers signed up for the beach clean",
            "Three dropped out, so 15 volunteers are now coming to the beach clean",
        ),
        # an opening phrase before the subject: what is replaced is named ("instead of")
        (
            "Dinner will be roast lamb with potatoes",
            "Following the tasting, they chose a vegan curry instead of the lamb",
        ),
    ],
)
def test_a_stated_change_supersedes_the_old_fact(
    model_store: Memory, tenant: TenantContext, old: str, new: str
) -> None:
    mem = model_store
    kept = mem.add(tenant, content="Dana's birthday is on 14 March", layer="user", identifiers=U).memory
    first = mem.add(tenant, content=old, layer="user", identifiers=U).memory
    out = mem.add(tenant, content=new, layer="user", identifiers=U)
    assert out.superseded == [first.id]
    ids = {m.id for m in mem.list(tenant, layer="user", identifiers=U).memories}
    assert ids == {kept.id, out.memory.id}


@pytest.mark.model
def test_unrelated_facts_are_not_superseded(model_store: Memory, tenant: TenantContext) -> None:
    mem = model_store
    for content in [
        "Dana is planning a trip to Lisbon in October",
        "Dana works as a product designer at Figma",
        "Dana is allergic to peanuts",
    ]:
        mem.add(tenant, content=content, layer="user", identifiers=U)
    out = mem.add(tenant, content="Dana sold her car and now uses a bike to commute", layer="user", identifiers=U)
    assert out.superseded == []
    assert mem.list(tenant, layer="user", identifiers=U).total_count == 4


def test_a_plain_from_phrase_supersedes_nothing(open_store: Callable[..., Memory], tenant: TenantContext) -> None:
    """Regression: "from a 12" named "12" as replaced and superseded "from b 12"."""
    mem = open_store()
    first = mem.add(tenant, content="from b 12", layer="user", identifiers=U).memory
    out = mem.add(tenant, content="from a 12", layer="user", identifiers=U)
    assert out.superseded == [] and mem.get(tenant, first.id) is not None
    assert mem.list(tenant, layer="user", identifiers=U).total_count == 2


def _nothing_replaced(mem: Memory, tenant: TenantContext, old: str, new: str) -> None:
    """``new`` written after ``old`` in one user scope supersedes nothing: both stay current."""
    first = mem.add(tenant, content=old, layer="user", identifiers=U).memory
    out = mem.add(tenant, content=new, layer="user", identifiers=U)
    assert out.superseded == []
    assert mem.get(tenant, first.id) is not None
    assert mem.list(tenant, layer="user", identifiers=U).total_count == 2


@pytest.mark.model
@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("User lives in Berlin", "User's sister moved to Munich"),
        ("Dana works at Spotify", "Dana's partner works at Google now"),
        ("My brother lives in Lyon", "I moved to Paris last month"),
        ("User's sister lives in Munich", "User moved to Hamburg"),
        ("Ben's sister lives in Rome", "Ana's sister moved to Milan"),
    ],
)
def test_a_change_about_a_relative_does_not_replace_the_users_fact(
    model_store: Memory, tenant: TenantContext, old: str, new: str
) -> None:
    """A possessive opening names the person a fact is about: the user's sister moving does not
    replace where the user lives, and the user moving does not replace where the sister lives."""
    _nothing_replaced(model_store, tenant, old, new)


@pytest.mark.model
@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("User's manager is Giulia Rossi", "User now leads the payments team"),
        ("User is a vegetarian", "User now eats breakfast at 7"),
    ],
)
def test_a_word_that_says_other_things_ties_no_attribute(
    model_store: Memory, tenant: TenantContext, old: str, new: str
) -> None:
    """ "leads" and "eats" name the manager and the diet only beside the same word: leading a team does
    not change who the manager is, eating breakfast early does not end a vegetarian diet."""
    _nothing_replaced(model_store, tenant, old, new)


@pytest.mark.model
@pytest.mark.parametrize(
    ("old", "new"),
    [
        # the current value named: more about it, not a change of it
        ("Dana's manager is Paul Grant", "Dana's manager Paul Grant now approves her leave requests"),
        ("Manager is Chen Wei", "Manager Chen Wei is now on leave until May"),
        ("The team lead is Omar Haddad", "Omar Haddad now leads the mobile squad"),
        # added, not replaced
        ("Dana works as a nurse at St. Mary's", "Dana now also teaches first aid classes"),
        # a relative opening a fact without its subject
        ("Lives in Valencia", "Sister moved to Lisbon"),
        # "moved" with an object
        ("Dana lives in Leeds", "Dana moved her dentist appointment to Thursday"),
        # someone named leaving a company is not the scope's owner leaving it
        ("User works at Northwind Traders", "Kim left Northwind last year"),
        # a name replaced is that name, not a word it stems to ("Dentally" is not "Dental")
        (
            "Brightwater Dental has four clinics, in Leeds, York, Harrogate and Wakefield",
            "Brightwater now syncs patient records from Software of Excellence instead of Dentally",
        ),
        # an event moved: a memory naming it in passing does not date it
        (
            "A bat survey found a roost in the loft, so no roof work is allowed between May and August",
            "Roof work has been moved to September because of the bats",
        ),
        # an activity given up names its object: taking sugar is not taking a medicine
        ("Walter takes warfarin, so check interactions first", "Walter has stopped taking sugar in his tea"),
        # another liking: the words of liking alone tie nothing
        ("Dana prefers replies in French", "Dana now prefers tea over coffee"),
        # a new value of something else in some of the same words
        (
            "Dana's gym sessions are on Monday and Tuesday mornings",
            "From October Dana's piano lessons are on Thursday mornings",
        ),
        ("Dana earns 50,000 euros a year", "Dana raised 2,000 euros for charity this year"),
        ("Dana's rent is 900 euros a month", "Dana now pays 40 euros a month for her gym"),
        ("The Kestrel team's standup is at 9:30", "From next week the Kestrel team's retro is at 16:00"),
        ("The Atlas project's budget is 50,000 euros", "The Atlas project raised 10,000 euros from sponsors"),
        ("Dana's passport expires in 2027", "Dana renewed her driving licence; it is valid until 2035"),
        ("Dana's son Leo plays football on Saturdays", "From May Dana plays football on Sundays"),
        # a person who left something else
        ("Dana works as a product designer at Figma", "Dana dropped out of her Spanish course; she now learns Italian"),
        # the memory that gives the user's name, whatever else it says
        (
            "User's name is Dale. Drives long-haul for a freight carrier based out of Joplin",
            "Starting in November the carrier moved him to a dedicated Joplin-Laredo run",
        ),
        # an amount of another thing, on other days, or for other people
        ("Takes lisinopril 10 mg every morning", "Now takes metformin 500 mg with dinner"),
        ("Runs 5 km on weekday mornings", "Now runs 18 km on Sundays"),
        ("Adult swim lessons are £12 a session", "Children's swim lessons are now £8 a session"),
        ("The trip costs £185 per pupil", "The coach alone now costs £1,200"),
        # the value named again, or another thing of the same first word
        ("The Kestrel tech lead is Hugo Martin", "Hugo Martin, the tech lead, is now on holiday until Monday"),
        ("Zesty Kestrel's p95 latency is 455 ms", "From May Zesty Pebble's p95 latency is 54 ms"),
        # something of a named person ended, not the person; a person's own end, with nothing instead
        ("Dana's best friend is Ana Ruiz", "Ana Ruiz's gym closed down last week"),
        ("Never call Walter before 10am", "Walter retired in May"),
        ("The Copper Kettles play at the Anchor on Fridays", "The Anchor cancelled its Friday music nights"),
        # a possessive before the end: something of the person ended, not the person
        ("The club electrician is Manny Ortiz", "Manny's van was stolen; Kelsey Tran lent him hers"),
        # a hand-over replaces the giver's role, not every memory that names the giver
        (
            "Postdoc Oliver Brandt and technician Rachel Soames run the lab's field surveys",
            "Rachel Soames took over as dive officer from Oliver in May",
        ),
        # "replaced him" with no one named before the one who replaced
        ("The club electrician is Manny Ortiz", "Kelsey Tran has replaced the fuse box at the club"),
        # something of the person's replaced, not the person
        ("Manny Ortiz uses an old Dell laptop for the club accounts", "Manny and Kelsey will replace her laptop"),
        # what was given up is where she went, not the verb "go" of any other memory
        (
            "Had her left knee replaced in 2022; finds steep ground hard going in the wet",
            "Too shattered after evening feeding - she's stopped going to choir till the spring",
        ),
    ],
)
def test_a_change_that_replaces_no_fact_supersedes_nothing(
    model_store: Memory, tenant: TenantContext, old: str, new: str
) -> None:
    """Words of change about something that stays true: the older fact stays current."""
    _nothing_replaced(model_store, tenant, old, new)


@pytest.mark.model
def test_a_change_of_someone_named_is_not_the_owners_when_the_scope_names_its_owner(
    model_store: Memory, tenant: TenantContext
) -> None:
    """Repro (blind fact set): in Priya's scope, "Marcus Ode moved into Sandy Park Road" superseded
    "Owns three rental flats: … 41 Sandy Park Road", a fact about Priya written without her name,
    as if Marcus were the scope's owner. The scope states its owner's name, and it is not Marcus."""
    ids = {"user_id": "f15-priya"}
    mem = model_store
    name = mem.add(tenant, content="User's name is Priya Raman", layer="user", identifiers=ids).memory
    flats = mem.add(
        tenant,
        content="Owns three rental flats: 12A Mina Road, Flat 3 Cotham Vale and 41 Sandy Park Road",
        layer="user",
        identifiers=ids,
    ).memory
    out = mem.add(
        tenant, content="Marcus Ode moved into Sandy Park Road on 1 June, £1,050 pcm", layer="user", identifiers=ids
    )
    assert out.superseded == []
    assert mem.get(tenant, flats.id) is not None and mem.get(tenant, name.id) is not None
    # the owner's own change still replaces what names nobody
    city = mem.add(tenant, content="Lives in Hamburg", layer="user", identifiers=ids).memory
    out = mem.add(tenant, content="Priya moved to Berlin last month", layer="user", identifiers=ids)
    assert out.superseded == [city.id]


@pytest.mark.model
def test_a_named_thing_that_ended_replaces_where_it_is_a_value_not_what_it_is_about(
    model_store: Memory, tenant: TenantContext
) -> None:
    """ "Walter retired; Ines Costa covers his clients" ends Walter's work, not the facts about
    Walter ("Walter plays golf …", "Never call Walter …": nothing in common with the new memory but
    the name). Where the memory holding the name says what he was ("The account manager for Halden
    is Walter Brandt" and "… manages the Halden account"), that is replaced."""
    about = [
        model_store.add(tenant, content=c, layer="user", identifiers=U).memory
        for c in ("Walter plays golf on Sundays", "Never call Walter before 10am")
    ]
    out = model_store.add(tenant, content="Walter retired; Ines Costa covers his clients", layer="user", identifiers=U)
    assert out.superseded == []
    assert all(model_store.get(tenant, m.id) is not None for m in about)
    project = {"project_id": "halden"}
    value = model_store.add(
        tenant, content="The account manager for Halden is Walter Brandt", layer="project", identifiers=project
    ).memory
    out = model_store.add(
        tenant,
        content="Walter Brandt retired; Ines Costa manages the Halden account",
        layer="project",
        identifiers=project,
    )
    assert out.superseded == [value.id]


@pytest.mark.model
@pytest.mark.parametrize(
    ("old", "new"),
    [
        # attributes that hold several values
        ("Dana's sister is Rita", "Dana's sister is Marta"),
        ("Dana speaks Portuguese", "Dana speaks Spanish"),
        # the same value with more, a phrase about the attribute, another attribute
        ("Dana works at Deloitte", "Dana works at Deloitte on the audit team"),
        ("Harbor's database is MySQL 8", "Harbor's database is backed up nightly"),
        ("Dana's manager is Carla Mendes", "Dana's manager Carla Mendes is based in Toronto"),
        ("Dana's favourite colour is green", "Dana's favourite film is Amelie"),
        ("Dana's manager is Carla Mendes", "Dana's manager is not Rui Costa"),
        # someone else's value of the attribute
        ("Lukas works at Google", "Dana works at SAP"),
        ("The API's owner is Kim Park", "The CLI's owner is Lee Chan"),
        ("Dana works at Deloitte", "Dana's sister works at Accenture"),
        ("Dana works at Deloitte", "Dana also works at a bakery on weekends"),
        ("Dana drives a Honda Civic", "Dana drives to work on Mondays"),
        ("Atlas uses Figma for mockups", "Atlas uses Miro for workshops"),
        ("Atlas is hosted on AWS", "Atlas is deployed on Kubernetes"),
        # the same value with other details; where a thing runs is not what it is
        ("Works at Bolt as a backend developer", "Works at Bolt on the payments team"),
        ("Orbit's database is PostgreSQL 16", "Orbit's database runs on a db.r6g.xlarge instance"),
        # a name as a value is no word of a class; a count of something else; no time
        ("User's title is Marketing Manager", "The user's manager changed teams last month"),
        ("User's manager is Ines Costa", "User now works at Zalando as a senior product manager"),
        ("Has a dog named Mochi", "Has two cats"),
        ("The standup is at 9:30", "The standup is short today"),
        ("Dana is a nurse", "Dana is a vegetarian"),
        # a narrower liking; something else that recurs
        ("Prefers tea", "Prefers green tea over black tea"),
        ("Prefers green tea", "Prefers black coffee"),
        ("Prefers oat milk", "Also prefers almond milk"),
        ("The standup is every day at 9:30", "User now runs every morning"),
        ("The Kestrel team works in two-week sprints", "The Kestrel team now deploys every Friday"),
        # another amount of the same kind
        ("The marketing budget is $20,000", "The renovation budget rose to £265,000"),
    ],
)
def test_a_second_value_or_a_detail_of_an_attribute_replaces_nothing(
    model_store: Memory, tenant: TenantContext, old: str, new: str
) -> None:
    """Only a new value of the same kind for an attribute that holds one value replaces the old one:
    not a second sister or language, not more words about the same value, not someone else's."""
    _nothing_replaced(model_store, tenant, old, new)


@pytest.mark.model
def test_a_change_naming_what_it_replaces_replaces_only_that(model_store: Memory, tenant: TenantContext) -> None:
    """ "moved from Azure to AWS" names what it replaces: "docs live in Confluence" shares a word of
    residence with it ("moved", "live") but is not replaced."""
    p = {"project_id": "kite"}
    cloud = model_store.add(tenant, content="Kite runs on Azure", layer="project", identifiers=p).memory
    docs = model_store.add(tenant, content="Kite's docs live in Confluence", layer="project", identifiers=p).memory
    out = model_store.add(tenant, content="Kite moved from Azure to AWS", layer="project", identifiers=p)
    assert out.superseded == [cloud.id]
    assert {m.id for m in model_store.list(tenant, layer="project", identifiers=p).memories} == {
        docs.id,
        out.memory.id,
    }


@pytest.mark.model
@pytest.mark.parametrize(
    ("old", "new"),
    [
        # two people, each introduced by a role
        (
            "Chloe Jaramillo from the support team switched from Grafana to Snowflake",
            "Our client Emeka Jung switched from Grafana to Sentry",
        ),
        (
            "The new hire Hassan Urban switched from Express to Opsgenie",
            "The new hire Wei Fuchs switched from Express to Helm",
        ),
        (
            "The user's colleague Umar Zimmermann thinks Tailwind is good for end-to-end tests",
            "The user's colleague Goran Mahlangu switched from Tailwind to Excel",
        ),
        # a project opened with its name; a job's word that stems to a common one ("hires", "design")
        (
            "The Lunar Heron project uses Rust for the recommendation engine",
            "William Demir switched from Rust to Splunk because security flagged it",
        ),
        (
            "The user is flying to Sapporo on September 4 for the design sprint and prefers aisle seats",
            "Dario Watanabe switched from PHP to Twilio because the new hires already knew it",
        ),
        # two events, each rescheduled
        (
            "The beta release for Daring Marten moved to September 3, 2025 after a legal review",
            "The API deprecation for Urban Marten moved to February 17, 2026 after a dependency upgrade",
        ),
        (
            "The security review for Olive Tundra moved to April 14",
            "The design sign-off for Fuzzy Tundra moved to June 22",
        ),
    ],
)
def test_a_change_about_another_person_or_event_of_a_shared_scope_supersedes_nothing(
    model_store: Memory, tenant: TenantContext, old: str, new: str
) -> None:
    """A team's scope holds facts about many people and events: a person introduced by a role ("Our
    client Emeka Jung") is that person, and a rescheduled event replaces only that event's date."""
    _nothing_replaced(model_store, tenant, old, new)


@pytest.mark.model
def test_a_change_about_someone_else_supersedes_nothing(model_store: Memory, tenant: TenantContext) -> None:
    """A team scope holds facts about several people: Ana's switch does not replace Ben's tool."""
    team = {"team_id": "platform"}
    ben = model_store.add(tenant, content="Ben uses Jenkins for CI", layer="team", identifiers=team).memory
    out = model_store.add(tenant, content="Ana switched from Jenkins to GitHub Actions", layer="team", identifiers=team)
    assert out.superseded == [] and model_store.get(tenant, ben.id) is not None
    assert model_store.list(tenant, layer="team", identifiers=team).total_count == 2


@pytest.mark.model
def test_an_attribute_named_loosely_replaces_only_the_scopes_one_value(
    model_store: Memory, tenant: TenantContext
) -> None:
    """ "The budget rose to …" replaces the project's one budget, named more closely ("The Oakridge
    renovation budget is …"); in a scope with two budgets it names neither, and both stay current."""
    project = {"project_id": "oakridge"}
    one = model_store.add(
        tenant, content="The Oakridge renovation budget is £240,000", layer="project", identifiers=project
    ).memory
    out = model_store.add(tenant, content="The budget rose to £265,000", layer="project", identifiers=project)
    assert out.superseded == [one.id]
    other = {"project_id": "harbour"}
    two = [
        model_store.add(tenant, content=c, layer="project", identifiers=other).memory
        for c in ("The Harbour renovation budget is £240,000", "The Harbour marketing budget is £30,000")
    ]
    out = model_store.add(tenant, content="The budget rose to £265,000", layer="project", identifiers=other)
    assert out.superseded == []
    assert all(model_store.get(tenant, m.id) is not None for m in two)
