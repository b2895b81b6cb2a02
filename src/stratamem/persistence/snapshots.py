"""Per-tenant Parquet snapshots of the DuckDB store on S3-compatible storage (SPEC R-S3).

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
"""

from __future__ import annotations

import builtins
import json
import logging
import math
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

import duckdb
import pyarrow.parquet as pq
from pydantic import ValidationError

from ..errors import ErrorCode, MemoryError
from ..model import _TENANT_RE, TenantContext
from ..providers.contracts import SnapshotSource, implements
from ..providers.duckdb import schema as duckdb_schema
from .lazy import QUERY_TABLES, LazyLoader, TenantPlan
from .manifest import (
    FORMAT_VERSION,
    FileEntry,
    LoadStatus,
    Manifest,
    PartitionEntry,
    Partitioning,
    PullReport,
    PushReport,
    RejectedSnapshot,
    SnapshotInfo,
    TableEntry,
)
from .metrics import SNAPSHOT_BYTES, SNAPSHOT_DURATION, SNAPSHOT_FAILURES, SNAPSHOT_SIZE
from .s3 import S3Settings, S3Store, sha256_file

if TYPE_CHECKING:
    from ..engine import MemoryEngine
    from ..sdk import Memory

log = logging.getLogger("stratamem.snapshots")

ROOT = "graph"
#: Store bookkeeping, never part of a tenant's snapshot.
BOOKKEEPING_TABLES = frozenset({"schema_version", "store_meta"})
#: Tenant tables that are not data: credentials must not travel to object storage, and a restore
#: must never bring back a revoked API key. Features may add theirs (``NOT_SNAPSHOTTED.add(...)``).
#: The access log is folded into ``memories`` before every export (``_snapshot_cursor``).
NOT_SNAPSHOTTED: set[str] = {"api_keys", duckdb_schema.ACCESS_LOG_TABLE}
DEFAULT_RETENTION = timedelta(days=7)
DEFAULT_PARTITION_ROWS = 5000
DEFAULT_COLD_START_BUDGET_S = 3.0
#: Imported first on a cold start: what a search reads.
CRITICAL_TABLES = ("memories", "lexical_postings", "tenant_policies", "memory_feedback")
#: Pure caches (a missing row is recomputed): a lazy load serves the tenant before importing them.
#: Features may add theirs.
CACHE_TABLES: set[str] = {"embedding_cache"}
_PART_COL = "_stratamem_part"
_ROW = "_stratamem_row"
_PARENT_ROW = "_stratamem_parent"
#: Time columns a table is range-partitioned on (the first one it has).
_TIME_COLUMNS = ("created_at", "ts")
#: A table without a time column whose rows belong to another table's rows (column -> table, key)
#: is partitioned by that row's ``created_at`` ranges: lexical postings follow their memory.
_PARENTS: dict[str, tuple[str, str]] = {"memory_id": ("memories", "id")}
_PARENT_TABLES = frozenset(t for t, _ in _PARENTS.values())
_NO_RANGE = Partitioning(kind="hash", columns=[])
_ID_FORMAT = "%Y%m%dT%H%M%S%fZ"


def _ident(name: str) -> str:
    """A catalog identifier (table/column name read from information_schema) quoted for SQL."""
    return '"' + name.replace('"', '""') + '"'


def _literal(path: Path) -> str:
    """A local path we created (temp dir) as a SQL string literal; COPY TO cannot bind it."""
    return "'" + str(path).replace("'", "''") + "'"


def tenant_prefix(tenant_id: str) -> str:
    """``{tenant_id}/graph/``; the tenant id grammar (no ``/``) keeps tenants' prefixes disjoint."""
    if not isinstance(tenant_id, str) or not _TENANT_RE.match(tenant_id):
        raise MemoryError(ErrorCode.INVALID_TENANT_CONTEXT,
                          "tenant_id must be 1-128 characters of letters, digits and _.:@- and start with a "
                          "letter or digit", operation="snapshot")
    return f"{tenant_id}/{ROOT}/"


def _tenant_id(tenant: str | TenantContext) -> str:
    tid = tenant.tenant_id if isinstance(tenant, TenantContext) else tenant
    tenant_prefix(tid)
    return tid


def new_snapshot_id(now: datetime) -> str:
    return now.astimezone(UTC).strftime(_ID_FORMAT) + "-" + secrets.token_hex(3)


def snapshot_time(snapshot_id: str) -> datetime:
    return datetime.strptime(snapshot_id.split("-", 1)[0], _ID_FORMAT).replace(tzinfo=UTC)


def _to_utc(value: datetime | str) -> datetime:
    dt = datetime.fromisoformat(value.replace("Z", "+00:00")) if isinstance(value, str) else value
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


@dataclass
class _Table:
    name: str
    columns: list[tuple[str, str]]
    primary_key: list[str]


@dataclass
class _Written:
    """Objects a push created, removed again if it fails."""

    tmp_keys: list[str] = field(default_factory=list)
    final_keys: list[str] = field(default_factory=list)
    manifest_key: str | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


