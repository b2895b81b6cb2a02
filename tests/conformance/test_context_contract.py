"""Conversation-aware ranking on every provider: a turn is read with the turn before it, and its
score takes in its neighbouring turns.

A memory with ``provenance.thread_id`` / ``position`` is re-scored as ``(s + w · n) / (1 + w)``
where ``n`` is the best relevance among the turns of its thread within ``WINDOW`` positions, and its
lexical match also reads the words of the previous turn of its thread (``retrieval/context.py``);
when the question names one of the turns' speakers, the other speakers' turns lose
``SPEAKER_PENALTY``.
The provider ranks by relevance and reads turns by place (``thread_turns``); the contract is that the
engine gives the same scores whatever provider holds the turns, and that a turn's words count for
its neighbour only while the turn is stored as it is: updated, deleted or soft-deleted, they stop
counting at once.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from stratamem import Memory, MemoryConfig, TenantContext
from stratamem.filters import compile_filter, parse_filter
from stratamem.layers import scope_key
from stratamem.model import Layer, LayerIdentifiers, MemoryEntry
from stratamem.providers.base import ACTIVE, MemoryProvider, Scope, ThreadTurn, thread_place
from stratamem.retrieval import context
from stratamem.retrieval.context import SPEAKER_PENALTY, WINDOW

IDS = {"user_id": "conv"}
#: (thread, position, content): the lighthouse question is answered across turns of thread "s1".
TURNS = [
    ("s1", 0, "Marta: I finally started my new job as a lighthouse keeper on the island"),
    ("s1", 1, "Tom: Really? That sounds lonely"),
    ("s1", 2, "Marta: Not at all, my dog comes with me every morning"),
    ("s1", 3, "Tom: What did you have for dinner"),
    ("s1", 4, "Marta: Pasta with tomatoes and basil"),
    ("s2", 0, "Tom: The weather was awful yesterday"),
    ("s2", 1, "Marta: My dog hates the rain"),
    ("s2", 2, "Tom: Mine too, he hides under the bed"),
]
QUESTION = "Marta lighthouse keeper job island"


def _write(mem: Memory, tenant: TenantContext) -> dict[str, tuple[str, int]]:
    places: dict[str, tuple[str, int]] = {}
    for thread, position, content in TURNS:
        out = mem.add(
            tenant,
            content=content,
            layer="user",
            identifiers=IDS,
            provenance={"thread_id": thread, "position": position},
        )
        places[out.memory.id] = (thread, position)
    return places


def _scores(
    mem: Memory, tenant: TenantContext, question: str = QUESTION, hybrid_weight: float | None = None
) -> dict[str, float]:
    res = mem.search(
        tenant, question, identifiers=IDS, layers=["user"], threshold=0.0, limit=20, hybrid_weight=hybrid_weight
    )
    return {r.memory.id: r.score for r in res.results}


def test_neighbours_within_the_window_lift_a_turn(
    open_store: Callable[..., Memory], tenant: TenantContext, provider_name: str
) -> None:
    """The neighbour formula, on dense relevance (no lexical half, so no lexical context); the
    question names Marta, so Tom's turns then lose ``SPEAKER_PENALTY`` (the speaker step)."""
    plain = open_store(config=MemoryConfig(context_weight=0.0))
    places = _write(plain, tenant)
    relevance = _scores(plain, tenant, hybrid_weight=0.0)
    assert set(relevance) == set(places), "every turn is a candidate at threshold 0"
    weight = 0.3
    ctx = open_store(config=MemoryConfig(context_weight=weight))
    rescored = _scores(ctx, tenant, hybrid_weight=0.0)
    floor = min(relevance.values())
    by_place = {place: relevance[mid] for mid, place in places.items()}
    contents = {(thread, position): content for thread, position, content in TURNS}
    for mid, (thread, position) in places.items():
        neighbour = max(
            by_place.get((thread, position + step), floor) for step in range(-WINDOW, WINDOW + 1) if step != 0
        )
        expected = (relevance[mid] + weight * neighbour) / (1.0 + weight)
        if context.speaker(contents[(thread, position)]) == "Tom":
            expected -= SPEAKER_PENALTY
        assert rescored[mid] == pytest.approx(expected, abs=2e-6), (provider_name, thread, position)


