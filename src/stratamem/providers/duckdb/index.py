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
from arro3.core import Array, list_flatten

from ...arrow_columns import arrow_table, numpy_column, query_table
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
#: Names under which a partition load registers its memory ids and its terms (Arrow tables) with the
#: cursor, for the joins that turn postings into row and term positions.
_IDS = "stratamem_partition_ids"
_VOCAB = "stratamem_partition_vocab"


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
        if self._db is not None:
            self._db.known_hashes.forget(tenant_id)
        index = self._db.search_index if self._db is not None else None
        if index is not None:
            index.drop_tenant(tenant_id)

    def _stage(self, change: Change) -> None:
        """Record a write's effect on the search index; applied when its transaction commits."""
        if change.kind == "replace":  # the tenant's rows were rewritten from elsewhere
            self.db.known_hashes.forget(change.tenant_id)
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
            # status and expiry computed by DuckDB: columns without nulls, read as numpy arrays
            table = query_table(
                cur,
                f"SELECT {_COLUMNS}, embedding, coalesce(status = 'active', false), "
                f"coalesce(epoch_us(expires_at) / 1e6, 'inf'::DOUBLE) FROM {memories[0]} {where}",
                key | memories[1],
            )
            if table.num_rows == 0:
                return LoadedRows.empty(dims)
            columns = [table.columns[i].chunk(0) for i in range(_N_COLS)]
            stored = (
                self._loaded_postings(cur, postings[0], where, key | postings[1], columns[1])
                if postings is not None
                else LoadedPostings.empty(table.num_rows)
            )
        except duckdb.Error as exc:
            raise self._translate(exc, "search") from exc
        vectors = np.asarray(list_flatten(table.columns[_N_COLS].chunk(0))).reshape(-1, dims)
        active = numpy_column(table, _N_COLS + 1)
        expires = numpy_column(table, _N_COLS + 2)

        def entry(i: int) -> MemoryEntry:
            return self._entry([col[i].as_py() for col in columns], False)

        return LoadedRows(
            ids=np.asarray(columns[1]).tolist(),  # no nulls; faster than to_pylist
            contents=np.asarray(columns[3]).tolist(),
            active=active,
            expires=expires,
            vectors=vectors,
            entry=entry,
            postings=stored,
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
    def _loaded_postings(cur: Any, source: str, where: str, params: dict[str, Any], ids: Array) -> LoadedPostings:
        """The ``lexical_postings`` rows of a partition read from ``source`` (``where`` and ``params``
        select the partition), keyed by row position in ``ids`` (no tokenising).

        DuckDB joins the postings with the registered ids and distinct terms, so each posting comes
        back as (row, term) positions: hash joins instead of Arrow compute kernels."""
        vocab = query_table(cur, f"SELECT DISTINCT term FROM {source} {where}", params)
        lengths = np.zeros(len(ids), dtype=np.int32)
        if vocab.num_rows == 0:
            return LoadedPostings.empty(len(ids))
        terms = vocab.columns[0].chunk(0)
        cur.register(_IDS, arrow_table({"memory_id": ids, "pos": Array.from_numpy(np.arange(len(ids)))}))
        cur.register(_VOCAB, arrow_table({"term": terms, "pos": Array.from_numpy(np.arange(len(terms)))}))
        try:
            table = query_table(
                cur,
                f"SELECT i.pos, v.pos, p.tf, p.length FROM {source} p JOIN {_IDS} i ON p.memory_id = i.memory_id "
                f"JOIN {_VOCAB} v ON p.term = v.term {where}",
                params,
            )
        finally:
            cur.unregister(_VOCAB)
            cur.unregister(_IDS)
        if table.num_rows == 0:
            return LoadedPostings.empty(len(ids))
        rows = numpy_column(table, 0).astype(np.int64, copy=False)
        lengths[rows] = numpy_column(table, 3)
        return LoadedPostings(
            rows=rows,
            terms=numpy_column(table, 1).astype(np.int64, copy=False),
            vocab=np.asarray(terms).tolist(),
            tf=numpy_column(table, 2).astype(np.float64),
            lengths=lengths,
        )