class SnapshotManager:
    """Push, list, pull and restore per-tenant snapshots of one store (``mem.snapshots``)."""

    def __init__(
        self,
        memory: Memory | MemoryEngine,
        settings: S3Settings | None = None,
        *,
        store: S3Store | None = None,
        retention: timedelta = DEFAULT_RETENTION,
        gc_grace: timedelta = timedelta(hours=1),
        partition_rows: int = DEFAULT_PARTITION_ROWS,
        exclude_tables: tuple[str, ...] = (),
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        engine = memory.engine if hasattr(memory, "engine") else memory
        self.engine: MemoryEngine = engine
        provider = engine.provider
        if not implements(provider, SnapshotSource):
            raise MemoryError(ErrorCode.CONFIGURATION_ERROR,
                              f"snapshots are not supported by provider {provider.name}", operation="snapshot")
        self.provider = cast(SnapshotSource, provider)
        self.settings = settings or (store.settings if store is not None else S3Settings.from_env())
        self.s3 = store or S3Store(self.settings)
        self.retention = retention
        self.gc_grace = gc_grace
        self.partition_rows = max(1, int(partition_rows))
        self.exclude = BOOKKEEPING_TABLES | frozenset(NOT_SNAPSHOTTED) | frozenset(exclude_tables)
        self.clock = clock or (lambda: datetime.now(UTC))
        #: Reports of the pulls ``open_from_snapshot`` made.
        self.last_reports: builtins.list[PullReport] = []
        self._loader: LazyLoader | None = None
        self._manifest_cache: dict[str, Manifest] = {}
        #: (schema versions, embedding model, tables) of this store, read once per pull.
        self._catalog: tuple[set[int], str | None, set[str]] | None = None

    # ================================================================================ catalog
    def _tables(self, cur: Any) -> builtins.list[_Table]:
        rows = cur.execute(
            "SELECT c.table_name FROM information_schema.columns c "
            "JOIN information_schema.tables t ON t.table_catalog = c.table_catalog "
            " AND t.table_schema = c.table_schema AND t.table_name = c.table_name "
            "WHERE c.column_name = 'tenant_id' AND t.table_type = 'BASE TABLE' AND c.table_schema = 'main' "
            " AND c.table_catalog = current_database() ORDER BY c.table_name"
        ).fetchall()
        out: builtins.list[_Table] = []
        for (name,) in rows:
            if name in self.exclude:
                continue
            cols = cur.execute(
                "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = 'main' "
                "AND table_catalog = current_database() AND table_name = ? ORDER BY ordinal_position", [name]
            ).fetchall()
            pk = cur.execute(
                "SELECT constraint_column_names FROM duckdb_constraints() WHERE schema_name = 'main' "
                "AND database_name = current_database() AND table_name = ? AND constraint_type = 'PRIMARY KEY'",
                [name],
            ).fetchone()
            out.append(_Table(name, [(str(c), str(t)) for c, t in cols], list(pk[0]) if pk else []))
        return self._parents_first(cur, out)

    @staticmethod
    def _parents_first(cur: Any, tables: builtins.list[_Table]) -> builtins.list[_Table]:
        """Tables ordered so that a foreign key's target comes before the table referencing it
        (inserts in this order, deletes in reverse)."""
        refs: dict[str, set[str]] = {}
        for child, parent in cur.execute(
            "SELECT table_name, referenced_table FROM duckdb_constraints() WHERE constraint_type = 'FOREIGN KEY' "
            "AND schema_name = 'main' AND database_name = current_database()"
        ).fetchall():
            refs.setdefault(str(child), set()).add(str(parent))
        by_name = {t.name: t for t in tables}
        ordered: builtins.list[_Table] = []
        seen: set[str] = set()

        def visit(name: str, stack: frozenset[str]) -> None:
            if name in seen or name in stack or name not in by_name:
                return
            for parent in sorted(refs.get(name, ())):
                visit(parent, stack | {name})
            seen.add(name)
            ordered.append(by_name[name])

        for t in tables:
            visit(t.name, frozenset())
        return ordered

    @staticmethod
    def _schema_info(cur: Any) -> tuple[builtins.list[int], str | None, int | None]:
        versions = sorted(duckdb_schema.applied_versions(cur))
        meta = dict(cur.execute("SELECT key, value FROM store_meta").fetchall())
        dims = meta.get("embedding_dimensions")
        return versions, meta.get("embedding_model"), int(dims) if dims else None

    @contextmanager
    def _snapshot_cursor(self) -> Iterator[Any]:
        """A cursor inside one read transaction: every table is read at the same point in time."""
        try:
            with self.provider.consistent_read() as cur:
                yield cur
        except duckdb.Error as exc:
            raise MemoryError(ErrorCode.PROVIDER_ERROR, f"snapshot export failed: {type(exc).__name__}",
                              operation="snapshot", details={"error": str(exc)[:500]}) from exc

    def tenants(self) -> builtins.list[str]:
        """Every tenant with rows in any exported table."""
        with self._snapshot_cursor() as cur:
            found: set[str] = set()
            for table in self._tables(cur):
                found.update(r[0] for r in cur.execute(
                    f"SELECT DISTINCT tenant_id FROM {_ident(table.name)}").fetchall())  # noqa: S608
        return sorted(found)

    # ============================================================================ partitions
    def _partitioning(self, cur: Any, table: _Table, tenant_id: str, prev: TableEntry | None,
                      done: dict[str, Partitioning]) -> Partitioning:
        """How ``table``'s rows of the tenant split into files: by time when the table has a time
        column, else by the time of the row they belong to (``_PARENTS``, from ``done``: the
        partitionings of this push so far), else by hash."""
        types = dict(table.columns)
        target = self.partition_rows
        time_col = next((c for c in _TIME_COLUMNS if types.get(c, "").upper().startswith("TIMESTAMP")), None)
        parent = next(((c, *_PARENTS[c]) for c in _PARENTS if c in types and _PARENTS[c][0] != table.name), None)
        if time_col is None and parent is not None and done.get(parent[1], _NO_RANGE).kind == "range":
            column, parent_table, parent_key = parent
            return Partitioning(kind="parent", columns=[column], bounds=list(done[parent_table].bounds),
                                parent=f"{parent_table}.{parent_key}")
        if time_col is not None:
            bounds = list(prev.partitioning.bounds) if (
                prev is not None and prev.partitioning.kind == "range"
                and prev.partitioning.columns == [time_col]) else []
            col, typ = _ident(time_col), types[time_col]
            tail_sql = f" AND {col} >= $last::{typ}" if bounds else ""
            params: dict[str, Any] = {"tenant": tenant_id}
            if bounds:
                params["last"] = bounds[-1]
            row = cur.execute(f"SELECT count(*) FROM {_ident(table.name)} WHERE tenant_id = $tenant{tail_sql}",  # noqa: S608
                              params).fetchone()
            if int(row[0]) > target:
                new = cur.execute(
                    f"SELECT CAST({col} AS VARCHAR) FROM (SELECT {col}, row_number() OVER (ORDER BY {col}) AS rn "  # noqa: S608
                    f"FROM {_ident(table.name)} WHERE tenant_id = $tenant{tail_sql}) "
                    "WHERE rn > 1 AND (rn - 1) % $target = 0 ORDER BY rn",
                    {**params, "target": target},
                ).fetchall()
                for (b,) in new:
                    if not bounds or b > bounds[-1]:
                        bounds.append(b)
                # the last chunk stays in the (open-ended) tail partition
            return Partitioning(kind="range", columns=[time_col], bounds=bounds)
        key = [c for c in table.primary_key if c != "tenant_id"] or [c for c, _ in table.columns if c != "tenant_id"]
        rows = int(cur.execute(f"SELECT count(*) FROM {_ident(table.name)} WHERE tenant_id = ?",  # noqa: S608
                               [tenant_id]).fetchone()[0])
        wanted = max(1, math.ceil(rows / target))
        buckets = wanted
        if prev is not None and prev.partitioning.kind == "hash" and prev.partitioning.columns == key:
            old = prev.partitioning.buckets
            if old / 4 <= wanted <= old * 4:
                buckets = old
        return Partitioning(kind="hash", columns=key, buckets=buckets)

    @staticmethod
    def _part_source(table: _Table, part: Partitioning, tables: dict[str, _Table]) -> tuple[str, str, dict[str, Any]]:
        """(FROM clause with the table aliased ``_ROW``, the partition-number expression, parameters)."""
        source = f"{_ident(table.name)} AS {_ROW}"
        if part.kind == "range":
            col = part.columns[0]
            typ = dict(table.columns)[col]
            return source, f"len(list_filter($bounds::{typ}[], b -> b <= {_ROW}.{_ident(col)}))", \
                {"bounds": part.bounds}
        if part.kind == "parent" and part.parent:
            parent_table, parent_key = part.parent.split(".", 1)
            typ = dict(tables[parent_table].columns)["created_at"]
            # a row whose parent is gone (NULL time) lands in partition 0; names are quoted identifiers
            return (f"{source} LEFT JOIN (SELECT {_ident(parent_key)} AS k, created_at AS t FROM "  # noqa: S608
                    f"{_ident(parent_table)} WHERE tenant_id = $tenant) AS {_PARENT_ROW} "
                    f"ON {_PARENT_ROW}.k = {_ROW}.{_ident(part.columns[0])}",
                    f"coalesce(len(list_filter($bounds::{typ}[], b -> b <= {_PARENT_ROW}.t)), 0)",
                    {"bounds": part.bounds})
        cols = ", ".join(f"{_ROW}.{_ident(c)}" for c in part.columns)
        return source, f"CAST(hash({cols}) % $buckets AS INTEGER)", {"buckets": part.buckets}

    def _fingerprints(self, cur: Any, table: _Table, part: Partitioning, tenant_id: str,
                      tables: dict[str, _Table]) -> dict[int, tuple[int, str]]:
        source, expr, params = self._part_source(table, part, tables)
        rows = cur.execute(
            f"SELECT {expr} AS p, count(*), bit_xor(hash({_ROW})), sum(hash({_ROW})::HUGEINT) "  # noqa: S608
            f"FROM {source} WHERE {_ROW}.tenant_id = $tenant GROUP BY p",
            {**params, "tenant": tenant_id},
        ).fetchall()
        return {int(p): (int(n), f"{n}:{x}:{s}") for p, n, x, s in rows}

    # ==================================================================================== push
    def push(self, tenant: str | TenantContext | None = None) -> builtins.list[PushReport]:
        """Snapshot one tenant (or every tenant) and publish a new manifest per tenant."""
        tenants = [_tenant_id(tenant)] if tenant is not None else self.tenants()
        return [self._push_one(t) for t in tenants]

    def _push_one(self, tenant_id: str) -> PushReport:
        started = time.perf_counter()
        prefix = tenant_prefix(tenant_id)
        now = self.clock()
        snapshot_id = new_snapshot_id(now)
        written = _Written()
        workdir = Path(tempfile.mkdtemp(prefix="stratamem-snap-"))
        try:
            self.s3.ensure_bucket()
            prev = self.latest_manifest(tenant_id)
            prev_tables = {t.name: t for t in prev.tables} if prev else {}
            # Files of the previous snapshot that are gone from the store cannot be reused.
            missing = self._missing_keys(prev.object_keys()) if prev else set()
            tables: builtins.list[TableEntry] = []
            uploads: builtins.list[tuple[str, int, Path]] = []
            with self._snapshot_cursor() as cur:
                versions, model, dims = self._schema_info(cur)
                catalog = self._tables(cur)
                by_name = {t.name: t for t in catalog}
                parts: dict[str, Partitioning] = {}
                # parents first: a table partitioned by its parent's time ranges needs them
                for table in sorted(catalog, key=lambda t: t.name not in _PARENT_TABLES):
                    parts[table.name] = self._partitioning(cur, table, tenant_id, prev_tables.get(table.name),
                                                           parts)
                for table in catalog:
                    prev_t = prev_tables.get(table.name)
                    part = parts[table.name]
                    prints = self._fingerprints(cur, table, part, tenant_id, by_name)
                    # Equal fingerprints mean the same rows: the old files stay valid even when the
                    # partition's number changed (a split of the tail), so match on the fingerprint.
                    reuse: dict[int, PartitionEntry] = {}
                    if prev_t is not None and prev_t.columns == table.columns:
                        old_parts = {old.fingerprint: old for old in prev_t.partitions
                                     if old.files and not any(f.key in missing for f in old.files)}
                        for p, (_, fp) in prints.items():
                            if fp in old_parts:
                                reuse[p] = old_parts[fp].model_copy(update={"partition": p})
                    dirty = sorted(p for p in prints if p not in reuse)
                    if dirty:
                        out_dir = workdir / table.name
                        source, expr, params = self._part_source(table, part, by_name)
                        cur.execute(
                            f"COPY (SELECT {_ROW}.*, {expr} AS {_PART_COL} FROM {source} "  # noqa: S608
                            f"WHERE {_ROW}.tenant_id = $tenant AND {expr} IN (SELECT unnest($dirty::INTEGER[]))) "
                            f"TO {_literal(out_dir)} (FORMAT PARQUET, PARTITION_BY ({_PART_COL}), COMPRESSION ZSTD)",
                            {**params, "tenant": tenant_id, "dirty": dirty},
                        )
                        for p in dirty:
                            for path in sorted((out_dir / f"{_PART_COL}={p}").glob("*.parquet")):
                                uploads.append((table.name, p, path))
                    tables.append(TableEntry(
                        name=table.name, columns=table.columns, rows=sum(n for n, _ in prints.values()),
                        partitioning=part,
                        partitions=[reuse[p] if p in reuse else PartitionEntry(
                            partition=p, rows=prints[p][0], fingerprint=prints[p][1], files=[],
                            written_by=snapshot_id) for p in sorted(prints)],
                    ))
            # Phase 1: upload under _tmp/, verify, copy to content-addressed keys, verify.
            files = self._upload_all(prefix, snapshot_id, uploads, written)
            by_part: dict[tuple[str, int], builtins.list[FileEntry]] = {}
            for (table_name, p, _), entry in zip(uploads, files, strict=True):
                by_part.setdefault((table_name, p), []).append(entry)
            for t in tables:
                for pe in t.partitions:
                    if pe.written_by == snapshot_id:
                        pe.files = by_part.get((t.name, pe.partition), [])
            manifest = Manifest(
                snapshot_id=snapshot_id, tenant_id=tenant_id, created_at=now,
                parent_id=prev.snapshot_id if prev else None, schema_versions=versions,
                schema_version=max(versions) if versions else 0, embedding_model=model,
                embedding_dimensions=dims, tables=tables,
            )
            self._delete_quietly(written.tmp_keys)
            written.tmp_keys.clear()
            # Phase 2: publish. The manifest is the last object written; before it, nothing changed.
            manifest_key = f"{prefix}manifests/{snapshot_id}.json"
            written.manifest_key = manifest_key
            self.s3.put_bytes(manifest_key, manifest.model_dump_json(indent=1).encode())
            if self.s3.head(manifest_key) is None:
                raise MemoryError(ErrorCode.PROVIDER_ERROR, f"manifest {manifest_key} not visible after upload",
                                  operation="snapshot")
        except BaseException as exc:
            # Unpublish first (the manifest may exist if only its verification failed), then remove
            # what this push wrote; if the manifest cannot be removed, its files must stay.
            unpublished = written.manifest_key is None or self._delete_quietly([written.manifest_key])
            self._delete_quietly(written.tmp_keys + (written.final_keys if unpublished else []))
            SNAPSHOT_FAILURES.labels(operation="push").inc()
            log.error("snapshot push failed for tenant %s (snapshot %s): %s; temporary files removed, previous "
                      "snapshot intact", tenant_id, snapshot_id, exc)
            self._audit(tenant_id, "snapshot.push", "error", {"snapshot_id": snapshot_id, "error": str(exc)[:300]},
                        code=exc.code.value if isinstance(exc, MemoryError) else ErrorCode.PROVIDER_ERROR.value)
            if isinstance(exc, MemoryError) or not isinstance(exc, Exception):
                raise
            raise MemoryError(ErrorCode.PROVIDER_ERROR,
                              f"snapshot push failed ({type(exc).__name__}); the previous snapshot is intact",
                              operation="snapshot", details={"tenant_id": tenant_id, "error": str(exc)[:300]},
                              retryable=True) from exc
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        bytes_written = sum(f.size for f in files)
        pruned = self.prune(tenant_id)
        duration = time.perf_counter() - started
        SNAPSHOT_DURATION.labels(operation="push").observe(duration)
        SNAPSHOT_BYTES.inc(bytes_written)
        SNAPSHOT_SIZE.set(manifest.total_bytes)
        report = PushReport(
            tenant_id=tenant_id, snapshot_id=snapshot_id, manifest_key=manifest_key, created_at=now, published=True,
            tables={t.name: t.rows for t in tables}, rows=manifest.total_rows, files_written=len(files),
            files_reused=sum(len(p.files) for t in tables for p in t.partitions if p.written_by != snapshot_id),
            bytes_written=bytes_written, total_bytes=manifest.total_bytes, duration_s=round(duration, 4),
            pruned_snapshots=pruned,
        )
        log.info("snapshot %s pushed for tenant %s: %d rows, %d files written, %d reused, %d bytes in %.2fs",
                 snapshot_id, tenant_id, report.rows, report.files_written, report.files_reused, bytes_written,
                 duration)
        self._audit(tenant_id, "snapshot.push", "ok", {
            "snapshot_id": snapshot_id, "rows": report.rows, "files_written": report.files_written,
            "files_reused": report.files_reused, "bytes_written": bytes_written})
        return report

    def _missing_keys(self, keys: set[str]) -> set[str]:
        with ThreadPoolExecutor(self.settings.max_workers) as pool:
            heads = list(pool.map(self.s3.head, sorted(keys)))
        return {k for k, h in zip(sorted(keys), heads, strict=True) if h is None}

    def _upload_all(self, prefix: str, snapshot_id: str, uploads: builtins.list[tuple[str, int, Path]],
                    written: _Written) -> builtins.list[FileEntry]:
        def one(item: tuple[int, tuple[str, int, Path]]) -> FileEntry:
            idx, (table, part, path) = item
            return self._upload_one(prefix, snapshot_id, table, part, idx, path, written)

        with ThreadPoolExecutor(self.settings.max_workers) as pool:
            return list(pool.map(one, enumerate(uploads)))

    def _upload_one(self, prefix: str, snapshot_id: str, table: str, part: int, idx: int, path: Path,
                    written: _Written) -> FileEntry:
        import hashlib

        sha = sha256_file(path)
        size = path.stat().st_size
        md5 = hashlib.md5(path.read_bytes(), usedforsecurity=False).hexdigest()
        tmp_key = f"{prefix}_tmp/{snapshot_id}/{table}/p{part:05d}-{idx:05d}.parquet"
        with written.lock:
            written.tmp_keys.append(tmp_key)
        self.s3.put_file(tmp_key, path, sha256=sha)
        self._verify_object(tmp_key, size, sha, md5)
        final_key = f"{prefix}data/{table}/{sha}.parquet"
        existing = self.s3.head(final_key)
        if existing is None or int(existing.get("ContentLength", -1)) != size:
            with written.lock:
                written.final_keys.append(final_key)
            self.s3.copy(tmp_key, final_key)
            self._verify_object(final_key, size, sha, None)
        rows = int(pq.read_metadata(path).num_rows)
        return FileEntry(key=final_key, sha256=sha, size=size, rows=rows)

    def _verify_object(self, key: str, size: int, sha: str, md5: str | None) -> None:
        head = self.s3.head(key)
        problems = []
        if head is None:
            problems.append("missing after upload")
        else:
            if int(head.get("ContentLength", -1)) != size:
                problems.append(f"size {head.get('ContentLength')} != {size}")
            meta_sha = (head.get("Metadata") or {}).get("sha256")
            if meta_sha and meta_sha != sha:
                problems.append("sha256 metadata mismatch")
            etag = str(head.get("ETag", "")).strip('"')
            if md5 and etag and "-" not in etag and etag != md5:
                problems.append("server MD5 (ETag) mismatch")
        if problems:
            raise MemoryError(ErrorCode.PROVIDER_ERROR, f"upload verification failed for {key}: {'; '.join(problems)}",
                              operation="snapshot", details={"key": key, "problems": problems}, retryable=True)

    def _delete_quietly(self, keys: builtins.list[str]) -> bool:
        if not keys:
            return True
        try:
            self.s3.delete(keys)
        except MemoryError as exc:
            log.warning("could not remove %d temporary snapshot objects: %s", len(keys), exc)
            return False
        return True

    # ============================================================================= manifests
    def _manifest_keys(self, tenant_id: str) -> builtins.list[tuple[str, str]]:
        """``(snapshot_id, key)`` of every published manifest, newest first."""
        prefix = tenant_prefix(tenant_id) + "manifests/"
        out = []
        for obj in self.s3.list(prefix):
            key = str(obj["Key"])
            name = key[len(prefix):]
            if name.endswith(".json") and "/" not in name:
                out.append((name[:-5], key))
        return sorted(out, reverse=True)

    def _load_manifest(self, tenant_id: str, key: str) -> Manifest:
        try:
            manifest = Manifest.model_validate_json(self.s3.get_bytes(key))
        except ValidationError as exc:
            raise MemoryError(ErrorCode.PROVIDER_ERROR, f"snapshot manifest {key} is not valid",
                              operation="snapshot", details={"key": key, "error": str(exc)[:300]}) from exc
        return self._checked_manifest(tenant_id, key, manifest)

    @staticmethod
    def _checked_manifest(tenant_id: str, key: str, manifest: Manifest) -> Manifest:
        if manifest.tenant_id != tenant_id or manifest.format_version > FORMAT_VERSION:
            raise MemoryError(ErrorCode.PROVIDER_ERROR, f"snapshot manifest {key} does not belong to this tenant "
                              "or has an unsupported format", operation="snapshot", details={"key": key})
        prefix = tenant_prefix(tenant_id)
        if any(not k.startswith(prefix) for k in manifest.object_keys()):
            raise MemoryError(ErrorCode.PROVIDER_ERROR, f"snapshot manifest {key} references files outside the "
                              "tenant's prefix", operation="snapshot", details={"key": key})
        return manifest

    def latest_manifest(self, tenant: str | TenantContext) -> Manifest | None:
        tenant_id = _tenant_id(tenant)
        for _, key in self._manifest_keys(tenant_id):
            try:
                return self._load_manifest(tenant_id, key)
            except MemoryError as exc:
                log.warning("skipping unreadable manifest %s: %s", key, exc.message)
        return None

    def list(self, tenant: str | TenantContext) -> builtins.list[SnapshotInfo]:
        """Published snapshots of a tenant, newest first."""
        tenant_id = _tenant_id(tenant)
        out = []
        for _, key in self._manifest_keys(tenant_id):
            try:
                m = self._load_manifest(tenant_id, key)
            except MemoryError:
                continue
            out.append(SnapshotInfo(snapshot_id=m.snapshot_id, tenant_id=tenant_id, created_at=m.created_at,
                                    rows=m.total_rows, bytes=m.total_bytes,
                                    files=sum(len(p.files) for t in m.tables for p in t.partitions),
                                    schema_version=m.schema_version, manifest_key=key))
        return out

    def prune(self, tenant: str | TenantContext) -> builtins.list[str]:
        """Apply retention: drop manifests older than ``retention`` (never the newest), then every data
        or temporary object no remaining manifest references (older than ``gc_grace``)."""
        tenant_id = _tenant_id(tenant)
        prefix = tenant_prefix(tenant_id)
        now = self.clock()
        manifests = self._manifest_keys(tenant_id)
        expired = [(sid, key) for sid, key in manifests[1:] if snapshot_time(sid) < now - self.retention]
        if expired:
            self.s3.delete([key for _, key in expired])
        keep: set[str] = set()
        gone = {key for _, key in expired}
        for _, key in manifests:
            if key in gone:
                continue
            with suppress(MemoryError):
                keep |= self._load_manifest(tenant_id, key).object_keys()
        cutoff = now - self.gc_grace
        garbage = [str(o["Key"]) for sub in ("data/", "_tmp/") for o in self.s3.list(prefix + sub)
                   if str(o["Key"]) not in keep and _to_utc(o["LastModified"]) <= cutoff]
        if garbage:
            self.s3.delete(garbage)
        if expired or garbage:
            log.info("snapshot retention for tenant %s: %d snapshots expired, %d objects collected",
                     tenant_id, len(expired), len(garbage))
        return [sid for sid, _ in expired]

    # ============================================================================= pull/restore
    def _candidates(self, tenant_id: str, at: datetime | str | None,
                    snapshot_id: str | None) -> builtins.list[tuple[str, str]]:
        cutoff = _to_utc(at) if at is not None else None
        candidates = [(sid, key) for sid, key in self._manifest_keys(tenant_id)
                      if (snapshot_id is None or sid == snapshot_id)
                      and (cutoff is None or snapshot_time(sid) <= cutoff)]
        if not candidates:
            raise MemoryError(ErrorCode.PROVIDER_ERROR,
                              f"no snapshot of tenant {tenant_id} "
                              + (f"at or before {cutoff.isoformat()}" if cutoff else "exists")
                              + (f" with id {snapshot_id}" if snapshot_id else ""),
                              operation="snapshot", details={"tenant_id": tenant_id, "reason": "no_snapshot"})
        return candidates

    def pull(self, tenant: str | TenantContext, *, at: datetime | str | None = None, snapshot_id: str | None = None,
             fallback: bool = True, budget_s: float | None = None, lazy: bool = False,
             background: bool = True, wait_for: WaitFor = "queryable") -> PullReport:
        """Replace the tenant's data in this store with a snapshot: the newest one (at or before ``at``).

        Every file is checked against the manifest's sha256; a snapshot with a corrupt or missing file
        is rejected (logged, listed in ``report.rejected``) and the next older one is tried unless
        ``fallback=False``. The tenant's rows are replaced in one transaction: readers see the old
        rows or the new ones, never a mix.

        ``lazy=True`` (cold start): only the manifest is read now; the tenant is loaded on a
        background thread, or by its first operation (search, get, write …), whichever comes first —
        see :mod:`stratamem.persistence.lazy`. The call waits up to ``budget_s`` (default 3 s) until
        the tenant can answer searches (``wait_for="queryable"``; ``"loaded"``: until all of it is
        loaded) and reports what was loaded; ``status()`` and ``wait_loaded()`` follow the rest.
        ``background=False``: no background thread, the tenant loads on its first access only.
        """
        _check_wait_for(wait_for)
        tenant_id = _tenant_id(tenant)
        started = time.perf_counter()
        self._catalog = None
        candidates = self._candidates(tenant_id, at, snapshot_id)
        if lazy:
            budget = DEFAULT_COLD_START_BUDGET_S if budget_s is None else budget_s
            loader = self._lazy_loader(budget)
            loader.add(self._plan(tenant_id, candidates, fallback))
            if background:
                loader.start()
            return self._lazy_report(tenant_id, budget, started, wait=background,
                                     queryable=wait_for == "queryable")
        if self._loader is not None:
            self._loader.discard(tenant_id)
        return self._load_tenant(tenant_id, candidates, fallback=fallback, budget_s=budget_s, started=started)

    def restore(self, tenant: str | TenantContext, *, at: datetime | str | None = None,
                snapshot_id: str | None = None) -> PullReport:
        """Point-in-time recovery: the newest snapshot at or before ``at`` (default: now)."""
        return self.pull(tenant, at=at if at is not None else self.clock(), snapshot_id=snapshot_id)

    def _manifest(self, tenant_id: str, snapshot_id: str, key: str) -> Manifest:
        """A published manifest (immutable once written, so cached by id)."""
        cached = self._manifest_cache.get(snapshot_id)
        if cached is not None and cached.tenant_id == tenant_id:
            return cached
        manifest = self._load_manifest(tenant_id, key)
        self._manifest_cache[snapshot_id] = manifest
        return manifest

    def _load_tenant(self, tenant_id: str, candidates: builtins.list[tuple[str, str]], *, fallback: bool = True,
                     budget_s: float | None = None, started: float | None = None, first: Manifest | None = None,
                     rejected: builtins.list[RejectedSnapshot] | None = None,
                     deferred: Callable[[Manifest, dict[str, builtins.list[Path]], Path], None] | None = None,
                     on_readable: Callable[[Manifest], None] | None = None) -> PullReport:
        """Download + verify + hydrate the newest loadable candidate (the eager pull, also used by the
        lazy loader for one tenant). With ``deferred``, cache tables are not imported: their verified
        local files are handed to ``deferred`` once the rest is committed (it owns them after)."""
        started = time.perf_counter() if started is None else started
        rejected = [] if rejected is None else rejected
        seen = {r.snapshot_id for r in rejected}
        for sid, key in candidates:
            if sid in seen:
                continue
            workdir = Path(tempfile.mkdtemp(prefix="stratamem-pull-"))
            handed_over = False
            try:
                manifest = first if first is not None and first.snapshot_id == sid else \
                    self._manifest(tenant_id, sid, key)
                self._check_compatible(manifest)
                defer = frozenset(CACHE_TABLES) if deferred is not None else frozenset()
                readable = None if on_readable is None else (lambda m=manifest: on_readable(m))
                before, nbytes, later = self._hydrate(tenant_id, manifest, workdir, defer=defer,
                                                      on_readable=readable)
                if deferred is not None and any(later.values()):
                    deferred(manifest, later, workdir)
                    handed_over = True
            except MemoryError as exc:
                if self.engine._closed:  # the store went away, not the snapshot: nothing to reject
                    raise
                rejected.append(RejectedSnapshot(snapshot_id=sid, code=exc.code.value, reason=exc.message))
                log.error("snapshot %s of tenant %s rejected: %s", sid, tenant_id, exc.message)
                if exc.code is ErrorCode.CONFIGURATION_ERROR or not fallback:
                    raise
                continue
            finally:
                if not handed_over:
                    shutil.rmtree(workdir, ignore_errors=True)
            duration = time.perf_counter() - started
            SNAPSHOT_DURATION.labels(operation="pull").observe(duration)
            parts = sum(len(t.partitions) for t in manifest.tables)
            files = sum(len(p.files) for t in manifest.tables for p in t.partitions)
            report = PullReport(
                tenant_id=tenant_id, snapshot_id=manifest.snapshot_id, created_at=manifest.created_at,
                tables={t.name: t.rows for t in manifest.tables}, rows=manifest.total_rows,
                bytes_downloaded=nbytes, duration_s=round(duration, 4), rejected=rejected, before=before,
                within_budget=None if budget_s is None else duration <= budget_s,
                files_loaded=files, files_total=files, partitions_loaded=parts, partitions_total=parts,
            )
            log.info("restored tenant %s from snapshot %s: before %s, after %s (%.2fs, %d rejected)",
                     tenant_id, manifest.snapshot_id, before, report.tables, duration, len(rejected))
            self._audit(tenant_id, "snapshot.restore", "ok", {
                "snapshot_id": manifest.snapshot_id, "before": before, "after": report.tables,
                "rejected": [r.snapshot_id for r in rejected]})
            return report
        SNAPSHOT_FAILURES.labels(operation="pull").inc()
        self._audit(tenant_id, "snapshot.restore", "error", {"rejected": [r.snapshot_id for r in rejected]},
                    code=ErrorCode.PROVIDER_ERROR.value)
        raise MemoryError(ErrorCode.PROVIDER_ERROR,
                          f"no loadable snapshot for tenant {tenant_id}: "
                          + "; ".join(f"{r.snapshot_id}: {r.reason}" for r in rejected),
                          operation="snapshot",
                          details={"tenant_id": tenant_id, "rejected": [r.model_dump() for r in rejected]})

    # ------------------------------------------------------------------------------ lazy pull
    def _lazy_loader(self, budget_s: float) -> LazyLoader:
        if self._loader is None:
            self._loader = LazyLoader(self, budget_s)
        return self._loader

    def _plan(self, tenant_id: str, candidates: builtins.list[tuple[str, str]], fallback: bool = True) -> TenantPlan:
        """Read the newest readable, compatible manifest now (the index of what the tenant holds);
        unreadable newer manifests are rejected here, files are checked when the tenant loads."""
        rejected: builtins.list[RejectedSnapshot] = []
        for sid, key in candidates:
            try:
                manifest = self._manifest(tenant_id, sid, key)
                self._check_compatible(manifest)
            except MemoryError as exc:
                rejected.append(RejectedSnapshot(snapshot_id=sid, code=exc.code.value, reason=exc.message))
                if exc.code is ErrorCode.CONFIGURATION_ERROR or not fallback:
                    raise
                continue
            return TenantPlan(tenant_id, candidates if fallback else candidates[:1], manifest, rejected)
        raise MemoryError(ErrorCode.PROVIDER_ERROR,
                          f"no loadable snapshot for tenant {tenant_id}: "
                          + "; ".join(f"{r.snapshot_id}: {r.reason}" for r in rejected),
                          operation="snapshot",
                          details={"tenant_id": tenant_id, "rejected": [r.model_dump() for r in rejected]})

    def _lazy_report(self, tenant_id: str, budget_s: float, started: float, *, wait: bool = True,
                     queryable: bool = False) -> PullReport:
        """Wait (at most until ``budget_s`` after ``started``) for the tenant to be loaded, or only
        queryable; report where it stands."""
        assert self._loader is not None
        if wait:
            self._loader.wait_tenant(tenant_id, max(0.0, budget_s - (time.perf_counter() - started)),
                                     queryable=queryable)
        st = self._loader.state_of(tenant_id)
        assert st is not None
        duration = time.perf_counter() - started
        done = st.state == "loaded"
        manifest = self._manifest_cache.get(st.loaded_snapshot_id or st.snapshot_id or "")
        return PullReport(
            tenant_id=tenant_id, snapshot_id=st.loaded_snapshot_id or st.snapshot_id or "",
            created_at=manifest.created_at if manifest else self.clock(),
            tables={t.name: t.rows for t in manifest.tables} if manifest else {},
            rows=manifest.total_rows if manifest else 0, bytes_downloaded=st.bytes_loaded,
            duration_s=round(duration, 4), rejected=st.rejected, within_budget=duration <= budget_s, lazy=True,
            files_loaded=st.files_total if done else 0, files_total=st.files_total,
            partitions_loaded=st.partitions_loaded, partitions_total=st.partitions_total, complete=done,
            state=st.state,
        )

    def status(self) -> LoadStatus:
        """Progress of lazy loads: loaded/pending partitions and tenants, bytes, elapsed time."""
        if self._loader is None:
            return LoadStatus(budget_s=0.0, elapsed_s=0.0, complete=True, partitions_loaded=0, partitions_pending=0,
                              bytes_loaded=0, bytes_total=0, tenants_loaded=[], tenants_pending=[],
                              tenants_failed=[], tenants=[])
        return self._loader.status()

    def wait_loaded(self, timeout: float | None = None) -> bool:
        """Wait for the lazy loads to finish (loaded or failed; starts the background loader when it
        was not started); True when none is pending."""
        if self._loader is None:
            return True
        self._loader.start()
        return self._loader.wait(timeout)

    def _check_compatible(self, manifest: Manifest) -> None:
        if self._catalog is None:
            with self._snapshot_cursor() as cur:
                versions, model, _ = self._schema_info(cur)
                self._catalog = (set(versions), model, {t.name for t in self._tables(cur)})
        versions_set, model, tables = self._catalog
        newer = sorted(set(manifest.schema_versions) - versions_set)
        absent = [t.name for t in manifest.tables if t.name not in tables]
        if newer or absent:
            raise MemoryError(ErrorCode.CONFIGURATION_ERROR,
                              f"snapshot {manifest.snapshot_id} was written by schema versions {newer or '?'} that "
                              f"this store does not have (tables {absent}); upgrade stratamem before restoring",
                              operation="snapshot", details={"missing_versions": newer, "missing_tables": absent})
        if manifest.embedding_model and model and manifest.embedding_model != model:
            raise MemoryError(ErrorCode.CONFIGURATION_ERROR,
                              f"snapshot {manifest.snapshot_id} holds embeddings of {manifest.embedding_model!r}; "
                              f"this store uses {model!r}", operation="snapshot",
                              details={"snapshot_model": manifest.embedding_model, "store_model": model})

    def _fetch_verified(self, manifest: Manifest, f: FileEntry, path: Path) -> None:
        try:
            size, sha = self.s3.download_file(f.key, path)
        except MemoryError as exc:
            raise MemoryError(ErrorCode.PROVIDER_ERROR,
                              f"snapshot {manifest.snapshot_id}: file {f.key} cannot be read "
                              f"({(exc.details or {}).get('s3_code') or 'error'})",
                              operation="snapshot", details={"key": f.key, "reason": "missing"}) from exc
        if size != f.size or sha != f.sha256:
            raise MemoryError(ErrorCode.PROVIDER_ERROR,
                              f"snapshot {manifest.snapshot_id}: file {f.key} is corrupted (sha256 mismatch)",
                              operation="snapshot",
                              details={"key": f.key, "reason": "checksum_mismatch", "expected": f.sha256,
                                       "actual": sha})

    def _fk_children(self, cur: Any) -> builtins.list[str]:
        names = {t.name for t in self._tables(cur)}
        rows = cur.execute(
            "SELECT DISTINCT table_name FROM duckdb_constraints() WHERE constraint_type = 'FOREIGN KEY' "
            "AND schema_name = 'main' AND database_name = current_database() ORDER BY table_name"
        ).fetchall()
        return [str(r[0]) for r in rows if str(r[0]) in names]

    def _hydrate(self, tenant_id: str, manifest: Manifest, workdir: Path, *, defer: frozenset[str] = frozenset(),
                 on_readable: Callable[[], None] | None = None,
                 ) -> tuple[dict[str, int], int, dict[str, builtins.list[Path]]]:
        """Download + verify the snapshot's files and replace the tenant's rows with them.

        ``on_readable`` (lazy loads): the ``QUERY_TABLES`` are committed first — once every file of
        the snapshot is verified — then ``on_readable()`` is called (searches may run) and the other
        tables follow; a failure then clears the tenant rather than leaving it half loaded.

        Returns the row counts before, the bytes downloaded, and the local files of the ``defer``
        tables (caches) left for :meth:`_insert_deferred`.

        Downloads run on a thread pool, memories first; each table is inserted with one
        ``INSERT … SELECT … FROM read_parquet([...])`` as soon as its files are verified, inside one
        write transaction, so the download of the next tables overlaps the import of the previous
        ones and a corrupt file rolls everything back (the tenant's rows are untouched).

        DuckDB cannot delete a referenced row in the transaction that deleted its referencing rows,
        so when the tenant has rows in tables that reference others by foreign key, every file is
        verified first and those tables are emptied in a first transaction.
        """
        with self._snapshot_cursor() as cur:
            tables = {t.name: t for t in self._tables(cur)}
            children = self._fk_children(cur)
            child_rows = {c: int(cur.execute(f"SELECT count(*) FROM {_ident(c)} WHERE tenant_id = ?",  # noqa: S608
                                             [tenant_id]).fetchone()[0]) for c in children}
        order = builtins.list(tables)  # parents first
        entries = sorted((e for e in manifest.tables if any(p.files for p in e.partitions)),
                         key=lambda e: order.index(e.name))
        # download order: what queries need first (memories, its lexical index), caches last
        rank = {name: i for i, name in enumerate(CRITICAL_TABLES)}
        dl = sorted(entries, key=lambda e: (e.name in defer, rank.get(e.name, len(rank)), order.index(e.name)))
        items = [(e.name, f, workdir / f"{i:06d}.parquet")
                 for i, (e, f) in enumerate((e, f) for e in dl for p in e.partitions for f in p.files)]
        before: dict[str, int] = {}
        with ThreadPoolExecutor(max(1, self.settings.max_workers)) as pool:
            futures: dict[str, builtins.list[Future[None]]] = {}
            for name, f, path in items:
                futures.setdefault(name, []).append(
                    pool.submit(self._fetch_verified, manifest, f, path))
            prebuilt: Future[dict[Any, Any]] | None = None
            try:
                paths = {name: [p for n, _, p in items if n == name] for name in futures}

                def ready(name: str) -> builtins.list[Path]:
                    for fut in futures.get(name, []):
                        fut.result()
                    return paths.get(name, [])

                # the search index's partitions are built from the files while DuckDB imports them
                index_pool = ThreadPoolExecutor(1, thread_name_prefix="stratamem-snapshot-index")
                prebuilt = index_pool.submit(self._prebuild_index, tenant_id, ready) \
                    if "memories" in futures and hasattr(self.provider, "partitions_from_files") else None
                index_pool.shutdown(wait=False)

                if any(child_rows.values()):
                    for name in futures:
                        ready(name)
                    with self.provider.transaction() as cur:
                        for child, n in child_rows.items():
                            before[child] = n
                            cur.execute(f"DELETE FROM {_ident(child)} WHERE tenant_id = ?", [tenant_id])  # noqa: S608
                phased = on_readable is not None and not any(child_rows.values())
                imported = sorted((e for e in entries if e.name not in defer),
                                  key=lambda e: (rank.get(e.name, len(rank)), order.index(e.name))) \
                    if not children else [e for e in entries if e.name not in defer]
                later = [e for e in imported if e.name not in QUERY_TABLES] if phased else []
                with self.provider.bulk_import(), self.provider.transaction() as cur:
                    for name in reversed(order):  # children before the tables they reference
                        if name in before:
                            continue
                        before[name] = int(cur.execute(
                            f"SELECT count(*) FROM {_ident(name)} WHERE tenant_id = ?", [tenant_id]).fetchone()[0])  # noqa: S608
                        if before[name]:
                            cur.execute(f"DELETE FROM {_ident(name)} WHERE tenant_id = ?", [tenant_id])  # noqa: S608
                    for entry in imported:
                        if entry not in later:
                            self._import_table(cur, tenant_id, entry, tables[entry.name], ready)
                    for name in futures:  # every file verified before anything is visible
                        ready(name)
                    if prebuilt is not None:  # the index takes them when this transaction commits
                        self.provider.replace_index_partitions(tenant_id, self._prebuilt(tenant_id, prebuilt))
                self._invalidate_caches(tenant_id, index=prebuilt is None)
                if on_readable is not None and later:
                    on_readable()
                    try:  # the other tables, one short transaction per file: the searches being served
                        # (their access tracking writes) never wait long for the write lock; the
                        # operations that read these tables wait for the whole tenant
                        for entry in later:
                            for path in ready(entry.name):
                                with self.provider.transaction() as cur:
                                    self._import_table(cur, tenant_id, entry, tables[entry.name],
                                                       lambda _name, path=path: [path])  # type: ignore[misc]
                        self._invalidate_caches(tenant_id, index=False)  # not tables the index mirrors
                    except BaseException:
                        with suppress(MemoryError):
                            self._clear_tenant(tenant_id, order)
                        raise
                deferred = {e.name: ready(e.name) for e in entries if e.name in defer}
            except BaseException:
                for futs in futures.values():
                    for fut in futs:
                        fut.cancel()
                if prebuilt is not None and not prebuilt.cancel():
                    with suppress(Exception):  # it reads the files the caller is about to delete
                        prebuilt.result()
                raise
        return before, sum(f.size for _, f, _ in items), deferred

    def _import_table(self, cur: Any, tenant_id: str, entry: TableEntry, table: _Table,
                      ready: Callable[[str], builtins.list[Path]]) -> None:
        t0 = time.perf_counter()
        files = ready(entry.name)
        t1 = time.perf_counter()
        self._insert_files(cur, tenant_id, entry, table, files)
        log.debug("hydrate %s/%s: waited %.3fs for %d files, imported in %.3fs", tenant_id, entry.name, t1 - t0,
                  len(files), time.perf_counter() - t1)

    def _clear_tenant(self, tenant_id: str, order: builtins.list[str]) -> None:
        with self.provider.transaction() as cur:
            for name in reversed(order):
                cur.execute(f"DELETE FROM {_ident(name)} WHERE tenant_id = ?", [tenant_id])  # noqa: S608
        self._invalidate_caches(tenant_id)

    def _prebuild_index(self, tenant_id: str, ready: Callable[[str], builtins.list[Path]]) -> dict[Any, Any]:
        """The tenant's search-index partitions, from the verified files of ``memories`` and
        ``lexical_postings`` (runs beside the import; see ``DuckDBProvider.partitions_from_files``)."""
        started = time.perf_counter()
        parts: dict[Any, Any] = self.provider.partitions_from_files(tenant_id, ready("memories"),
                                                                    ready("lexical_postings"))
        log.debug("hydrate %s: %d search-index partitions (%d rows) built from the files in %.3fs", tenant_id,
                  len(parts), sum(p.n_live for p in parts.values()), time.perf_counter() - started)
        return parts

    @staticmethod
    def _prebuilt(tenant_id: str, prebuilt: Future[dict[Any, Any]]) -> dict[Any, Any]:
        """The prebuilt partitions, or none (each then loads from the table on first use) if the
        build failed: it is only a head start, never a reason to fail the import."""
        try:
            return prebuilt.result()
        except Exception:
            log.warning("hydrate %s: building the search index from the snapshot's files failed; its "
                        "partitions load from the store on first use", tenant_id, exc_info=True)
            return {}

    def _invalidate_caches(self, tenant_id: str, *, index: bool = True) -> None:
        """Rows were replaced behind the engine's back: in-process caches keyed on the tenant's writes
        (the search index's partitions, the knowledge graph's traversal generations) must forget it.
        ``index=False``: the search index was already replaced in the import's transaction, or the
        tables imported are not ones it mirrors."""
        if index:
            self.provider.rows_replaced(tenant_id)
        graph = getattr(self.engine, "graph", None)
        seen: builtins.list[Any] = []
        for holder in (getattr(graph, "queries", None), getattr(graph, "store", None)):
            gens = getattr(holder, "generations", None)
            invalidate = getattr(gens, "invalidate", None)
            if callable(invalidate) and not any(g is gens for g in seen):
                seen.append(gens)
                invalidate(tenant_id)

    @staticmethod
    def _insert_files(cur: Any, tenant_id: str, entry: TableEntry, table: _Table, paths: builtins.list[Path],
                      *, ignore_conflicts: bool = False) -> None:
        if not paths:
            return
        present = {c for c, _ in table.columns}
        cols = ", ".join(_ident(c) for c, _ in entry.columns if c in present)
        cur.execute(
            f"INSERT {'OR IGNORE ' if ignore_conflicts else ''}INTO {_ident(entry.name)} ({cols}) "  # noqa: S608
            f"SELECT {cols} FROM read_parquet($files) WHERE tenant_id = $tenant",
            {"files": [str(p) for p in paths], "tenant": tenant_id},
        )

    def _insert_deferred(self, tenant_id: str, manifest: Manifest, deferred: dict[str, builtins.list[Path]]) -> None:
        """Import cache tables after the tenant is served: rows written meanwhile win (OR IGNORE)."""
        if not any(deferred.values()):
            return
        with self._snapshot_cursor() as cur:
            tables = {t.name: t for t in self._tables(cur)}
        for entry in manifest.tables:
            for path in deferred.get(entry.name, []):
                # one short transaction per file: the writes being served never wait long for the lock
                if self.engine._closed:
                    return
                with self.provider.transaction() as cur:
                    self._insert_files(cur, tenant_id, entry, tables[entry.name], [path], ignore_conflicts=True)

    # ================================================================================== misc
    def _audit(self, tenant_id: str, action: str, outcome: str, details: dict[str, Any],
               code: str | None = None) -> None:
        with suppress(Exception):
            self.engine.audit.record(tenant_id=tenant_id, principal="snapshots", action=action, outcome=outcome,
                                     code=code, details=details)

    def stored_tenants(self) -> builtins.list[str]:
        """Tenants that have a prefix in the bucket."""
        out = []
        paginator = self.s3.client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self.s3.bucket, Delimiter="/"):
            for p in page.get("CommonPrefixes", []):
                name = str(p["Prefix"]).rstrip("/")
                if _TENANT_RE.match(name):
                    out.append(name)
        return sorted(out)