def test_the_speaker_penalty_is_configurable_and_zero_turns_it_off(
    open_store: Callable[..., Memory], tenant: TenantContext, provider_name: str
) -> None:
    """``MemoryConfig.speaker_penalty``: Tom's turns (the question names Marta) score exactly that
    much less than with the step off; Marta's score the same."""
    on = open_store(config=MemoryConfig(speaker_penalty=0.1))
    places = _write(on, tenant)
    off = open_store(config=MemoryConfig(speaker_penalty=0.0))
    with_step, without = _scores(on, tenant), _scores(off, tenant)
    contents = {(thread, position): content for thread, position, content in TURNS}
    for mid, place in places.items():
        lost = 0.1 if context.speaker(contents[place]) == "Tom" else 0.0
        assert with_step[mid] == pytest.approx(without[mid] - lost, abs=2e-6), (provider_name, place)


def test_a_turn_two_places_after_the_match_outranks_its_twin_elsewhere(
    open_store: Callable[..., Memory], tenant: TenantContext
) -> None:
    """ "my dog" is said in both threads; the one two turns after the lighthouse answer (same thread)
    ranks above the one in the other thread, which it could not with the direct neighbours only."""
    mem = open_store(config=MemoryConfig(context_weight=0.3))
    places = _write(mem, tenant)
    scores = _scores(mem, tenant)
    near = next(mid for mid, place in places.items() if place == ("s1", 2))
    far = next(mid for mid, place in places.items() if place == ("s2", 1))
    plain = open_store(config=MemoryConfig(context_weight=0.0))
    relevance = _scores(plain, tenant)
    lift_near, lift_far = scores[near] - relevance[near], scores[far] - relevance[far]
    assert lift_near > lift_far + 0.01, (lift_near, lift_far)


def test_memories_without_a_position_keep_their_relevance(
    open_store: Callable[..., Memory], tenant: TenantContext
) -> None:
    plain = open_store(config=MemoryConfig(context_weight=0.0))
    for _, _, content in TURNS:
        plain.add(tenant, content=content, layer="user", identifiers=IDS)
    ctx = open_store(config=MemoryConfig(context_weight=0.3))
    assert _scores(ctx, tenant) == pytest.approx(_scores(plain, tenant))


#: The locker code is said in one turn and acknowledged in the next, which repeats few of its words.
SAID = "Priya: my gym locker code is QX-1017, write it down"
ACK = "Sam: done, Priya, the gym locker number is in my notes"
OTHER = [
    ("s3", 0, "Sam: the weather was awful yesterday"),
    ("s3", 1, "Priya: my dog hates the rain"),
    ("s3", 2, "Sam: mine too, he hides under the bed"),
]
CODE_QUESTION = "Priya gym locker code QX-1017"


def _store_of(
    open_store: Callable[..., Memory], tenant: TenantContext, turns: list[tuple[str, int, str]]
) -> tuple[Memory, dict[tuple[str, int], str]]:
    mem = open_store(config=MemoryConfig(context_weight=0.3))
    ids = {}
    for thread, position, content in turns:
        out = mem.add(
            tenant,
            content=content,
            layer="user",
            identifiers=IDS,
            provenance={"thread_id": thread, "position": position},
        )
        ids[(thread, position)] = out.memory.id
    return mem, ids


def test_a_turn_is_read_with_the_turn_before_it(
    open_store: Callable[..., Memory], tenant: TenantContext, other_tenant: TenantContext, provider_name: str
) -> None:
    """The acknowledgement after the code scores higher than the same acknowledgement before it: the
    neighbours are the same (one turn apart either way), only the previous turn differs."""
    after, a_ids = _store_of(open_store, tenant, [("s1", 0, SAID), ("s1", 1, ACK), *OTHER])
    before, b_ids = _store_of(open_store, other_tenant, [("s1", 0, ACK), ("s1", 1, SAID), *OTHER])
    lifted = _scores(after, tenant, CODE_QUESTION)[a_ids[("s1", 1)]]
    alone = _scores(before, other_tenant, CODE_QUESTION)[b_ids[("s1", 0)]]
    assert lifted > alone + 0.02, (provider_name, lifted, alone)


