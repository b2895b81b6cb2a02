"""Merging per-layer search results: narrower layers win over broader ones on near-duplicates.

Results are ordered by layer precedence first (agent … company), then by score. A result whose
embedding is at least ``dedup_threshold`` similar (same [0, 1] scale as scores) to one already
kept is dropped, so the more specific layer wins ("project overrides company").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from .embeddings.base import Vector
from .layers import precedence
from .model import Layer
from .providers.base import ScoredEntry
from .retrieval.centering import MIN_ROWS, Centroid, relevance_z
from .retrieval.lexical import lexical_gate


def merge_results(
    per_layer: Iterable[tuple[Layer, list[ScoredEntry]]],
    *,
    dedup_threshold: float,
) -> tuple[list[tuple[Layer, ScoredEntry]], int]:
    """Flatten, sort by (precedence, -score, id) and drop near-duplicates.

    Returns the merged list and how many duplicates were dropped.
    """
    flat = [(layer, hit) for layer, hits in per_layer for hit in hits]
    flat.sort(key=lambda item: (precedence(item[0]), -item[1].score, item[1].entry.id))
    kept: list[tuple[Layer, ScoredEntry]] = []
    kept_vecs: list[np.ndarray] = []
    dropped = 0
    for layer, hit in flat:
        emb = hit.entry.embedding
        vec = np.asarray(emb, dtype=np.float32) if emb is not None else None
        if vec is not None and kept_vecs:
            sims = (1.0 + np.vstack(kept_vecs) @ vec) / 2.0
            if float(sims.max()) >= dedup_threshold:
                dropped += 1
                continue
        kept.append((layer, hit))
        if vec is not None:
            kept_vecs.append(vec)
    return kept, dropped


#: A result whose lexical match (``lex`` of ``retrieval/lexical.py``: the square root of its share of
#: the BM25 of a memory holding every query word) is at least this is kept whatever its relevance:
#: an identifier or a rare name the embedder does not represent ("QX-1017") shows the memory is about
#: more than what its scope shares.
LEXICAL_KEEP = 0.5


def above_relevance_floor(
    merged: list[tuple[Layer, ScoredEntry]],
    query: Vector,
    centroids: Mapping[Layer, Centroid | None],
    floor: float,
    lexical_weight: float = 0.0,
) -> list[tuple[Layer, ScoredEntry]]:
    """The results whose relevance to the query, measured from their scope's centroid, is at least
    ``floor`` standard deviations above the scope's background (``retrieval/centering.py``), or whose
    lexical match is at least ``LEXICAL_KEEP``; a result without a vector, or whose scope has no
    centroid, no background or fewer than ``MIN_ROWS`` memories, is kept."""
    return [
        (layer, hit) for layer, hit in merged if _above_floor(query, hit, centroids.get(layer), floor, lexical_weight)
    ]


def lexical_match(score: float, query: Vector, vector: Sequence[float], weight: float) -> float:
    """The ``lex`` part of a fused ``score`` (``dense + w · lex · (1 - dense) · gate(dense)``), from
    the query and memory vectors; 0 when the score has no lexical part."""
    q = np.asarray(query, dtype=np.float32)
    m = np.asarray(vector, dtype=np.float32)
    cosine = float(q @ m) / max(float(np.linalg.norm(q) * np.linalg.norm(m)), 1e-12)
    dense = (1.0 + cosine) / 2.0
    share = weight * (1.0 - dense) * lexical_gate(dense)
    return max(0.0, (score - dense) / share) if share > 1e-9 else 0.0


def _above_floor(
    query: Vector, hit: ScoredEntry, centroid: Centroid | None, floor: float, lexical_weight: float
) -> bool:
    vector = hit.entry.embedding
    if centroid is None or centroid.rows < MIN_ROWS or vector is None:
        return True
    z = relevance_z(query, [vector], centroid)
    if z is None or float(z[0]) >= floor:
        return True
    return lexical_weight > 0 and lexical_match(hit.score, query, vector, lexical_weight) >= LEXICAL_KEEP
