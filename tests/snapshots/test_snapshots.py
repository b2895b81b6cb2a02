"""Snapshots on a real SeaweedFS: round trip, incremental pushes, faults, isolation, retention, PITR."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import numpy as np
import pytest

from stratamem import Memory, MemoryConfig, MemoryError, TenantContext
from stratamem.errors import ErrorCode
from stratamem.persistence import Manifest, S3Settings, S3Store
from stratamem.persistence.snapshots import tenant_prefix

from .conftest import all_keys, contents, fill


def test_round_trip_into_in_memory_duckdb(
    mem: Memory, acme: TenantContext, globex: TenantContext, s3_settings: S3Settings, s3: S3Store
) -> None:
    fill(mem, acme, 25)
    fill(mem, globex, 7)
    reports = mem.configure_snapshots(s3_settings).push()
    assert {r.tenant_id: r.tables["memories"] for r in reports} == {"acme": 25, "globex": 7}

    restored = Memory.open_from_snapshot("acme", settings=s3_settings)
    try:
        assert contents(restored, acme) == contents(mem, acme)
        assert contents(restored, globex) == {}  # only the requested tenant was hydrated
        src = {e.id: e for e in mem.export(acme, include_embeddings=True)}
        for e in restored.export(acme, include_embeddings=True):
            assert e.model_dump(exclude={"embedding"}) == src[e.id].model_dump(exclude={"embedding"})
            assert np.allclose(e.embedding or [], src[e.id].embedding or [])
        hit = restored.search(acme, "acme fact 3: the user likes topic 3", identifiers={"user_id": "u1"})
        assert hit.results[0].memory.content == "acme fact 3: the user likes topic 3"
        report = restored.snapshots.last_reports[0]
        assert report.snapshot_id == reports[0].snapshot_id and report.rejected == []
        assert report.within_budget is not None
    finally:
        restored.close()


def test_manifest_records_schema_files_and_checksums(
    mem: Memory, acme: TenantContext, s3_settings: S3Settings, s3: S3Store
) -> None:
    fill(mem, acme, 5)
    report = mem.configure_snapshots(s3_settings).push(acme)[0]
    assert report.manifest_key is not None
    manifest = Manifest.model_validate_json(s3.get_bytes(report.manifest_key))
    applied = [
        r[0]
        for r in mem.engine.provider.db.conn.execute(  # type: ignore[attr-defined]
            "SELECT version FROM schema_version ORDER BY version"
        ).fetchall()
    ]
    assert manifest.schema_versions == applied and manifest.schema_version == max(applied)
    assert manifest.embedding_model == "hashing-v1-384"
    names = {t.name for t in manifest.tables}
    assert {"memories", "embedding_cache"} <= names
    assert "schema_version" not in names and "store_meta" not in names
    assert "api_keys" not in names  # credentials never leave the store (and never come back)
    for key in manifest.object_keys():
        head = s3.head(key)
        assert head is not None and head["Metadata"]["sha256"] in key
    # nothing is left under the temporary prefix once a snapshot is published
    assert not [k for k in all_keys(s3) if "/_tmp/" in k]


def test_incremental_push_rewrites_only_changed_partitions(
    open_mem: Callable[..., Memory], acme: TenantContext, s3_settings: S3Settings, s3: S3Store
) -> None:
    # graph off: this test counts the partitions of the two core tables (graph tables are covered below)
    mem = open_mem(config=MemoryConfig(graph_enabled=False))
    fill(mem, acme, 60)
    mgr = mem.configure_snapshots(s3_settings, partition_rows=10)
    first = mgr.push(acme)[0]
    assert first.files_written > 4 and first.files_reused == 0
    keys_before = all_keys(s3)

    unchanged = mgr.push(acme)[0]
    assert unchanged.files_written == 0 and unchanged.files_reused == first.files_written
    assert unchanged.bytes_written == 0

    fill(mem, acme, 2, start=100)  # appends land in the tail partition of each table
    # adds keep their vectors in ``memories`` only; the cache holds what was embedded but not stored
    mem.engine.embeddings.embed_contents(acme.tenant_id, ["a draft the write gate embedded"], persist=True)
    appended = mgr.push(acme)[0]

    def written_now(report_id: str) -> dict[str, int]:
        m = mgr.latest_manifest(acme)
        assert m is not None and m.snapshot_id == report_id
        return {t.name: sum(p.written_by == report_id for p in t.partitions) for t in m.tables}

    # the full old tail (10 rows) becomes a closed partition and is reused; the 2 new rows of each
    # range-partitioned core table form a new tail partition: one new file per table
    new_files = written_now(appended.snapshot_id)
    assert new_files["memories"] == 1 and new_files["embedding_cache"] == 1
    assert appended.files_written == sum(new_files.values())
    assert appended.files_reused >= first.files_written - sum(new_files.values())
    new_data = {k for k in all_keys(s3) - keys_before if "/data/" in k}
    assert len(new_data) == appended.files_written

    old_id = next(e.id for e in mem.export(acme) if e.content.startswith("acme fact 0:"))
    mem.update(acme, old_id, metadata={"tags": ["changed"]})
    updated = mgr.push(acme)[0]
    # a metadata-only change rewrites only the memories partition holding that row (plus the tail of
    # the operation log, which records the update)
    rewritten = {name: n for name, n in written_now(updated.snapshot_id).items() if n}
    assert rewritten.pop("memories") == 1
    assert set(rewritten) <= {"memory_events"}
    assert updated.files_written == 1 + sum(rewritten.values())
    m = mgr.latest_manifest(acme)
    assert m is not None and sum(t.rows for t in m.tables) == updated.rows


def test_appends_and_edits_rewrite_only_the_partitions_they_touch(
    open_mem: Callable[..., Memory], tmp_path: Path, acme: TenantContext, s3_settings: S3Settings, s3: S3Store
) -> None:
    """Every table with rows follows time: its own time column (``created_at``, the operation log's
    ``ts``) or, for lexical postings, the time of the memory a row belongs to — so an append writes
    the newest partition of each table, and a content edit the partitions holding that memory."""
    mem = open_mem()
    fill(mem, acme, 60)
    mgr = mem.configure_snapshots(s3_settings, partition_rows=10)
    first = mgr.push(acme)[0]
    m = mgr.latest_manifest(acme)
    assert m is not None
    kinds = {t.name: (t.partitioning.kind, t.partitioning.columns, t.partitioning.parent) for t in m.tables}
    assert kinds["lexical_postings"] == ("parent", ["memory_id"], "memories.id")
    assert kinds["memory_events"] == ("range", ["ts"], None)
    postings = next(t for t in m.tables if t.name == "lexical_postings")
    memories = next(t for t in m.tables if t.name == "memories")
    assert postings.partitioning.bounds == memories.partitioning.bounds and len(postings.partitions) == 6

    def written(report_id: str) -> dict[str, int]:
        man = mgr.latest_manifest(acme)
        assert man is not None and man.snapshot_id == report_id
        return {
            t.name: sum(p.written_by == report_id for p in t.partitions)
            for t in man.tables
            if any(p.written_by == report_id for p in t.partitions)
        }

    fill(mem, acme, 2, start=100)
    mem.engine.embeddings.embed_contents(acme.tenant_id, ["a draft the write gate embedded"], persist=True)
    appended = mgr.push(acme)[0]
    new = written(appended.snapshot_id)
    assert {"memories", "lexical_postings", "memory_events", "memory_nodes", "embedding_cache"} <= set(new)
    assert all(n == 1 for name, n in new.items() if name != "entities"), new
    assert appended.files_written <= len(new) + 1 < first.files_written / 3

    old = next(e for e in mem.export(acme) if e.content.startswith("acme fact 7:"))
    mem.update(acme, old.id, content="acme fact 7: the user now likes Rust")
    edited = written(mgr.push(acme)[0].snapshot_id)
    assert edited["memories"] == 1 and edited["lexical_postings"] == 1  # the partition of fact 7's time

    dst = open_mem(tmp_path / "dst.duckdb")
    dst.configure_snapshots(s3_settings).pull(acme)
    assert contents(dst, acme) == contents(mem, acme)
    hits = dst.search(acme, "Rust", identifiers={"user_id": "u1"}, threshold=0.0, limit=1).results
    assert hits[0].memory.id == old.id


class FailingPutStore(S3Store):
    """Fault injection over the real client: the server-facing PUT number ``fail_at`` raises."""

    def __init__(self, settings: S3Settings, fail_at: int) -> None:
        super().__init__(settings)
        self.fail_at, self.puts = fail_at, 0

    def put_file(self, key: str, path: Path, *, sha256: str) -> None:
        self.puts += 1
        if self.puts == self.fail_at:
            raise MemoryError(ErrorCode.PROVIDER_ERROR, f"injected: server refused PUT of {key}", retryable=True)
        super().put_file(key, path, sha256=sha256)


def test_failure_midway_keeps_previous_snapshot(
    mem: Memory,
    acme: TenantContext,
    s3_settings: S3Settings,
    s3: S3Store,
    open_mem: Callable[..., Memory],
    tmp_path: Path,
) -> None:
    fill(mem, acme, 30)
    mgr = mem.configure_snapshots(s3_settings, partition_rows=5)
    v1 = mgr.push(acme)[0]
    v1_content = contents(mem, acme)
    keys_v1 = all_keys(s3)

    fill(mem, acme, 30, start=200)
    failing = mem.configure_snapshots(store=FailingPutStore(s3_settings, fail_at=3), partition_rows=5)
    with pytest.raises(MemoryError) as err:
        failing.push(acme)
    assert err.value.code is ErrorCode.PROVIDER_ERROR and "refused PUT" in err.value.message
    assert all_keys(s3) == keys_v1  # temp files and new data objects removed, nothing published
    assert [s.snapshot_id for s in mgr.list(acme)] == [v1.snapshot_id]

    other = open_mem(tmp_path / "restored.duckdb")
    report = other.configure_snapshots(s3_settings).pull(acme)
    assert report.snapshot_id == v1.snapshot_id and contents(other, acme) == v1_content


def test_stopped_server_during_push_is_a_clear_error(
    mem: Memory, acme: TenantContext, s3_settings: S3Settings, s3: S3Store
) -> None:
    fill(mem, acme, 3)
    dead = S3Settings(**{**s3_settings.model_dump(), "endpoint_url": "http://127.0.0.1:9"})
    with pytest.raises(MemoryError) as err:
        mem.configure_snapshots(dead).push(acme)
    assert err.value.code is ErrorCode.PROVIDER_ERROR and "S3" in err.value.message


def _two_snapshots(mem: Memory, ctx: TenantContext, s3_settings: S3Settings) -> tuple[str, str, dict[str, str]]:
    fill(mem, ctx, 20)
    mgr = mem.configure_snapshots(s3_settings, partition_rows=10)
    v1 = mgr.push(ctx)[0]
    v1_content = contents(mem, ctx)
    fill(mem, ctx, 5, start=500)
    v2 = mgr.push(ctx)[0]
    assert v1.snapshot_id and v2.snapshot_id
    return v1.snapshot_id, v2.snapshot_id, v1_content


def _v2_only_key(s3: S3Store, ctx: TenantContext, v1: str, v2: str) -> str:
    prefix = tenant_prefix(ctx.tenant_id) + "manifests/"
    m1 = Manifest.model_validate_json(s3.get_bytes(f"{prefix}{v1}.json"))
    m2 = Manifest.model_validate_json(s3.get_bytes(f"{prefix}{v2}.json"))
    return sorted(m2.object_keys() - m1.object_keys())[0]


def test_corrupted_object_falls_back_to_previous_snapshot(
    mem: Memory,
    acme: TenantContext,
    s3_settings: S3Settings,
    s3: S3Store,
    open_mem: Callable[..., Memory],
    tmp_path: Path,
) -> None:
    v1, v2, v1_content = _two_snapshots(mem, acme, s3_settings)
    key = _v2_only_key(s3, acme, v1, v2)
    s3.client.put_object(Bucket=s3.bucket, Key=key, Body=b"PAR1 garbage, not the file the manifest names")

    target = open_mem(tmp_path / "t.duckdb")
    mgr = target.configure_snapshots(s3_settings)
    with pytest.raises(MemoryError) as err:
        mgr.pull(acme, fallback=False)
    assert "corrupted" in err.value.message and err.value.details["reason"] == "checksum_mismatch"
    assert contents(target, acme) == {}  # a rejected snapshot never touches the store

    report = mgr.pull(acme)
    assert report.snapshot_id == v1
    assert [r.snapshot_id for r in report.rejected] == [v2] and "corrupted" in report.rejected[0].reason
    assert contents(target, acme) == v1_content


def test_deleted_manifest_target_falls_back_and_next_push_heals(
    mem: Memory,
    acme: TenantContext,
    s3_settings: S3Settings,
    s3: S3Store,
    open_mem: Callable[..., Memory],
    tmp_path: Path,
) -> None:
    v1, v2, v1_content = _two_snapshots(mem, acme, s3_settings)
    s3.delete([_v2_only_key(s3, acme, v1, v2)])

    target = open_mem(tmp_path / "t.duckdb")
    report = target.configure_snapshots(s3_settings).pull(acme)
    assert report.snapshot_id == v1 and report.rejected[0].snapshot_id == v2
    assert "cannot be read" in report.rejected[0].reason
    assert contents(target, acme) == v1_content

    healed = mem.snapshots.push(acme)[0]  # the missing partition is rewritten, not referenced
    assert healed.files_written >= 1
    again = target.snapshots.pull(acme)
    assert again.snapshot_id == healed.snapshot_id and contents(target, acme) == contents(mem, acme)


def test_no_loadable_snapshot_is_a_clear_error(
    mem: Memory, acme: TenantContext, s3_settings: S3Settings, s3: S3Store
) -> None:
    mgr = mem.configure_snapshots(s3_settings)
    with pytest.raises(MemoryError) as err:
        mgr.pull(acme)
    assert err.value.code is ErrorCode.PROVIDER_ERROR and "no snapshot of tenant acme" in err.value.message
    fill(mem, acme, 3)
    report = mgr.push(acme)[0]
    manifest = Manifest.model_validate_json(s3.get_bytes(str(report.manifest_key)))
    s3.delete(sorted(manifest.object_keys()))
    with pytest.raises(MemoryError) as err:
        mgr.pull(acme)
    assert "no loadable snapshot" in err.value.message and err.value.details["rejected"]


def test_tenant_files_stay_under_their_prefix(
    mem: Memory,
    acme: TenantContext,
    globex: TenantContext,
    s3_settings: S3Settings,
    s3: S3Store,
    open_mem: Callable[..., Memory],
    tmp_path: Path,
) -> None:
    fill(mem, acme, 12)
    fill(mem, globex, 9)
    mgr = mem.configure_snapshots(s3_settings, partition_rows=4)
    mgr.push(acme)
    assert all_keys(s3) and all(k.startswith("acme/graph/") for k in all_keys(s3))
    mgr.push(globex)
    for key in all_keys(s3):
        assert key.startswith(("acme/graph/", "globex/graph/"))
    for tenant in ("acme", "globex"):
        m = mgr.latest_manifest(tenant)
        assert m is not None and all(k.startswith(f"{tenant}/graph/") for k in m.object_keys())
        # every exported row belongs to the tenant
        for key in m.object_keys():
            local = tmp_path / "check.parquet"
            s3.download_file(key, local)
            tenants = duckdb.execute("SELECT DISTINCT tenant_id FROM read_parquet(?)", [str(local)]).fetchall()
            assert tenants == [(tenant,)]

    # restoring acme into a store that holds globex data leaves globex untouched
    target = open_mem(tmp_path / "t.duckdb")
    fill(target, globex, 3, start=900)
    globex_before = contents(target, globex)
    target.configure_snapshots(s3_settings).pull(acme)
    assert contents(target, globex) == globex_before
    assert len(contents(target, acme)) == 12

    with pytest.raises(MemoryError) as err:
        tenant_prefix("../globex")
    assert err.value.code is ErrorCode.INVALID_TENANT_CONTEXT


def test_point_in_time_restore_and_retention(
    mem: Memory, acme: TenantContext, s3_settings: S3Settings, s3: S3Store, caplog: pytest.LogCaptureFixture
) -> None:
    now = datetime.now(UTC)
    clock = {"t": now - timedelta(days=8)}
    mgr = mem.configure_snapshots(s3_settings, clock=lambda: clock["t"], gc_grace=timedelta(0), partition_rows=1000)
    fill(mem, acme, 4)
    old = mgr.push(acme)[0]
    clock["t"] = now - timedelta(days=2)
    fill(mem, acme, 4, start=10)
    mid = mgr.push(acme)[0]
    mid_content = contents(mem, acme)
    fill(mem, acme, 4, start=20)
    clock["t"] = datetime.now(UTC) + timedelta(seconds=1)  # after every upload so far (gc_grace=0)
    new = mgr.push(acme)[0]

    # retention (7 days): the 8-day-old snapshot is gone, its unreferenced files collected
    assert mid.pruned_snapshots == [] and new.pruned_snapshots == [old.snapshot_id]
    assert [s.snapshot_id for s in mgr.list(acme)] == [new.snapshot_id, mid.snapshot_id]
    live = set()
    for s in mgr.list(acme):
        live |= Manifest.model_validate_json(s3.get_bytes(s.manifest_key)).object_keys()
    assert {k for k in all_keys(s3) if "/data/" in k} == live

    # restore --at picks the newest snapshot at or before the time and logs before/after
    with caplog.at_level("INFO", logger="stratamem.snapshots"):
        report = mgr.restore(acme, at=(now - timedelta(days=1)).isoformat())
    assert report.snapshot_id == mid.snapshot_id
    assert report.before["memories"] == 12 and report.tables["memories"] == 8
    assert contents(mem, acme) == mid_content
    assert any("before" in r.message and mid.snapshot_id in r.message for r in caplog.records)
    audit = [r for r in mem.engine.audit.recent() if r.action == "snapshot.restore"]
    assert audit and audit[-1].details["snapshot_id"] == mid.snapshot_id
    with pytest.raises(MemoryError):
        mgr.restore(acme, at=now - timedelta(days=30))


def test_feature_tables_with_tenant_id_are_exported_generically(
    mem_factory: Callable[[str], Memory], acme: TenantContext, s3_settings: S3Settings, s3: S3Store
) -> None:
    """A table added by another feature (like the knowledge graph's) is exported and restored without
    any snapshot code change, as long as it has a tenant_id column."""
    # ``zz_links`` references ``zz_nodes`` (named so that alphabetical order is the wrong order)
    ddl = [
        "CREATE TABLE zz_nodes (tenant_id VARCHAR NOT NULL, id VARCHAR NOT NULL, PRIMARY KEY (tenant_id, id))",
        "CREATE TABLE zz_links (tenant_id VARCHAR NOT NULL, source_id VARCHAR NOT NULL, "
        "target_id VARCHAR NOT NULL, relation VARCHAR, PRIMARY KEY (tenant_id, source_id, target_id), "
        "FOREIGN KEY (tenant_id, source_id) REFERENCES zz_nodes (tenant_id, id))",
    ]
    src, dst = mem_factory("src"), mem_factory("dst")
    for m in (src, dst):
        for stmt in ddl:
            m.engine.provider.db.conn.execute(stmt)  # type: ignore[attr-defined]
    src.engine.provider.db.conn.execute(  # type: ignore[attr-defined]
        "INSERT INTO zz_nodes SELECT tenant, 'm' || i FROM range(41) t(i), (VALUES ('acme'), ('globex')) v(tenant)"
    )
    src.engine.provider.db.conn.execute(  # type: ignore[attr-defined]
        "INSERT INTO zz_links SELECT ?, 'm' || i, 'm' || (i + 1), 'next' FROM range(40) t(i)", ["acme"]
    )
    src.engine.provider.db.conn.execute(  # type: ignore[attr-defined]
        "INSERT INTO zz_links VALUES ('globex', 'm1', 'y', 'secret')"
    )
    fill(src, acme, 3)
    report = src.configure_snapshots(s3_settings, partition_rows=10).push(acme)[0]
    assert report.tables["zz_links"] == 40
    assert report.tables["memory_nodes"] == 3  # the real knowledge graph's tables travel the same way
    m = src.snapshots.latest_manifest(acme)
    assert m is not None
    edges = next(t for t in m.tables if t.name == "zz_links")
    assert edges.partitioning.kind == "hash" and len(edges.partitions) >= 2

    dst.configure_snapshots(s3_settings).pull(acme)
    dst.snapshots.pull(acme)  # again: the tenant's edges are deleted before the nodes they reference
    conn = dst.engine.provider.db.conn  # type: ignore[attr-defined]
    assert conn.execute("SELECT tenant_id, count(*) FROM zz_links GROUP BY ALL").fetchall() == [("acme", 40)]
    assert conn.execute("SELECT tenant_id, count(*) FROM zz_nodes GROUP BY ALL").fetchall() == [("acme", 41)]
    lazy = dst.snapshots.pull(acme, lazy=True, budget_s=60, wait_for="loaded")
    assert lazy.complete and conn.execute("SELECT count(*) FROM zz_links").fetchone() == (40,)


def test_incompatible_schema_is_refused(mem: Memory, acme: TenantContext, s3_settings: S3Settings, s3: S3Store) -> None:
    fill(mem, acme, 2)
    mgr = mem.configure_snapshots(s3_settings)
    report = mgr.push(acme)[0]
    manifest = json.loads(s3.get_bytes(str(report.manifest_key)))
    manifest["schema_versions"].append(999)
    manifest["snapshot_id"] = "29990101T000000000000Z-ffffff"
    s3.put_bytes(f"acme/graph/manifests/{manifest['snapshot_id']}.json", json.dumps(manifest).encode())
    with pytest.raises(MemoryError) as err:
        mgr.pull(acme)
    assert err.value.code is ErrorCode.CONFIGURATION_ERROR and "999" in err.value.message


def test_scheduler_pushes_versioned_snapshots(
    mem: Memory, acme: TenantContext, s3_settings: S3Settings, s3: S3Store
) -> None:
    import time

    from stratamem.persistence.schedule import SnapshotScheduler

    fill(mem, acme, 3)
    sched = SnapshotScheduler(mem.configure_snapshots(s3_settings), interval=timedelta(seconds=0.3))
    sched.start()
    deadline = time.monotonic() + 30
    while sched.runs < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    sched.stop()
    assert sched.runs >= 2 and sched.failures == 0
    assert len(mem.snapshots.list(acme)) >= 2


def test_lazy_cold_start_loads_within_budget_then_in_background(
    mem: Memory, acme: TenantContext, s3_settings: S3Settings, s3: S3Store
) -> None:
    fill(mem, acme, 40)
    mem.configure_snapshots(s3_settings, partition_rows=10).push(acme)
    expected = contents(mem, acme)

    # a zero budget returns at once: nothing loaded yet, everything arrives in the background
    cold = Memory.open_from_snapshot("acme", settings=s3_settings, lazy=True, budget_s=0.0)
    try:
        report = cold.snapshots.last_reports[0]
        assert report.lazy and not report.complete and report.files_loaded == 0
        assert report.files_total is not None and report.files_total >= 8
        assert cold.snapshots.wait_loaded(timeout=60)
        assert contents(cold, acme) == expected
    finally:
        cold.close()

    warm = Memory.open_from_snapshot("acme", settings=s3_settings, lazy=True, budget_s=60.0, wait_for="loaded")
    try:
        report = warm.snapshots.last_reports[0]
        assert report.complete and report.files_loaded == report.files_total and report.within_budget
        assert contents(warm, acme) == expected
    finally:
        warm.close()


def test_lazy_background_failure_falls_back_to_previous(
    mem: Memory,
    acme: TenantContext,
    s3_settings: S3Settings,
    s3: S3Store,
    open_mem: Callable[..., Memory],
    tmp_path: Path,
) -> None:
    v1, v2, v1_content = _two_snapshots(mem, acme, s3_settings)
    key = _v2_only_key(s3, acme, v1, v2)
    s3.client.put_object(Bucket=s3.bucket, Key=key, Body=b"corrupted")
    target = open_mem(tmp_path / "t.duckdb")
    mgr = target.configure_snapshots(s3_settings)
    report = mgr.pull(acme, lazy=True, budget_s=0.0)
    assert report.snapshot_id == v2 and not report.complete
    assert mgr.wait_loaded(timeout=60)
    assert contents(target, acme) == v1_content  # v2's corrupt partition made it fall back to v1


def test_async_facade(db_path: Path, acme: TenantContext, s3_settings: S3Settings, s3: S3Store) -> None:
    import asyncio

    from stratamem import AsyncMemory

    async def scenario() -> tuple[int, int]:
        amem = await AsyncMemory.open(db_path, embedder="hashing")
        try:
            await amem.add(acme, content="async fact", layer="user", identifiers={"user_id": "u1"})
            amem.sync.configure_snapshots(s3_settings)
            pushed = await amem.snapshots.push(acme)
            listed = await amem.snapshots.list(acme)
            pulled = await amem.snapshots.restore(acme)
            assert pulled.snapshot_id == pushed[0].snapshot_id
            return len(listed), pulled.tables["memories"]
        finally:
            await amem.close()

    assert asyncio.run(scenario()) == (1, 1)


class ManifestInvisibleStore(S3Store):
    """Fault injection: the manifest PUT succeeds on the real server but its verification fails."""

    def head(self, key: str) -> dict[str, object] | None:
        if "/manifests/" in key:
            return None
        return super().head(key)


def test_failed_manifest_verification_unpublishes(
    mem: Memory, acme: TenantContext, s3_settings: S3Settings, s3: S3Store
) -> None:
    fill(mem, acme, 10)
    mgr = mem.configure_snapshots(s3_settings, partition_rows=5)
    v1 = mgr.push(acme)[0]
    keys_v1 = all_keys(s3)
    fill(mem, acme, 10, start=50)
    with pytest.raises(MemoryError) as err:
        mem.configure_snapshots(store=ManifestInvisibleStore(s3_settings), partition_rows=5).push(acme)
    assert "not visible" in err.value.message
    assert all_keys(s3) == keys_v1
    assert [s.snapshot_id for s in mgr.list(acme)] == [v1.snapshot_id]


def test_pull_into_a_closed_store_rejects_no_snapshot(
    mem: Memory,
    acme: TenantContext,
    s3_settings: S3Settings,
    s3: S3Store,
    open_mem: Callable[..., Memory],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A store closed during a pull is not a bad snapshot: no fallback through older ones, no rejections."""
    fill(mem, acme, 5)
    source = mem.configure_snapshots(s3_settings)
    source.push(acme)
    fill(mem, acme, 5, start=5)
    source.push(acme)
    target = open_mem(tmp_path / "closed.duckdb")
    mgr = target.configure_snapshots(s3_settings)
    target.close()
    with caplog.at_level("ERROR", logger="stratamem.snapshots"), pytest.raises(MemoryError) as err:
        mgr.pull(acme)
    assert "closed" in err.value.message and "no loadable snapshot" not in err.value.message
    assert not [r for r in caplog.records if "rejected" in r.getMessage()]
    assert len(source.list(acme)) == 2  # both snapshots still there and listed