@pytest.mark.parametrize("change", ["delete", "soft_delete", "update"])
def test_a_changed_turn_stops_counting_for_its_neighbour(
    open_store: Callable[..., Memory],
    tenant: TenantContext,
    other_tenant: TenantContext,
    provider_name: str,
    change: str,
) -> None:
    """Once the turn holding the code is deleted, soft-deleted or rewritten, its words no longer reach
    the next turn: that turn scores exactly as in a store that never held them."""
    rewritten = "Priya: never mind, I will remember it myself"
    mem, ids = _store_of(open_store, tenant, [("s1", 0, SAID), ("s1", 1, ACK), *OTHER])
    ack = ids[("s1", 1)]
    before = _scores(mem, tenant, CODE_QUESTION)[ack]
    if change == "delete":
        mem.delete(tenant, ids[("s1", 0)])
    elif change == "soft_delete":
        mem.soft_delete(tenant, [ids[("s1", 0)]])
    else:
        mem.update(tenant, ids[("s1", 0)], content=rewritten)
    # a soft-deleted row still counts in the scope's BM25 statistics (as before this feature): the
    # store to compare with holds it soft-deleted too, in a thread of its own
    kept = {"update": [("s1", 0, rewritten)], "soft_delete": [("gone", 0, SAID)]}.get(change, [])
    never, never_ids = _store_of(open_store, other_tenant, [*kept, ("s1", 1, ACK), *OTHER])
    if change == "soft_delete":
        never.soft_delete(other_tenant, [never_ids[("gone", 0)]])
    expected = _scores(never, other_tenant, CODE_QUESTION)[never_ids[("s1", 1)]]
    after = _scores(mem, tenant, CODE_QUESTION)[ack]
    assert after == pytest.approx(expected, abs=2e-6), (provider_name, change)
    assert before > after + 0.02, (provider_name, change, before, after)


def test_a_turn_of_another_scope_is_not_read(
    open_store: Callable[..., Memory], tenant: TenantContext, other_tenant: TenantContext, provider_name: str
) -> None:
    """Another user's turn at the same thread and position is not the previous turn: the
    acknowledgement scores as in a store without it."""
    mem, ids = _store_of(open_store, tenant, [("s1", 1, ACK), *OTHER])
    mem.add(
        tenant,
        content=SAID,
        layer="user",
        identifiers={"user_id": "someone-else"},
        provenance={"thread_id": "s1", "position": 0},
    )
    alone, alone_ids = _store_of(open_store, other_tenant, [("s1", 1, ACK), *OTHER])
    expected = _scores(alone, other_tenant, CODE_QUESTION)[alone_ids[("s1", 1)]]
    assert _scores(mem, tenant, CODE_QUESTION)[ids[("s1", 1)]] == pytest.approx(expected, abs=2e-6), provider_name


