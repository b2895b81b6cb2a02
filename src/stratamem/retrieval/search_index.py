"""In-process search index of the embedded store: exact while a partition is small, HNSW once large.

DuckDB answers a search by scanning every row of the scope (``array_cosine_similarity`` plus the
BM25 postings join): fine at 1k rows, far too slow at 100k. DuckDB's ``vss`` extension filters
*after* its top-k, which would break tenant and layer filtering. So the embedded provider keeps,
for each searched **partition** (tenant, layer, scope key), an in-memory mirror of the committed
rows:

* the raw vectors (float32 matrix) and their norms, the rows themselves (without embedding, kept
  raw until returned), status and expiry as arrays, and an inverted index (term → sorted slot and
  tf arrays) with document lengths;
* the partition is the unit of filtering: tenant, layer and scope are chosen *before* any top-k,
  so a search can never see another tenant's or layer's rows;
* **exact** search (one matrix-vector product + vectorised BM25) while the partition has at most
  ``ann_threshold`` rows; above it a usearch HNSW index (cosine, int8 vectors) is built, or read
  from its saved file, on a background thread and, once ready, supplies
  the dense candidates (searches stay exact until then). Candidates are
  the ANN's dense top ``k'`` plus the best lexical matches; every candidate is re-scored exactly
  (dense cosine from the matrix, BM25 over the whole partition) and filtered (status, expiry,
  metadata predicate). When a predicate leaves fewer than ``limit`` hits, ``k'`` grows, and the
  search falls back to the exact scan before giving up. In an ANN partition ``total`` counts the
  candidates that passed (a lower bound of the exact count).

Scores are the ones the SQL path computes (see ``retrieval.lexical``): cosine mapped to [0, 1],
fused with ``lex = sqrt(BM25 / BM25_max)`` as ``dense + w · lex · (1 - dense)``, BM25 statistics
over every row of the partition (any status), ranked by score then id.

Consistency. A partition is loaded from the database under the store's write lock, so no commit
can interleave with the load. Writes record their effect while their transaction runs and apply
it only after COMMIT, still under the write lock (``SearchIndex.stage`` / ``commit`` /
``rollback``): a rolled-back write leaves the mirror untouched, and a failure while applying drops
the tenant's partitions (rebuilt from the database on the next search). Code that rewrites the
``memories`` table by SQL outside the provider's methods (snapshot restore) calls
``drop_tenant``. The mirror lives in process memory: a crash loses it and the next search
reloads it from the committed rows (vectors, status and the stored postings, column-wise), so it
can never return a deleted or other-tenant row that the database does not hold. Only the HNSW
graphs are kept on disk, as a cache checked slot by slot against the database (``AnnStore``,
``retrieval.ann_store``). Partitions not searched for a while are evicted when the mirrored rows
exceed ``max_rows`` (least recently used first).
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..model import MemoryEntry
from ..providers.base import SearchPage, SearchQuery
from .ann_store import AnnStore
from .centering import Centroid
from .index_data import (
    DEFAULT_ANN_THRESHOLD,
    DEFAULT_MAX_ROWS,
    EXPANSION_REFERENCE_ROWS,
    LoadedPostings,
    LoadedRows,
    PartitionKey,
    search_expansion,
)
from .partition import Partition

log = logging.getLogger(__name__)

#: A partition with more dead slots than this (and than live rows) is dropped and reloaded.
COMPACT_MIN_DEAD = 1024


@dataclass
class Change:
    """The effect of one committed write on the mirror."""

    kind: str  # "upsert" | "delete" | "patch" | "replace"
    tenant_id: str
    entries: Sequence[MemoryEntry] = ()
    ids: Sequence[str] = ()
    patch: Callable[[MemoryEntry], MemoryEntry] | None = None
    #: for an update: the rows as they were (aligned with ``entries``)
    previous: Sequence[MemoryEntry] = ()
    #: for "replace" (the tenant's rows were rewritten, e.g. by a snapshot import): its partitions
    #: from now on, built from the new rows; every other partition of the tenant is forgotten
    partitions: Mapping[PartitionKey, Partition] = field(default_factory=dict)


#: Every live index: their background builds are stopped before the interpreter exits.
_OPEN: weakref.WeakSet[SearchIndex] = weakref.WeakSet()


@atexit.register
def _stop_all_builders() -> None:
    for index in list(_OPEN):
        index.stop_builders(timeout=10.0)


class SearchIndex:
    """Every mirrored partition of one DuckDB database (shared by the providers opened on it).

    HNSW parameters (connectivity 32, expansion 128 on add) were chosen on 30k all-MiniLM-L6-v2
    sentence embeddings (``benchmarks/sentences.py``): recall@10 of the re-ranked candidates 0.995,
    where 16/64/128 gave 0.956 (and 0.86 at 100k). The graph stores vectors as int8 (``ann_dtype``;
    candidates are re-scored from the float32 matrix): on 100k such sentences, dense recall@10 of
    64 re-scored candidates was 0.987 for i8, f16 and f32 alike at expansion 256, and i8 both searched
    and built fastest. Search expansion 192: recall 0.980 as at 256 on the same i8 graph, and
    faster (160: 0.977, 128: 0.967). Larger partitions search
    wider (:func:`search_expansion`): at 1M, expansion 192 found only 0.878 of the exact top 10.
    """

    def __init__(
        self,
        dims: int,
        write_lock: Any,
        *,
        ann_threshold: int = DEFAULT_ANN_THRESHOLD,
        max_rows: int = DEFAULT_MAX_ROWS,
        connectivity: int = 32,
        expansion_add: int = 128,
        expansion_search: int = 192,
        ann_dtype: str = "i8",
        store: AnnStore | None = None,
    ) -> None:
        self.dims = dims
        self.ann_dtype = ann_dtype
        #: Where built graphs are saved and read back (None: process memory only).
        self.store = store
        #: The store's write lock: a partition is loaded and registered while no write can commit.
        self.write_lock = write_lock
        self.ann_threshold = ann_threshold
        self.max_rows = max_rows
        self.connectivity = connectivity
        self.expansion_add = expansion_add
        self.expansion_search = expansion_search
        #: partitions larger than this search with a wider expansion (``search_expansion``)
        self.expansion_reference_rows = EXPANSION_REFERENCE_ROWS
        self._partitions: OrderedDict[PartitionKey, Partition] = OrderedDict()
        self._lock = threading.RLock()
        self._pending: list[Change] = []
        self._builders: list[threading.Thread] = []
        self._stop = threading.Event()
        _OPEN.add(self)

    # -- the write path (called under the store's write lock) ----------------------------------
    def stage(self, change: Change) -> None:
        self._pending.append(change)

    def rollback(self) -> None:
        self._pending.clear()

    def commit(self) -> None:
        pending, self._pending = self._pending, []
        for change in pending:
            try:
                self._apply(change)
            except Exception:  # never serve a mirror that may differ from the database
                log.exception("search index: dropping tenant %s after a failed update", change.tenant_id)
                self.drop_tenant(change.tenant_id)

    def _tenant_partitions(self, tenant_id: str) -> list[Partition]:
        with self._lock:
            return [p for k, p in self._partitions.items() if k[0] == tenant_id]

    def _forget_saved(self, change: Change, parts: list[Partition]) -> None:
        """Saved graphs of partitions not in memory that may hold a vector this write removed."""
        if self.store is None:
            return
        from ..layers import scope_key

        loaded = {p.key for p in parts}
        if change.kind == "delete":  # which partition held the ids is unknown: every unloaded one
            keep = {self.store.path(k) for k in loaded}
            for path in self.store.files_of(change.tenant_id):
                if path not in keep:
                    path.unlink(missing_ok=True)
        elif change.kind == "upsert":
            for entry, previous in zip(change.entries, change.previous, strict=False):
                old = (previous.tenant_id, previous.layer.value, scope_key(previous.layer, previous.identifiers))
                new = (entry.tenant_id, entry.layer.value, scope_key(entry.layer, entry.identifiers))
                if old not in loaded and (entry.embedding is not None or old != new):
                    self.store.discard(old)

    def _apply(self, change: Change) -> None:
        if change.kind == "replace":
            self._replace(change.tenant_id, change.partitions)
            return
        parts = self._tenant_partitions(change.tenant_id)
        self._forget_saved(change, parts)
        if not parts:
            return
        from ..layers import scope_key

        if change.kind == "upsert":
            for entry in change.entries:
                key = (entry.tenant_id, entry.layer.value, scope_key(entry.layer, entry.identifiers))
                for part in parts:
                    with part.lock:
                        if part.key != key:
                            part.remove(entry.id)  # moved to another layer or scope (no-op otherwise)
                        elif entry.id in part.slot or entry.embedding is not None:
                            part.upsert(entry, entry.embedding)
                        else:  # moved here without its vector: reload from the database
                            self.drop(key)
        elif change.kind == "delete":
            for part in parts:
                with part.lock:
                    for memory_id in change.ids:
                        part.remove(memory_id)
        elif change.kind == "patch" and change.patch is not None:
            for part in parts:
                with part.lock:
                    for memory_id in change.ids:
                        part.patch(memory_id, change.patch)
        for part in parts:  # churn leaves dead slots behind: reload from the database past a point
            if part.dead > max(COMPACT_MIN_DEAD, part.n_live):
                self.drop(part.key)
        self._maybe_build(parts)

    # -- partitions ------------------------------------------------------------------------------
    def _get(self, key: PartitionKey) -> Partition | None:
        with self._lock:
            part = self._partitions.get(key)
            if part is not None:
                self._partitions.move_to_end(key)
            return part

    def drop(self, key: PartitionKey) -> None:
        with self._lock:
            self._partitions.pop(key, None)

    def drop_tenant(self, tenant_id: str) -> None:
        """Forget a tenant's partitions and saved graphs (its rows were rewritten outside the index)."""
        with self._lock:
            for key in [k for k in self._partitions if k[0] == tenant_id]:
                del self._partitions[key]
        if self.store is not None:
            self.store.discard_tenant(tenant_id)

    def new_partition(self, key: PartitionKey, rows: LoadedRows) -> Partition:
        """A partition filled with ``rows``, not registered (see ``Change(kind="replace")``)."""
        part = Partition(key, self.dims)
        part.fill(rows)
        return part

    def _replace(self, tenant_id: str, partitions: Mapping[PartitionKey, Partition]) -> None:
        """The tenant's rows were rewritten: forget its partitions and saved graphs, take ``partitions``."""
        self.drop_tenant(tenant_id)
        for key, part in partitions.items():
            if key[0] != tenant_id:
                raise ValueError(f"partition {key} is not one of tenant {tenant_id}")
            self._register(part)
        self._maybe_build(list(partitions.values()))

    def partition(self, key: PartitionKey, load: Callable[[], LoadedRows]) -> Partition:
        """The partition; loaded with ``load()`` and registered under the write lock if missing.

        A saved graph of the partition (``store``) puts each row back in its saved slot; the graph
        itself is read into the HNSW index by the background build."""
        part = self._get(key)
        if part is not None:
            return part
        with self.write_lock:
            part = self._get(key)
            if part is not None:
                return part
            part = Partition(key, self.dims)
            saved = None
            if self.store is not None:
                saved = self.store.load(key, self.dims)
                if saved is None:
                    self.store.discard(key)  # absent, or unusable: never left beside a live partition
            part.fill(load(), None if saved is None else saved.ids.tolist())
            part.on_disk = saved is not None
            if saved is not None and part.n_live > self.ann_threshold:
                part.saved = saved  # read into the HNSW index by the background build
            elif saved is not None:
                saved.close()
            self._register(part)
        self._maybe_build([part])
        return part

    def _register(self, part: Partition) -> None:
        """Make ``part`` the partition of its key (least recently used ones evicted past ``max_rows``)."""
        if self.store is not None:
            part.on_remove = self.store.discard
        with self._lock:
            self._partitions[part.key] = part
            self._evict()

    def _evict(self) -> None:
        total = sum(p.n_live for p in self._partitions.values())
        while total > self.max_rows and len(self._partitions) > 1:
            _, victim = self._partitions.popitem(last=False)
            total -= victim.n_live

    def _maybe_build(self, parts: Iterable[Partition]) -> None:
        for part in parts:
            with part.lock:
                if part.ann is not None or part.ann_building or part.n_live <= self.ann_threshold:
                    continue
                part.ann_building = True
            thread = threading.Thread(
                target=self._build, args=(part,), name=f"stratamem-hnsw-{part.key[1]}", daemon=True
            )
            with self._lock:
                self._builders = [t for t in self._builders if t.is_alive()]
                self._builders.append(thread)
            thread.start()

    def _build(self, part: Partition) -> None:
        started = time.perf_counter()
        saved, part.saved = part.saved, None
        try:
            part.restored = part.build_ann(
                self.connectivity,
                self.expansion_add,
                self.expansion_search,
                saved,
                self.ann_dtype,
                self._stop,
                self.expansion_reference_rows,
            )
            log.info(
                "search index: HNSW for %s (%d rows) %s in %.1fs",
                part.key[1:],
                part.n_live,
                "restored" if part.restored else "built",
                time.perf_counter() - started,
            )
        except Exception:
            if self._stop.is_set():
                log.debug("search index: HNSW build of %s stopped (store closing)", part.key[1:])
            else:
                log.exception("search index: HNSW build failed for %s; the partition stays exact", part.key[1:])
            with part.lock:
                part.ann_building = False
            return
        del saved
        self.save(part)

    def save(self, part: Partition) -> bool:
        """Write the partition's graph to the store if it has something new and no removed vector.

        Runs under the partition's lock, so no write can remove a row (and discard the file) between
        taking the graph and the file replacing the previous one."""
        if self.store is None:
            return False
        with part.lock:
            if part.ann_removed and part.on_disk:
                self.store.discard(part.key)
                part.on_disk = False
            graph = part.graph_to_save()
            if graph is None:
                return False
            try:
                self.store.save(part.key, *graph, {"dims": self.dims, "connectivity": self.connectivity})
            except OSError:
                log.warning("search index: cannot save the graph of %s", part.key[1:], exc_info=True)
                return False
            part.on_disk = True
            return True

    def close(self) -> None:
        """Stop the background builds (an unfinished graph is dropped, never saved) and save every
        graph with rows added since it was written: the store is being closed."""
        self.stop_builders()
        with self._lock:
            parts = list(self._partitions.values())
        for part in parts:
            self.save(part)

    def stop_builders(self, timeout: float = 30.0) -> None:
        """Abort running HNSW builds and wait for their threads (also at interpreter exit: a thread
        killed inside usearch would abort the process)."""
        self._stop.set()
        with self._lock:
            builders = list(self._builders)
        deadline = time.monotonic() + timeout
        for thread in builders:
            thread.join(max(0.0, deadline - time.monotonic()))

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Block until every background HNSW build has finished; False on timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._lock:
                alive = [t for t in self._builders if t.is_alive()]
            if not alive:
                return True
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return False
            alive[0].join(remaining)

    def centroid(self, key: PartitionKey, load: Callable[[], LoadedRows]) -> Centroid | None:
        part = self.partition(key, load)
        # Every default search asks for it right after its own search: a fresh cached centroid is
        # read without waiting for the partition's lock a second time (behind other searches and
        # the adds being applied).
        fresh, centroid = part.fresh_centroid()
        if fresh:
            return centroid
        with part.lock:
            return part.centroid()

    def search(self, key: PartitionKey, load: Callable[[], LoadedRows], query: SearchQuery) -> SearchPage:
        part = self.partition(key, load)
        with part.lock:
            return part.search(query, use_ann=not query.exact and part.n_live > self.ann_threshold)

    def stats(self) -> dict[str, Any]:
        with self._lock:
            parts = list(self._partitions.values())
        return {
            "partitions": len(parts),
            "rows": sum(p.n_live for p in parts),
            "ann_threshold": self.ann_threshold,
            "saved_graphs": self.store is not None,
            "ann_partitions": [
                {
                    "tenant_id": p.key[0],
                    "layer": p.key[1],
                    "rows": p.n_live,
                    "ready": p.ann is not None and not p.ann_building,
                    "restored": p.restored,
                    "saved": p.on_disk,
                    "expansion_search": p.ann_expansion,
                }
                for p in parts
                if p.ann is not None or p.ann_building
            ],
        }


__all__ = [
    "COMPACT_MIN_DEAD",
    "DEFAULT_ANN_THRESHOLD",
    "DEFAULT_MAX_ROWS",
    "EXPANSION_REFERENCE_ROWS",
    "Change",
    "LoadedPostings",
    "LoadedRows",
    "Partition",
    "PartitionKey",
    "SearchIndex",
    "search_expansion",
]
