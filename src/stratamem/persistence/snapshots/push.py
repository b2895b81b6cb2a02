"""Push: export a tenant's changed partitions to Parquet, upload and verify them, publish the manifest."""

from __future__ import annotations

import builtins
import hashlib
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb

from ...encryption import encrypt_file
from ...errors import ErrorCode, MemoryError
from ...model import TenantContext
from ..manifest import (
    FileEntry,
    Manifest,
    PartitionEntry,
    Partitioning,
    PushReport,
    TableEntry,
)
from ..metrics import SNAPSHOT_BYTES, SNAPSHOT_DURATION, SNAPSHOT_FAILURES, SNAPSHOT_SIZE
from ..s3 import sha256_file
from .base import (
    _PARENT_TABLES,
    _PART_COL,
    _ROW,
    _literal,
    _Table,
    _tenant_id,
    _Written,
    log,
    new_snapshot_id,
    tenant_prefix,
)
from .catalog import CatalogMixin
from .retention import RetentionMixin


class PushMixin(CatalogMixin, RetentionMixin):
    """Two-phase, incremental push of tenant snapshots."""

    # ==================================================================================== push
    def push(self, tenant: str | TenantContext | None = None) -> builtins.list[PushReport]:
        """Snapshot one tenant (or every tenant) and publish a new manifest per tenant."""
        tenants = [_tenant_id(tenant)] if tenant is not None else self.tenants()
        return [self._push_one(t) for t in tenants]

    def _push_one(self, tenant_id: str) -> PushReport:
        started = time.perf_counter()
        prefix = tenant_prefix(tenant_id)
        now = self.clock()
        run = _Push(tenant_id, prefix, now, new_snapshot_id(now), Path(tempfile.mkdtemp(prefix="stratamem-snap-")))
        try:
            self.s3.ensure_bucket()
            prev = self.latest_manifest(tenant_id)
            export = self._export(run, prev)
            # Phase 1: upload under _tmp/, verify, copy to content-addressed keys, verify.
            files = self._upload_all(prefix, run.snapshot_id, export.uploads, run.written)
            export.attach(files, run.snapshot_id)
            manifest = export.manifest(run, prev)
            self._delete_quietly(run.written.tmp_keys)
            run.written.tmp_keys.clear()
            manifest_key = self._publish(run, manifest)
        except BaseException as exc:
            self._abandon(run, exc)
            if isinstance(exc, MemoryError) or not isinstance(exc, Exception):
                raise
            raise MemoryError(
                ErrorCode.PROVIDER_ERROR,
                f"snapshot push failed ({type(exc).__name__}); the previous snapshot is intact",
                operation="snapshot",
                details={"tenant_id": tenant_id, "error": str(exc)[:300]},
                retryable=True,
            ) from exc
        finally:
            shutil.rmtree(run.workdir, ignore_errors=True)
        return self._pushed(run, manifest, manifest_key, export.tables, files, started)

    # -- the steps of _push_one -----------------------------------------------------------------
    def _export(self, run: _Push, prev: Manifest | None) -> _Export:
        """Every exported table of the tenant, read at one point in time: its partitioning, the
        partitions of ``prev`` that still hold the same rows, and Parquet files of the others."""
        prev_tables = {t.name: t for t in prev.tables} if prev else {}
        # Files of the previous snapshot that are gone from the store cannot be reused.
        missing = self._missing_keys(prev.object_keys()) if prev else set()
        with self._snapshot_cursor() as cur:
            export = _Export(*self._schema_info(cur))
            catalog = self._tables(cur)
            by_name = {t.name: t for t in catalog}
            parts: dict[str, Partitioning] = {}
            # parents first: a table partitioned by its parent's time ranges needs them
            for table in sorted(catalog, key=lambda t: t.name not in _PARENT_TABLES):
                parts[table.name] = self._partitioning(cur, table, run.tenant_id, prev_tables.get(table.name), parts)
            for table in catalog:
                entry, uploads = self._export_table(
                    cur, run, table, parts[table.name], prev_tables.get(table.name), missing, by_name
                )
                export.tables.append(entry)
                export.uploads += uploads
        return export

    def _export_table(
        self,
        cur: Any,
        run: _Push,
        table: _Table,
        part: Partitioning,
        prev_t: TableEntry | None,
        missing: set[str],
        by_name: dict[str, _Table],
    ) -> tuple[TableEntry, builtins.list[tuple[str, int, Path]]]:
        """One table's manifest entry and the files written for its changed partitions."""
        prints = self._fingerprints(cur, table, part, run.tenant_id, by_name)
        reuse = _reusable(prev_t, table, prints, missing, self.encryption_key.key_id if self.encryption_key else None)
        dirty = sorted(p for p in prints if p not in reuse)
        uploads = self._copy_partitions(cur, run, table, part, by_name, dirty) if dirty else []
        entry = TableEntry(
            name=table.name,
            columns=table.columns,
            rows=sum(n for n, _ in prints.values()),
            partitioning=part,
            partitions=[
                reuse[p]
                if p in reuse
                else PartitionEntry(
                    partition=p,
                    rows=prints[p][0],
                    fingerprint=prints[p][1],
                    files=[],
                    written_by=run.snapshot_id,
                )
                for p in sorted(prints)
            ],
        )
        return entry, uploads

    def _copy_partitions(
        self,
        cur: Any,
        run: _Push,
        table: _Table,
        part: Partitioning,
        by_name: dict[str, _Table],
        dirty: builtins.list[int],
    ) -> builtins.list[tuple[str, int, Path]]:
        """``COPY`` the tenant's rows of the ``dirty`` partitions to Parquet files (one directory per partition)."""
        out_dir = run.workdir / table.name
        source, expr, params = self._part_source(table, part, by_name)
        cur.execute(
            f"COPY (SELECT {_ROW}.*, {expr} AS {_PART_COL} FROM {source} "
            f"WHERE {_ROW}.tenant_id = $tenant AND {expr} IN (SELECT unnest($dirty::INTEGER[]))) "
            f"TO {_literal(out_dir)} (FORMAT PARQUET, PARTITION_BY ({_PART_COL}), COMPRESSION ZSTD)",
            {**params, "tenant": run.tenant_id, "dirty": dirty},
        )
        return [
            (table.name, p, path) for p in dirty for path in sorted((out_dir / f"{_PART_COL}={p}").glob("*.parquet"))
        ]

    def _publish(self, run: _Push, manifest: Manifest) -> str:
        """Phase 2: the manifest is the last object written; before it, nothing changed."""
        manifest_key = f"{run.prefix}manifests/{run.snapshot_id}.json"
        run.written.manifest_key = manifest_key
        self.s3.put_bytes(manifest_key, manifest.model_dump_json(indent=1).encode())
        if self.s3.head(manifest_key) is None:
            raise MemoryError(
                ErrorCode.PROVIDER_ERROR, f"manifest {manifest_key} not visible after upload", operation="snapshot"
            )
        return manifest_key

    def _abandon(self, run: _Push, exc: BaseException) -> None:
        """A failed push: unpublish first (the manifest may exist if only its verification failed),
        then remove what this push wrote; if the manifest cannot be removed, its files must stay."""
        written = run.written
        unpublished = written.manifest_key is None or self._delete_quietly([written.manifest_key])
        self._delete_quietly(written.tmp_keys + (written.final_keys if unpublished else []))
        SNAPSHOT_FAILURES.labels(operation="push").inc()
        log.error(
            "snapshot push failed for tenant %s (snapshot %s): %s; temporary files removed, previous snapshot intact",
            run.tenant_id,
            run.snapshot_id,
            exc,
        )
        self._audit(
            run.tenant_id,
            "snapshot.push",
            "error",
            {"snapshot_id": run.snapshot_id, "error": str(exc)[:300]},
            code=exc.code.value if isinstance(exc, MemoryError) else ErrorCode.PROVIDER_ERROR.value,
        )

    def _pushed(
        self,
        run: _Push,
        manifest: Manifest,
        manifest_key: str,
        tables: builtins.list[TableEntry],
        files: builtins.list[FileEntry],
        started: float,
    ) -> PushReport:
        """After a published push: retention, metrics, log, audit, and the report."""
        tenant_id, snapshot_id = run.tenant_id, run.snapshot_id
        bytes_written = sum(f.size for f in files)
        pruned = self.prune(tenant_id)
        duration = time.perf_counter() - started
        SNAPSHOT_DURATION.labels(operation="push").observe(duration)
        SNAPSHOT_BYTES.inc(bytes_written)
        SNAPSHOT_SIZE.set(manifest.total_bytes)
        report = PushReport(
            tenant_id=tenant_id,
            snapshot_id=snapshot_id,
            manifest_key=manifest_key,
            created_at=run.now,
            published=True,
            tables={t.name: t.rows for t in tables},
            rows=manifest.total_rows,
            files_written=len(files),
            files_reused=sum(len(p.files) for t in tables for p in t.partitions if p.written_by != snapshot_id),
            bytes_written=bytes_written,
            total_bytes=manifest.total_bytes,
            duration_s=round(duration, 4),
            pruned_snapshots=pruned,
        )
        log.info(
            "snapshot %s pushed for tenant %s: %d rows, %d files written, %d reused, %d bytes in %.2fs",
            snapshot_id,
            tenant_id,
            report.rows,
            report.files_written,
            report.files_reused,
            bytes_written,
            duration,
        )
        self._audit(
            tenant_id,
            "snapshot.push",
            "ok",
            {
                "snapshot_id": snapshot_id,
                "rows": report.rows,
                "files_written": report.files_written,
                "files_reused": report.files_reused,
                "bytes_written": bytes_written,
            },
        )
        return report

    def _missing_keys(self, keys: set[str]) -> set[str]:
        with ThreadPoolExecutor(self.settings.max_workers) as pool:
            heads = list(pool.map(self.s3.head, sorted(keys)))
        return {k for k, h in zip(sorted(keys), heads, strict=True) if h is None}

    def _upload_all(
        self, prefix: str, snapshot_id: str, uploads: builtins.list[tuple[str, int, Path]], written: _Written
    ) -> builtins.list[FileEntry]:
        def one(item: tuple[int, tuple[str, int, Path]]) -> FileEntry:
            idx, (table, part, path) = item
            return self._upload_one(prefix, snapshot_id, table, part, idx, path, written)

        with ThreadPoolExecutor(self.settings.max_workers) as pool:
            return list(pool.map(one, enumerate(uploads)))

    def _upload_one(
        self, prefix: str, snapshot_id: str, table: str, part: int, idx: int, path: Path, written: _Written
    ) -> FileEntry:
        rows = _parquet_rows(path)
        key = self.encryption_key
        suffix = ".parquet"
        if key is not None:  # only the encrypted file leaves the machine
            sealed = path.with_name(path.name + ".enc")
            encrypt_file(path, sealed, key)
            path, suffix = sealed, ".parquet.enc"
        sha = sha256_file(path)
        size = path.stat().st_size
        md5 = hashlib.md5(path.read_bytes(), usedforsecurity=False).hexdigest()
        tmp_key = f"{prefix}_tmp/{snapshot_id}/{table}/p{part:05d}-{idx:05d}{suffix}"
        with written.lock:
            written.tmp_keys.append(tmp_key)
        self.s3.put_file(tmp_key, path, sha256=sha)
        self._verify_object(tmp_key, size, sha, md5)
        final_key = f"{prefix}data/{table}/{sha}{suffix}"
        existing = self.s3.head(final_key)
        if existing is None or int(existing.get("ContentLength", -1)) != size:
            with written.lock:
                written.final_keys.append(final_key)
            self.s3.copy(tmp_key, final_key)
            self._verify_object(final_key, size, sha, None)
        return FileEntry(key=final_key, sha256=sha, size=size, rows=rows, key_id=key.key_id if key else None)

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
            raise MemoryError(
                ErrorCode.PROVIDER_ERROR,
                f"upload verification failed for {key}: {'; '.join(problems)}",
                operation="snapshot",
                details={"key": key, "problems": problems},
                retryable=True,
            )

    def _delete_quietly(self, keys: builtins.list[str]) -> bool:
        if not keys:
            return True
        try:
            self.s3.delete(keys)
        except MemoryError as exc:
            log.warning("could not remove %d temporary snapshot objects: %s", len(keys), exc)
            return False
        return True


