"""The relevance floor of default search: similarity measured from the scope's centroid.

Sentence embeddings of one scope share a common direction (every memory of a user is "about the
user"), so a question with no stored answer still finds memories at a raw cosine close to the
answering ones. Subtracting the centroid of the scope's current memories from the query and from
each memory removes that shared part: what remains is how much *more* a memory has in common with
the question than the average memory of the scope. Default search drops results whose centered
cosine is below ``MemoryConfig.relevance_floor`` (docs/ranking.md has the measurement the default
was chosen from).

A scope with fewer than ``MIN_ROWS`` current memories is not floored: the mean of a handful of
memories is mostly those memories themselves, and centering would erase them. Above that the
centroid is still shrunk a little towards zero (``rows / (rows + SHRINK_ROWS)``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

#: Current memories a scope needs before its centroid is used.
MIN_ROWS = 10
#: Rows at which the centroid counts half (shrinkage of small scopes).
SHRINK_ROWS = 2


@dataclass(frozen=True)
class Centroid:
    """The mean of the unit vectors of a scope's current memories, and how many there were."""

    mean: npt.NDArray[np.float32]
    rows: int


def mean_of_unit_rows(vectors: npt.ArrayLike) -> Centroid | None:
    """The centroid of ``vectors`` (each row normalised first); None without rows."""
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim != 2 or len(matrix) == 0:
        return None
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return Centroid(mean=np.asarray((matrix / norms).mean(axis=0), dtype=np.float32), rows=len(matrix))


def centered_cosines(query: npt.ArrayLike, vectors: npt.ArrayLike, centroid: Centroid) -> npt.NDArray[np.float64]:
    """Cosine of each row of ``vectors`` with ``query``, both measured from the shrunk centroid."""
    shift = centroid.mean * (centroid.rows / (centroid.rows + SHRINK_ROWS))
    q = np.asarray(query, dtype=np.float32).reshape(-1)
    q = q / max(float(np.linalg.norm(q)), 1e-12) - shift
    m = np.asarray(vectors, dtype=np.float32)
    m = m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12) - shift
    qn = max(float(np.linalg.norm(q)), 1e-12)
    mn = np.maximum(np.linalg.norm(m, axis=1), 1e-12)
    return np.asarray((m @ q) / (mn * qn), dtype=np.float64)
