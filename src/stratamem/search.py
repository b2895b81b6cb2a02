"""Merging per-layer search results: narrower layers win over broader ones on near-duplicates.

Results are ordered by layer precedence first (agent … company), then by score. A result whose
embedding is at least ``dedup_threshold`` similar (same [0, 1] scale as scores) to one already
kept is dropped, so the more specific layer wins ("project overrides company").
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .embeddings.base import Vector
from .layers import precedence
from .model import Layer
from .providers.base import ScoredEntry, hit_vector
from .retrieval.centering import MIN_ROWS, Centroid, relevance_z, relevance_z_each
from .retrieval.lexical import lexical_gate


def hit_vectors(hits: Sequence[ScoredEntry]) -> list[npt.NDArray[np.float32] | None]:
    """Each hit's embedding as a float32 vector (None for a hit without one): the provider's own
    ``ScoredEntry.vector``, else the entry's list, the lists converted in one call (rows of one
    matrix) rather than one conversion per hit; the values are the same either way.

    Args:
        hits: the hits, in any order.

    Returns:
        One vector or None per hit, in the order of ``hits``.
    """
    lists = [hit.entry.embedding for hit in hits if hit.vector is None and hit.entry.embedding is not None]
    try:
        matrix = np.asarray(lists, dtype=np.float32)
    except ValueError:  # embeddings of different lengths: one array each
        matrix = None
    rows: Iterator[npt.NDArray[np.float32]] = iter(
        matrix
        if matrix is not None and matrix.ndim == 2
        else [np.asarray(embedding, dtype=np.float32) for embedding in lists]
    )
    return [
        hit.vector if hit.vector is not None else next(rows) if hit.entry.embedding is not None else None
        for hit in hits
    ]


def merge_results(
    per_layer: Iterable[tuple[Layer, list[ScoredEntry]]],
    *,
    dedup_threshold: float,
    vectors: list[npt.NDArray[np.float32] | None] | None = None,
) -> tuple[list[tuple[Layer, ScoredEntry]], int]:
    """Flatten, sort by (precedence, -score, id) and drop near-duplicates.

    Args:
        per_layer: each searched layer with its hits.
        dedup_threshold: similarity (the scores' [0, 1] scale) from which a hit is a duplicate of
            one kept before it.
        vectors: when given, the float32 vector of each kept hit (None without one) is appended
            to it, in the order of the merged list (for :func:`above_relevance_floor`).

    Returns:
        The merged list and how many duplicates were dropped.
    """
    flat = [(layer, hit) for layer, hits in per_layer for hit in hits]
    flat.sort(key=lambda item: (precedence(item[0]), -item[1].score, item[1].entry.id))
    kept: list[tuple[Layer, ScoredEntry]] = []
    # the kept vectors are the first ``n_kept`` rows of one matrix: ``kept_matrix[:n] @ vec`` is the
    # product (and the same floats) of the kept vectors stacked, without stacking them per hit
    kept_matrix: npt.NDArray[np.float32] | None = None
    n_kept = 0
    dropped = 0
    for (layer, hit), vec in zip(flat, hit_vectors([hit for _, hit in flat]), strict=True):
        if vec is not None and kept_matrix is not None and n_kept:
            sims = (1.0 + kept_matrix[:n_kept] @ vec) / 2.0
            if float(sims.max()) >= dedup_threshold:
                dropped += 1
                continue
        kept.append((layer, hit))
        if vectors is not None:
            vectors.append(vec)
        if vec is not None:
            if kept_matrix is None:
                kept_matrix = np.empty((len(flat), len(vec)), dtype=np.float32)
            kept_matrix[n_kept] = vec
            n_kept += 1
    return kept, dropped


#: Two results of one layer whose vectors are at least this similar state nearly the same thing
#: (a value and its later restatement: "Adult tickets cost 10 pounds" / "Adult tickets are 12 pounds
#: to cover the hall hire", 0.75), and within this much of each other's score the newer one comes first.
NEWER_FIRST_MIN_COSINE = 0.7
NEWER_FIRST_MAX_GAP = 0.05


def newer_first(
    merged: list[tuple[Layer, ScoredEntry]],
    *,
    min_cosine: float = NEWER_FIRST_MIN_COSINE,
    max_gap: float = NEWER_FIRST_MAX_GAP,
    vectors: Sequence[npt.NDArray[np.float32] | None] | None = None,
) -> list[tuple[Layer, ScoredEntry]]:
    """``merged`` (ordered by score) with the newer of two results that state nearly the same thing
    moved before the older one when it scores at most ``max_gap`` less: a changed fact that no
    supersession rule read as a change ("… are 12 pounds to cover the hall hire" after "… cost 10
    pounds") is still current first, while the older one stays in the results. Only within one
    layer, and not for conversation turns (a memory with a position records what was said, not the
    current state of a fact); one pass, each result moved at most once before the one it restates.

    Args:
        merged: the results of a search, best first.
        min_cosine: the cosine from which two results state the same thing.
        max_gap: the largest score difference that the newer one may make up.
        vectors: each result's float32 vector (None without one), as :func:`merge_results` gives
            them; converted from the entries when not given.

    Returns:
        The same results, reordered.
    """
    if len(merged) < 2:
        return merged
    rows = hit_vectors([hit for _, hit in merged]) if vectors is None else vectors
    items = list(zip(merged, rows, strict=True))
    out: list[tuple[tuple[Layer, ScoredEntry], npt.NDArray[np.float32] | None]] = []
    while items:
        (layer, hit), vec = first = items.pop(0)
        found = None
        if vec is not None and hit.entry.provenance.position is None:
            for j, ((other_layer, other), other_vec) in enumerate(items):
                if hit.score - other.score > max_gap:
                    break
                if (
                    other_layer == layer
                    and other_vec is not None
                    and other.entry.provenance.position is None
                    and other.entry.created_at > hit.entry.created_at
                    and float(vec @ other_vec) >= min_cosine
                ):
                    found = j
                    break
        if found is not None:
            out.append(items.pop(found))
        out.append(first)
    return [item for item, _ in out]


#: A result whose lexical match (``lex`` of ``retrieval/lexical.py``: the square root of its share of
#: the BM25 of a memory holding every query word) is at least this is kept whatever its relevance:
#: an identifier or a rare name the embedder does not represent ("QX-1017") shows the memory is about
#: more than what its scope shares.
LEXICAL_KEEP = 0.5


@dataclass(frozen=True)
class FloorMeasure:
    """How one candidate of a default search fared against the relevance floor.

    ``sigma`` is its relevance in standard deviations above its scope's background (None when the
    floor does not apply to it: no vector, or a scope without a centroid, a background or
    ``MIN_ROWS`` memories); ``lexical_exception`` is True when it was below the floor and kept
    because its lexical match is at least ``LEXICAL_KEEP``.
    """

    layer: Layer
    hit: ScoredEntry
    sigma: float | None
    floor: float
    lexical_exception: bool
    kept: bool


def above_relevance_floor(
    merged: list[tuple[Layer, ScoredEntry]],
    query: Vector | Mapping[Layer, Vector],
    centroids: Mapping[Layer, Centroid | None],
    floor: float,
    lexical_weight: float = 0.0,
    report: list[FloorMeasure] | None = None,
    vectors: Sequence[npt.NDArray[np.float32] | None] | None = None,
) -> list[tuple[Layer, ScoredEntry]]:
    """The results whose relevance to the query, measured from their scope's centroid, is at least
    ``floor`` standard deviations above the scope's background (``retrieval/centering.py``), or whose
    lexical match is at least ``LEXICAL_KEEP``; a result without a vector, or whose scope has no
    centroid, no background or fewer than ``MIN_ROWS`` memories, is kept.

    Args:
        merged: the merged candidates, in order.
        query: the query vector, or each layer's (a personal layer may be searched with the question
            in other words, ``retrieval/voice.py``).
        centroids: each layer's scope centroid (None when the scope has none).
        floor: standard deviations above the background a result needs.
        lexical_weight: the lexical weight of the fused scores (0: no identifier exception).
        report: when given, one :class:`FloorMeasure` per candidate is appended to it (the
            search console's explanation); the kept results are the same either way.
        vectors: each candidate's float32 vector (None without one), as :func:`merge_results`
            gives them; converted from the entries when not given.

    Returns:
        The kept candidates, in order.
    """
    rows = hit_vectors([hit for _, hit in merged]) if vectors is None else vectors
    # each layer's candidates measured in one call (the query's part computed once per scope)
    sigmas: list[float | None] = [None] * len(merged)
    for layer in dict.fromkeys(layer for layer, _ in merged):
        centroid = centroids.get(layer)
        if centroid is None or centroid.rows < MIN_ROWS:
            continue
        at: list[int] = []
        chosen: list[npt.NDArray[np.float32]] = []
        for i, (lr, _) in enumerate(merged):
            row = rows[i]
            if lr == layer and row is not None:
                at.append(i)
                chosen.append(row)
        z = relevance_z_each(_of(query, layer), chosen, centroid) if chosen else None
        for i, measured in zip(at, z or [], strict=False):
            sigmas[i] = measured
    kept: list[tuple[Layer, ScoredEntry]] = []
    for (layer, hit), sigma, row in zip(merged, sigmas, rows, strict=True):
        measure = _measure(layer, hit, _of(query, layer), sigma, floor, lexical_weight, row)
        if report is not None:
            report.append(measure)
        if measure.kept:
            kept.append((layer, hit))
    return kept


def _of(query: Vector | Mapping[Layer, Vector], layer: Layer) -> Vector:
    return query[layer] if isinstance(query, Mapping) else query


def lexical_match(
    score: float, query: Vector, vector: npt.NDArray[np.float32] | Sequence[float], weight: float
) -> float:
    """The ``lex`` part of a fused ``score`` (``dense + w · lex · (1 - dense) · gate(dense)``), from
    the query and memory vectors; 0 when the score has no lexical part."""
    q = np.asarray(query, dtype=np.float32)
    m = np.asarray(vector, dtype=np.float32)
    # norms as sqrt(v @ v), not np.linalg.norm: the same float without releasing the GIL (centering._row_dots)
    cosine = float(q @ m) / max(float(np.sqrt(q @ q) * np.sqrt(m @ m)), 1e-12)
    dense = (1.0 + cosine) / 2.0
    share = weight * (1.0 - dense) * lexical_gate(dense)
    return max(0.0, (score - dense) / share) if share > 1e-9 else 0.0


def floor_measure(
    layer: Layer, hit: ScoredEntry, query: Vector, centroid: Centroid | None, floor: float, lexical_weight: float
) -> FloorMeasure:
    """One candidate against the relevance floor (see :func:`above_relevance_floor`).

    Args:
        layer: the candidate's layer.
        hit: the candidate.
        query: the query vector.
        centroid: the centroid of the candidate's scope, None when it has none.
        floor: standard deviations above the background a result needs.
        lexical_weight: the lexical weight of the fused score.

    Returns:
        Its relevance in standard deviations, and whether it is kept (and by the identifier exception).
    """
    vector = hit_vector(hit)
    if centroid is None or centroid.rows < MIN_ROWS or vector is None:
        return FloorMeasure(layer, hit, None, floor, lexical_exception=False, kept=True)
    z = relevance_z(query, [np.asarray(vector, dtype=np.float32)], centroid)
    return _measure(layer, hit, query, None if z is None else float(z[0]), floor, lexical_weight, vector)


def _measure(
    layer: Layer,
    hit: ScoredEntry,
    query: Vector,
    sigma: float | None,
    floor: float,
    lexical_weight: float,
    vector: npt.NDArray[np.float32] | Sequence[float] | None,
) -> FloorMeasure:
    """The :class:`FloorMeasure` of a candidate with this vector whose relevance is ``sigma``
    standard deviations (None: the floor does not apply to it)."""
    if sigma is None:
        return FloorMeasure(layer, hit, None, floor, lexical_exception=False, kept=True)
    if sigma >= floor:
        return FloorMeasure(layer, hit, sigma, floor, lexical_exception=False, kept=True)
    exception = (
        lexical_weight > 0
        and vector is not None
        # the relevance, not a boosted score: a boost re-ranks matches, it never drops one
        and lexical_match(hit.score if hit.relevance is None else hit.relevance, query, vector, lexical_weight)
        >= LEXICAL_KEEP
    )
    return FloorMeasure(layer, hit, sigma, floor, lexical_exception=exception, kept=exception)
