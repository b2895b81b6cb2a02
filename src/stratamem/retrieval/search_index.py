"""In-process search index of the embedded store: exact while a partition is small, HNSW once large.

DuckDB answers a search by scanning every row of the scope (``array_cosine_similarity`` plus the
BM25 postings join): fine at 1k rows, about 1.4 s at 100k. DuckDB's ``vss`` extension filters
*after* its top-k, which would break tenant and layer filtering. So the embedded provider keeps,
for each searched **partition** (tenant, layer, scope key), an in-memory mirror of the committed
rows:

* the raw vectors (float32 matrix) and their norms, the rows themselves (without embedding),
  status and expiry as arrays, and an inverted index (term → {slot: tf}) with document lengths;
* the partition is the unit of filtering: tenant, layer and scope are chosen *before* any top-k,
  so a search can never see another tenant's or layer's rows;
* **exact** search (one matrix-vector product + vectorised BM25) while the partition has at most
  ``ann_threshold`` rows; above it a usearch HNSW index (cosine) is built on a background thread
  and, once ready, supplies the dense candidates (searches stay exact until then). Candidates are
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
``drop_tenant``. The mirror lives in process memory only: a crash loses it and the next search
rebuilds it from the committed rows, so it can never return a deleted or other-tenant row that
the database does not hold. Partitions not searched for a while are evicted when the mirrored
rows exceed ``max_rows`` (least recently used first).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from ..model import MemoryEntry
from ..providers.base import ScoredEntry, SearchPage, SearchQuery
from .lexical import BM25_B, BM25_K1, query_terms, term_counts

log = logging.getLogger(__name__)

PartitionKey = tuple[str, str, str]  # (tenant_id, layer, scope key)
#: A row read from the database: (id, content, status, expires_at, raw row for ``materialize``, vector).
LoadedRow = tuple[str, str, str, "datetime | None", Any, Any]

#: Default size (live rows) above which a partition is served by HNSW.
DEFAULT_ANN_THRESHOLD = 20_000
#: Default cap of mirrored rows over all partitions (least recently searched evicted first).
DEFAULT_MAX_ROWS = 2_000_000
_INITIAL_CAPACITY = 64
#: A partition with more dead slots than this (and than live rows) is dropped and reloaded.
COMPACT_MIN_DEAD = 1024
#: Lexical candidates re-scored in an ANN search, at least (the best ``lex`` first).
_LEXICAL_CANDIDATES = 200


def _epoch(value: datetime | None) -> float:
    return math.inf if value is None else value.timestamp()


@dataclass
class Change:
    """The effect of one committed write on the mirror."""

    kind: str  # "upsert" | "delete" | "patch"
    tenant_id: str
    entries: Sequence[MemoryEntry] = ()
    ids: Sequence[str] = ()
    patch: Callable[[MemoryEntry], MemoryEntry] | None = None


@dataclass
class _Bm25:
    arrays: list[tuple[np.ndarray, np.ndarray]]  # (slots, tf) of each query term present
    weights: list[float]  # idf of each
    best: float  # the best BM25 any row could reach: sum(idf) * (k1 + 1)
    avgdl: float


class _Postings:
    """One term's postings: numpy arrays of (slot, tf) plus a tail of recent appends.

    Slots are never reused (a changed row moves to a new slot), so a removed row's postings are
    simply skipped through the partition's ``present`` mask and dropped when the arrays are next
    compacted; appends go to the tail and are merged on the next search.
    """

    __slots__ = ("slots", "tail", "tf")

    def __init__(self) -> None:
        self.slots = np.zeros(0, dtype=np.int64)
        self.tf = np.zeros(0, dtype=np.float64)
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


class Partition:
    """The mirrored rows of one (tenant, layer, scope) partition. All access under ``lock``.

    Rows loaded from the database are kept as raw tuples and turned into ``MemoryEntry`` objects
    (``materialize``) only when a search returns or filters them.
    """

    def __init__(self, key: PartitionKey, dims: int,
                 materialize: Callable[[Any], MemoryEntry] | None = None) -> None:
        self.key = key
        self.dims = dims
        self.materialize = materialize
        self.lock = threading.RLock()
        self.ids: list[str | None] = []
        self.slot: dict[str, int] = {}
        self.entries: list[Any] = []  # MemoryEntry, a raw row for ``materialize``, or None (removed)
        self.contents: list[str | None] = []
        cap = _INITIAL_CAPACITY
        self.vectors = np.zeros((cap, dims), dtype=np.float32)
        self.norms = np.zeros(cap, dtype=np.float32)
        self.present = np.zeros(cap, dtype=bool)  # slot holds a row (any status)
        self.active = np.zeros(cap, dtype=bool)  # status == 'active'
        self.expires = np.full(cap, math.inf, dtype=np.float64)
        self.lengths = np.zeros(cap, dtype=np.int32)  # document length in terms (0 = no postings)
        self.postings: dict[str, _Postings] = {}
        self.n_docs = 0  # rows with at least one term (BM25 N)
        self.total_length = 0
        self.n_live = 0  # rows present (any status)
        self.ann: Any = None  # usearch Index once built
        self.ann_slots: set[int] = set()
        self.ann_building = False
        self.ann_dirty: set[int] = set()  # slots changed while the HNSW index was being built
        self.last_used = time.monotonic()

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
        counts = term_counts(content)
        length = sum(counts.values())
        self.lengths[slot] = length
        if length:
            self.n_docs += 1
            self.total_length += length
        for term, tf in counts.items():
            bucket = self.postings.get(term)
            if bucket is None:
                bucket = self.postings[term] = _Postings()
            bucket.add(slot, tf)
        vec = np.asarray(vector, dtype=np.float32).reshape(-1)
        self.vectors[slot] = vec
        self.norms[slot] = float(np.linalg.norm(vec))
        if self.ann_building:
            self.ann_dirty.add(slot)
        if self.ann is not None:
            self.ann.add(slot, vec)
            self.ann_slots.add(slot)
        return slot

    def load(self, memory_id: str, content: str, status: str, expires_at: datetime | None, row: Any,
             vector: Any) -> None:
        """Add a row read from the database (kept raw until a search needs it)."""
        self._new_slot(memory_id, content, vector, row, status, expires_at)

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
        self.n_live -= 1

    def entry(self, slot: int) -> MemoryEntry | None:
        value = self.entries[slot]
        if value is None or isinstance(value, MemoryEntry):
            return value
        if self.materialize is None:
            raise RuntimeError("a raw row without a materialize function")
        entry = self.materialize(value)
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
        self.active[slot] = new.status == "active"
        self.expires[slot] = _epoch(new.expires_at)

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
        weights = [math.log(1.0 + (n - len(slots) + 0.5) / (len(slots) + 0.5)) for slots, _ in arrays]
        best = sum(weights) * (BM25_K1 + 1.0)
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
        keep = scores >= query.min_score
        slots, scores = slots[keep], scores[keep]
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
                copy = entry.model_copy(deep=True)
                if query.include_embedding:
                    copy.embedding = self.vectors[slot].tolist()
                hits.append(ScoredEntry(entry=copy, score=min(1.0, max(0.0, float(scores[i])))))
            elif query.predicate is None:
                break
        if query.predicate is None:
            total = len(slots)
        return SearchPage(hits=hits, total=total)

    @staticmethod
    def _fuse(dense: np.ndarray, lex: np.ndarray | None, w: float) -> np.ndarray:
        """``dense + w · lex · (1 - dense)`` element-wise (``lex`` aligned with ``dense``)."""
        if lex is None or w <= 0:
            return dense
        return np.asarray(np.clip(dense + w * lex * (1.0 - dense), 0.0, 1.0))

    def _exact(self, query: SearchQuery, q: np.ndarray, qnorm: float, now: float, lex: np.ndarray | None,
               w: float, n: int) -> SearchPage:
        if n == 0:
            return SearchPage(hits=[], total=0)
        scores = self._fuse(self._dense(q, qnorm), None if lex is None else lex[:n], w)
        eligible = np.flatnonzero(self._eligible(np.arange(n), now) & (scores >= query.min_score))
        scores = scores[eligible]
        if query.predicate is None and len(eligible) > query.limit:
            # only the best ``limit`` need sorting (ties at the cut are kept, then sorted by id)
            cut = np.partition(scores, len(scores) - query.limit)[len(scores) - query.limit]
            top = scores >= cut
            page = self._rank(query, eligible[top], scores[top])
            return SearchPage(hits=page.hits, total=len(eligible))
        return self._rank(query, eligible, scores)

    def _approximate(self, query: SearchQuery, q: np.ndarray, qnorm: float, now: float, bm: _Bm25 | None,
                     w: float, k: int) -> tuple[SearchPage, bool]:
        found = self.ann.search(q, min(k, max(1, len(self.ann_slots))))
        dense_keys = np.asarray(found.keys, dtype=np.int64).reshape(-1)
        candidates = {int(s) for s in dense_keys}
        # more above-threshold rows may lie beyond the k-th dense candidate
        more = len(dense_keys) >= k and bool(
            len(dense_keys) and (1.0 - float(np.asarray(found.distances).reshape(-1)[-1])) >= 2 * query.min_score - 1)
        if bm is not None and w > 0:
            candidates.update(int(s) for s in self._lexical_top(bm, max(_LEXICAL_CANDIDATES, k)))
        slots = np.sort(np.fromiter(candidates, dtype=np.int64, count=len(candidates)))
        slots = slots[slots < len(self.ids)]
        slots = slots[self._eligible(slots, now)]
        lex = None if bm is None or w <= 0 else self._lexical_at(bm, slots)
        scores = self._fuse(self._dense(q, qnorm, slots), lex, w)
        return self._rank(query, slots, scores), more

    # -- HNSW --------------------------------------------------------------------------------------
    def build_ann(self, connectivity: int, expansion_add: int, expansion_search: int) -> None:
        """Build the HNSW index (background thread); rows written meanwhile are patched in at the end."""
        from usearch.index import Index

        with self.lock:
            self.ann_dirty = set()
            slots = np.array([s for s, i in enumerate(self.ids) if i is not None], dtype=np.int64)
            vectors = self.vectors[slots].copy()
        index = Index(ndim=self.dims, metric="cos", dtype="f32", connectivity=connectivity,
                      expansion_add=expansion_add, expansion_search=expansion_search)
        if len(slots):
            index.add(slots.astype(np.uint64), vectors, threads=1)
        with self.lock:
            built = {int(s) for s in slots}
            for s in sorted(self.ann_dirty):  # written while building: the mirror is the truth
                if s in built:
                    index.remove(s)
                    built.discard(s)
                if s < len(self.ids) and self.ids[s] is not None:
                    index.add(s, self.vectors[s])
                    built.add(s)
            self.ann = index
            self.ann_slots = built
            self.ann_dirty = set()
            self.ann_building = False


class SearchIndex:
    """Every mirrored partition of one DuckDB database (shared by the providers opened on it).

    HNSW parameters (connectivity 32, expansion 128 on add, 256 on search) were chosen on 30k
    all-MiniLM-L6-v2 sentence embeddings (``benchmarks/sentences.py``): recall@10 of the re-ranked
    candidates 0.995 at 1.6 ms, where 16/64/128 gave 0.956 (and 0.86 at 100k).
    """

    def __init__(self, dims: int, write_lock: Any, *, ann_threshold: int = DEFAULT_ANN_THRESHOLD,
                 max_rows: int = DEFAULT_MAX_ROWS, connectivity: int = 32, expansion_add: int = 128,
                 expansion_search: int = 256) -> None:
        self.dims = dims
        #: The store's write lock: a partition is loaded and registered while no write can commit.
        self.write_lock = write_lock
        self.ann_threshold = ann_threshold
        self.max_rows = max_rows
        self.connectivity = connectivity
        self.expansion_add = expansion_add
        self.expansion_search = expansion_search
        self._partitions: OrderedDict[PartitionKey, Partition] = OrderedDict()
        self._lock = threading.RLock()
        self._pending: list[Change] = []
        self._builders: list[threading.Thread] = []

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

    def _apply(self, change: Change) -> None:
        parts = self._tenant_partitions(change.tenant_id)
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
        with self._lock:
            for key in [k for k in self._partitions if k[0] == tenant_id]:
                del self._partitions[key]

    def partition(self, key: PartitionKey, load: Callable[[], Iterable[LoadedRow]],
                  materialize: Callable[[Any], MemoryEntry] | None = None) -> Partition:
        """The partition; loaded with ``load()`` and registered under the write lock if missing."""
        part = self._get(key)
        if part is not None:
            return part
        with self.write_lock:
            part = self._get(key)
            if part is not None:
                return part
            part = Partition(key, self.dims, materialize)
            for row in load():
                part.load(*row)
            with self._lock:
                self._partitions[key] = part
                self._evict()
        self._maybe_build([part])
        return part

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
        try:
            part.build_ann(self.connectivity, self.expansion_add, self.expansion_search)
            log.info("search index: HNSW for %s (%d rows) built in %.1fs", part.key[1:], part.n_live,
                     time.perf_counter() - started)
        except Exception:
            log.exception("search index: HNSW build failed for %s; the partition stays exact", part.key[1:])
            with part.lock:
                part.ann_building = False

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

    def search(self, key: PartitionKey, load: Callable[[], Iterable[LoadedRow]], query: SearchQuery,
               materialize: Callable[[Any], MemoryEntry] | None = None) -> SearchPage:
        part = self.partition(key, load, materialize)
        with part.lock:
            return part.search(query, use_ann=not query.exact and part.n_live > self.ann_threshold)

    def stats(self) -> dict[str, Any]:
        with self._lock:
            parts = list(self._partitions.values())
        return {
            "partitions": len(parts),
            "rows": sum(p.n_live for p in parts),
            "ann_threshold": self.ann_threshold,
            "ann_partitions": [{"tenant_id": p.key[0], "layer": p.key[1], "rows": p.n_live,
                                "ready": p.ann is not None and not p.ann_building}
                               for p in parts if p.ann is not None or p.ann_building],
        }
