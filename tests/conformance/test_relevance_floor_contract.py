"""Default search returns nothing for a question the scope cannot answer (``retrieval/centering.py``).

Repro: every unanswerable question about a user whose scope holds a dozen facts got that user's
memories back above the default threshold (the shared "about Dana" direction of the embeddings put
them at a raw cosine near the answering ones). Measured from the scope's centroid, they fall below
``MemoryConfig.relevance_floor``; answerable questions keep their answer. Every provider the same.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from stratamem import Memory, MemoryConfig, TenantContext
from stratamem.embeddings import Embedder
from stratamem.layers import scope_key
from stratamem.model import Layer, LayerIdentifiers
from stratamem.providers.base import Scope
from stratamem.retrieval.centering import BACKGROUND_SAMPLE, MIN_ROWS, mean_of_unit_rows, measure_background

pytestmark = pytest.mark.model

IDS = {"user_id": "dana"}
FACTS = [
    "Dana is a vegetarian",
    "Dana lives in Hamburg",
    "Dana prefers dark mode in every app",
    "Dana's daughter Emma starts school in September",
    "Dana works as a product designer at Figma",
    "Dana is allergic to peanuts",
    "Dana is learning Portuguese on Duolingo",
    "Dana is planning a trip to Lisbon in October",
    "Dana drinks her coffee black",
    "Dana's manager is Lena Fischer",
    "Dana plays tennis on Sundays",
    "Dana drives a blue Volvo",
]
ANSWERABLE = [
    ("which city does Dana live in?", "Dana lives in Hamburg"),
    ("is Dana allergic to anything?", "Dana is allergic to peanuts"),
]
UNANSWERABLE = ["what is Dana's blood type?", "what is Dana's favourite movie?", "which bank does Dana use?"]


def _fill(mem: Memory, tenant: TenantContext) -> None:
    mem.bulk_add(tenant, [{"content": c, "layer": "user", "identifiers": IDS} for c in FACTS])


def _assert_nothing(mem: Memory, tenant: TenantContext, questions: list[str]) -> None:
    """A default search of each question returns nothing."""
    for question in questions:
        res = mem.search(tenant, question, identifiers=IDS)
        assert res.results == [], (question, [(r.memory.content, r.score) for r in res.results])


def _assert_first(mem: Memory, tenant: TenantContext, pairs: list[tuple[str, str]]) -> None:
    """A default search of each question returns its answer first."""
    for question, answer in pairs:
        res = mem.search(tenant, question, identifiers=IDS)
        assert res.results and res.results[0].memory.content == answer, (
            question,
            [(r.memory.content, r.score) for r in res.results],
        )


def test_unanswerable_questions_return_nothing_by_default(model_store: Memory, tenant: TenantContext) -> None:
    _fill(model_store, tenant)
    for question in UNANSWERABLE:
        default = model_store.search(tenant, question, identifiers=IDS)
        assert default.results == [], (question, [(r.memory.content, r.score) for r in default.results])
        assert default.total_count == 0
        # the floor belongs to the default only: an explicit threshold still ranks the whole scope
        assert model_store.search(tenant, question, identifiers=IDS, threshold=0.0).results


def test_answerable_questions_keep_their_answer_first(model_store: Memory, tenant: TenantContext) -> None:
    _fill(model_store, tenant)
    _assert_first(model_store, tenant, ANSWERABLE)


#: A user scope as an agent fills it: the shared "about Dana" part is large, and some unanswerable
#: questions have a topical neighbour (salary ~ job) that the centroid alone does not push down.
DANA = [
    "User's name is Dana",
    "Dana prefers dark mode in every app",
    "Dana's daughter Emma starts school in September",
    "Keep answers short, as bullet points",
    "Dana works as a product designer at Figma",
    "Dana is allergic to peanuts",
    "Dana is learning Portuguese on Duolingo",
    "Dana is planning a trip to Lisbon in October",
    "Dana drinks her coffee black, no sugar",
    "Dana goes to the gym on Monday and Thursday mornings",
    "Dana moved to Berlin last month",
    "Dana sold her car and now uses a bike to commute",
    "Dana uses an iPhone 15 and a MacBook Air",
    "Dana's birthday is on 14 March",
    "Dana is not vegetarian anymore, she eats fish now",
    "Dana listens to jazz while working",
    "Dana's partner Lukas is a nurse",
    "Dana has no meetings on Friday afternoons",
]


def test_a_topical_neighbour_is_not_an_answer(model_store: Memory, tenant: TenantContext) -> None:
    """Repro (fact benchmark): "what is Dana's salary" returned "Dana works as a product designer"
    by default, at a centered cosine of 0.27 against a floor of 0.2. Measured against the scope's
    own background (how far two unrelated memories of the scope reach into each other), the
    question has no answer; the questions the scope answers keep theirs."""
    model_store.bulk_add(tenant, [{"content": c, "layer": "user", "identifiers": IDS} for c in DANA])
    _assert_nothing(
        model_store, tenant, ["what is Dana's salary", "what is Dana's favourite football team", "does Dana have a dog"]
    )
    _assert_first(
        model_store,
        tenant,
        [
            ("what theme does Dana like in apps", "Dana prefers dark mode in every app"),
            ("which language is Dana studying", "Dana is learning Portuguese on Duolingo"),
            ("when is Dana's birthday", "Dana's birthday is on 14 March"),
            ("who is Lukas", "Dana's partner Lukas is a nurse"),
        ],
    )


def test_a_small_scope_is_floored_too(model_store: Memory, tenant: TenantContext) -> None:
    """An agent's scope often holds a handful of facts. From ``MIN_ROWS`` (7) memories on, the
    background is measured in the same small scope, so the floor applies there as well: questions
    with no stored answer return nothing, answerable ones return their answer first."""
    facts = [*FACTS[:7], "Dana plays tennis on Sundays"]
    assert len(facts) >= MIN_ROWS
    model_store.bulk_add(tenant, [{"content": c, "layer": "user", "identifiers": IDS} for c in facts])
    _assert_nothing(model_store, tenant, UNANSWERABLE)
    _assert_first(
        model_store,
        tenant,
        [
            *ANSWERABLE,
            ("what theme does Dana like in apps", "Dana prefers dark mode in every app"),
            ("what sport does Dana play", "Dana plays tennis on Sundays"),
        ],
    )


def test_an_identifier_the_embedder_does_not_know_is_kept(model_store: Memory, tenant: TenantContext) -> None:
    """Repro (provider contract): a default search for a ticket id returned nothing once the floor
    applied; all-MiniLM-L6-v2 does not represent "QX-1017", so its relevance is background. A memory
    holding the query's words is kept whatever its relevance."""
    ticket = "Dana filed ticket QX-1017 about the login bug"
    model_store.bulk_add(tenant, [{"content": c, "layer": "user", "identifiers": IDS} for c in [*FACTS, ticket]])
    res = model_store.search(tenant, "QX-1017", identifiers=IDS)
    assert res.results and res.results[0].memory.content == ticket, [(r.memory.content, r.score) for r in res.results]


