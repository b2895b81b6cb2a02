"""StratamemStore against LangGraph's documented BaseStore behaviours, on a real DuckDB file, with the
real ``langgraph`` package: put/get/delete, search with and without a query (filters, limit/offset),
list_namespaces (prefix/suffix/wildcards/max_depth), batch/abatch, TTL, tenant isolation, and a real
compiled graph whose node writes through the injected store."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any, TypedDict

import pytest

from .conftest import need

need("langgraph", "langgraph")  # before the framework imports: skip or fail (CI) with a clear reason

from langgraph.graph import END, START, StateGraph  # noqa: E402
from langgraph.store.base import BaseStore, GetOp, InvalidNamespaceError, ListNamespacesOp, PutOp, SearchOp  # noqa: E402

from stratamem import Memory, TenantContext  # noqa: E402
from stratamem.integrations.langgraph import StratamemStore, layer_scope  # noqa: E402

ACME = TenantContext(tenant_id="acme", principal="graph")
GLOBEX = TenantContext(tenant_id="globex", principal="graph")
ALICE = {"user_id": "alice"}


class Clock:
    def __init__(self) -> None:
        from datetime import UTC, datetime

        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> Any:
        return self.now


@pytest.fixture()
def clock() -> Clock:
    return Clock()


@pytest.fixture()
def store(open_mem: Callable[..., Memory], clock: Clock) -> StratamemStore:
    return StratamemStore(open_mem(embedder="onnx", clock=clock), ACME, ALICE)


def test_put_get_update_delete(store: StratamemStore, clock: Clock) -> None:
    ns = ("memories", "alice")
    assert store.get(ns, "food") is None
    store.put(ns, "food", {"content": "Alice likes pizza", "rating": 5})
    item = store.get(ns, "food")
    assert item is not None
    assert (item.namespace, item.key, item.value) == (ns, "food", {"content": "Alice likes pizza", "rating": 5})
    assert item.created_at == item.updated_at == clock.now
    clock.now += timedelta(minutes=1)
    store.put(ns, "food", {"content": "Alice likes sushi"})  # replaces the whole value
    again = store.get(ns, "food")
    assert again is not None and again.value == {"content": "Alice likes sushi"} and again.updated_at == clock.now
    assert store.get(("memories",), "food") is None  # namespaces are exact for get
    store.delete(ns, "food")
    assert store.get(ns, "food") is None
    store.delete(ns, "food")  # deleting a missing key is fine


def test_invalid_namespaces_are_rejected(store: StratamemStore) -> None:
    for bad in [(), ("langgraph", "x"), ("a.b",), ("",)]:
        with pytest.raises(InvalidNamespaceError):
            store.put(bad, "k", {"v": 1})
    for bad in [(), ("langgraph",), ("a.b",)]:  # ops passed to batch directly are checked too
        with pytest.raises(InvalidNamespaceError):
            store.batch([PutOp(bad, "k", {"v": 1})])


def test_search_without_query_filters_and_pages(store: StratamemStore, clock: Clock) -> None:
    for i in range(5):
        clock.now += timedelta(seconds=1)
        store.put(
            ("docs", "alice", "notes"), f"n{i}", {"text": f"note {i}", "n": i, "tag": "even" if i % 2 == 0 else "odd"}
        )
    store.put(("docs", "bob"), "b0", {"text": "bob's note", "n": 0, "tag": "even"})
    store.put(("other",), "o", {"text": "unrelated", "n": 99})
    alice = store.search(("docs", "alice"))
    assert [r.key for r in alice] == ["n4", "n3", "n2", "n1", "n0"]  # newest first
    assert all(r.score is None for r in alice)
    assert {r.key for r in store.search(("docs",), limit=100)} == {"n0", "n1", "n2", "n3", "n4", "b0"}
    assert [r.key for r in store.search(("docs", "alice"), limit=2, offset=1)] == ["n3", "n2"]
    assert {r.key for r in store.search(("docs",), filter={"tag": "even"})} == {"n0", "n2", "n4", "b0"}
    assert {r.key for r in store.search(("docs",), filter={"n": {"$gte": 3}})} == {"n3", "n4"}
    assert {r.key for r in store.search(("docs",), filter={"tag": {"$ne": "even"}})} == {"n1", "n3"}
    assert {r.key for r in store.search((), limit=100)} == {"n0", "n1", "n2", "n3", "n4", "b0", "o"}
    assert store.search(("doc",)) == []  # a prefix is whole labels, not characters


def test_semantic_search_ranks_by_meaning(store: StratamemStore) -> None:
    ns = ("memories", "alice")
    store.put(ns, "food", {"content": "Alice loves Italian food, especially pizza"})
    store.put(ns, "pet", {"content": "Alice has a cat called Miso"})
    store.put(ns, "work", {"content": "Alice works as a data engineer in Berlin"}, index=["content"])
    store.put(ns, "raw", {"content": "ignored field", "about": "Alice drives a red bicycle"}, index=["about"])
    hits = store.search(("memories",), query="what pet does she have", limit=4)
    assert hits[0].key == "pet" and hits[0].score is not None
    assert all(a.score >= b.score for a, b in itertools.pairwise(hits))  # type: ignore[operator]
    assert store.search(ns, query="bike")[0].key == "raw"  # the index fields are what is embedded
    assert [r.key for r in store.search(ns, query="job", filter={"content": "Alice has a cat called Miso"})] == ["pet"]
    assert len(store.search(ns, query="Alice", limit=2)) == 2
    assert len(store.search(ns, query="Alice", limit=2, offset=3)) == 1


def test_list_namespaces(store: StratamemStore) -> None:
    for ns in [("a", "b", "c"), ("a", "b", "d"), ("a", "x"), ("users", "alice", "prefs"), ("users", "bob", "prefs")]:
        store.put(ns, "k", {"v": 1})
    assert store.list_namespaces() == sorted(
        [("a", "b", "c"), ("a", "b", "d"), ("a", "x"), ("users", "alice", "prefs"), ("users", "bob", "prefs")]
    )
    assert store.list_namespaces(prefix=("a", "b")) == [("a", "b", "c"), ("a", "b", "d")]
    assert store.list_namespaces(suffix=("prefs",)) == [("users", "alice", "prefs"), ("users", "bob", "prefs")]
    assert store.list_namespaces(prefix=("users", "*", "prefs")) == [
        ("users", "alice", "prefs"),
        ("users", "bob", "prefs"),
    ]
    assert store.list_namespaces(max_depth=2) == [("a", "b"), ("a", "x"), ("users", "alice"), ("users", "bob")]
    assert store.list_namespaces(limit=2, offset=1) == [("a", "b", "d"), ("a", "x")]
    store.delete(("a", "x"), "k")
    assert ("a", "x") not in store.list_namespaces()


def test_batch_and_abatch_keep_op_order(store: StratamemStore) -> None:
    ns = ("batch",)
    results = store.batch(
        [
            PutOp(ns, "k1", {"content": "first"}),
            GetOp(ns, "k1"),
            PutOp(ns, "k1", None),
            GetOp(ns, "k1"),
            PutOp(ns, "k2", {"content": "second"}),
            SearchOp(ns, None, 10, 0),
            ListNamespacesOp(None, None, 100, 0),
        ]
    )
    assert results[0] is None and results[2] is None and results[4] is None
    assert results[1] is not None and results[1].value == {"content": "first"}  # type: ignore[union-attr]
    assert results[3] is None
    assert [r.key for r in results[5]] == ["k2"]  # type: ignore[union-attr]
    assert results[6] == [ns]

    async def run() -> None:
        await store.aput(("async",), "a", {"content": "async value"})
        got = await store.aget(("async",), "a")
        assert got is not None and got.value == {"content": "async value"}
        out = await store.abatch([GetOp(("async",), "a"), SearchOp(("async",), None, 10, 0)])
        assert out[0] == got and [r.key for r in out[1]] == ["a"]  # type: ignore[union-attr]
        await store.adelete(("async",), "a")
        assert await store.aget(("async",), "a") is None
        assert await store.alist_namespaces(prefix=("batch",)) == [ns]

    asyncio.run(run())


def test_ttl_expires_and_refreshes(open_mem: Callable[..., Memory], clock: Clock) -> None:
    store = StratamemStore(open_mem(embedder="hashing", clock=clock), ACME, ALICE, ttl={"default_ttl": 10})
    assert store.supports_ttl
    store.put(("t",), "default", {"v": 1})  # default_ttl: 10 minutes
    store.put(("t",), "short", {"v": 2}, ttl=2)
    store.put(("t",), "forever", {"v": 3}, ttl=None)
    clock.now += timedelta(minutes=1)
    assert store.get(("t",), "short") is not None  # read with refresh: expires 2 minutes from now
    clock.now += timedelta(minutes=1, seconds=30)
    assert store.get(("t",), "short", refresh_ttl=False) is not None  # refreshed above, so still here
    clock.now += timedelta(minutes=1)
    assert store.get(("t",), "short") is None
    clock.now += timedelta(minutes=10)
    assert store.get(("t",), "default") is None
    assert store.get(("t",), "forever") is not None
    assert [r.key for r in store.search(("t",))] == ["forever"]


def test_tenants_and_scopes(open_mem: Callable[..., Memory], db_path: Path) -> None:
    mem = open_mem(embedder="hashing")
    acme = StratamemStore(mem, ACME, scope=layer_scope(("user", ALICE)))
    globex = StratamemStore(mem, GLOBEX, ALICE)
    acme.put(("user", "bob", "prefs"), "theme", {"content": "Bob prefers dark mode"})
    acme.put(("notes",), "n", {"content": "a note of alice"})
    assert globex.get(("user", "bob", "prefs"), "theme") is None  # the tenant comes from the store, never the namespace
    assert globex.list_namespaces() == [] and globex.search(()) == []
    bob = mem.list(ACME, "user", identifiers={"user_id": "bob"}).memories
    assert [m.content for m in bob] == ["Bob prefers dark mode"]  # ("user", "bob", ...) is bob's user layer
    assert [m.content for m in mem.list(ACME, "user", identifiers=ALICE).memories] == ["a note of alice"]
    assert acme.search(("user", "bob"), query="theme")[0].key == "theme"


class State(TypedDict):
    user: str
    message: str
    recalled: list[str]


def test_a_compiled_graph_uses_the_store(store: StratamemStore) -> None:
    def remember(state: State, *, store: BaseStore) -> dict[str, Any]:
        ns = ("memories", state["user"])
        store.put(ns, str(len(store.search(ns, limit=100))), {"content": state["message"]})
        return {"recalled": [item.value["content"] for item in store.search(ns, query=state["message"], limit=3)]}

    builder = StateGraph(State)
    builder.add_node("remember", remember)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", END)
    graph = builder.compile(store=store)
    graph.invoke({"user": "alice", "message": "I live in Lisbon", "recalled": []})
    out = graph.invoke({"user": "alice", "message": "My cat is called Miso", "recalled": []})
    assert set(out["recalled"]) == {"I live in Lisbon", "My cat is called Miso"}
    assert store.list_namespaces() == [("memories", "alice")]


def test_same_answers_as_langgraphs_in_memory_store(open_mem: Callable[..., Memory]) -> None:
    """Differential check against LangGraph's own reference store (``InMemoryStore``): the same puts and
    deletes, then the same reads. Unranked search order is not part of the contract (the reference
    keeps insertion order, this store answers newest first), so those are compared as sets."""
    from langgraph.store.memory import InMemoryStore

    ours, ref = StratamemStore(open_mem(embedder="hashing"), ACME, ALICE), InMemoryStore()
    namespaces = [
        ("p", "q", "r"),
        ("p", "q", "s", "t"),
        ("p", "q", "s", "u"),
        ("p", "w", "r"),
        ("z", "p", "r"),
        ("accounts", "7"),
        ("accounts", "8", "config"),
        ("ops", "accounts", "9"),
    ]
    for store in (ours, ref):
        for i, ns in enumerate(namespaces):
            store.put(ns, f"k{i}", {"data": f"v{i}", "i": i, "group": {"parity": i % 2}})
            store.put(ns, "extra", {"data": "x", "i": -1, "group": {"parity": 2}})
        store.delete(("ops", "accounts", "9"), "extra")
        store.put(("p", "q", "r"), "k0", {"data": "replaced", "i": 100, "group": {"parity": 0}})
    queries: list[dict[str, Any]] = [
        {},
        {"prefix": ("p", "q")},
        {"suffix": ("r",)},
        {"prefix": ("p",), "suffix": ("r",)},
        {"prefix": ("p", "q"), "max_depth": 3},
        {"prefix": ("p", "*", "r")},
        {"suffix": ("*", "r")},
        {"prefix": ("accounts", "*")},
        {"prefix": ("*", "accounts"), "suffix": ("*", "config")},
        {"prefix": ("missing",)},
        {"max_depth": 1},
        {"prefix": ("p", "q"), "limit": 2},
        {"prefix": ("p", "q"), "offset": 2},
    ]
    for q in queries:
        assert ours.list_namespaces(**q) == ref.list_namespaces(**q), q
    filters: list[dict[str, Any] | None] = [
        None,
        {"data": "x"},
        {"i": {"$gte": 3}},
        {"i": {"$lt": 2, "$ne": -1}},
        {"group": {"parity": 1}},
        {"group": {"parity": {"$eq": 2}}},
    ]
    for prefix in [(), ("p",), ("p", "q"), ("accounts", "8", "config"), ("nothing",)]:
        for flt in filters:
            got = {(r.namespace, r.key, str(r.value)) for r in ours.search(prefix, filter=flt, limit=100)}
            want = {(r.namespace, r.key, str(r.value)) for r in ref.search(prefix, filter=flt, limit=100)}
            assert got == want, (prefix, flt)
    for i, ns in enumerate(namespaces):
        for key in (f"k{i}", "extra", "nope"):
            a, b = ours.get(ns, key), ref.get(ns, key)
            assert (a.value if a else None) == (b.value if b else None), (ns, key)


def test_reads_page_through_more_items_than_one_list_page(open_mem: Callable[..., Memory]) -> None:
    mem = open_mem(embedder="hashing")
    store = StratamemStore(mem, ACME, ALICE)
    count = mem.engine.config.max_list_limit + 30
    store.batch([PutOp(("bulk", f"g{i % 3}"), f"k{i}", {"i": i}) for i in range(count)])
    assert len(store.search(("bulk",), limit=count + 10)) == count
    assert store.list_namespaces(prefix=("bulk",)) == [("bulk", "g0"), ("bulk", "g1"), ("bulk", "g2")]
    last = store.get(("bulk", f"g{(count - 1) % 3}"), f"k{count - 1}")
    assert last is not None and last.value == {"i": count - 1}
