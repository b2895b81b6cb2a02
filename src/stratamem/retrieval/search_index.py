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
import copy
import inspect
import logging
import math
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from ..model import MemoryEntry
from ..providers.base import ScoredEntry, SearchPage, SearchQuery
from .ann_store import AnnStore, SavedGraph, vector_hashes
from .centering import Centroid, mean_of_unit_rows
from .lexical import BM25_B, BM25_K1, GATE_HIGH, GATE_LOW, best_bm25, idf, query_terms, term_counts

log = logging.getLogger(__name__)

PartitionKey = tuple[str, str, str]  # (tenant_id, layer, scope key)

#: Default size (live rows) above which a partition is served by HNSW.
DEFAULT_ANN_THRESHOLD = 20_000
#: Default cap of mirrored rows over all partitions (least recently searched evicted first).
DEFAULT_MAX_ROWS = 2_000_000
_INITIAL_CAPACITY = 64
#: A partition with more dead slots than this (and than live rows) is dropped and reloaded.
COMPACT_MIN_DEAD = 1024
#: Lexical candidates re-scored in an ANN search, at least (the best ``lex`` first).
_LEXICAL_CANDIDATES = 200
#: HNSW search expansion grows with the partition beyond this size (``search_expansion``).
EXPANSION_REFERENCE_ROWS = 100_000
EXPANSION_GROWTH = 0.65
_EXPANSION_MAX = 4096


def search_expansion(base: int, rows: int, reference: int = EXPANSION_REFERENCE_ROWS) -> int:
    """HNSW search expansion for a partition of ``rows``: ``base`` up to ``reference`` rows (100k),
    then ``base · (rows / reference) ** 0.65`` (rounded up to a multiple of 32).

    Measured by ``benchmarks/ann_sweep.py`` on all-MiniLM-L6-v2 embeddings of ``benchmarks/sentences.py``
    (i8 graph, connectivity 32, expansion 128 on add; dense recall@10 of 64 re-scored candidates
    against the exact scan, 600 queries): at 100k expansion 192 gives 0.975; at 300k
    192 gives 0.946, 416 0.977; at 1M 192 gives 0.880, 512 0.949, 768 0.963, 864 0.970
    (latencies in ``benchmarks/RESULTS.md``). The rule gives 192, 416 and 864 for those sizes."""
    if rows <= reference:
        return base
    grown = base * (rows / reference) ** EXPANSION_GROWTH
    return int(min(_EXPANSION_MAX, max(base, 32 * math.ceil(grown / 32))))


