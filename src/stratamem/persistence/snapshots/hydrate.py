"""Hydrate: download and verify a snapshot's files and replace the tenant's rows with them."""

from __future__ import annotations

import builtins
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...encryption import decrypt_file, is_encrypted
from ...errors import ErrorCode, MemoryError
from ..lazy import QUERY_TABLES
from ..manifest import (
    FileEntry,
    Manifest,
    TableEntry,
)
from .base import CRITICAL_TABLES, _ident, _Table, log
from .catalog import CatalogMixin


class HydrateMixin(CatalogMixin):
    """Import of a verified snapshot into the store, and the caches that must forget the old rows."""

    def _fetch_verified(self, manifest: Manifest, f: FileEntry, path: Path) -> None:
        try:
            size, sha = self.s3.download_file(f.key, path)
        except MemoryError as exc:
            raise MemoryError(
                ErrorCode.PROVIDER_ERROR,
                f"snapshot {manifest.snapshot_id}: file {f.key} cannot be read "
                f"({(exc.details or {}).get('s3_code') or 'error'})",
                operation="snapshot",
                details={"key": f.key, "reason": "missing"},
            ) from exc
        if size != f.size or sha != f.sha256:
            raise MemoryError(
                ErrorCode.PROVIDER_ERROR,
                f"snapshot {manifest.snapshot_id}: file {f.key} is corrupted (sha256 mismatch)",
                operation="snapshot",
                details={"key": f.key, "reason": "checksum_mismatch", "expected": f.sha256, "actual": sha},
            )
        if f.key_id is not None or is_encrypted(path):
            sealed = path.with_name(path.name + ".enc")
            path.replace(sealed)
            try:
                decrypt_file(sealed, path, self.decryption_keys)
            except MemoryError as exc:
                exc.message = f"snapshot {manifest.snapshot_id}: file {f.key}: {exc.message}"
                exc.details["key"] = f.key
                raise
            finally:
                sealed.unlink(missing_ok=True)

    def _hydrate(
        self,
        tenant_id: str,
        manifest: Manifest,
        workdir: Path,
        *,
        defer: frozenset[str] = frozenset(),
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
        tables, children, child_rows = self._tenant_catalog(tenant_id)
        order = builtins.list(tables)  # parents first
        entries = sorted(
            (e for e in manifest.tables if any(p.files for p in e.partitions)), key=lambda e: order.index(e.name)
        )
        rank = {name: i for i, name in enumerate(CRITICAL_TABLES)}
        items = self._download_items(entries, order, rank, defer, workdir)
        before: dict[str, int] = {}
        with ThreadPoolExecutor(max(1, self.settings.max_workers)) as pool:
            downloads = _Downloads.start(pool, items, lambda f, path: self._fetch_verified(manifest, f, path))
            prebuilt: Future[dict[Any, Any]] | None = None
            try:
                prebuilt = self._start_prebuild(tenant_id, downloads)
                if any(child_rows.values()):
                    self._clear_fk_children(tenant_id, child_rows, downloads, before)
                phased = on_readable is not None and not any(child_rows.values())
                imported = self._import_order(entries, defer, rank, order, children)
                later = [e for e in imported if e.name not in QUERY_TABLES] if phased else []
                now = [e for e in imported if e not in later]
                self._replace_rows(tenant_id, order, now, tables, downloads, prebuilt, before)
                self._invalidate_caches(tenant_id, index=prebuilt is None)
                if on_readable is not None and later:
                    on_readable()
                    self._import_rest(tenant_id, later, tables, downloads, order)
                deferred = {e.name: downloads.ready(e.name) for e in entries if e.name in defer}
            except BaseException:
                downloads.cancel()
                _drop_prebuild(prebuilt)
                raise
        return before, sum(f.size for _, f, _ in items), deferred

    # -- the steps of _hydrate ------------------------------------------------------------------
    def _tenant_catalog(self, tenant_id: str) -> tuple[dict[str, _Table], builtins.list[str], dict[str, int]]:
        """The store's exported tables (parents first), the tables that reference others by foreign
        key, and the tenant's row count in each of those."""
        with self._snapshot_cursor() as cur:
            tables = {t.name: t for t in self._tables(cur)}
            children = self._fk_children(cur)
            child_rows = {
                c: int(cur.execute(f"SELECT count(*) FROM {_ident(c)} WHERE tenant_id = ?", [tenant_id]).fetchone()[0])
                for c in children
            }
        return tables, children, child_rows

    @staticmethod
    def _download_items(
        entries: builtins.list[TableEntry],
        order: builtins.list[str],
        rank: dict[str, int],
        defer: frozenset[str],
        workdir: Path,
    ) -> builtins.list[tuple[str, FileEntry, Path]]:
        """(table, file, local path) of every file, in download order: what queries need first
        (memories, its lexical index), caches last."""
        dl = sorted(entries, key=lambda e: (e.name in defer, rank.get(e.name, len(rank)), order.index(e.name)))
        return [
            (e.name, f, workdir / f"{i:06d}.parquet")
            for i, (e, f) in enumerate((e, f) for e in dl for p in e.partitions for f in p.files)
        ]

    def _start_prebuild(self, tenant_id: str, downloads: _Downloads) -> Future[dict[Any, Any]] | None:
        """The search index's partitions, built from the files while DuckDB imports them."""
        if "memories" not in downloads.futures or not hasattr(self.provider, "partitions_from_files"):
            return None
        index_pool = ThreadPoolExecutor(1, thread_name_prefix="stratamem-snapshot-index")
        prebuilt = index_pool.submit(self._prebuild_index, tenant_id, downloads.ready)
        index_pool.shutdown(wait=False)
        return prebuilt

    def _clear_fk_children(
        self, tenant_id: str, child_rows: dict[str, int], downloads: _Downloads, before: dict[str, int]
    ) -> None:
        """Every file verified, then the tenant's rows of the referencing tables deleted in a
        transaction of their own (recorded in ``before``)."""
        downloads.wait_all()
        with self.provider.transaction() as cur:
            for child, n in child_rows.items():
                before[child] = n
                cur.execute(f"DELETE FROM {_ident(child)} WHERE tenant_id = ?", [tenant_id])

    @staticmethod
    def _import_order(
        entries: builtins.list[TableEntry],
        defer: frozenset[str],
        rank: dict[str, int],
        order: builtins.list[str],
        children: builtins.list[str],
    ) -> builtins.list[TableEntry]:
        """The tables to import now: critical ones first, unless foreign keys impose parents first."""
        if children:
            return [e for e in entries if e.name not in defer]
        return sorted(
            (e for e in entries if e.name not in defer),
            key=lambda e: (rank.get(e.name, len(rank)), order.index(e.name)),
        )

    def _replace_rows(
        self,
        tenant_id: str,
        order: builtins.list[str],
        imported: builtins.list[TableEntry],
        tables: dict[str, _Table],
        downloads: _Downloads,
        prebuilt: Future[dict[Any, Any]] | None,
        before: dict[str, int],
    ) -> None:
        """One transaction: the tenant's rows deleted (children before the tables they reference;
        counts recorded in ``before``), ``imported`` inserted as their files are verified, every file
        verified before anything is visible; the prebuilt index partitions are taken at the commit."""
        with self.provider.bulk_import(), self.provider.transaction() as cur:
            for name in reversed(order):
                if name in before:
                    continue
                before[name] = int(
                    cur.execute(f"SELECT count(*) FROM {_ident(name)} WHERE tenant_id = ?", [tenant_id]).fetchone()[0]
                )
                if before[name]:
                    cur.execute(f"DELETE FROM {_ident(name)} WHERE tenant_id = ?", [tenant_id])
            for entry in imported:
                self._import_table(cur, tenant_id, entry, tables[entry.name], downloads.ready)
            downloads.wait_all()
            if prebuilt is not None:  # the index takes them when this transaction commits
                self.provider.replace_index_partitions(tenant_id, self._prebuilt(tenant_id, prebuilt))

    def _import_rest(
        self,
        tenant_id: str,
        later: builtins.list[TableEntry],
        tables: dict[str, _Table],
        downloads: _Downloads,
        order: builtins.list[str],
    ) -> None:
        """The tables left after the tenant became readable, one short transaction per file: the
        searches being served (their access tracking writes) never wait long for the write lock;
        the operations that read these tables wait for the whole tenant. A failure clears the tenant
        rather than leaving it half loaded."""
        try:
            for entry in later:
                for path in downloads.ready(entry.name):
                    with self.provider.transaction() as cur:
                        self._import_table(cur, tenant_id, entry, tables[entry.name], _fixed_files([path]))
            self._invalidate_caches(tenant_id, index=False)  # not tables the index mirrors
        except BaseException:
            with suppress(MemoryError):
                self._clear_tenant(tenant_id, order)
            raise

    def _import_table(
        self, cur: Any, tenant_id: str, entry: TableEntry, table: _Table, ready: Callable[[str], builtins.list[Path]]
    ) -> None:
        t0 = time.perf_counter()
        files = ready(entry.name)
        t1 = time.perf_counter()
        self._insert_files(cur, tenant_id, entry, table, files)
        log.debug(
            "hydrate %s/%s: waited %.3fs for %d files, imported in %.3fs",
            tenant_id,
            entry.name,
            t1 - t0,
            len(files),
            time.perf_counter() - t1,
        )

    def _clear_tenant(self, tenant_id: str, order: builtins.list[str]) -> None:
        with self.provider.transaction() as cur:
            for name in reversed(order):
                cur.execute(f"DELETE FROM {_ident(name)} WHERE tenant_id = ?", [tenant_id])
        self._invalidate_caches(tenant_id)

    def _prebuild_index(self, tenant_id: str, ready: Callable[[str], builtins.list[Path]]) -> dict[Any, Any]:
        """The tenant's search-index partitions, from the verified files of ``memories`` and
        ``lexical_postings`` (runs beside the import; see ``DuckDBProvider.partitions_from_files``)."""
        started = time.perf_counter()
        parts: dict[Any, Any] = self.provider.partitions_from_files(
            tenant_id, ready("memories"), ready("lexical_postings")
        )
        log.debug(
            "hydrate %s: %d search-index partitions (%d rows) built from the files in %.3fs",
            tenant_id,
            len(parts),
            sum(p.n_live for p in parts.values()),
            time.perf_counter() - started,
        )
        return parts

    @staticmethod
    def _prebuilt(tenant_id: str, prebuilt: Future[dict[Any, Any]]) -> dict[Any, Any]:
        """The prebuilt partitions, or none (each then loads from the table on first use) if the
        build failed: it is only a head start, never a reason to fail the import."""
        try:
            return prebuilt.result()
        except Exception:
            log.warning(
                "hydrate %s: building the search index from the snapshot's files failed; its "
                "partitions load from the store on first use",
                tenant_id,
                exc_info=True,
            )
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
    def _insert_files(
        cur: Any,
        tenant_id: str,
        entry: TableEntry,
        table: _Table,
        paths: builtins.list[Path],
        *,
        ignore_conflicts: bool = False,
    ) -> None:
        if not paths:
            return
        present = {c for c, _ in table.columns}
        cols = ", ".join(_ident(c) for c, _ in entry.columns if c in present)
        cur.execute(
            f"INSERT {'OR IGNORE ' if ignore_conflicts else ''}INTO {_ident(entry.name)} ({cols}) "
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
                if self.engine.closed:
                    return
                with self.provider.transaction() as cur:
                    self._insert_files(cur, tenant_id, entry, tables[entry.name], [path], ignore_conflicts=True)


@dataclass
class _Downloads:
    """A snapshot's files downloading and being verified on a thread pool, by table."""

    futures: dict[str, builtins.list[Future[None]]]
    paths: dict[str, builtins.list[Path]]

    @classmethod
    def start(
        cls,
        pool: ThreadPoolExecutor,
        items: builtins.list[tuple[str, FileEntry, Path]],
        fetch: Callable[[FileEntry, Path], None],
    ) -> _Downloads:
        futures: dict[str, builtins.list[Future[None]]] = {}
        for name, f, path in items:
            futures.setdefault(name, []).append(pool.submit(fetch, f, path))
        return cls(futures, {name: [p for n, _, p in items if n == name] for name in futures})

    def ready(self, name: str) -> builtins.list[Path]:
        """The local files of table ``name``, once every one of them is downloaded and verified."""
        for fut in self.futures.get(name, []):
            fut.result()
        return self.paths.get(name, [])

    def wait_all(self) -> None:
        for name in self.futures:
            self.ready(name)

    def cancel(self) -> None:
        for futs in self.futures.values():
            for fut in futs:
                fut.cancel()


def _fixed_files(paths: builtins.list[Path]) -> Callable[[str], builtins.list[Path]]:
    return lambda _name: paths


def _drop_prebuild(prebuilt: Future[dict[Any, Any]] | None) -> None:
    """Stop or wait out an index build: it reads the files the caller is about to delete."""
    if prebuilt is not None and not prebuilt.cancel():
        with suppress(Exception):
            prebuilt.result()