@dataclass
class _Push:
    """One push of one tenant: its names, its working directory and what it wrote so far."""

    tenant_id: str
    prefix: str
    now: datetime
    snapshot_id: str
    workdir: Path
    written: _Written = field(default_factory=_Written)


@dataclass
class _Export:
    """What a push read from the store: schema, manifest entries, and the files to upload."""

    versions: builtins.list[int]
    model: str | None
    dims: int | None
    tables: builtins.list[TableEntry] = field(default_factory=builtins.list)
    uploads: builtins.list[tuple[str, int, Path]] = field(default_factory=builtins.list)

    def attach(self, files: builtins.list[FileEntry], snapshot_id: str) -> None:
        """The uploaded files into the entries of the partitions this push wrote."""
        by_part: dict[tuple[str, int], builtins.list[FileEntry]] = {}
        for (table_name, p, _), entry in zip(self.uploads, files, strict=True):
            by_part.setdefault((table_name, p), []).append(entry)
        for t in self.tables:
            for pe in t.partitions:
                if pe.written_by == snapshot_id:
                    pe.files = by_part.get((t.name, pe.partition), [])

    def manifest(self, run: _Push, prev: Manifest | None) -> Manifest:
        return Manifest(
            snapshot_id=run.snapshot_id,
            tenant_id=run.tenant_id,
            created_at=run.now,
            parent_id=prev.snapshot_id if prev else None,
            schema_versions=self.versions,
            schema_version=max(self.versions) if self.versions else 0,
            embedding_model=self.model,
            embedding_dimensions=self.dims,
            tables=self.tables,
        )