def _json_copy(value: Any) -> Any:
    """A deep copy of JSON data (what metadata holds: it is checked and stored as JSON), several
    times cheaper than ``copy.deepcopy``; anything else falls back to it."""
    if isinstance(value, dict):
        return {k: _json_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_copy(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return copy.deepcopy(value)


def _private_copy(entry: MemoryEntry) -> MemoryEntry:
    """A copy the caller may mutate without touching the mirror: the mutable parts (metadata,
    identifiers, provenance) are copied, the rest is immutable (a third of a full deep copy)."""
    prov = entry.provenance
    # provenance holds strings and numbers, except a list of ids and any extra (JSON) fields
    prov = prov.model_copy(deep=True) if prov.compacted_from_ids is not None or prov.__pydantic_extra__ \
        else prov.model_copy()
    return entry.model_copy(update={"metadata": _json_copy(entry.metadata),
                                    "identifiers": entry.identifiers.model_copy(), "provenance": prov})


def _until(stop: threading.Event) -> Callable[[int, int], bool]:
    """A usearch progress callback that aborts the operation once ``stop`` is set. usearch checks
    the callback's annotations against ``(int, int) -> bool``, so the signature is set explicitly
    (this module's annotations are strings)."""

    def progress(done: int, total: int) -> bool:
        return not stop.is_set()

    param = inspect.Parameter
    setattr(progress, "__signature__", inspect.Signature(  # noqa: B010
        [param("done", param.POSITIONAL_OR_KEYWORD, annotation=int),
         param("total", param.POSITIONAL_OR_KEYWORD, annotation=int)], return_annotation=bool))
    return progress


#: Every live index: their background builds are stopped before the interpreter exits.
_OPEN: weakref.WeakSet[SearchIndex] = weakref.WeakSet()


@atexit.register
def _stop_all_builders() -> None:
    for index in list(_OPEN):
        index.stop_builders(timeout=10.0)


def _epoch(value: datetime | None) -> float:
    return math.inf if value is None else value.timestamp()


@dataclass
class LoadedPostings:
    """A partition's stored postings (the database's lexical index), column-wise."""

    rows: np.ndarray  # int64: the row (position in ``LoadedRows``) of each posting
    terms: np.ndarray  # int64: index into ``vocab``
    vocab: list[str]
    tf: np.ndarray  # float64
    lengths: np.ndarray  # int32 per row: document length in terms (0 = no terms)


@dataclass
class LoadedRows:
    """Every row of one partition as read from the database, column-wise.

    ``entry(i)`` builds the ``MemoryEntry`` of row ``i`` (without embedding); the partition calls it
    only for rows a search returns or filters, so loading 100k rows creates no model objects.
    """

    ids: list[str]
    contents: list[str]
    active: np.ndarray  # bool: status == 'active'
    expires: np.ndarray  # float64 epoch seconds, inf = never
    vectors: np.ndarray  # float32 (n, dims)
    entry: Callable[[int], MemoryEntry]
    #: the stored postings of these rows; None = tokenise ``contents`` here
    postings: LoadedPostings | None = None

    @staticmethod
    def empty(dims: int) -> LoadedRows:
        def none(i: int) -> MemoryEntry:
            raise IndexError(i)

        return LoadedRows([], [], np.zeros(0, dtype=bool), np.zeros(0), np.zeros((0, dims), dtype=np.float32), none)


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


@dataclass
class _Bm25:
    arrays: list[tuple[np.ndarray, np.ndarray]]  # (slots, tf) of each query term present
    weights: list[float]  # idf of each
    best: float  # the best BM25 any row could reach: sum(idf) * (k1 + 1)
    avgdl: float


_NO_SLOTS = np.zeros(0, dtype=np.int64)
_NO_TF = np.zeros(0, dtype=np.float64)
_NO_SLOTS.flags.writeable = False
_NO_TF.flags.writeable = False


class _Postings:
    """One term's postings: numpy arrays of (slot, tf) plus a tail of recent appends.

    Slots are never reused (a changed row moves to a new slot), so a removed row's postings are
    simply skipped through the partition's ``present`` mask and dropped when the arrays are next
    compacted; appends go to the tail and are merged on the next search.
    """

    __slots__ = ("slots", "tail", "tf")

    def __init__(self, slots: np.ndarray = _NO_SLOTS, tf: np.ndarray = _NO_TF) -> None:
        self.slots = slots  # never written in place: every change makes new arrays
        self.tf = tf
        self.tail: list[tuple[int, int]] = []

    def add(self, slot: int, tf: int) -> None:
        self.tail.append((slot, tf))

    def arrays(self, present: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self.tail:
            tail = np.asarray(self.tail, dtype=np.int64).reshape(-1, 2)
            self.slots = np.concatenate([self.slots, tail[:, 0]])
            self.tf = np.concatenate([self.tf, tail[:, 1].astype(np.float64)])
            self.tail = []
        alive = present[self.slots]
        n = int(np.count_nonzero(alive))
        if n == len(self.slots):
            return self.slots, self.tf
        slots, tf = self.slots[alive], self.tf[alive]
        if n < 0.75 * len(self.slots):  # compact: most of the skipped work goes away for good
            self.slots, self.tf = slots, tf
        return slots, tf


class _PostingsTable:
    """Every term's postings of a partition.

    Postings loaded from the database stay in one block (all slots and tf, grouped by term); a
    term's ``_Postings`` is cut from it the first time a search or a write asks for the term, so a
    load of 100k rows with as many distinct terms builds no per-term objects."""

    __slots__ = ("_block", "_buckets", "_where")

    def __init__(self) -> None:
        self._buckets: dict[str, _Postings] = {}
        self._where: dict[str, int] = {}  # term -> group in the loaded block
        self._block: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # (bounds, slots, tf)

    def load(self, terms: list[str], bounds: np.ndarray, slots: np.ndarray, tf: np.ndarray) -> None:
        """Group ``i`` (term ``terms[i]``) is ``slots[bounds[i]:bounds[i + 1]]``; replaces everything."""
        self._buckets = {}
        self._where = dict(zip(terms, range(len(terms)), strict=True))
        self._block = (bounds, slots, tf)

    def get(self, term: str) -> _Postings | None:
        bucket = self._buckets.get(term)
        if bucket is None and self._block is not None:
            group = self._where.pop(term, None)
            if group is not None:
                bounds, slots, tf = self._block
                a, b = int(bounds[group]), int(bounds[group + 1])
                bucket = self._buckets[term] = _Postings(slots[a:b], tf[a:b])
        return bucket

    def bucket(self, term: str) -> _Postings:
        """The term's postings, created empty when the term is new."""
        bucket = self.get(term)
        if bucket is None:
            bucket = self._buckets[term] = _Postings()
        return bucket

    def __len__(self) -> int:
        return len(self._buckets) + len(self._where)


class Partition:
    """The mirrored rows of one (tenant, layer, scope) partition. All access under ``lock``.

    Rows loaded from the database are kept as raw tuples and turned into ``MemoryEntry`` objects
    (``materialize``) only when a search returns or filters them.
    """

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

    def _new_slot(self, memory_id: str, content: str, vector: Any, row: Any, status: str,
                  expires_at: datetime | None) -> int:
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
        self.norms[slot] = float(np.linalg.norm(vec))
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

    def centroid(self) -> Centroid | None:
        """The centroid of the current (active) rows (``retrieval/centering.py``), recomputed once
        more than 5% of the rows (at least 8) changed since it was last computed: a few new rows
        hardly move the mean of many."""
        if self._centroid is not None and self.changes - self._centroid[1] <= max(8, self.n_live // 20):
            return self._centroid[0]
        n = len(self.ids)
        live = self.present[:n] & self.active[:n]
        centroid = mean_of_unit_rows(self.vectors[:n][live]) if live.any() else None
        self._centroid = (centroid, self.changes)
        return centroid

    # -- scoring ---------------------------------------------------------------------------------
    def _bm25(self, terms: Sequence[str]) -> _Bm25 | None:
        """The query terms' postings (live rows only) and BM25 weights over the partition."""
        arrays: list[tuple[np.ndarray, np.ndarray]] = []
        for term in dict.fromkeys(terms):
            bucket = self.postings.get(term)
            if bucket is not None:
                slots, tf = bucket.arrays(self.present)
                if len(slots):
                    arrays.append((slots, tf))
        if not arrays or self.n_docs == 0:
            return None
        n = float(self.n_docs)
        weights = [idf(n, len(slots)) for slots, _ in arrays]
        best = best_bm25(weights, len(dict.fromkeys(terms)), n)
        if best <= 0:
            return None
        return _Bm25(arrays, weights, best, max(1e-9, self.total_length / n))

    def _term_score(self, bm: _Bm25, tf: np.ndarray, slots: np.ndarray, weight: float) -> np.ndarray:
        lengths = self.lengths[slots].astype(np.float64)
        return np.asarray(weight * tf * (BM25_K1 + 1.0)
                          / (tf + BM25_K1 * (1.0 - BM25_B + BM25_B * lengths / bm.avgdl)))

    def _lexical(self, bm: _Bm25) -> np.ndarray:
        """``lex`` of every slot (zeros where no query term occurs)."""
        total = np.zeros(len(self.norms), dtype=np.float64)
        for (slots, tf), w in zip(bm.arrays, bm.weights, strict=True):
            total[slots] += self._term_score(bm, tf, slots, w)
        return np.asarray(np.sqrt(np.minimum(1.0, total / bm.best)))

    def _lexical_at(self, bm: _Bm25, cand: np.ndarray) -> np.ndarray:
        """``lex`` of the candidate slots only (postings are sorted by slot: binary search)."""
        total = np.zeros(len(cand), dtype=np.float64)
        for (slots, tf), w in zip(bm.arrays, bm.weights, strict=True):
            pos = np.minimum(np.searchsorted(slots, cand), len(slots) - 1)
            hit = slots[pos] == cand
            if hit.any():
                total[hit] += self._term_score(bm, tf[pos[hit]], cand[hit], w)
        return np.asarray(np.sqrt(np.minimum(1.0, total / bm.best)))

    def _lexical_top(self, bm: _Bm25, m: int) -> np.ndarray:
        """About the ``m`` best lexical matches, from the selective terms only (a term in more than
        a tenth of the partition adds little to the ranking and would cost a pass over most rows)."""
        limit = max(4 * m, 0.1 * self.n_docs)
        parts = [(slots, self._term_score(bm, tf, slots, w))
                 for (slots, tf), w in zip(bm.arrays, bm.weights, strict=True) if len(slots) <= limit]
        if not parts:
            return np.zeros(0, dtype=np.int64)
        all_slots = np.concatenate([p[0] for p in parts])
        uniq, inverse = np.unique(all_slots, return_inverse=True)
        sums = np.bincount(inverse, weights=np.concatenate([p[1] for p in parts]))
        if len(uniq) > m:
            uniq = uniq[np.argpartition(sums, len(sums) - m)[len(sums) - m:]]
        return np.asarray(uniq, dtype=np.int64)

    def _dense(self, query: np.ndarray, qnorm: float, slots: np.ndarray | None = None) -> np.ndarray:
        n = len(self.ids)
        vectors = self.vectors[:n] if slots is None else self.vectors[slots]
        norms = self.norms[:n] if slots is None else self.norms[slots]
        with np.errstate(divide="ignore", invalid="ignore"):
            cos = (vectors @ query) / (norms * qnorm)
        cos = np.nan_to_num(cos, nan=0.0, posinf=0.0, neginf=0.0)
        return np.asarray(np.clip((1.0 + cos.astype(np.float64)) / 2.0, 0.0, 1.0))

    def search(self, query: SearchQuery, *, use_ann: bool) -> SearchPage:
        self.last_used = time.monotonic()
        q = np.asarray(query.vector, dtype=np.float32).reshape(-1)
        qnorm = float(np.linalg.norm(q))
        now = query.now.timestamp()
        terms = query_terms(query.text) if query.lexical_weight > 0 else []
        bm = self._bm25(terms) if terms else None
        w = float(query.lexical_weight)
        n = len(self.ids)
        if not use_ann or self.ann is None or self.ann_building:
            return self._exact(query, q, qnorm, now, None if bm is None else self._lexical(bm), w, n)
        ef = search_expansion(self.expansion_base, self.n_live, self.expansion_reference)
        if ef != self.ann_expansion:  # the partition grew past a step: search the graph wider
            self.ann.expansion_search = ef
            self.ann_expansion = ef
        k = max(4 * query.limit, 64)
        while True:
            page, more = self._approximate(query, q, qnorm, now, bm, w, k)
            if query.predicate is None or len(page.hits) >= query.limit or not more:
                return page
            if 2 * k >= self.n_live:  # a filter rejects most candidates: scan it all
                return self._exact(query, q, qnorm, now, None if bm is None else self._lexical(bm), w, n)
            k *= 4

    def _eligible(self, slots: np.ndarray, now: float) -> np.ndarray:
        return np.asarray(self.present[slots] & self.active[slots] & (self.expires[slots] > now))

    def _ordered(self, slots: np.ndarray, scores: np.ndarray) -> Iterable[int]:
        """Indexes into ``slots`` by score descending, equal scores by memory id (as the SQL path)."""
        order = np.argsort(-scores, kind="stable")
        i = 0
        while i < len(order):
            j = i + 1
            while j < len(order) and scores[order[j]] == scores[order[i]]:
                j += 1
            run = [int(t) for t in order[i:j]]
            if len(run) > 1:
                run.sort(key=lambda t: self.ids[int(slots[t])] or "")
            yield from run
            i = j

    def _rank(self, query: SearchQuery, slots: np.ndarray, scores: np.ndarray) -> SearchPage:
        hits: list[ScoredEntry] = []
        total = 0
        for i in self._ordered(slots, scores):
            slot = int(slots[i])
            entry = self.entry(slot)
            if entry is None:
                continue
            if query.predicate is not None and not query.predicate(entry.metadata):
                continue
            total += 1
            if len(hits) < query.limit:
                mine = _private_copy(entry)
                if query.include_embedding:
                    mine.embedding = self.vectors[slot].tolist()
                hits.append(ScoredEntry(entry=mine, score=min(1.0, max(0.0, float(scores[i])))))
            elif query.predicate is None:
                break
        if query.predicate is None:
            total = len(slots)
        return SearchPage(hits=hits, total=total)

    @staticmethod
    def _fuse(dense: np.ndarray, lex: np.ndarray | None, w: float) -> np.ndarray:
        """``dense + w · lex · (1 - dense) · gate(dense)`` element-wise (``lex`` aligned with ``dense``;
        ``retrieval/lexical.py``)."""
        if lex is None or w <= 0:
            return dense
        gate = np.clip((2.0 * dense - 1.0 - GATE_LOW) / (GATE_HIGH - GATE_LOW), 0.0, 1.0)
        return np.asarray(np.clip(dense + w * lex * (1.0 - dense) * gate, 0.0, 1.0))

    def _exact(self, query: SearchQuery, q: np.ndarray, qnorm: float, now: float, lex: np.ndarray | None,
               w: float, n: int) -> SearchPage:
        if n == 0:
            return SearchPage(hits=[], total=0)
        scores = self._fuse(self._dense(q, qnorm), None if lex is None else lex[:n], w)
        eligible = np.flatnonzero(self._eligible(np.arange(n), now))
        return self._top(query, eligible, scores[eligible])

    def _top(self, query: SearchQuery, slots: np.ndarray, scores: np.ndarray) -> SearchPage:
        """The slots at or above ``min_score``, ranked; only the best ``limit`` are sorted when no
        predicate can reject some (ties at the cut are kept, then sorted by id), ``total`` still
        counts every slot above ``min_score``."""
        keep = scores >= query.min_score
        slots, scores = slots[keep], scores[keep]
        if query.predicate is None and len(slots) > query.limit:
            cut = np.partition(scores, len(scores) - query.limit)[len(scores) - query.limit]
            top = scores >= cut
            page = self._rank(query, slots[top], scores[top])
            return SearchPage(hits=page.hits, total=len(slots))
        return self._rank(query, slots, scores)

    def _approximate(self, query: SearchQuery, q: np.ndarray, qnorm: float, now: float, bm: _Bm25 | None,
                     w: float, k: int) -> tuple[SearchPage, bool]:
        found = self.ann.search(q, min(k, max(1, len(self.ann_slots))), threads=1)
        dense_keys = np.asarray(found.keys, dtype=np.int64).reshape(-1)
        # more above-threshold rows may lie beyond the k-th dense candidate
        more = len(dense_keys) >= k and bool(
            len(dense_keys) and (1.0 - float(np.asarray(found.distances).reshape(-1)[-1])) >= 2 * query.min_score - 1)
        if bm is not None and w > 0:
            slots = np.union1d(dense_keys, self._lexical_top(bm, max(_LEXICAL_CANDIDATES, k)))
        else:
            slots = np.unique(dense_keys)
        slots = slots[slots < len(self.ids)]
        slots = slots[self._eligible(slots, now)]
        lex = None if bm is None or w <= 0 else self._lexical_at(bm, slots)
        scores = self._fuse(self._dense(q, qnorm, slots), lex, w)
        return self._top(query, slots, scores), more

    # -- HNSW --------------------------------------------------------------------------------------
    def _new_graph(self, connectivity: int, expansion_add: int, expansion_search: int, dtype: str) -> Any:
        from usearch.index import Index

        return Index(ndim=self.dims, metric="cos", dtype=dtype, connectivity=connectivity,
                     expansion_add=expansion_add, expansion_search=expansion_search)

    def _restore(self, saved: SavedGraph, expansion_add: int, expansion_search: int,
                 progress: Callable[[int, int], bool] | None = None) -> tuple[Any, set[int], set[int], bool] | None:
        """The saved graph with its stale slots taken out and this partition's other rows put in.

        Returns None when the file does not fit (another shape, or most rows changed since it was
        written: a fresh build is then cheaper than patching)."""
        from usearch.index import Index

        graph = Index.restore(saved.graph(), connectivity=saved.params.get("connectivity", 32),
                              expansion_add=expansion_add, expansion_search=expansion_search)
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

    def build_ann(self, connectivity: int, expansion_add: int, expansion_search: int,
                  saved: SavedGraph | None = None, dtype: str = "i8",
                  stop: threading.Event | None = None,
                  expansion_reference: int = EXPANSION_REFERENCE_ROWS) -> bool:
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
                slots = np.flatnonzero(self.present[:len(self.ids)])
                # a slot's vector is written once (a changed row moves to a new slot) and growing
                # allocates a new matrix: a view of the live prefix stays valid without a copy
                vectors = self.vectors[:len(slots)] if len(slots) == len(self.ids) else self.vectors[slots]
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

    def __init__(self, dims: int, write_lock: Any, *, ann_threshold: int = DEFAULT_ANN_THRESHOLD,
                 max_rows: int = DEFAULT_MAX_ROWS, connectivity: int = 32, expansion_add: int = 128,
                 expansion_search: int = 192, ann_dtype: str = "i8", store: AnnStore | None = None) -> None:
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
            thread = threading.Thread(target=self._build, args=(part,), name=f"stratamem-hnsw-{part.key[1]}",
                                      daemon=True)
            with self._lock:
                self._builders = [t for t in self._builders if t.is_alive()]
                self._builders.append(thread)
            thread.start()

    def _build(self, part: Partition) -> None:
        started = time.perf_counter()
        saved, part.saved = part.saved, None
        try:
            part.restored = part.build_ann(self.connectivity, self.expansion_add, self.expansion_search, saved,
                                           self.ann_dtype, self._stop, self.expansion_reference_rows)
            log.info("search index: HNSW for %s (%d rows) %s in %.1fs", part.key[1:], part.n_live,
                     "restored" if part.restored else "built", time.perf_counter() - started)
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

    def search(self, key: PartitionKey, load: Callable[[], LoadedRows], query: SearchQuery) -> SearchPage:
        part = self.partition(key, load)
        with part.lock:
            return part.search(query, use_ann=not query.exact and part.n_live > self.ann_threshold)

    def centroid(self, key: PartitionKey, load: Callable[[], LoadedRows]) -> Centroid | None:
        part = self.partition(key, load)
        with part.lock:
            return part.centroid()

    def stats(self) -> dict[str, Any]:
        with self._lock:
            parts = list(self._partitions.values())
        return {
            "partitions": len(parts),
            "rows": sum(p.n_live for p in parts),
            "ann_threshold": self.ann_threshold,
            "saved_graphs": self.store is not None,
            "ann_partitions": [{"tenant_id": p.key[0], "layer": p.key[1], "rows": p.n_live,
                                "ready": p.ann is not None and not p.ann_building, "restored": p.restored,
                                "saved": p.on_disk, "expansion_search": p.ann_expansion}
                               for p in parts if p.ann is not None or p.ann_building],
        }
