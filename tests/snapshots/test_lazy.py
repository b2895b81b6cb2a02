"""True lazy cold start on a real SeaweedFS: tenants load on first access (or in the background),
never partially; corrupt partitions found lazily fall back or fail loudly."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from stratamem import Memory, MemoryError, TenantContext
from stratamem.errors import ErrorCode
from stratamem.persistence import S3Settings, S3Store

from .conftest import contents, fill
from .test_snapshots import _two_snapshots, _v2_only_key

U1 = {"user_id": "u1"}


def _cache_rows(mem: Memory, tenant: str) -> int:
    row = mem.engine.provider.db.conn.execute(  # type: ignore[attr-defined]
        "SELECT count(*) FROM embedding_cache WHERE tenant_id = ?", [tenant]
    ).fetchone()
    return int(row[0])


def test_query_loads_an_unloaded_tenant_on_demand(
    mem: Memory, acme: TenantContext, globex: TenantContext, s3_settings: S3Settings, s3: S3Store
) -> None:
    fill(mem, acme, 30)
    fill(mem, globex, 25)
    # vectors embedded but not stored (the write gate's candidates) are the embedding cache's rows
    mem.engine.embeddings.embed_contents("globex", [f"globex draft {i}" for i in range(12)], persist=True)
    assert _cache_rows(mem, "globex") == 12
    mem.configure_snapshots(s3_settings, partition_rows=5).push()
    expected = {"acme": contents(mem, acme), "globex": contents(mem, globex)}
    query = "globex fact 7: the user likes topic 7"
    want = mem.search(globex, query, identifiers=U1, threshold=0.0, limit=5)

    # no background thread and no budget: only the manifests are read before the store is returned
    cold = Memory.open_from_snapshot(
        ["acme", "globex"], settings=s3_settings, lazy=True, budget_s=0.0, background=False
    )
    try:
        status = cold.snapshots.status()
        assert status.tenants_pending == ["acme", "globex"] and status.partitions_loaded == 0
        assert status.partitions_pending >= 8 and status.bytes_total > 0 and not status.complete
        report = {r.tenant_id: r for r in cold.snapshots.last_reports}["globex"]
        assert report.lazy and report.state == "pending" and not report.complete and report.files_loaded == 0
        raw = cold.engine.provider.db.conn  # type: ignore[attr-defined]
        assert raw.execute("SELECT count(*) FROM memories").fetchone() == (0,)  # nothing imported yet

        # the first query for globex loads globex (all of it) before answering
        got = cold.search(globex, query, identifiers=U1, threshold=0.0, limit=5)
        assert [(r.memory.id, r.score) for r in got.results] == [(r.memory.id, r.score) for r in want.results]
        assert got.results[0].memory.content == query
        g = next(t for t in cold.snapshots.status().tenants if t.tenant_id == "globex")
        # the search ran once the tables it reads were complete; the graph etc. may still be loading
        assert g.state in ("queryable", "loaded") and g.on_demand and g.partitions_loaded > 0
        # acme was not touched: still pending, and none of its rows are in the store
        assert cold.snapshots.status().tenants_pending[0] == "acme"
        assert raw.execute("SELECT count(*) FROM memories WHERE tenant_id = 'acme'").fetchone() == (0,)
        # an export (like any operation beyond search/get/list/stats) waits for the whole tenant
        assert contents(cold, globex) == expected["globex"]
        g = next(t for t in cold.snapshots.status().tenants if t.tenant_id == "globex")
        assert g.state == "loaded" and g.partitions_loaded == g.partitions_total > 0
        assert g.bytes_loaded == g.bytes_total and g.rows > 25
        assert raw.execute("SELECT count(*) FROM memory_nodes WHERE tenant_id = 'globex'").fetchone() == (25,)

        # a get for acme (a memory id from the source store) loads acme first
        some_id = next(iter(expected["acme"]))
        entry = cold.get(acme, some_id)
        assert entry is not None and entry.content == expected["acme"][some_id]

        assert cold.snapshots.wait_loaded(timeout=60)
        final = cold.snapshots.status()
        assert final.complete and final.tenants_loaded == ["acme", "globex"] and final.partitions_pending == 0
        assert final.cache_imports_pending == 0
        assert {t: contents(cold, TenantContext(tenant_id=t)) for t in expected} == expected
        # the embedding cache (a pure cache) arrives after its tenant is served, complete in the end
        assert _cache_rows(cold, "globex") == _cache_rows(mem, "globex")
    finally:
        cold.close()


def test_background_load_completes_and_writes_wait_for_their_tenant(
    mem: Memory, acme: TenantContext, s3_settings: S3Settings, s3: S3Store
) -> None:
    fill(mem, acme, 40)
    mem.configure_snapshots(s3_settings, partition_rows=10).push(acme)
    expected = contents(mem, acme)

    cold = Memory.open_from_snapshot("acme", settings=s3_settings, lazy=True, budget_s=0.0)
    try:
        # a write for a tenant still loading waits for the load: the new memory joins complete data
        added = cold.add(acme, content="written during the cold start", layer="user", identifiers=U1)
        assert cold.snapshots.wait_loaded(timeout=60)
        after = contents(cold, acme)
        assert after == {**expected, added.memory.id: "written during the cold start"}
        status = cold.snapshots.status()
        assert status.complete and status.tenants_loaded == ["acme"] and status.elapsed_s > 0
        assert status.bytes_loaded == status.bytes_total > 0
    finally:
        cold.close()

    # with a generous budget and wait_for="loaded" the open returns with everything loaded
    warm = Memory.open_from_snapshot("acme", settings=s3_settings, lazy=True, budget_s=60.0, wait_for="loaded")
    try:
        report = warm.snapshots.last_reports[0]
        assert report.complete and report.state == "loaded" and report.within_budget
        assert report.files_loaded == report.files_total and report.partitions_loaded == report.partitions_total
        assert contents(warm, acme) == expected
    finally:
        warm.close()

    # by default it returns as soon as the tenant answers searches; the rest follows
    served = Memory.open_from_snapshot("acme", settings=s3_settings, lazy=True, budget_s=60.0)
    try:
        report = served.snapshots.last_reports[0]
        assert report.state in ("queryable", "loaded") and report.within_budget
        assert report.partitions_loaded > 0
        hits = served.search(acme, "acme fact 7: the user likes topic 7", identifiers=U1, threshold=0.0, limit=1)
        assert hits.results[0].memory.content == "acme fact 7: the user likes topic 7"
        assert served.snapshots.wait_loaded(timeout=60) and contents(served, acme) == expected
    finally:
        served.close()
    with pytest.raises(MemoryError) as err:
        Memory.open_from_snapshot("acme", settings=s3_settings, lazy=True, wait_for="everything")  # type: ignore[arg-type]
    assert err.value.code is ErrorCode.INVALID_PARAMS


def test_corrupt_partition_found_lazily_falls_back_to_previous(
    mem: Memory, acme: TenantContext, s3_settings: S3Settings, s3: S3Store
) -> None:
    v1, v2, v1_content = _two_snapshots(mem, acme, s3_settings)
    s3.client.put_object(Bucket=s3.bucket, Key=_v2_only_key(s3, acme, v1, v2), Body=b"PAR1 not the bytes")

    cold = Memory.open_from_snapshot("acme", settings=s3_settings, lazy=True, budget_s=0.0, background=False)
    try:
        assert cold.snapshots.last_reports[0].snapshot_id == v2  # the manifest is fine; files are checked on load
        # the first access verifies v2's files, rejects v2 (nothing of it is imported) and loads v1
        assert contents(cold, acme) == v1_content
        st = cold.snapshots.status().tenants[0]
        assert st.state == "loaded" and st.snapshot_id == v2 and st.loaded_snapshot_id == v1
        assert [r.snapshot_id for r in st.rejected] == [v2] and "corrupted" in st.rejected[0].reason
    finally:
        cold.close()


def test_no_loadable_snapshot_found_lazily_is_a_clear_error(
    mem: Memory,
    acme: TenantContext,
    globex: TenantContext,
    s3_settings: S3Settings,
    s3: S3Store,
    open_mem: Callable[..., Memory],
    tmp_path: Path,
) -> None:
    fill(mem, acme, 12)
    fill(mem, globex, 4)
    mgr = mem.configure_snapshots(s3_settings, partition_rows=4)
    report = mgr.push(acme)[0]
    mgr.push(globex)
    manifest = mgr.latest_manifest(acme)
    assert manifest is not None and report.snapshot_id == manifest.snapshot_id
    key = sorted(k for k in manifest.object_keys() if "/memories/" in k)[0]
    s3.client.put_object(Bucket=s3.bucket, Key=key, Body=b"garbage")

    cold = Memory.open_from_snapshot(
        ["acme", "globex"], settings=s3_settings, lazy=True, budget_s=0.0, background=False
    )
    try:
        for attempt in range(2):  # the failure is remembered: every later access raises the same way
            with pytest.raises(MemoryError) as err:
                cold.search(acme, "acme fact 1", identifiers=U1, threshold=0.0)
            assert err.value.code is ErrorCode.PROVIDER_ERROR, attempt
            assert "could not be loaded" in err.value.message and "not served from partial data" in err.value.message
            assert err.value.details["reason"] == "snapshot_load_failed"
            assert "corrupted" in err.value.details["rejected"][0]["reason"]
        with pytest.raises(MemoryError):
            list(cold.export(acme))
        raw = cold.engine.provider.db.conn  # type: ignore[attr-defined]
        assert raw.execute("SELECT count(*) FROM memories WHERE tenant_id = 'acme'").fetchone() == (0,)
        # another tenant is unaffected
        assert len(contents(cold, globex)) == 4
        assert cold.snapshots.wait_loaded(timeout=60)
        status = cold.snapshots.status()
        assert status.tenants_failed == ["acme"] and status.tenants_loaded == ["globex"] and status.complete
        assert status.tenants[0].error and "corrupted" in status.tenants[0].error
    finally:
        cold.close()

    # an eager pull reports the same snapshot as unloadable, and leaves the target store untouched
    target = open_mem(tmp_path / "t.duckdb")
    with pytest.raises(MemoryError) as err:
        target.configure_snapshots(s3_settings).pull(acme)
    assert "no loadable snapshot" in err.value.message
    assert contents(target, acme) == {}


def test_graph_expansion_waits_for_the_whole_tenant(
    mem: Memory, acme: TenantContext, s3_settings: S3Settings, s3: S3Store
) -> None:
    fill(mem, acme, 12)
    mem.configure_snapshots(s3_settings, partition_rows=4).push(acme)
    want = mem.search(acme, "acme fact 3: the user likes topic 3", identifiers=U1, threshold=0.0, expand_graph=True)

    cold = Memory.open_from_snapshot("acme", settings=s3_settings, lazy=True, budget_s=0.0, background=False)
    try:
        got = cold.search(acme, "acme fact 3: the user likes topic 3", identifiers=U1, threshold=0.0, expand_graph=True)
        # the graph tables are not what a plain search reads: expanding through them waited for them
        assert cold.snapshots.status().tenants[0].state == "loaded"
        assert [r.memory.id for r in got.results] == [r.memory.id for r in want.results]
    finally:
        cold.close()


def test_restore_refreshes_graph_traversal_caches(
    mem: Memory, acme: TenantContext, s3_settings: S3Settings, s3: S3Store
) -> None:
    """A restore replaces rows behind the engine's back: cached traversals must not survive it."""
    old_ids = fill(mem, acme, 8)
    mgr = mem.configure_snapshots(s3_settings)
    v1 = mgr.push(acme)[0]
    new_ids = set(fill(mem, acme, 8, start=100))

    def related() -> set[str]:
        return {i.node.id for i in mem.graph.related(acme, old_ids[0], hops=3).items}

    before = related()
    assert before & new_ids  # the newer memories are linked (and now cached)
    report = mgr.restore(acme, snapshot_id=v1.snapshot_id)
    assert report.snapshot_id == v1.snapshot_id
    assert not related() & new_ids