def test_thread_turns_matches_the_generic_reader(
    open_store: Callable[..., Memory], tenant: TenantContext, provider_name: str
) -> None:
    """The provider's own ``thread_turns`` returns what the base class's generic one (``list`` then
    ``get``, for providers without their own) returns: the same turns, the same dense scores, and
    each turn's columns are those of the stored memory."""
    mem, ids = _store_of(open_store, tenant, [("s1", 0, SAID), ("s1", 1, ACK), *OTHER])
    mem.delete(tenant, ids[("s3", 1)])
    said = datetime(2022, 5, 1, 13, 56, tzinfo=UTC)  # a turn's own time is read with it
    dated = mem.add(
        tenant,
        content="Priya: the code changes every May",
        layer="user",
        identifiers=IDS,
        provenance={"thread_id": "s1", "position": 2, "occurred_at": said},
    ).memory.id
    provider = mem.engine.provider
    vector = mem.engine.embeddings.embed_query(CODE_QUESTION, "test")
    places = [("s1", 0), ("s1", 1), ("s1", 2), ("s3", 1), ("s3", 2), ("s9", 0)]
    now = mem.engine.now()
    own = provider.thread_turns(tenant.tenant_id, SCOPE, places, vector, now)
    generic = MemoryProvider.thread_turns(provider, tenant.tenant_id, SCOPE, places, vector, now)
    assert sorted(_turn_key(t) for t in own) == sorted(_turn_key(t) for t in generic), provider_name
    assert {t.id for t in own} == {ids[("s1", 0)], ids[("s1", 1)], dated, ids[("s3", 2)]}, provider_name
    for turn in own:
        stored = _stored(mem, tenant, turn.id)
        assert turn.place == thread_place(stored), provider_name
        assert (turn.content, turn.created_at, turn.updated_at, turn.valid_to, turn.occurred_at) == (
            stored.content,
            stored.created_at,
            stored.updated_at,
            stored.provenance.valid_to,
            stored.provenance.occurred_at,
        ), provider_name
        assert turn.created_at.tzinfo is not None and 0.0 <= turn.score <= 1.0, provider_name
    assert {t.id: t.occurred_at for t in own}[dated] == said, provider_name


def _stored(mem: Memory, tenant: TenantContext, memory_id: str) -> MemoryEntry:
    entry = mem.get(tenant, memory_id)
    assert entry is not None, memory_id
    return entry


def _turn_key(turn: ThreadTurn) -> tuple[object, ...]:
    return (
        turn.id,
        turn.place,
        turn.content,
        round(turn.score, 5),
        turn.created_at,
        turn.updated_at,
        turn.valid_to,
        turn.occurred_at,
    )


#: Memories of three times; the question names the second.
DATED = [
    ("Joanna finished her first screenplay", datetime(2022, 1, 21, tzinfo=UTC)),
    ("Joanna finished a short screenplay for a contest", datetime(2022, 3, 4, tzinfo=UTC)),
    ("Joanna started writing a screenplay", datetime(2021, 11, 2, tzinfo=UTC)),
]
DATED_QUESTION = "Which screenplay did Joanna finish in March 2022?"


@pytest.mark.parametrize("positioned", [False, True])
def test_memories_outside_a_named_date_lose_the_date_penalty(
    open_store: Callable[..., Memory], tenant: TenantContext, provider_name: str, positioned: bool
) -> None:
    """Step 4 on every provider, for plain memories and for turns: with the question naming March
    2022, the memories said at other times score exactly ``date_penalty`` less than with the step
    off, the March one the same."""
    off = open_store(config=MemoryConfig(date_penalty=0.0))
    ids = []
    for i, (content, said) in enumerate(DATED):
        prov: dict[str, object] = {"occurred_at": said}
        if positioned:
            prov |= {"thread_id": f"s{i}", "position": 0}
        ids.append(off.add(tenant, content=content, layer="user", identifiers=IDS, provenance=prov).memory.id)
    on = open_store(config=MemoryConfig(date_penalty=0.2))  # the same store, the step on
    scores = {
        penalty: [got[i] for i in ids]
        for penalty, got in ((0.0, _scores(off, tenant, DATED_QUESTION)), (0.2, _scores(on, tenant, DATED_QUESTION)))
    }
    for i, (before, after) in enumerate(zip(scores[0.0], scores[0.2], strict=True)):
        lost = 0.0 if i == 1 else 0.2
        assert after == pytest.approx(max(0.0, before - lost), abs=2e-6), (provider_name, positioned, i)
    assert scores[0.2][1] == max(scores[0.2]), (provider_name, positioned)


SCOPE = Scope(Layer.USER, scope_key(Layer.USER, LayerIdentifiers(user_id="conv")))


