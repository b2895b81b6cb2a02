"""Default search leaves out a result that lacks the value a question asks for
(``retrieval/asked_values.py``). Every provider the same.

Repro (blind fact benchmark sets): "what's Nadia's salary at Lumen Freight?" returned "Nadia started
in June as a junior backend developer at Lumen Freight" first by default, at a relevance well above
the floor: the memory is about everything the question names, and no similarity tells it from the
answer. It states no amount of money, so it cannot answer a question about one. Across the eight
blind sets, a third of the unanswerable questions that returned something were of this kind (a phone
number, an email address, a price, a clock time, a code, a surname the memories do not hold).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from stratamem import Memory, MemoryConfig, TenantContext
from stratamem.embeddings import Embedder

pytestmark = pytest.mark.model

IDS = {"user_id": "nadia"}
FACTS = [
    "User's name is Nadia Rahman",
    "Nadia started in June as a junior backend developer at Lumen Freight, mostly Python and Postgres",
    "Nadia pair-programs with her mentor Tobias every Thursday",
    "Nadia is training for the Lakeshore sprint triathlon on 24 August",
    "Nadia's driving instructor is Marisol; lessons are on Tuesdays",
    "Nadia's driving lessons cost $55 each",
    "Nadia's sister Leila rides along when she practises driving",
    "Nadia bought a second-hand road bike for $640",
    "Nadia swims at the Eastside pool at 6:30 am before work",
    "Nadia is vegetarian but eats eggs",
    "Nadia's physio told her to run no more than 20 km a week until her knee settles",
    "Nadia's landlord is Mr. Okafor; reach him on 0161 496 0728",
]
#: Questions about the scope's people and things whose value no memory states.
NEAR_MISSES = [
    "What's Nadia's salary at Lumen Freight?",
    "What is Tobias's phone number?",
    "What is Marisol's surname?",
    "How much did the triathlon registration cost?",
    "What's Leila's email address?",
]
#: Questions of the same kinds that a memory answers.
ANSWERED = [
    ("How much does a driving lesson cost?", "Nadia's driving lessons cost $55 each"),
    ("What did Nadia pay for her road bike?", "Nadia bought a second-hand road bike for $640"),
    ("What time does Nadia swim?", "Nadia swims at the Eastside pool at 6:30 am before work"),
    ("What's the landlord's phone number?", "Nadia's landlord is Mr. Okafor; reach him on 0161 496 0728"),
]


def _fill(mem: Memory, tenant: TenantContext) -> None:
    mem.bulk_add(tenant, [{"content": c, "layer": "user", "identifiers": IDS} for c in FACTS])


def _shown(mem: Memory, tenant: TenantContext, question: str, **kwargs: object) -> list[tuple[str, float]]:
    return [(r.memory.content, r.score) for r in mem.search(tenant, question, identifiers=IDS, **kwargs).results]


def test_a_near_miss_without_the_asked_value_is_left_out(model_store: Memory, tenant: TenantContext) -> None:
    _fill(model_store, tenant)
    for question in NEAR_MISSES:
        default = model_store.search(tenant, question, identifiers=IDS)
        assert default.results == [], (question, _shown(model_store, tenant, question))
        assert default.total_count == 0
        # the check belongs to the default search only: an explicit threshold still ranks the scope
        assert model_store.search(tenant, question, identifiers=IDS, threshold=0.0).results


def test_a_memory_stating_the_value_is_still_first(model_store: Memory, tenant: TenantContext) -> None:
    _fill(model_store, tenant)
    for question, answer in ANSWERED:
        shown = _shown(model_store, tenant, question)
        assert shown and shown[0][0] == answer, (question, shown)


def test_the_salary_question_found_the_job_before(tmp_path: Path, minilm: Embedder, tenant: TenantContext) -> None:
    """The repro itself: without the check the job memory is returned above the floor (so the
    check, not the floor, is what leaves it out), and ``value_check=False`` turns the check off."""
    question = NEAR_MISSES[0]
    with Memory.open(tmp_path / "off.duckdb", embedder=minilm, config=MemoryConfig(value_check=False)) as mem:
        _fill(mem, tenant)
        shown = _shown(mem, tenant, question)
        assert shown and shown[0][0].startswith("Nadia started in June"), shown


def test_a_value_redacted_in_a_shared_layer_still_answers(model_store: Memory, tenant: TenantContext) -> None:
    """A shared layer redacts PII by default ("… on [REDACTED_PHONE]"): the memory still states the
    phone number the question asks for, and is returned first."""
    team = {"team_id": "support"}
    facts = [
        "The support line is staffed Monday to Friday, 8 am to 6 pm",
        "Customers reach the support line on 0161 496 0728",
        "Refunds over $300 need the team lead's approval",
        "Tickets are logged in Zendesk",
        "The team lead is Devi Shah",
        "Weekly sync is on Mondays at 9:30",
        "Escalations go to the operations manager",
    ]
    model_store.bulk_add(tenant, [{"content": c, "layer": "team", "identifiers": team} for c in facts])
    res = model_store.search(tenant, "What's the support line's phone number?", identifiers=team)
    assert res.results and "[REDACTED_PHONE]" in res.results[0].memory.content, [
        (r.memory.content, r.score) for r in res.results
    ]
