"""The in-process search index of a DuckDB store: settings, partitions loaded from the table or
built from a snapshot's Parquet files, and the changes a write transaction stages for it.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...model import MemoryEntry
from ...retrieval.ann_store import AnnStore
from ...retrieval.search_index import (
    DEFAULT_ANN_THRESHOLD,
    DEFAULT_MAX_ROWS,
    Change,
    LoadedPostings,
    LoadedRows,
    Partition,
    PartitionKey,
    SearchIndex,
)
from .rows import _COLUMNS, _N_COLS, RowsMixin

#: Partitions at least this large are built from a snapshot's files while it is imported.
PREBUILD_MIN_ROWS = 2000
_NO_POSTINGS = pa.table(
    {
        "memory_id": pa.array([], pa.string()),
        "term": pa.array([], pa.string()),
        "tf": pa.array([], pa.int32()),
        "length": pa.array([], pa.int32()),
    }
)


class SearchIndexMixin(RowsMixin):
    """The store's side of ``retrieval/search_index.py``."""

    # ------------------------------------------------------------------------- search index
    def configure_search_index(
        self, *, enabled: bool = True, ann_threshold: int | None = None, max_rows: int | None = None
    ) -> None:
        self.use_search_index = enabled
        if not enabled and self.path != ":memory:":
            # writes will bypass the index: saved graphs could go stale or keep deleted vectors
            store = self._ann_store()
            if store is not None:
                store.discard_all()
        if ann_threshold is not None:
            self._index_settings["ann_threshold"] = ann_threshold
        if max_rows is not None:
            self._index_settings["max_rows"] = max_rows
        if self._db is not None:
            self._apply_index_settings()

    def _ann_store(self) -> AnnStore | None:
        """Saved HNSW graphs live beside the database file (``{path}.index``); none in memory, and
        none for an encrypted file (they hold vectors and memory ids in plain files)."""
        if self.path == ":memory:" or self.encryption_key is not None:
            return None
        return AnnStore(f"{Path(self.path).resolve()}.index")

    def _apply_index_settings(self) -> None:
        index = self.db.search_index
        if index is not None:
            index.ann_threshold = self._index_settings.get("ann_threshold", DEFAULT_ANN_THRESHOLD)
            index.max_rows = self._index_settings.get("max_rows", DEFAULT_MAX_ROWS)

    @property
    def search_index(self) -> SearchIndex | None:
        """The in-process search index (None before ``initialize`` or when disabled)."""
        return self.db.search_index if self._db is not None and self.use_search_index else None

    def search_index_stats(self) -> dict[str, Any] | None:
        index = self.search_index
        return None if index is None else index.stats()

    def warm_search_index(self, timeout: float | None = None) -> int:
        index = self.search_index
        if index is None:
            return 0
        with self._read() as cur:
            scopes = cur.execute(
                "SELECT tenant_id, layer, scope, count(*) AS n FROM memories GROUP BY ALL ORDER BY n DESC, "
                "tenant_id, layer, scope"
            ).fetchall()
        loaded = 0
        for tenant_id, layer, scope, rows in scopes:
            if loaded + int(rows) > index.max_rows:
                break
            index.partition((tenant_id, layer, scope), functools.partial(self._load_partition, tenant_id, layer, scope))
            loaded += int(rows)
        index.wait_ready(timeout)
        return loaded

    def rows_replaced(self, tenant_id: str) -> None:
        index = self._db.search_index if self._db is not None else None
        if index is not None:
            index.drop_tenant(tenant_id)

    def _stage(self, change: Change) -> None:
        """Record a write's effect on the search index; applied when its transaction commits."""
        index = self.db.search_index
        if index is not None:
            index.stage(change)

    def _load_partition(self, tenant_id: str, layer: str, scope: str) -> LoadedRows:
        """Every row of one partition (any status) with its vector, for the search index."""
        self.settle_access()  # the rows' access statistics complete (we hold the write lock)
        return self._partition_rows(
            self._cursor(),
            {"tenant": tenant_id, "layer": layer, "scope": scope},
            ("memories", {}),
            ("lexical_postings", {}),
        )

    def _partition_rows(
        self,
        cur: Any,
        key: dict[str, Any],
        memories: tuple[str, dict[str, Any]],
        postings: tuple[str, dict[str, Any]] | None,
    ) -> LoadedRows:
        """One partition's rows (``key`` binds ``$tenant``, ``$layer``, ``$scope``) read from
        ``memories`` and ``postings``: each a relation (a table, or ``read_parquet`` over a snapshot's
        files) with the parameters it binds; ``postings=None``: the partition has no postings rows.

        Column-wise through Arrow: vectors become one numpy matrix, status and expiry numpy arrays;
        the other columns stay Arrow arrays and a row becomes a ``MemoryEntry`` only when asked."""
        dims = int(self.db.dims or 0)
        where = "WHERE tenant_id = $tenant AND layer = $layer AND scope = $scope"
        try:
            table = cur.execute(
                f"SELECT {_COLUMNS}, embedding FROM {memories[0]} {where}", key | memories[1]
            ).to_arrow_table()
            if table.num_rows == 0:
                return LoadedRows.empty(dims)
            postings_table = (
                _NO_POSTINGS
                if postings is None
                else cur.execute(
                    f"SELECT memory_id, term, tf, length FROM {postings[0]} {where}",
                    key | postings[1],
                )
                .to_arrow_table()
                .combine_chunks()
            )
        except duckdb.Error as exc:
            raise self._translate(exc, "search") from exc
        table = table.combine_chunks()
        vectors = table.column(_N_COLS).chunk(0).flatten().to_numpy().reshape(-1, dims)
        columns = [table.column(i).chunk(0) for i in range(_N_COLS)]
        active = pc.fill_null(pc.equal(columns[9], "active"), False).to_numpy(zero_copy_only=False)
        micros = pc.cast(columns[16], pa.int64()).to_numpy(zero_copy_only=False)  # nulls -> NaN
        expires = np.where(np.isnan(micros), np.inf, micros / 1e6)

        def entry(i: int) -> MemoryEntry:
            return self._entry([col[i].as_py() for col in columns], False)

        return LoadedRows(
            ids=columns[1].to_pylist(),
            contents=columns[3].to_pylist(),
            active=active,
            expires=expires,
            vectors=vectors,
            entry=entry,
            postings=self._loaded_postings(postings_table, columns[1]),
        )

    def partitions_from_files(
        self, tenant_id: str, memories: Sequence[Path], postings: Sequence[Path], *, min_rows: int | None = None
    ) -> dict[PartitionKey, Partition]:
        """Search-index partitions of ``tenant_id`` built straight from Parquet files of its
        ``memories`` and ``lexical_postings`` rows (a snapshot being imported), for
        :meth:`replace_index_partitions`: the import and the index build overlap, and the first search
        after the import finds its partition ready instead of reading it back from the table.

        Only partitions of at least ``min_rows`` rows (default ``PREBUILD_MIN_ROWS``; small ones load
        fast on first use), largest first, within the index's row budget. Reads the files only (no
        table, no lock)."""
        index = self.search_index
        if index is None or not memories:
            return {}
        min_rows = PREBUILD_MIN_ROWS if min_rows is None else min_rows
        mem_src = ("read_parquet($memory_files)", {"memory_files": [str(p) for p in memories]})
        post_src = ("read_parquet($posting_files)", {"posting_files": [str(p) for p in postings]}) if postings else None
        cur = self.db.cursor()
        try:
            sizes = cur.execute(
                f"SELECT layer, scope, count(*) AS n FROM {mem_src[0]} WHERE tenant_id = $tenant "
                "GROUP BY layer, scope HAVING count(*) >= $min ORDER BY n DESC, layer, scope",
                {"tenant": tenant_id, "min": min_rows} | mem_src[1],
            ).fetchall()
            out: dict[PartitionKey, Partition] = {}
            budget = index.max_rows
            for layer, scope, n in sizes:
                if n > budget:
                    break
                budget -= n
                key = (tenant_id, str(layer), str(scope))
                rows = self._partition_rows(
                    cur, {"tenant": tenant_id, "layer": layer, "scope": scope}, mem_src, post_src
                )
                out[key] = index.new_partition(key, rows)
            return out
        except duckdb.Error as exc:
            raise self._translate(exc, "snapshot") from exc
        finally:
            cur.close()

    def replace_index_partitions(self, tenant_id: str, partitions: Mapping[PartitionKey, Partition]) -> None:
        """Inside a write transaction that replaced ``tenant_id``'s rows: when it commits, the search
        index forgets the tenant's partitions and takes ``partitions`` (built from the new rows)."""
        self._stage(Change(kind="replace", tenant_id=tenant_id, partitions=dict(partitions)))

    @staticmethod
    def _loaded_postings(table: pa.Table, ids: pa.Array) -> LoadedPostings:
        """``lexical_postings`` rows of a partition, keyed by row position in ``ids`` (no tokenising)."""
        rows = pc.index_in(table.column("memory_id"), value_set=ids).to_numpy(zero_copy_only=False)
        known = ~np.isnan(rows) if rows.dtype.kind == "f" else np.ones(len(rows), dtype=bool)
        rows = rows[known].astype(np.int64)
        terms = pc.dictionary_encode(table.column("term")).chunk(0) if table.num_rows else None
        lengths = np.zeros(len(ids), dtype=np.int32)
        if terms is None:
            return LoadedPostings(rows, np.zeros(0, dtype=np.int64), [], np.zeros(0), lengths)
        lengths[rows] = table.column("length").to_numpy()[known]
        return LoadedPostings(
            rows=rows,
            terms=terms.indices.to_numpy()[known].astype(np.int64),
            vocab=terms.dictionary.to_pylist(),
            tf=table.column("tf").to_numpy()[known].astype(np.float64),
            lengths=lengths,
        )
