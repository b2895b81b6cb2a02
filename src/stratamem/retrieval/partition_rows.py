"""The rows of a search-index partition (vectors, statuses, postings) and how they change."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from ..model import MemoryEntry
from .ann_store import SavedGraph
from .centering import Centroid, mean_of_unit_rows
from .index_data import (
    _INITIAL_CAPACITY,
    EXPANSION_REFERENCE_ROWS,
    LoadedPostings,
    LoadedRows,
    PartitionKey,
    _epoch,
    _PostingsTable,
)
from .lexical import term_counts


class PartitionRows:
    """The mirrored rows of one partition and their inverted index: loading, upserts and removals."""

    def __init__(self, key: PartitionKey, dims: int) -> None:
        self.key = key
        self.dims = dims
        self.lock = threading.RLock()
        self.ids: list[str | None] = []
        self.slot: dict[str, int] = {}
        #: per slot: a MemoryEntry, the row number in ``source`` (not materialised yet), or None (removed)
        self.entries: list[Any] = []
        self.source: Callable[[int], MemoryEntry] | None = None
        self.contents: list[str | None] = []
        cap = _INITIAL_CAPACITY
        self.vectors = np.zeros((cap, dims), dtype=np.float32)
        self.norms = np.zeros(cap, dtype=np.float32)
        self.present = np.zeros(cap, dtype=bool)  # slot holds a row (any status)
        self.active = np.zeros(cap, dtype=bool)  # status == 'active'
        self.expires = np.full(cap, math.inf, dtype=np.float64)
        self.lengths = np.zeros(cap, dtype=np.int32)  # document length in terms (0 = no postings)
        self.postings = _PostingsTable()
        self.n_docs = 0  # rows with at least one term (BM25 N)
        self.total_length = 0
        self.n_live = 0  # rows present (any status)
        self.ann: Any = None  # usearch Index once built
        self.ann_slots: set[int] = set()
        self.ann_building = False
        self.ann_dirty: set[int] = set()  # slots changed while the HNSW index was being built
        #: the graph lost a vector (delete, new content): it holds removed data and is never saved
        self.ann_removed = False
        self.ann_unsaved = 0  # vectors added to the graph since it was built, restored or saved
        self.expansion_base = 0  # HNSW search expansion up to ``expansion_reference`` rows
        self.expansion_reference = EXPANSION_REFERENCE_ROWS  # then it grows (``search_expansion``)
        self.ann_expansion = 0  # the expansion the graph searches with now
        #: called with the key when a row leaves the partition (its saved graph must go)
        self.on_remove: Callable[[PartitionKey], None] | None = None
        self.on_disk = False  # a saved graph file of this partition may exist
        self.saved: SavedGraph | None = None  # read at load, consumed by the background build
        self.restored = False  # the graph came from a saved file
        self.last_used = time.monotonic()
        self.changes = 0  # rows added, removed or changed in status (the centroid's staleness)
        self._centroid: tuple[Centroid | None, int] | None = None  # (centroid, ``changes`` when computed)

    @property
    def dead(self) -> int:
        """Slots of removed or moved rows (reclaimed when the partition is reloaded)."""
        return len(self.ids) - self.n_live

    # -- rows ------------------------------------------------------------------------------------
    def _grow(self, need: int) -> None:
        cap = len(self.norms)
        if need <= cap:
            return
        new = max(need, cap * 2)
        vectors = np.zeros((new, self.dims), dtype=np.float32)
        vectors[:cap] = self.vectors
        self.vectors = vectors
        self.norms = np.concatenate([self.norms, np.zeros(new - cap, dtype=np.float32)])
        self.present = np.concatenate([self.present, np.zeros(new - cap, dtype=bool)])
        self.active = np.concatenate([self.active, np.zeros(new - cap, dtype=bool)])
        self.expires = np.concatenate([self.expires, np.full(new - cap, math.inf)])
        self.lengths = np.concatenate([self.lengths, np.zeros(new - cap, dtype=np.int32)])

    def _new_slot(
        self, memory_id: str, content: str, vector: Any, row: Any, status: str, expires_at: datetime | None
    ) -> int:
        slot = len(self.ids)
        self._grow(slot + 1)
        self.ids.append(memory_id)
        self.entries.append(row)
        self.contents.append(content)
        self.slot[memory_id] = slot
        self.present[slot] = True
        self.active[slot] = status == "active"
        self.expires[slot] = _epoch(expires_at)
        self.n_live += 1
        self.changes += 1
        self._index_terms(slot, content)
        vec = np.asarray(vector, dtype=np.float32).reshape(-1)
        self.vectors[slot] = vec
        self.norms[slot] = float(np.sqrt(vec @ vec))
        if self.ann_building:
            self.ann_dirty.add(slot)
        if self.ann is not None:
            self.ann.add(slot, vec)
            self.ann_slots.add(slot)
            self.ann_unsaved += 1
        return slot

    def fill(self, rows: LoadedRows, order: Sequence[str] | None = None) -> None:
        """Fill this empty partition with the database's rows (kept raw until a search needs them).

        ``order`` (the ids by slot of a saved graph) puts each row back in its saved slot, so the
        graph's keys stay valid; a saved slot whose row is gone stays empty, new rows come after.
        """
        n = len(rows.ids)
        if order is None:
            perm = np.arange(n, dtype=np.int64)  # slot -> row number
        else:
            where = {memory_id: i for i, memory_id in enumerate(rows.ids)}
            saved = np.array([where.pop(m, -1) if m else -1 for m in order], dtype=np.int64)
            perm = np.concatenate([saved, np.fromiter(where.values(), dtype=np.int64, count=len(where))])
        size = len(perm)
        self._grow(size)
        slots = np.flatnonzero(perm >= 0)
        src = perm[slots]
        vectors = self.vectors[:size]
        self.source = rows.entry
        if order is None:  # slot i = row i: plain copies (no gather, no per-slot objects)
            vectors[:] = rows.vectors
            self.present[:size] = True
            self.active[:size] = rows.active
            self.expires[:size] = rows.expires
            self.ids = list(rows.ids)
            self.contents = list(rows.contents)
            self.entries = list(range(size))  # row numbers: materialised on demand
            self.slot = dict(zip(rows.ids, range(size), strict=True))
        else:
            vectors[slots] = rows.vectors[src]
            self.present[slots] = True
            self.active[slots] = rows.active[src]
            self.expires[slots] = rows.expires[src]
            ids = np.asarray(rows.ids, dtype=object)[src]
            by_slot = np.full(size, None, dtype=object)
            by_slot[slots] = ids
            self.ids = by_slot.tolist()
            by_slot[slots] = np.asarray(rows.contents, dtype=object)[src]
            self.contents = by_slot.tolist()
            by_slot[slots] = src
            self.entries = by_slot.tolist()  # row numbers: materialised on demand
            self.slot = dict(zip(ids.tolist(), slots.tolist(), strict=True))
        self.norms[:size] = np.sqrt(np.einsum("ij,ij->i", vectors, vectors))
        self.n_live = len(slots)
        if rows.postings is not None:
            self._fill_postings(rows.postings, slots, src)
            return
        for slot in slots.tolist():
            self._index_terms(slot, self.contents[slot] or "")

    def _index_terms(self, slot: int, content: str) -> None:
        """Tokenise ``content`` into the postings and BM25 statistics of ``slot``."""
        counts = term_counts(content)
        length = sum(counts.values())
        self.lengths[slot] = length
        if length:
            self.n_docs += 1
            self.total_length += length
        for term, tf in counts.items():
            self.postings.bucket(term).add(slot, tf)

    def _fill_postings(self, stored: LoadedPostings, slots: np.ndarray, src: np.ndarray) -> None:
        """Postings arrays straight from the stored ones (grouped by term, sorted by slot)."""
        slot_of_row = np.full(len(stored.lengths), -1, dtype=np.int64)
        slot_of_row[src] = slots
        lengths = stored.lengths[src]
        self.lengths[slots] = lengths
        self.n_docs = int(np.count_nonzero(lengths))
        self.total_length = int(lengths.sum())
        post_slots = slot_of_row[stored.rows]
        keep = post_slots >= 0
        post_slots, terms, tf = post_slots[keep], stored.terms[keep], stored.tf[keep]
        order = np.lexsort((post_slots, terms))
        post_slots, terms, tf = post_slots[order], terms[order], tf[order]
        starts = np.flatnonzero(np.diff(terms, prepend=-1)) if len(terms) else np.zeros(0, dtype=np.int64)
        bounds = np.append(starts, len(terms))
        vocab = stored.vocab
        self.postings.load([vocab[t] for t in terms[starts].tolist()], bounds, post_slots, tf)

    def upsert(self, entry: MemoryEntry, vector: Any | None) -> None:
        """Insert or replace a committed row; ``vector`` None keeps the stored one (content unchanged)."""
        slot = self.slot.get(entry.id)
        if slot is not None and (vector is not None or self.contents[slot] != entry.content):
            if vector is None:
                vector = self.vectors[slot].copy()
            self.remove(entry.id)  # new words or vector: the row moves to a fresh slot
            slot = None
        stored = entry.model_copy(update={"embedding": None}).model_copy(deep=True)
        if slot is None:
            if vector is None:
                raise ValueError(f"row {entry.id} is new to the partition but has no vector")
            self._new_slot(entry.id, entry.content, vector, stored, entry.status, entry.expires_at)
            return
        self.entries[slot] = stored
        self.changes += bool(self.active[slot]) != (entry.status == "active")
        self.active[slot] = entry.status == "active"
        self.expires[slot] = _epoch(entry.expires_at)

    def remove(self, memory_id: str) -> None:
        slot = self.slot.pop(memory_id, None)
        if slot is None:
            return
        length = int(self.lengths[slot])
        if length:
            self.n_docs -= 1
            self.total_length -= length
        self.lengths[slot] = 0
        self.ids[slot] = None
        self.entries[slot] = None
        self.contents[slot] = None
        self.present[slot] = False
        self.active[slot] = False
        self.expires[slot] = math.inf
        self.norms[slot] = 0.0
        if self.ann_building:
            self.ann_dirty.add(slot)
        if self.ann is not None and slot in self.ann_slots:
            self.ann.remove(slot)
            self.ann_slots.discard(slot)
            self.ann_removed = True
        if self.on_disk and self.on_remove is not None:
            self.on_remove(self.key)
            self.on_disk = False
        self.n_live -= 1
        self.changes += 1

    def entry(self, slot: int) -> MemoryEntry | None:
        value = self.entries[slot]
        if value is None or isinstance(value, MemoryEntry):
            return value
        if self.source is None:
            raise RuntimeError("a raw row without its loaded rows")
        entry = self.source(value)
        self.entries[slot] = entry
        return entry

    def patch(self, memory_id: str, fn: Callable[[MemoryEntry], MemoryEntry]) -> None:
        slot = self.slot.get(memory_id)
        if slot is None:
            return
        entry = self.entry(slot)
        if entry is None:
            return
        new = fn(entry)
        self.entries[slot] = new
        self.changes += bool(self.active[slot]) != (new.status == "active")
        self.active[slot] = new.status == "active"
        self.expires[slot] = _epoch(new.expires_at)

    def fresh_centroid(self) -> tuple[bool, Centroid | None]:
        """``(True, centroid)`` when the cached centroid is still fresh (see :meth:`centroid`), else
        ``(False, None)``. Read without ``lock``: the cache is replaced whole (one tuple) and the counts
        are plain integers, so the worst a concurrent write can cause is the centroid it made stale
        an instant ago, which a search holding the lock just before that write would have used too."""
        cached = self._centroid
        if cached is not None and self.changes - cached[1] <= max(8, self.n_live // 20):
            return True, cached[0]
        return False, None

    def centroid(self) -> Centroid | None:
        """The centroid of the current (active) rows (``retrieval/centering.py``), recomputed once
        more than 5% of the rows (at least 8) changed since it was last computed: a few new rows
        hardly move the mean of many."""
        fresh, cached = self.fresh_centroid()
        if fresh:
            return cached
        n = len(self.ids)
        live = self.present[:n] & self.active[:n]
        centroid = mean_of_unit_rows(self.vectors[:n][live]) if live.any() else None
        self._centroid = (centroid, self.changes)
        return centroid