def test_thread_turns_apply_statuses_the_metadata_filter_and_read_valid_to(
    open_store: Callable[..., Memory], tenant: TenantContext, provider_name: str
) -> None:
    """``thread_turns`` leaves out what a search with the same statuses and metadata filter leaves
    out, and gives ``provenance.valid_to`` (for ``as_of``) as the stored memory has it."""
    mem = open_store(config=MemoryConfig(context_weight=0.3))
    written = {}
    for position, (speaker, content) in enumerate([("priya", SAID), ("sam", ACK), ("priya", OTHER[1][2])]):
        out = mem.add(
            tenant,
            content=content,
            layer="user",
            identifiers=IDS,
            metadata={"speaker": speaker},
            provenance={
                "thread_id": "s1",
                "position": position,
                **({"valid_to": "2031-05-06T07:08:09+02:00"} if position == 2 else {}),
            },
        )
        written[position] = out.memory.id
    mem.soft_delete(tenant, [written[1]])
    provider = mem.engine.provider
    vector = mem.engine.embeddings.embed_query(CODE_QUESTION, "test")
    places = [("s1", 0), ("s1", 1), ("s1", 2)]
    now = mem.engine.now()
    predicate = compile_filter(parse_filter({"custom": {"speaker": {"eq": "priya"}}}))
    for statuses in [ACTIVE, ("active", "deleted")]:
        for pred in [None, predicate]:
            own = provider.thread_turns(tenant.tenant_id, SCOPE, places, vector, now, statuses=statuses, predicate=pred)
            generic = MemoryProvider.thread_turns(
                provider, tenant.tenant_id, SCOPE, places, vector, now, statuses=statuses, predicate=pred
            )
            assert sorted(_turn_key(t) for t in own) == sorted(_turn_key(t) for t in generic), provider_name
            expected = {0, 2} | ({1} if "deleted" in statuses and pred is None else set())
            assert {t.id for t in own} == {written[p] for p in expected}, (provider_name, statuses, pred)
    valid_to = {t.id: t.valid_to for t in provider.thread_turns(tenant.tenant_id, SCOPE, places, vector, now)}
    assert valid_to[written[2]] == datetime(2031, 5, 6, 5, 8, 9, tzinfo=UTC), provider_name
    assert valid_to[written[2]] == _stored(mem, tenant, written[2]).provenance.valid_to, provider_name
    assert valid_to[written[0]] is None, provider_name


def test_scope_entries_reads_whole_memories_of_the_scope(
    open_store: Callable[..., Memory], tenant: TenantContext, provider_name: str
) -> None:
    """``scope_entries`` returns the live memories of the scope with these ids, as ``get`` returns
    them (no embedding), in the order asked; ids deleted, soft-deleted, expired, of another scope or
    unknown are left out; the generic reader returns the same."""
    mem, ids = _store_of(open_store, tenant, [("s1", 0, SAID), ("s1", 1, ACK), *OTHER])
    elsewhere = mem.add(tenant, content=SAID, layer="user", identifiers={"user_id": "someone-else"}).memory.id
    mem.delete(tenant, ids[("s3", 0)])
    mem.soft_delete(tenant, [ids[("s3", 1)]])
    provider = mem.engine.provider
    now = mem.engine.now()
    asked = [ids[("s3", 2)], "no-such-id", ids[("s1", 1)], elsewhere, ids[("s3", 0)], ids[("s3", 1)], ids[("s1", 0)]]
    own = provider.scope_entries(tenant.tenant_id, SCOPE, asked, now)
    generic = MemoryProvider.scope_entries(provider, tenant.tenant_id, SCOPE, asked, now)
    assert [e.id for e in own] == [ids[("s3", 2)], ids[("s1", 1)], ids[("s1", 0)]], provider_name
    assert [e.model_dump() for e in own] == [e.model_dump() for e in generic], provider_name
    for entry in own:
        assert entry.embedding is None, provider_name
        assert entry.model_dump() == _stored(mem, tenant, entry.id).model_dump(), provider_name
    with_deleted = provider.scope_entries(tenant.tenant_id, SCOPE, asked, now, statuses=("active", "deleted"))
    assert ids[("s3", 1)] in {e.id for e in with_deleted}, provider_name
    later = now + timedelta(days=1)
    mem.engine.provider.set_expiry(tenant.tenant_id, [ids[("s1", 0)]], later - timedelta(hours=1))
    assert ids[("s1", 0)] not in {e.id for e in provider.scope_entries(tenant.tenant_id, SCOPE, asked, later)}
    assert provider.scope_entries(tenant.tenant_id, SCOPE, [], now) == []