#: What a lazy pull waits for (within its budget): tenants able to answer searches, or fully loaded.
WaitFor = Literal["queryable", "loaded"]


def _check_wait_for(wait_for: str) -> None:
    if wait_for not in ("queryable", "loaded"):
        raise MemoryError(ErrorCode.INVALID_PARAMS, f"wait_for must be 'queryable' or 'loaded', not {wait_for!r}",
                          operation="snapshot", details={"field": "wait_for"})


def open_from_snapshot(
    tenants: str | TenantContext | builtins.list[str] | None = None,
    location: str | None = None,
    *,
    settings: S3Settings | None = None,
    store: S3Store | None = None,
    embedder: Any = None,
    at: datetime | str | None = None,
    budget_s: float = DEFAULT_COLD_START_BUDGET_S,
    lazy: bool = False,
    background: bool = True,
    wait_for: WaitFor = "queryable",
    **memory_kwargs: Any,
) -> tuple[Memory, builtins.list[PullReport]]:
    """Open a store (default: an in-memory DuckDB) and hydrate it from S3 snapshots.

    ``tenants``: one tenant, a list, or None for every tenant with a prefix in the bucket. Without
    an explicit ``embedder`` the hashing embedder is chosen when the snapshot was written with it.
    ``lazy=True``: read the manifests, then load tenants in the background; the first operation on a
    tenant not loaded yet loads it before answering. Returns when every tenant can answer searches
    (``wait_for="queryable"``, the default: its memories and lexical index are loaded; the graph and
    the rest follow in the background) or is completely loaded (``wait_for="loaded"``), or when
    ``budget_s`` is spent, whichever is first (``budget_s=0``: right after the manifests);
    ``mem.snapshots.status()`` reports progress (see :mod:`stratamem.persistence.lazy`).
    ``background=False``: no background loading, each tenant loads on its first access only.
    """
    from ..sdk import Memory

    _check_wait_for(wait_for)

    settings = settings or (store.settings if store is not None else S3Settings.from_env())
    s3 = store or S3Store(settings)
    probed: Manifest | None = None
    if embedder is None:
        embedder, probed = _snapshot_embedder(s3, tenants)
    mem = Memory.open(location or "duckdb:///:memory:", embedder=embedder, **memory_kwargs)
    try:
        mgr = mem.configure_snapshots(settings, store=s3)
        if probed is not None:
            tid = probed.tenant_id
            with suppress(MemoryError):
                mgr._manifest_cache[probed.snapshot_id] = mgr._checked_manifest(
                    tid, f"{tenant_prefix(tid)}manifests/{probed.snapshot_id}.json", probed)
        if tenants is None:
            names = mgr.stored_tenants()
        elif isinstance(tenants, str | TenantContext):
            names = [_tenant_id(tenants)]
        else:
            names = [_tenant_id(t) for t in tenants]
        if lazy:
            # manifests first (every tenant), then the loads: background + on first access
            started = time.perf_counter()
            loader = mgr._lazy_loader(budget_s)
            for t in names:
                loader.add(mgr._plan(t, mgr._candidates(t, at, None)))
            queryable = wait_for == "queryable"
            if background:
                loader.start()
                loader.wait(max(0.0, budget_s - (time.perf_counter() - started)), queryable=queryable)
            reports = [mgr._lazy_report(t, budget_s, started, wait=background, queryable=queryable)
                       for t in names]
            status = loader.status()
            log.info("lazy cold start: %d/%d tenants, %d partitions (%d bytes) loaded in %.2fs (budget %.2fs)%s",
                     len(status.tenants_loaded), len(names), status.partitions_loaded, status.bytes_loaded,
                     status.elapsed_s, budget_s, "; the rest load in the background or on first access"
                     if not status.complete else "")
        else:
            reports = [mgr.pull(t, at=at, budget_s=budget_s) for t in names]
        mgr.last_reports = reports
    except BaseException:
        mem.close()
        raise
    return mem, reports


