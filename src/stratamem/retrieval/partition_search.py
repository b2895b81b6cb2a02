"""Scoring of a search-index partition: BM25 over its postings, dense cosine, fusion and ranking."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence

import numpy as np

from ..providers.base import ScoredEntry, SearchPage, SearchQuery
from .index_data import (
    _LEXICAL_CANDIDATES,
    _Bm25,
    _private_copy,
    search_expansion,
)
from .lexical import BM25_B, BM25_K1, GATE_HIGH, GATE_LOW, best_bm25, idf, query_terms
from .partition_rows import PartitionRows

#: Rows per matrix-vector product of the exact dense scan. numpy's BLAS (OpenBLAS) spreads a product
#: over more rows than about this across all cores; in a server where concurrent searches already
#: use the cores, those helper threads wait for a core and spin, and one scan costs several times
#: its single-threaded time (benchmarks/RESULTS.md, "exact scan on one thread"). Chunks this size
#: stay on the calling thread, whatever the BLAS, and change no process-wide setting.
MATVEC_ROWS = 1024


def matvec(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """``matrix @ vector`` in chunks of :data:`MATVEC_ROWS` rows, each on the calling thread."""
    n = len(matrix)
    if n <= MATVEC_ROWS:
        return np.asarray(matrix @ vector)
    out = np.empty(n, dtype=np.result_type(matrix.dtype, vector.dtype))
    for start in range(0, n, MATVEC_ROWS):
        np.matmul(matrix[start : start + MATVEC_ROWS], vector, out=out[start : start + MATVEC_ROWS])
    return out


class PartitionSearch(PartitionRows):
    """Exact and HNSW-backed search over a partition's rows (scores as the SQL path computes them)."""

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
        return np.asarray(weight * tf * (BM25_K1 + 1.0) / (tf + BM25_K1 * (1.0 - BM25_B + BM25_B * lengths / bm.avgdl)))

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
        parts = [
            (slots, self._term_score(bm, tf, slots, w))
            for (slots, tf), w in zip(bm.arrays, bm.weights, strict=True)
            if len(slots) <= limit
        ]
        if not parts:
            return np.zeros(0, dtype=np.int64)
        all_slots = np.concatenate([p[0] for p in parts])
        uniq, inverse = np.unique(all_slots, return_inverse=True)
        sums = np.bincount(inverse, weights=np.concatenate([p[1] for p in parts]))
        if len(uniq) > m:
            uniq = uniq[np.argpartition(sums, len(sums) - m)[len(sums) - m :]]
        return np.asarray(uniq, dtype=np.int64)

    def _dense(self, query: np.ndarray, qnorm: float, slots: np.ndarray | None = None) -> np.ndarray:
        n = len(self.ids)
        vectors = self.vectors[:n] if slots is None else self.vectors[slots]
        norms = self.norms[:n] if slots is None else self.norms[slots]
        with np.errstate(divide="ignore", invalid="ignore"):
            cos = matvec(vectors, query) / (norms * qnorm)
        cos = np.nan_to_num(cos, nan=0.0, posinf=0.0, neginf=0.0)
        return np.asarray(np.clip((1.0 + cos.astype(np.float64)) / 2.0, 0.0, 1.0))

    def search(self, query: SearchQuery, *, use_ann: bool) -> SearchPage:
        self.last_used = time.monotonic()
        q = np.asarray(query.vector, dtype=np.float32).reshape(-1)
        qnorm = float(np.sqrt(q @ q))  # not np.linalg.norm: see centering._row_dots
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
                vector = None
                if query.include_embedding and query.vectors_only:  # the row itself, no list of floats
                    vector = self.vectors[slot].copy()
                elif query.include_embedding:
                    mine.embedding = self.vectors[slot].tolist()
                hits.append(ScoredEntry(entry=mine, score=min(1.0, max(0.0, float(scores[i]))), vector=vector))
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

    def _exact(
        self, query: SearchQuery, q: np.ndarray, qnorm: float, now: float, lex: np.ndarray | None, w: float, n: int
    ) -> SearchPage:
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

    def _approximate(
        self, query: SearchQuery, q: np.ndarray, qnorm: float, now: float, bm: _Bm25 | None, w: float, k: int
    ) -> tuple[SearchPage, bool]:
        found = self.ann.search(q, min(k, max(1, len(self.ann_slots))), threads=1)
        dense_keys = np.asarray(found.keys, dtype=np.int64).reshape(-1)
        # more above-threshold rows may lie beyond the k-th dense candidate
        more = len(dense_keys) >= k and bool(
            len(dense_keys) and (1.0 - float(np.asarray(found.distances).reshape(-1)[-1])) >= 2 * query.min_score - 1
        )
        if bm is not None and w > 0:
            slots = np.union1d(dense_keys, self._lexical_top(bm, max(_LEXICAL_CANDIDATES, k)))
        else:
            slots = np.unique(dense_keys)
        slots = slots[slots < len(self.ids)]
        slots = slots[self._eligible(slots, now)]
        lex = None if bm is None or w <= 0 else self._lexical_at(bm, slots)
        scores = self._fuse(self._dense(q, qnorm, slots), lex, w)
        return self._top(query, slots, scores), more
