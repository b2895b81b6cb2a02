"""A search-index partition: its rows, search, and the HNSW graph built once it is large."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from .ann_store import SavedGraph, vector_hashes
from .index_data import (
    EXPANSION_REFERENCE_ROWS,
    _until,
    search_expansion,
)
from .partition_search import PartitionSearch

log = logging.getLogger("stratamem.retrieval.search_index")


class Partition(PartitionSearch):
    """The mirrored rows of one (tenant, layer, scope) partition. All access under ``lock``.

    Rows loaded from the database are kept as raw tuples and turned into ``MemoryEntry`` objects
    (``materialize``) only when a search returns or filters them.
    """

    # -- HNSW --------------------------------------------------------------------------------------
    def _new_graph(self, connectivity: int, expansion_add: int, expansion_search: int, dtype: str) -> Any:
        from usearch.index import Index

        return Index(
            ndim=self.dims,
            metric="cos",
            dtype=dtype,
            connectivity=connectivity,
            expansion_add=expansion_add,
            expansion_search=expansion_search,
        )

    def _restore(
        self,
        saved: SavedGraph,
        expansion_add: int,
        expansion_search: int,
        progress: Callable[[int, int], bool] | None = None,
    ) -> tuple[Any, set[int], set[int], bool] | None:
        """The saved graph with its stale slots taken out and this partition's other rows put in.

        Returns None when the file does not fit (another shape, or most rows changed since it was
        written: a fresh build is then cheaper than patching)."""
        from usearch.index import Index

        graph = Index.restore(
            saved.graph(),
            connectivity=saved.params.get("connectivity", 32),
            expansion_add=expansion_add,
            expansion_search=expansion_search,
        )
        if graph is None or graph.ndim != self.dims or len(graph) != int(np.count_nonzero(saved.ids != "")):
            return None
        with self.lock:
            self.ann_dirty = set()
            n = min(len(saved.ids), len(self.ids))
            current = np.array([i or "" for i in self.ids[:n]])
            hashes = vector_hashes(self.vectors[:n])
            in_graph = np.flatnonzero(saved.ids[:n] != "")
            valid = in_graph[(current[in_graph] == saved.ids[in_graph]) & (hashes[in_graph] == saved.hashes[in_graph])]
            stale = np.setdiff1d(np.flatnonzero(saved.ids != ""), valid)
            keep = {int(s) for s in valid}
            missing = np.array([s for s, i in enumerate(self.ids) if i is not None and s not in keep], dtype=np.int64)
            vectors = self.vectors[missing]  # fancy indexing copies
        if len(missing) + len(stale) > max(1000, len(keep) // 2):
            return None
        if len(stale):
            graph.remove(stale.astype(np.uint64))
        if len(missing):
            graph.add(missing.astype(np.uint64), vectors, threads=1, progress=progress)
        return graph, keep, {int(s) for s in missing}, bool(len(stale))

    def build_ann(
        self,
        connectivity: int,
        expansion_add: int,
        expansion_search: int,
        saved: SavedGraph | None = None,
        dtype: str = "i8",
        stop: threading.Event | None = None,
        expansion_reference: int = EXPANSION_REFERENCE_ROWS,
    ) -> bool:
        """Build the HNSW index (background thread), from ``saved`` where it fits; rows written
        meanwhile are patched in at the end. True when the saved graph was used. Setting ``stop``
        aborts the build (RuntimeError from usearch) and leaves the partition exact."""
        progress = None if stop is None else _until(stop)
        restored = None
        if saved is not None:
            try:
                restored = self._restore(saved, expansion_add, expansion_search, progress)
            except Exception:
                if stop is not None and stop.is_set():
                    raise
                log.warning("search index: saved graph of %s unusable; rebuilding", self.key[1:], exc_info=True)
            finally:
                saved.close()
        stale = False
        if restored is not None:
            index, kept, added, stale = restored
            built = kept | added
        else:
            kept = set()
            with self.lock:  # brief: searches wait for it
                self.ann_dirty = set()
                slots = np.flatnonzero(self.present[: len(self.ids)])
                # a slot's vector is written once (a changed row moves to a new slot) and growing
                # allocates a new matrix: a view of the live prefix stays valid without a copy
                vectors = self.vectors[: len(slots)] if len(slots) == len(self.ids) else self.vectors[slots]
            index = self._new_graph(connectivity, expansion_add, expansion_search, dtype)
            if len(slots):
                index.add(slots.astype(np.uint64), vectors, threads=1, progress=progress)
            built = {int(s) for s in slots}
        with self.lock:
            removed = False
            for s in sorted(self.ann_dirty):  # written while building: the mirror is the truth
                if s in built:
                    index.remove(s)
                    built.discard(s)
                    removed = True
                if s < len(self.ids) and self.ids[s] is not None:
                    index.add(s, self.vectors[s])
                    built.add(s)
            self.expansion_base, self.expansion_reference = expansion_search, expansion_reference
            self.ann_expansion = search_expansion(expansion_search, self.n_live, expansion_reference)
            index.expansion_search = self.ann_expansion
            self.ann = index
            self.ann_slots = built
            self.ann_dirty = set()
            self.ann_building = False
            self.ann_removed = removed or stale
            self.ann_unsaved = len(built - kept)
        return restored is not None

    def graph_to_save(self) -> tuple[list[str | None], np.ndarray, bytes] | None:
        """What ``AnnStore.save`` needs (call under ``lock``); None while the graph holds a removed
        vector, is being built, or has nothing new since it was written."""
        if self.ann is None or self.ann_building or self.ann_removed or self.ann_unsaved == 0:
            return None
        size = len(self.ids)
        ids = [self.ids[s] if s in self.ann_slots else None for s in range(size)]
        blob = self.ann.save()
        self.ann_unsaved = 0
        return ids, vector_hashes(self.vectors[:size]), bytes(blob)
