"""``search(..., expand_graph=True)``: neighbours through shared entities, lower score, with a path."""

from __future__ import annotations

from collections.abc import Callable

from stratamem import Memory, TenantContext


def test_expansion_adds_linked_results_with_lower_score(
    mem: Memory, acme: TenantContext, add: Callable[..., str]
) -> None:
    a = add(acme, "Alice works on Project A.")
    b = add(acme, "The outage was caused by a memory leak that Alice found.")
    other_user = add(acme, "Alice prefers green tea.", user="u2")
    plain = mem.search(acme, "Alice works on Project A.", identifiers={"user_id": "u1"}, threshold=0.9)
    assert [r.memory.id for r in plain.results] == [a]
    assert plain.results[0].graph_path is None and plain.results[0].expanded_from is None
    out = mem.search(acme, "Alice works on Project A.", identifiers={"user_id": "u1"}, threshold=0.9, expand_graph=True)
    ids = [r.memory.id for r in out.results]
    assert ids == [a, b]
    extra = out.results[1]
    assert extra.expanded_from == a and extra.score < out.results[0].score
    assert extra.graph_path is not None and "—MENTIONS→ Alice ←MENTIONS—" in extra.graph_path
    assert other_user not in ids  # never widens the searched scopes (another user's layer)


def test_expansion_respects_filter_and_is_optional_on_results(
    mem: Memory, acme: TenantContext, add: Callable[..., str]
) -> None:
    add(acme, "Alice works on Project A.", metadata={"tags": ["work"]})
    add(acme, "Alice likes Project A coffee mugs.", metadata={"tags": ["home"]})
    out = mem.search(
        acme,
        "Alice works on Project A.",
        identifiers={"user_id": "u1"},
        threshold=0.9,
        expand_graph=True,
        filter={"tags": ["work"]},
    )
    assert all("work" in r.memory.tags for r in out.results)