def _reusable(
    prev_t: TableEntry | None,
    table: _Table,
    prints: dict[int, tuple[int, str]],
    missing: set[str],
    key_id: str | None,
) -> dict[int, PartitionEntry]:
    """Partitions of the previous snapshot that hold the same rows (equal fingerprints), by new number.

    The old files stay valid even when the partition's number changed (a split of the tail), so the
    match is on the fingerprint; files gone from the bucket are not reused, nor files encrypted
    otherwise than this push encrypts (``key_id``: after a key rotation, or encryption turned on or
    off, every partition is written again)."""
    reuse: dict[int, PartitionEntry] = {}
    if prev_t is None or prev_t.columns != table.columns:
        return reuse
    old_parts = {
        old.fingerprint: old
        for old in prev_t.partitions
        if old.files and not any(f.key in missing or f.key_id != key_id for f in old.files)
    }
    for p, (_, fp) in prints.items():
        if fp in old_parts:
            reuse[p] = old_parts[fp].model_copy(update={"partition": p})
    return reuse


def _parquet_rows(path: Path) -> int:
    """The number of rows of a Parquet file, from its footer (DuckDB reads no row group)."""
    with duckdb.connect() as con:
        row = con.execute("SELECT num_rows FROM parquet_file_metadata(?)", [str(path)]).fetchone()
    return int(row[0]) if row else 0
