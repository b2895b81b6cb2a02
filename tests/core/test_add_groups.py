"""Group commit of concurrent single adds on a real DuckDB file (``add_groups.py``), and the
leader/follower protocol of :class:`AddGroups` itself. The per-provider contract (one transaction per
group, failures, tenants, supersession order) is ``tests/conformance/test_add_groups_contract.py``."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import pytest
from prometheus_client import REGISTRY

from stratamem import Memory, TenantContext
from stratamem.add_groups import AddGroups, PendingAdd
from stratamem.embeddings import content_hash
from stratamem.model import AddMemoryOutput, Layer, LayerIdentifiers, MemoryEntry

U = {"user_id": "u1"}


def _group_sizes() -> tuple[float, float]:
    count = REGISTRY.get_sample_value("stratamem_add_group_size_count") or 0.0
    total = REGISTRY.get_sample_value("stratamem_add_group_size_sum") or 0.0
    return count, total


def test_many_threads_adding_to_a_duckdb_file_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "groups.duckdb"
    tenants = [TenantContext(tenant_id="acme", principal="u1"), TenantContext(tenant_id="globex", principal="u2")]
    before = _group_sizes()

    def work(k: int) -> list[tuple[str, AddMemoryOutput]]:
        ctx = tenants[k % 2]
        return [
            (
                f"{ctx.tenant_id} note {k}-{j}",
                mem.add(ctx, f"{ctx.tenant_id} note {k}-{j}", layer="user", identifiers=U),
            )
            for j in range(15)
        ]

    with Memory.open(path, embedder="hashing") as mem, ThreadPoolExecutor(max_workers=16) as pool:
        results = [pair for batch in pool.map(work, range(16)) for pair in batch]
    assert len(results) == 240
    assert all(out.memory.content == text for text, out in results)  # each caller got its own memory
    assert all(out.memory.tenant_id == text.split()[0] for text, out in results)
    assert len({out.memory.id for _, out in results}) == 240
    groups, adds = (a - b for a, b in zip(_group_sizes(), before, strict=True))
    assert adds == 240 and 1 <= groups <= 240
    with Memory.open(path, embedder="hashing") as reopened:  # committed to the file
        for ctx in tenants:
            stored = {m.id: m.content for m in reopened.export(ctx)}
            assert stored == {o.memory.id: t for t, o in results if o.memory.tenant_id == ctx.tenant_id}
            assert len(stored) == 120


def _pending(tenant: str, content: str) -> PendingAdd:
    now = datetime.now(UTC)
    entry = MemoryEntry(
        id=content,
        tenant_id=tenant,
        content=content,
        layer=Layer.USER,
        identifiers=LayerIdentifiers(user_id="u1"),
        created_at=now,
        updated_at=now,
        etag="e",
        content_hash=content_hash(content),
    )
    return PendingAdd(TenantContext(tenant_id=tenant), entry)


def _never_alone(pending: PendingAdd) -> AddMemoryOutput:
    raise AssertionError("no group failed")


def test_a_leader_stores_what_queued_behind_it_and_hands_over() -> None:
    """The first add stores alone; adds queued during its store form the next group, stored by the
    oldest of them; a broken store function fails its group's callers instead of hanging them."""
    stored: list[list[str]] = []
    first_running = threading.Event()
    release = threading.Event()

    def store_group(group: list[PendingAdd]) -> None:
        stored.append([p.entry.content for p in group])
        if len(stored) == 1:
            first_running.set()
            assert release.wait(10)
        if any(p.entry.content == "broken" for p in group):
            raise RuntimeError("store failed")
        for p in group:
            p.output = AddMemoryOutput(memory=p.entry, embedding_generated=True)

    groups = AddGroups(store_group, _never_alone)
    with ThreadPoolExecutor(max_workers=4) as pool:
        head = pool.submit(groups.add, _pending("t", "a"))
        assert first_running.wait(10)
        rest = []
        for n, content in enumerate(["b", "c", "d"], start=1):
            rest.append(pool.submit(groups.add, _pending("t", content)))
            while groups.queued("t") != n:
                threading.Event().wait(0.002)
        release.set()
        assert [f.result(10).memory.content for f in [head, *rest]] == ["a", "b", "c", "d"]
    assert stored == [["a"], ["b", "c", "d"]]
    assert groups.queued("t") == 0
    with pytest.raises(RuntimeError, match="store failed"):
        groups.add(_pending("t", "broken"))
    assert groups.add(_pending("t", "after")).memory.content == "after"  # the tenant is not stuck


def test_a_store_function_that_sets_no_outcome_is_an_error() -> None:
    groups = AddGroups(lambda group: None, _never_alone)
    with pytest.raises(RuntimeError, match="no outcome"):
        groups.add(_pending("t", "x"))


def test_a_group_holds_at_most_max_group_adds() -> None:
    stored: list[list[str]] = []
    first_running = threading.Event()
    release = threading.Event()

    def store_group(group: list[PendingAdd]) -> None:
        stored.append([p.entry.content for p in group])
        if len(stored) == 1:
            first_running.set()
            assert release.wait(10)
        for p in group:
            p.output = AddMemoryOutput(memory=p.entry, embedding_generated=True)

    groups = AddGroups(store_group, _never_alone, max_group=2)
    with ThreadPoolExecutor(max_workers=6) as pool:
        futures = [pool.submit(groups.add, _pending("t", "a"))]
        assert first_running.wait(10)
        for n, content in enumerate("bcde", start=1):
            futures.append(pool.submit(groups.add, _pending("t", content)))
            while groups.queued("t") != n:
                threading.Event().wait(0.002)
        release.set()
        assert [f.result(10).memory.content for f in futures] == list("abcde")
    assert stored == [["a"], ["b", "c"], ["d", "e"]]


def test_members_of_a_failed_group_store_themselves_on_their_own_threads() -> None:
    first_running = threading.Event()
    release = threading.Event()
    calls: list[tuple[str, str]] = []

    def store_group(group: list[PendingAdd]) -> None:
        if len(group) == 1:
            first_running.set()
            assert release.wait(10)
            group[0].output = AddMemoryOutput(memory=group[0].entry, embedding_generated=True)
            return
        for p in group:
            p.alone = True

    def store_alone(pending: PendingAdd) -> AddMemoryOutput:
        calls.append((pending.entry.content, threading.current_thread().name))
        if pending.entry.content == "bad":
            raise ValueError("bad add")
        return AddMemoryOutput(memory=pending.entry, embedding_generated=True)

    groups = AddGroups(store_group, store_alone)
    with ThreadPoolExecutor(max_workers=4, thread_name_prefix="caller") as pool:
        head = pool.submit(groups.add, _pending("t", "a"))
        assert first_running.wait(10)
        rest = []
        for n, content in enumerate(["b", "bad", "c"], start=1):
            rest.append(pool.submit(lambda c=content: (threading.current_thread().name, groups.add(_pending("t", c)))))
            while groups.queued("t") != n:
                threading.Event().wait(0.002)
        release.set()
        assert head.result(10).memory.content == "a"
        ok_b, bad, ok_c = rest
        assert ok_b.result(10)[1].memory.content == "b" and ok_c.result(10)[1].memory.content == "c"
        with pytest.raises(ValueError, match="bad add"):
            bad.result(10)
    threads = {content: thread for content, thread in calls}
    assert sorted(threads) == ["b", "bad", "c"]
    assert threads["b"] == ok_b.result()[0] and threads["c"] == ok_c.result()[0]  # each on its caller's thread
