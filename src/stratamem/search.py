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


def above_relevance_floor(
    merged: list[tuple[Layer, ScoredEntry]],
    query: Vector,
    centroids: Mapping[Layer, Centroid | None],
    floor: float,
) -> list[tuple[Layer, ScoredEntry]]:
    """The results whose relevance to the query, measured from their scope's centroid, is at least
    ``floor`` standard deviations above the scope's background (``retrieval/centering.py``); a
    result without a vector, or whose scope has no centroid, no background or fewer than
    ``MIN_ROWS`` memories, is kept."""
    return [
        (layer, hit) for layer, hit in merged if _above_floor(query, hit.entry.embedding, centroids.get(layer), floor)
    ]


def _above_floor(query: Vector, vector: Sequence[float] | None, centroid: Centroid | None, floor: float) -> bool:
    if centroid is None or centroid.rows < MIN_ROWS or vector is None:
        return True
    z = relevance_z(query, [vector], centroid)
    return z is None or float(z[0]) >= floor
