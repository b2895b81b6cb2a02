"""Opening a DuckDB store (schema checks and migrations), closing it, health and capabilities."""

from __future__ import annotations

from contextlib import suppress
from typing import Any

import duckdb

from ...errors import ErrorCode, MemoryError
from ...model import ProviderCapabilities
from ...retrieval.search_index import (
    SearchIndex,
)
from ..base import (
    StoreInfo,
)
from ..contracts import concern_flags
from . import schema as duckdb_schema
from .connection import release_result
from .database import _REGISTRY, _REGISTRY_LOCK, log
from .index import SearchIndexMixin


class StoreMixin(SearchIndexMixin):
    """Initialise, migrate and shut down the store."""

    # -------------------------------------------------------------------------------- lifecycle
    def initialize(self, embedding_model: str, dimensions: int) -> StoreInfo:
        if not isinstance(dimensions, int) or not 1 <= dimensions <= 16_384:
            raise MemoryError(ErrorCode.CONFIGURATION_ERROR, f"invalid embedding dimensions {dimensions!r}")
        if self._db is None:
            self._db = self._open_database()
        db = self.db
        try:
            with db.write_lock:
                cur = self._cursor()
                duckdb_schema.ensure_bookkeeping(cur)
                meta = dict(cur.execute("SELECT key, value FROM store_meta").fetchall())
                if meta:
                    stored_dims = int(meta["embedding_dimensions"])
                    stored_model = meta["embedding_model"]
                    if stored_dims != dimensions:
                        raise MemoryError(
                            ErrorCode.CONFIGURATION_ERROR,
                            f"store {self.path} holds {stored_dims}-dimensional embeddings of "
                            f"{stored_model!r}, but the configured embedder {embedding_model!r} produces "
                            f"{dimensions} dimensions",
                            operation="open",
                            details={
                                "store_dimensions": stored_dims,
                                "embedder_dimensions": dimensions,
                                "store_model": stored_model,
                                "embedder_model": embedding_model,
                            },
                        )
                    if stored_model != embedding_model:
                        raise MemoryError(
                            ErrorCode.CONFIGURATION_ERROR,
                            f"store {self.path} was built with embedding model {stored_model!r}; the "
                            f"configured embedder is {embedding_model!r} (vectors are not comparable). "
                            "Re-embed with `stratamem export` / `import` into a new store.",
                            operation="open",
                            details={
                                "store_model": stored_model,
                                "embedder_model": embedding_model,
                                "store_dimensions": stored_dims,
                                "embedder_dimensions": dimensions,
                            },
                        )
                self._migrate(cur, dimensions)
                if not meta:
                    cur.execute(
                        "INSERT INTO store_meta VALUES ('embedding_model', ?), ('embedding_dimensions', ?)",
                        [embedding_model, str(dimensions)],
                    )
                db.dims = dimensions
                db.model = embedding_model
                # rows a crashed process appended and never folded (we hold the write lock)
                row = cur.execute(f"SELECT count(*) FROM {duckdb_schema.ACCESS_LOG_TABLE}").fetchone()
                db.access_pending = db.access_pending or bool(row and row[0])
                if db.search_index is None:
                    db.search_index = SearchIndex(dimensions, db.write_lock, store=self._ann_store())
                self._apply_index_settings()
                version = duckdb_schema.current_version(cur)
                # The opening thread may never read the store again (``stratamem serve`` opens it on
                # the thread that then runs the event loop): end its last statement's transaction.
                release_result(cur)
        except duckdb.Error as exc:
            self.shutdown()
            raise MemoryError(
                ErrorCode.CONFIGURATION_ERROR, f"cannot initialise store {self.path}: {exc}", operation="open"
            ) from exc
        except MemoryError:
            self.shutdown()
            raise
        self._info = StoreInfo(embedding_model=embedding_model, dimensions=dimensions, schema_version=version)
        return self._info

    def _migrate(self, cur: Any, dims: int) -> None:
        # Applied-set, not max-version: features merged in any order still get every migration.
        done = duckdb_schema.applied_versions(cur)
        for migration in duckdb_schema.all_migrations():
            if migration.version in done:
                continue
            cur.execute("BEGIN TRANSACTION")
            try:
                migration.apply(cur, dims)
                duckdb_schema.record(cur, migration)
                cur.execute("COMMIT")
            except Exception as exc:
                cur.execute("ROLLBACK")
                raise MemoryError(
                    ErrorCode.CONFIGURATION_ERROR,
                    f"schema migration {migration.version} ({migration.description}) failed and was "
                    f"rolled back; the store was not opened: {exc}",
                    operation="open",
                    details={"migration": migration.version},
                ) from exc

    def shutdown(self) -> None:
        if self._db is not None:  # this provider's queued appends (and any other's: one queue per file)
            self._flush_appends()
        if self._db is not None and self._db.access_pending:
            try:
                self.settle_access()
            except Exception:  # the rows stay in the log; the next open folds them
                log.warning("could not fold the access log at close", exc_info=True)
        db, self._db = self._db, None
        if db is None:
            return
        with _REGISTRY_LOCK:
            db.refcount -= 1
            if db.refcount > 0:
                return
            _REGISTRY.pop(db.path, None)
            cursors, db.cursors = db.cursors, []
        db.appends.close()  # the last provider on the file: nothing can queue any more
        if db.search_index is not None:  # graphs built or grown since they were saved
            db.search_index.close()
        with db.write_lock:
            for cur in cursors:
                with suppress(duckdb.Error):
                    cur.close()
            with suppress(duckdb.Error):
                db.conn.execute("CHECKPOINT")
            db.conn.close()

    def ping(self) -> None:
        with self._read() as cur:
            cur.execute("SELECT 1").fetchone()

    def memory_usage(self) -> dict[str, int]:
        """DuckDB's memory in this process by tag (``duckdb_memory()``: base tables, indexes, the
        write-ahead log, hash tables…); only the tags that hold memory."""
        if self._db is None:
            return {}
        with self._read(appends=False) as cur:
            rows = cur.execute("SELECT tag, memory_usage_bytes FROM duckdb_memory() WHERE memory_usage_bytes > 0")
            return {str(tag): int(size) for tag, size in rows.fetchall()}

    def capabilities(self) -> ProviderCapabilities:
        return ProviderCapabilities(
            vector_search=True,
            keyword_search=True,
            embedding_dimensions=self.db.dims or 0,
            distance_metrics=["cosine"],
            bulk_operations=True,
            transactions=True,
            max_content_length=self.max_content_length,
            persistent=self.path != ":memory:",
            **concern_flags(self),
        )
