"""Snapshot manifests (pydantic): the single source of truth of a published snapshot.

A snapshot exists only once its manifest object exists; the manifest names every Parquet file
(content-addressed by sha256), its size, row count and the fingerprint of the partition it holds,
plus the store's schema versions and embedding model, so a restore can refuse an incompatible store.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

FORMAT_VERSION = 1


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FileEntry(_Model):
    key: str
    #: sha256 and size of the object as stored (the encrypted bytes when ``key_id`` is set).
    sha256: str
    size: int
    rows: int
    #: Id of the encryption key the object is encrypted with (``stratamem.encryption``); None: plain Parquet.
    key_id: str | None = None


class PartitionEntry(_Model):
    #: Bucket number within the table's partitioning.
    partition: int
    rows: int
    #: ``count:xor:sum`` of DuckDB row hashes: equal fingerprints mean an unchanged partition.
    fingerprint: str
    files: list[FileEntry]
    #: Snapshot id that wrote these files (older ids mean the files were reused).
    written_by: str


class Partitioning(_Model):
    #: ``range``: bounds on a timestamp column (rows in insertion-time order, stable old partitions);
    #: ``parent``: a row without one follows the row it belongs to — ``columns[0]`` references
    #: ``parent`` (``table.key``), whose ``created_at`` falls in ``bounds`` (the parent's ranges), so
    #: appends touch the newest partition only; ``hash``: ``hash(columns) % buckets``.
    kind: Literal["range", "parent", "hash"]
    columns: list[str]
    bounds: list[str] = Field(default_factory=list)
    buckets: int = 1
    parent: str | None = None


class TableEntry(_Model):
    name: str
    columns: list[tuple[str, str]]
    rows: int
    partitioning: Partitioning
    partitions: list[PartitionEntry]


class Manifest(_Model):
    format_version: int = FORMAT_VERSION
    snapshot_id: str
    tenant_id: str
    created_at: datetime
    parent_id: str | None = None
    #: Every migration version applied to the store that wrote the snapshot (see duckdb_schema).
    schema_versions: list[int]
    schema_version: int
    embedding_model: str | None = None
    embedding_dimensions: int | None = None
    tables: list[TableEntry]

    @property
    def total_rows(self) -> int:
        return sum(t.rows for t in self.tables)

    @property
    def total_bytes(self) -> int:
        return sum(f.size for t in self.tables for p in t.partitions for f in p.files)

    def object_keys(self) -> set[str]:
        return {f.key for t in self.tables for p in t.partitions for f in p.files}


class SnapshotInfo(_Model):
    snapshot_id: str
    tenant_id: str
    created_at: datetime
    rows: int
    bytes: int
    files: int
    schema_version: int
    manifest_key: str


class PushReport(_Model):
    tenant_id: str
    snapshot_id: str | None
    manifest_key: str | None
    created_at: datetime | None
    #: False when nothing changed since the previous snapshot and no new one was needed.
    published: bool
    tables: dict[str, int]
    rows: int
    files_written: int
    files_reused: int
    bytes_written: int
    total_bytes: int
    duration_s: float
    pruned_snapshots: list[str] = Field(default_factory=list)


class RejectedSnapshot(_Model):
    snapshot_id: str
    code: str
    reason: str


class PullReport(_Model):
    tenant_id: str
    snapshot_id: str
    created_at: datetime
    tables: dict[str, int]
    rows: int
    bytes_downloaded: int
    duration_s: float
    #: Newer snapshots that failed validation (corrupt or missing files) before this one loaded.
    rejected: list[RejectedSnapshot] = Field(default_factory=list)
    #: Row counts per table before the restore replaced the tenant's data (the "before" state).
    before: dict[str, int] = Field(default_factory=dict)
    within_budget: bool | None = None
    #: Lazy pulls: whether the tenant was loaded before the call returned (a tenant loads as a whole:
    #: all its files or none); otherwise it loads in the background or on its first access
    #: (``SnapshotManager.status()``, ``wait_loaded()``).
    lazy: bool = False
    files_loaded: int | None = None
    files_total: int | None = None
    partitions_loaded: int | None = None
    partitions_total: int | None = None
    complete: bool = True
    #: Lazy pulls: the tenant's load state when the call returned (see ``TenantLoadStatus``).
    state: Literal["pending", "loading", "queryable", "loaded", "failed"] = "loaded"


class TenantLoadStatus(_Model):
    """Where one tenant of a lazy cold start stands (see :class:`LoadStatus`)."""

    tenant_id: str
    #: ``pending``: not loaded, its first access loads it; ``loading``; ``queryable``: the tables
    #: search/get/list/stats read are complete (those run), the rest is loading (other operations
    #: wait); ``loaded``; ``failed``: no snapshot could be loaded, every access raises (the tenant is
    #: never served from partial data).
    state: Literal["pending", "loading", "queryable", "loaded", "failed"]
    #: The newest snapshot found at open time, and the one actually loaded (older after a fallback).
    snapshot_id: str | None
    loaded_snapshot_id: str | None = None
    partitions_total: int
    partitions_loaded: int = 0
    files_total: int
    bytes_total: int
    bytes_loaded: int = 0
    rows: int = 0
    #: True when a query or write for the tenant triggered the load (rather than the background thread).
    on_demand: bool = False
    duration_s: float | None = None
    error: str | None = None
    rejected: list[RejectedSnapshot] = Field(default_factory=list)


class LoadStatus(_Model):
    """``mem.snapshots.status()``: progress of a lazy cold start (``open_from_snapshot(lazy=True)``)."""

    budget_s: float
    elapsed_s: float
    complete: bool
    partitions_loaded: int
    partitions_pending: int
    bytes_loaded: int
    bytes_total: int
    tenants_loaded: list[str]
    tenants_pending: list[str]
    tenants_failed: list[str]
    #: Pending tenants whose query tables are loaded (search/get/list/stats are served).
    tenants_queryable: list[str] = Field(default_factory=list)
    #: Cache tables (e.g. the embedding cache) still being imported after their tenant is served.
    cache_imports_pending: int = 0
    tenants: list[TenantLoadStatus]
