"""A pull builds the tenant's search-index partitions from the snapshot's files beside the import and
hands them to the index when the import commits: the first search does not read the rows back, and
what it finds is exactly what a load from the table would give."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import duckdb
import numpy as np
import pytest

from stratamem import Memory, TenantContext
from stratamem.persistence import S3Settings, S3Store
from stratamem.providers.duckdb import DuckDBProvider
from stratamem.providers.duckdb import index as duckdb_provider
from stratamem.retrieval.lexical import term_counts
from stratamem.retrieval.search_index import Partition

from .conftest import contents, fill

U1 = {"user_id": "u1"}
AGENT = {"agent_id": "a1", "user_id": "u1"}


def _provider(mem: Memory) -> DuckDBProvider:
    provider = mem.engine.provider
    assert isinstance(provider, DuckDBProvider)
    return provider


def _partitions(mem: Memory, tenant: str) -> dict[Any, Partition]:
    index = _provider(mem).search_index
    assert index is not None
    with index._lock:
        return {k: p for k, p in index._partitions.items() if k[0] == tenant}


def _count_loads(monkeypatch: pytest.MonkeyPatch, mem: Memory) -> list[tuple[str, str, str]]:
    """Record every partition read back from the table (the call still goes through)."""
    provider = _provider(mem)
    calls: list[tuple[str, str, str]] = []
    real = provider._load_partition

    def load(tenant_id: str, layer: str, scope: str) -> Any:
        calls.append((tenant_id, layer, scope))
        return real(tenant_id, layer, scope)

    monkeypatch.setattr(provider, "_load_partition", load)
    return calls


def _assert_same_as_table(mem: Memory, part: Partition) -> None:
    """The partition equals one loaded from the committed rows: ids, vectors, status, entries, postings.

    The searches before this left access statistics on their way to the store (the append worker
    patches the partition when it commits them): they are written first, and the partition is read
    under its lock, so neither side is compared half way through that patch."""
    provider = _provider(mem)
    index = provider.search_index
    assert index is not None
    mem.lifecycle.flush()
    provider.flush_appends()
    with provider.db.write_lock, part.lock:
        fresh = index.new_partition(part.key, provider._load_partition(*part.key))
        _assert_same_rows(part, fresh)


def _assert_same_rows(part: Partition, fresh: Partition) -> None:
    assert part.ids == fresh.ids and part.contents == fresh.contents and part.n_live == fresh.n_live > 0
    n = len(part.ids)
    assert np.array_equal(part.vectors[:n], fresh.vectors[:n])
    assert np.array_equal(part.active[:n], fresh.active[:n]) and np.array_equal(part.expires[:n], fresh.expires[:n])
    assert np.array_equal(part.lengths[:n], fresh.lengths[:n])
    assert (part.n_docs, part.total_length) == (fresh.n_docs, fresh.total_length)
    for slot in range(n):
        assert part.entry(slot) == fresh.entry(slot)
    terms = {t for c in part.contents if c for t in term_counts(c)}
    assert len(part.postings) == len(fresh.postings) == len(terms) > 0
    for term in terms:
        mine, theirs = part.postings.get(term), fresh.postings.get(term)
        assert (mine is None) == (theirs is None)
        if mine is not None and theirs is not None:
            for a, b in zip(mine.arrays(part.present), theirs.arrays(fresh.present), strict=True):
                assert np.array_equal(a, b)


def _seed(mem: Memory, ctx: TenantContext) -> None:
    fill(mem, ctx, 40)
    mem.bulk_add(
        ctx,
        [
            {
                "content": f"agent note {i}: deploys run on Fridays, ticket ZX-{i}",
                "layer": "agent",
                "identifiers": AGENT,
                "importance": 0.3 + i / 100,
            }
            for i in range(12)
        ],
    )
    gone = mem.search(ctx, "acme fact 3: the user likes topic 3", identifiers=U1, threshold=0.0, limit=1)
    mem.soft_delete(ctx, [gone.results[0].memory.id])  # a row the index holds as not active


@pytest.mark.parametrize("lazy", [False, True])
def test_pull_hands_the_index_partitions_built_from_the_files(
    mem: Memory, acme: TenantContext, s3_settings: S3Settings, s3: S3Store, monkeypatch: pytest.MonkeyPatch, lazy: bool
) -> None:
    monkeypatch.setattr(duckdb_provider, "PREBUILD_MIN_ROWS", 1)  # the test partitions are small
    _seed(mem, acme)
    mem.configure_snapshots(s3_settings, partition_rows=7).push(acme)
    queries = [("acme fact 17: the user likes topic 17", U1), ("ZX-5 deploys", AGENT), ("topic", U1)]
    want = [
        [(r.memory.id, r.score) for r in mem.search(acme, q, identifiers=ids, threshold=0.0, limit=8).results]
        for q, ids in queries
    ]
    assert "acme fact 3: the user likes topic 3" not in {c for q in want for c in q}

    cold = Memory.open_from_snapshot("acme", settings=s3_settings, lazy=lazy, budget_s=0.0, background=False)
    try:
        loads = _count_loads(monkeypatch, cold)
        if lazy:  # nothing is loaded before the first operation on the tenant
            assert _partitions(cold, "acme") == {}
            cold.search(acme, "warm up", identifiers=U1, threshold=0.0)
        parts = _partitions(cold, "acme")
        assert {k[1] for k in parts} == {"user", "agent"}  # both partitions came with the import
        got = [
            [(r.memory.id, r.score) for r in cold.search(acme, q, identifiers=ids, threshold=0.0, limit=8).results]
            for q, ids in queries
        ]
        assert got == want and all(got)
        assert loads == []  # no partition was read back from the table
        for part in parts.values():
            _assert_same_as_table(cold, part)
        assert cold.snapshots.wait_loaded(timeout=60)
        assert contents(cold, acme) == contents(mem, acme)
        assert _partitions(cold, "acme").keys() == parts.keys()  # the tables loaded later kept them
    finally:
        cold.close()


def test_partitions_below_the_threshold_load_on_first_use(
    mem: Memory, acme: TenantContext, s3_settings: S3Settings, s3: S3Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(duckdb_provider, "PREBUILD_MIN_ROWS", 20)  # user: 39 rows, agent: 12
    _seed(mem, acme)
    mem.configure_snapshots(s3_settings).push(acme)
    cold = Memory.open_from_snapshot("acme", settings=s3_settings)
    try:
        assert {k[1] for k in _partitions(cold, "acme")} == {"user"}
        loads = _count_loads(monkeypatch, cold)
        hits = cold.search(acme, "ZX-5 deploys", identifiers=AGENT, layers=["agent"], threshold=0.0, limit=3).results
        assert hits[0].memory.content.startswith("agent note 5:")
        assert [k[1] for k in loads] == ["agent"]
    finally:
        cold.close()


def test_pull_replaces_partitions_the_store_had_for_the_tenant(
    open_mem: Callable[..., Memory],
    tmp_path: Any,
    acme: TenantContext,
    globex: TenantContext,
    s3_settings: S3Settings,
    s3: S3Store,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(duckdb_provider, "PREBUILD_MIN_ROWS", 1)
    src = open_mem(tmp_path / "src.duckdb")
    fill(src, acme, 15)
    src.configure_snapshots(s3_settings).push(acme)

    dst = open_mem(tmp_path / "dst.duckdb")
    fill(dst, acme, 5, start=100)  # rows the pull replaces, in a partition the index holds
    dst.add(acme, "acme agent rule: never deploy on Fridays", layer="agent", identifiers=AGENT)
    fill(dst, globex, 5)
    for ctx in (acme, globex):
        assert dst.search(ctx, "topic", identifiers=U1, threshold=0.0).results
    assert dst.search(acme, "deploy Fridays", identifiers=AGENT, layers=["agent"], threshold=0.0).results
    globex_part = _partitions(dst, "globex")

    dst.configure_snapshots(s3_settings).pull(acme)
    loads = _count_loads(monkeypatch, dst)
    hits = dst.search(acme, "topic", identifiers=U1, threshold=0.0, limit=50).results
    assert sorted(h.memory.id for h in hits) == sorted(contents(src, acme))
    assert loads == []  # served by the partition the pull handed over
    # the agent partition is not in the snapshot: forgotten, then read back (empty) from the table
    assert dst.search(acme, "deploy Fridays", identifiers=AGENT, layers=["agent"], threshold=0.0).results == []
    assert [k[1] for k in loads] == ["agent"]
    assert _partitions(dst, "globex") == globex_part  # another tenant's partitions are untouched


def test_a_failed_index_build_does_not_fail_the_pull(
    mem: Memory,
    acme: TenantContext,
    s3_settings: S3Settings,
    s3: S3Store,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(duckdb_provider, "PREBUILD_MIN_ROWS", 1)
    fill(mem, acme, 12)
    mem.configure_snapshots(s3_settings).push(acme)

    def broken(self: DuckDBProvider, *args: Any, **kwargs: Any) -> Any:
        raise duckdb.IOException("disk went away while reading the files")

    monkeypatch.setattr(DuckDBProvider, "partitions_from_files", broken)
    with caplog.at_level(logging.WARNING, logger="stratamem.snapshots"):
        cold = Memory.open_from_snapshot("acme", settings=s3_settings)
    try:
        assert "building the search index from the snapshot's files failed" in caplog.text
        assert _partitions(cold, "acme") == {}
        loads = _count_loads(monkeypatch, cold)
        hits = cold.search(acme, "acme fact 4: the user likes topic 4", identifiers=U1, threshold=0.0).results
        assert hits[0].memory.content == "acme fact 4: the user likes topic 4"
        assert len(loads) == 1
        assert contents(cold, acme) == contents(mem, acme)
    finally:
        cold.close()


def test_bulk_import_runs_on_one_thread_and_restores_the_setting(mem: Memory) -> None:
    provider = _provider(mem)

    def threads() -> int:
        return int(provider.db.conn.execute("SELECT current_setting('threads')").fetchone()[0])

    before = threads()
    with provider.bulk_import():
        assert threads() == 1
        with provider.bulk_import():  # a second import at the same time (another tenant)
            assert threads() == 1
        assert threads() == 1  # the first is still running
    assert threads() == before
    with pytest.raises(RuntimeError), provider.bulk_import():
        raise RuntimeError("import failed")
    assert threads() == before
