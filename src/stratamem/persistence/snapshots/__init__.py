"""Per-tenant Parquet snapshots of the DuckDB store on S3-compatible storage.

Layout (one prefix per tenant, nothing outside it)::

    s3://{bucket}/{tenant_id}/graph/manifests/{snapshot_id}.json   # published snapshots
    s3://{bucket}/{tenant_id}/graph/data/{table}/{sha256}.parquet   # content-addressed partitions
    s3://{bucket}/{tenant_id}/graph/_tmp/{snapshot_id}/…            # phase 1 of a push, never read

What is exported: every base table of the store that has a ``tenant_id`` column (found through
``information_schema``), so feature tables (the knowledge graph, …) are included as soon as their
migration exists; the tenant is always a bound parameter. A restore recreates the schema through
the store's own migrations (``Memory.open``) and inserts the rows back.

Push is two-phase: each changed partition is written by DuckDB ``COPY … (FORMAT PARQUET)``,
uploaded under ``_tmp/``, verified (size, server MD5 ETag, sha256 metadata), copied to its
content-addressed key and verified again; the manifest is written LAST. A snapshot exists only once
its manifest does; any failure removes the temporary and newly created objects, so the previous
snapshot stays intact. Incremental: partitions whose fingerprint (row count + xor/sum of DuckDB row
hashes) is unchanged are referenced, not rewritten. Tables with a ``created_at`` timestamp are
range-partitioned by it with stable bounds (appends only touch the tail partition); others are
hash-partitioned by primary key.

Pull downloads a snapshot's files in parallel (hashing while they stream) and imports each table
with one ``INSERT … FROM read_parquet([...])`` as soon as its files are verified, all in one
transaction. Lazy cold starts (tenants loaded in the background or on their first access) live in
:mod:`.lazy`.

The package splits the work by phase: ``base`` (names, prefixes, manifests read back), ``catalog``
(tables, consistent read, partitioning), ``push``, ``retention`` (``prune``), ``hydrate`` (import of
verified files) and ``pull`` (eager and lazy); ``manager`` assembles :class:`SnapshotManager`.
"""

from __future__ import annotations

from .base import (
    BOOKKEEPING_TABLES,
    CACHE_TABLES,
    CRITICAL_TABLES,
    DEFAULT_COLD_START_BUDGET_S,
    DEFAULT_PARTITION_ROWS,
    DEFAULT_RETENTION,
    NOT_SNAPSHOTTED,
    ROOT,
    WaitFor,
    new_snapshot_id,
    snapshot_time,
    tenant_prefix,
)
from .manager import AsyncSnapshotManager, SnapshotManager, open_from_snapshot

__all__ = [
    "BOOKKEEPING_TABLES",
    "CACHE_TABLES",
    "CRITICAL_TABLES",
    "DEFAULT_COLD_START_BUDGET_S",
    "DEFAULT_PARTITION_ROWS",
    "DEFAULT_RETENTION",
    "NOT_SNAPSHOTTED",
    "ROOT",
    "AsyncSnapshotManager",
    "SnapshotManager",
    "WaitFor",
    "new_snapshot_id",
    "open_from_snapshot",
    "snapshot_time",
    "tenant_prefix",
]