#: What a search itself changes on the memories it returns (access statistics).
BOOKKEEPING = {"access_count", "last_accessed_at", "importance"}


def test_a_turn_joined_after_a_candidate_comes_whole(
    open_store: Callable[..., Memory], tenant: TenantContext, provider_name: str
) -> None:
    """A turn below the threshold that the lexical context lifts above it is read by place after
    the code's turn (not a candidate of the layer's search) and joins the page as the stored
    memory, like any other hit."""
    mem, ids = _store_of(open_store, tenant, [("s1", 0, SAID), ("s1", 1, ACK), *OTHER])
    ack = ids[("s1", 1)]

    def search(context_weight: float, threshold: float) -> dict[str, float]:
        mem.engine.config = MemoryConfig(context_weight=context_weight)
        res = mem.search(tenant, CODE_QUESTION, identifiers=IDS, layers=["user"], threshold=threshold, limit=20)
        return {r.memory.id: r.score for r in res.results}

    own = search(0.0, 0.0)[ack]
    lifted = search(1e-9, 0.0)[ack]  # the lexical context on, the neighbours' weight nil
    assert lifted > own + 0.02, (provider_name, own, lifted)
    threshold = (own + lifted) / 2
    assert ack not in search(0.0, threshold), provider_name
    mem.engine.config = MemoryConfig(context_weight=0.3)
    res = mem.search(tenant, CODE_QUESTION, identifiers=IDS, layers=["user"], threshold=threshold, limit=20)
    joined = next(r.memory for r in res.results if r.memory.id == ack)
    assert joined.model_dump(exclude=BOOKKEEPING) == _stored(mem, tenant, ack).model_dump(exclude=BOOKKEEPING)
    assert joined.embedding is None, provider_name


def test_the_metadata_filter_applies_to_the_turns_read_by_place(
    open_store: Callable[..., Memory], tenant: TenantContext, other_tenant: TenantContext, provider_name: str
) -> None:
    """A filtered search reads no turn the filter leaves out: the acknowledgement after the code
    scores as in a store where the code's turn was never written."""

    def write(mem: Memory, ctx: TenantContext, turns: list[tuple[str, int, str, str]]) -> dict[int, str]:
        return {
            position: mem.add(
                ctx,
                content=content,
                layer="user",
                identifiers=IDS,
                metadata={"speaker": speaker},
                provenance={"thread_id": thread, "position": position},
            ).memory.id
            for thread, position, content, speaker in turns
        }

    rest = [("s3", 10 + i, content, "sam" if i % 2 == 0 else "priya") for i, (_, _, content) in enumerate(OTHER)]
    sam = {"custom": {"speaker": {"eq": "sam"}}}
    mem = open_store(config=MemoryConfig(context_weight=0.3))
    ids = write(mem, tenant, [("s1", 0, SAID, "priya"), ("s1", 1, ACK, "sam"), *rest])
    never = open_store(config=MemoryConfig(context_weight=0.3))
    # the code's turn is in the scope's BM25 statistics either way: here in a thread of its own
    never_ids = write(never, other_tenant, [("gone", 0, SAID, "priya"), ("s1", 1, ACK, "sam"), *rest])

    def score(store: Memory, ctx: TenantContext, memory_id: str, **kwargs: object) -> float:
        res = store.search(ctx, CODE_QUESTION, identifiers=IDS, layers=["user"], threshold=0.0, limit=20, **kwargs)  # type: ignore[arg-type]
        return next(r.score for r in res.results if r.memory.id == memory_id)

    filtered = score(mem, tenant, ids[1], filter=sam)
    assert filtered == pytest.approx(score(never, other_tenant, never_ids[1], filter=sam), abs=2e-6), provider_name
    assert score(mem, tenant, ids[1]) > filtered + 0.02, provider_name