def _snapshot_embedder(s3: S3Store, tenants: Any) -> tuple[str | None, Manifest | None]:
    """``hashing:DIM`` when the newest manifest was written with the hashing embedder, else None;
    and that manifest (so the pull does not fetch it again)."""
    if isinstance(tenants, builtins.list):
        tenants = tenants[0] if tenants else None
    if tenants is None:
        return None, None
    tenant_id = _tenant_id(tenants)
    prefix = tenant_prefix(tenant_id) + "manifests/"
    keys = sorted((str(o["Key"]) for o in s3.list(prefix)), reverse=True)
    for key in keys:
        with suppress(MemoryError, ValidationError, json.JSONDecodeError):
            m = Manifest.model_validate_json(s3.get_bytes(key))
            if m.tenant_id != tenant_id or key != f"{prefix}{m.snapshot_id}.json":
                return None, None
            if m.embedding_model and m.embedding_model.startswith("hashing") and m.embedding_dimensions:
                return f"hashing:{m.embedding_dimensions}", m
            return None, m
    return None, None


class AsyncSnapshotManager:
    """``AsyncMemory.snapshots``: the same operations as coroutines (run in worker threads)."""

    def __init__(self, manager: SnapshotManager) -> None:
        self.sync = manager

    async def push(self, tenant: str | TenantContext | None = None) -> builtins.list[PushReport]:
        import asyncio

        return await asyncio.to_thread(self.sync.push, tenant)

    async def pull(self, tenant: str | TenantContext, **kwargs: Any) -> PullReport:
        import asyncio

        return await asyncio.to_thread(lambda: self.sync.pull(tenant, **kwargs))

    async def restore(self, tenant: str | TenantContext, *, at: datetime | str | None = None) -> PullReport:
        import asyncio

        return await asyncio.to_thread(lambda: self.sync.restore(tenant, at=at))

    async def list(self, tenant: str | TenantContext) -> builtins.list[SnapshotInfo]:
        import asyncio

        return await asyncio.to_thread(self.sync.list, tenant)
