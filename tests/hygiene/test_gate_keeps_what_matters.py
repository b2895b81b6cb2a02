"""The write gate keeps what matters and replaces changed facts (reported repros, real embedder)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from stratamem import Memory, TenantContext
from stratamem.embeddings import Embedder

pytestmark = pytest.mark.model
U1 = {"user_id": "u1"}


@pytest.fixture()
def real(open_mem: Callable[..., Memory], minilm: Embedder) -> Memory:
    return open_mem(embedder=minilm)


@pytest.mark.parametrize(
    ("text", "category"),
    [
        ("My daughter Emma starts school in September", "fact"),
        ("Please keep your answers short, bullet points", "instruction"),
        ("I'm planning to visit Lisbon in October", "fact"),
    ],
)
def test_real_facts_are_kept(real: Memory, acme: TenantContext, text: str, category: str) -> None:
    res = real.process(acme, text, identifiers=U1)
    assert res.action == "created", res.reason
    assert res.category == category


@pytest.mark.parametrize(
    "text", ["hi there!", "I'm tired today", "what's the weather like?", "write a short poem about cats"]
)
def test_chit_chat_is_not(real: Memory, acme: TenantContext, text: str) -> None:
    assert real.process(acme, text, identifiers=U1).action == "ignored"


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("I work at Acme Corp", "I work at Globex Corp"),
        ("My manager is Tom", "My manager is Sarah"),
        ("I live in Berlin", "I live in Munich now"),
    ],
)
def test_a_changed_fact_is_reported_as_updated(real: Memory, acme: TenantContext, old: str, new: str) -> None:
    """A new value of a single-valued attribute, with or without a word of change, is the fact
    updated: the new memory replaces the old one, which is kept as history."""
    first = real.process(acme, old, identifiers=U1)
    second = real.process(acme, new, identifiers=U1)
    assert (first.action, second.action) == ("created", "updated")
    assert second.superseded == [first.memory_id] and second.memory_id != first.memory_id
    assert second.reason == "replaces an older memory about the same fact"
    assert [m.id for m in real.list(acme, "user", identifiers=U1).memories] == [second.memory_id]
    history = real.list(acme, "user", identifiers=U1, include_superseded=True).memories
    assert {m.id for m in history} == {first.memory_id, second.memory_id}


def test_a_negated_fact_supersedes_the_old_one(real: Memory, acme: TenantContext) -> None:
    first = real.process(acme, "I am a vegetarian", identifiers=U1)
    second = real.process(acme, "I'm not vegetarian anymore, I eat fish now", identifiers=U1)
    assert second.action == "updated" and second.superseded == [first.memory_id]
    assert second.content == "User is not vegetarian anymore, the user eats fish"
    current = real.list(acme, "user", identifiers=U1).memories
    assert [m.id for m in current] == [second.memory_id]
    top = real.search(acme, "is the user a vegetarian?", identifiers=U1, threshold=0.0).results
    assert [r.memory.id for r in top] == [second.memory_id]


def test_a_session_fact_survives_close_session_without_being_accessed(real: Memory, acme: TenantContext) -> None:
    s1 = {"user_id": "dana", "session_id": "s1"}
    real.add(acme, "Dana is planning a trip to Lisbon", layer="session", identifiers=s1)
    real.add(acme, "ok thanks, sounds good", layer="session", identifiers=s1)
    closed = real.close_session(acme, "dana", "s1")
    assert len(closed.promoted) == 1
    # the next session finds it through the user layer
    found = real.search(acme, "where is Dana travelling?", identifiers={"user_id": "dana", "session_id": "s2"}).results
    assert found and found[0].memory.content == "Dana is planning a trip to Lisbon"