def test_the_floor_can_be_turned_off(tmp_path: Path, minilm: Embedder, tenant: TenantContext) -> None:
    with Memory.open(tmp_path / "off.duckdb", embedder=minilm, config=MemoryConfig(relevance_floor=None)) as mem:
        _fill(mem, tenant)
        assert mem.search(tenant, "what is Dana's blood type?", identifiers=IDS).results


def test_every_provider_measures_the_same_background(open_store: Callable[..., Memory], tenant: TenantContext) -> None:
    """The floor's calibration is the provider's ``scope_centroid``: its mean and its background (the
    relevance of unrelated memories of the scope to each other) agree with a measurement over every
    pair of the scope's memories, on every provider, also when the scope is larger than the sample."""
    mem = open_store()
    contents = [
        f"note {i}: the {['red', 'green', 'blue', 'grey'][i % 4]} team ships release {i % 17}" for i in range(300)
    ]
    for start in range(0, len(contents), 100):
        batch = contents[start : start + 100]
        mem.bulk_add(tenant, [{"content": c, "layer": "user", "identifiers": IDS} for c in batch])
    scope = Scope(Layer.USER, scope_key(Layer.USER, LayerIdentifiers(user_id="dana")))
    centroid = mem.engine.provider.scope_centroid(tenant.tenant_id, scope, datetime.now(UTC))
    vectors = np.asarray(mem.engine.embeddings.embedder.embed(contents), dtype=np.float32)
    reference = mean_of_unit_rows(vectors)
    assert centroid is not None and reference is not None and len(contents) > BACKGROUND_SAMPLE
    assert centroid.rows == len(contents)
    np.testing.assert_allclose(centroid.mean, reference.mean, atol=1e-4)
    every_pair = measure_background(vectors, reference.mean, reference.rows)
    assert centroid.background is not None and every_pair is not None
    assert abs(centroid.background.mean - every_pair.mean) < 0.01
    assert abs(centroid.background.std - every_pair.std) < 0.1 * every_pair.std


def test_the_floor_report_matches_the_results(model_store: Memory, tenant: TenantContext) -> None:
    """The measure the search console shows (``floor_report``, issue #30) is the one the search
    applied, on every provider: the kept candidates are the results, the others are below the floor,
    and asking for the report changes nothing."""
    from stratamem.search import FloorMeasure

    _fill(model_store, tenant)
    floor = model_store.engine.config.relevance_floor
    assert floor is not None
    for question in ["which city does Dana live in?", "which bank does Dana use?"]:
        report: list[FloorMeasure] = []
        res = model_store.engine.search(tenant, question, IDS, floor_report=report)
        plain = model_store.search(tenant, question, identifiers=IDS)
        assert [r.memory.id for r in res.results] == [r.memory.id for r in plain.results]
        assert len(report) > len(res.results)  # the floor saw the candidates it removed
        assert [m.hit.entry.id for m in report if m.kept] == [r.memory.id for r in res.results]
        for m in report:
            assert m.sigma is not None and m.floor == floor
            assert m.kept == (m.sigma >= floor or m.lexical_exception)
