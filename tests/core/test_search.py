"""search: precedence merge, dedup, threshold, filters, concurrency (seed 000 search scenarios)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from stratamem import Layer, Memory, TenantContext
from stratamem.providers import DuckDBProvider
from stratamem.providers.base import SearchPage, SearchQuery

ALL = {
    "agent_id": "a1",
    "user_id": "u1",
    "session_id": "s1",
    "project_id": "p1",
    "team_id": "t1",
    "org_id": "o1",
    "company_id": "c1",
}


def test_precedence_then_score(mem: Memory, acme: TenantContext) -> None:
    mem.add(acme, content="Use spaces for indentation in code", layer="company", identifiers=ALL)
    mem.add(acme, content="Use tabs for indentation in code", layer="project", identifiers=ALL)
    mem.add(acme, content="indentation style matters for code review", layer="project", identifiers=ALL)
    res = mem.search(acme, "indentation in code", identifiers=ALL, threshold=0.0)
    layers = [r.layer for r in res.results]
    assert layers == sorted(
        layers,
        key=lambda x: [
            Layer.AGENT,
            Layer.USER,
            Layer.SESSION,
            Layer.PROJECT,
            Layer.TEAM,
            Layer.ORG,
            Layer.COMPANY,
        ].index(x),
    )
    assert res.results[0].layer is Layer.PROJECT and res.results[-1].layer is Layer.COMPANY
    project = [r for r in res.results if r.layer is Layer.PROJECT]
    assert project[0].score >= project[1].score  # ties broken by score
    assert all(0.0 <= r.score <= 1.0 for r in res.results)
    assert res.searched_layers == [
        Layer.AGENT,
        Layer.USER,
        Layer.SESSION,
        Layer.PROJECT,
        Layer.TEAM,
        Layer.ORG,
        Layer.COMPANY,
    ]


def test_near_duplicates_keep_higher_precedence(mem: Memory, acme: TenantContext) -> None:
    mem.add(acme, content="Deploy on Fridays is forbidden", layer="company", identifiers=ALL)
    proj = mem.add(acme, content="Deploy on Fridays is forbidden", layer="project", identifiers=ALL).memory
    res = mem.search(acme, "deploy on fridays", identifiers=ALL, threshold=0.0)
    assert [r.memory.id for r in res.results] == [proj.id]
    assert res.total_count == 1


def test_layer_filter_searches_only_those_layers(mem: Memory, acme: TenantContext) -> None:
    mem.add(acme, content="team lunch on thursday", layer="team", identifiers=ALL)
    mem.add(acme, content="user lunch on thursday", layer="user", identifiers=ALL)
    res = mem.search(acme, "lunch on thursday", identifiers=ALL, layers=["team"], threshold=0.0)
    assert res.searched_layers == [Layer.TEAM]
    assert [r.layer for r in res.results] == [Layer.TEAM]


def test_threshold_default_and_custom(mem: Memory, acme: TenantContext) -> None:
    mem.add(acme, content="alpha beta gamma", layer="user", identifiers=ALL)
    mem.add(acme, content="completely unrelated words here", layer="user", identifiers=ALL)
    default = mem.search(acme, "alpha beta gamma", identifiers=ALL)
    assert [r.memory.content for r in default.results] == ["alpha beta gamma"]
    assert all(r.score >= 0.7 for r in default.results)
    everything = mem.search(acme, "alpha beta gamma", identifiers=ALL, threshold=0.0)
    assert len(everything.results) == 2
    strict = mem.search(acme, "alpha beta", identifiers=ALL, threshold=0.999)
    assert all(r.score >= 0.999 for r in strict.results)


def test_limit_and_total_count(mem: Memory, acme: TenantContext) -> None:
    mem.bulk_add(
        acme, [{"content": f"release note number {i}", "layer": "project", "identifiers": ALL} for i in range(15)]
    )
    res = mem.search(acme, "release note", identifiers=ALL, limit=5, threshold=0.0)
    assert len(res.results) == 5 and res.total_count == 15


def test_tags_or_filter(mem: Memory, acme: TenantContext) -> None:
    mem.add(acme, content="dark mode preferred", layer="user", identifiers=ALL, metadata={"tags": ["ui"]})
    mem.add(acme, content="dark roast coffee preferred", layer="user", identifiers=ALL, metadata={"tags": ["food"]})
    mem.add(acme, content="dark humour preferred", layer="user", identifiers=ALL, metadata={"tags": ["misc"]})
    res = mem.search(acme, "dark preferred", identifiers=ALL, threshold=0.0, filter={"tags": ["ui", "food"]})
    assert sorted(r.memory.content for r in res.results) == ["dark mode preferred", "dark roast coffee preferred"]


def test_custom_filters_eq_contains_range(mem: Memory, acme: TenantContext) -> None:
    for i, (lang, note) in enumerate(
        [("python", "fast prototyping"), ("rust", "memory safety"), ("python", "data science")]
    ):
        mem.add(
            acme,
            content=f"language note {note}",
            layer="project",
            identifiers=ALL,
            metadata={"lang": lang, "stars": i * 10, "info": {"level": i}, "source": {"type": "manual"}},
        )
    q = "language note"

    def contents(flt: dict[str, object]) -> list[str]:
        return sorted(r.memory.content for r in mem.search(acme, q, identifiers=ALL, threshold=0.0, filter=flt).results)

    assert len(contents({"custom": {"lang": "python"}})) == 2
    assert contents({"custom": {"lang": {"contains": "RUS"}}}) == ["language note memory safety"]
    assert len(contents({"custom": {"stars": {"gte": 10}}})) == 2
    assert contents({"custom": {"stars": {"gt": 0, "lt": 20}}}) == ["language note memory safety"]
    assert contents({"custom": {"info.level": 2}}) == ["language note data science"]
    assert len(contents({"lang": "python", "stars": {"lte": 0}})) == 1  # top-level keys are custom fields
    assert len(contents({"sourceType": "manual"})) == 3
    assert contents({"custom": {"missing": {"exists": True}}}) == []


def test_filter_applies_before_the_limit(mem: Memory, acme: TenantContext) -> None:
    items = [
        {
            "content": f"status report {i}",
            "layer": "user",
            "identifiers": ALL,
            "metadata": {"tags": ["keep" if i % 10 == 0 else "skip"]},
        }
        for i in range(50)
    ]
    mem.bulk_add(acme, items)
    res = mem.search(acme, "status report", identifiers=ALL, threshold=0.0, limit=5, filter={"tags": ["keep"]})
    assert len(res.results) == 5 and res.total_count == 5


def test_object_layer_only_when_named(mem: Memory, acme: TenantContext) -> None:
    ids = {**ALL, "object_type": "ticket", "object_id": "T-1"}
    mem.add(acme, content="ticket T-1 needs a refund", layer="object", identifiers=ids)
    assert mem.search(acme, "refund ticket", identifiers=ids, threshold=0.0).results == []
    res = mem.search(acme, "refund ticket", identifiers=ids, layers=["object", "user"], threshold=0.0)
    assert [r.layer for r in res.results] == [Layer.OBJECT]


def test_scopes_do_not_leak_between_users(mem: Memory, acme: TenantContext, globex: TenantContext) -> None:
    mem.add(acme, content="u2 secret preference", layer="user", identifiers={"user_id": "u2"})
    mem.add(globex, content="u2 secret preference", layer="user", identifiers={"user_id": "u1"})
    res = mem.search(acme, "secret preference", identifiers={"user_id": "u1"}, threshold=0.0)
    assert res.results == [] and res.total_count == 0


class _BarrierProvider(DuckDBProvider):
    """A real DuckDB provider whose search waits until N searches are in flight at once."""

    def __init__(self, path: Path, parties: int) -> None:
        super().__init__(path)
        self.barrier = threading.Barrier(parties, timeout=10)

    def search(self, query: SearchQuery) -> SearchPage:
        self.barrier.wait()  # raises BrokenBarrierError if the layers were searched one by one
        return super().search(query)


def test_layers_are_searched_concurrently(tmp_path: Path, open_mem: Callable[..., Memory], acme: TenantContext) -> None:
    mem = open_mem(_BarrierProvider(tmp_path / "barrier.duckdb", parties=4))
    ids = {"user_id": "u1", "project_id": "p1", "team_id": "t1", "org_id": "o1"}
    for layer in ("user", "project", "team", "org"):
        mem.add(acme, content=f"{layer} fact about search", layer=layer, identifiers=ids)
    res = mem.search(acme, "fact about search", identifiers=ids, threshold=0.0)
    assert len(res.results) == 4 and len(res.searched_layers) == 4


@pytest.mark.model
def test_paraphrase_found_with_default_embedder_and_threshold(
    tmp_path: Path, minilm: object, acme: TenantContext
) -> None:
    with Memory.open(tmp_path / "semantic.duckdb", embedder=minilm) as mem:  # type: ignore[arg-type]
        mem.add(
            acme,
            content="User prefers dark mode",
            layer="user",
            identifiers={"user_id": "u1"},
            metadata={"tags": ["ui"]},
        )
        mem.add(acme, content="The quarterly revenue grew 5%", layer="project", identifiers={"project_id": "p1"})
        for q in ("what color theme does the user like", "which theme does the user like?"):
            res = mem.search(acme, q, identifiers={"user_id": "u1", "project_id": "p1"}, filter={"tags": ["ui"]})
            assert [r.memory.content for r in res.results] == ["User prefers dark mode"], q
            assert 0.7 <= res.results[0].score <= 1.0
        unrelated = mem.search(acme, "what did I eat for lunch", identifiers={"user_id": "u1", "project_id": "p1"})
        assert unrelated.results == []
