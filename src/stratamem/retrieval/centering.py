"""The relevance floor of default search: similarity measured from the scope's centroid, in units
of the scope's own background.

Sentence embeddings of one scope share a common direction (every memory of a user is "about the
user"), so a question with no stored answer still finds memories at a raw cosine close to the
answering ones. Subtracting the centroid of the scope's current memories from the query and from
each memory removes that shared part; what remains is what a memory says *beyond* the scope.

The relevance of a memory to a query (:func:`relevance`) is how far the memory's remaining part
reaches along the direction the query adds to the scope: ``unit(q - c) · (m - c)``. Unlike the
cosine of the two centered vectors, it does not inflate a memory that is almost all shared part
("User's name is Dana"): that memory has little left to reach with.

How high that has to be depends on the scope: a tight scope (one customer's account) has memories
that reach into each other more than a loose one. So each scope's centroid carries its
*background*, the mean and standard deviation of the same relevance between pairs of distinct
memories of the scope (from a fixed sample of at most ``BACKGROUND_SAMPLE`` rows). Default search
drops results whose relevance is less than ``MemoryConfig.relevance_floor`` standard deviations
above that background (:func:`relevance_z`; docs/ranking.md has the measurement the default was
chosen from). A question then needs a memory that stands out the way a memory never stands out
against an unrelated memory of the same scope.

A scope with fewer than ``MIN_ROWS`` current memories is not floored: the centroid of a handful of
memories is mostly those memories themselves, and their background rests on a few pairs. Because
the background is measured in the same scope, the floor holds from a small size on
(``benchmarks/floor_options.py --sizes``). The centroid is still shrunk a little towards zero
(``rows / (rows + SHRINK_ROWS)``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

#: Current memories a scope needs before its centroid is used.
MIN_ROWS = 7
#: Rows at which the centroid counts half (shrinkage of small scopes).
SHRINK_ROWS = 2
#: Most rows of a scope whose pairwise relevance measures its background (evenly spaced rows).
BACKGROUND_SAMPLE = 256


@dataclass(frozen=True)
class Background:
    """Mean and standard deviation of :func:`relevance` between distinct memories of a scope."""

    mean: float
    std: float


@dataclass(frozen=True)
class Centroid:
    """The mean of the unit vectors of a scope's current memories, how many there were, and the
    scope's background relevance (None when it could not be measured)."""

    mean: npt.NDArray[np.float32]
    rows: int
    background: Background | None = None


def _unit_rows(vectors: npt.ArrayLike) -> npt.NDArray[np.float32]:
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim == 1:
        matrix = matrix.reshape(1, -1)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.asarray(matrix / np.maximum(norms, 1e-12), dtype=np.float32)


def _shift(mean: npt.NDArray[np.float32], rows: int) -> npt.NDArray[np.float32]:
    return np.asarray(mean * (rows / (rows + SHRINK_ROWS)), dtype=np.float32)


def _row_dots(rows: npt.NDArray[np.float32], vector: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """Each row's dot product with ``vector``, one row at a time: a stack of (1 x d) by (d x 1)
    products in one numpy call.

    A row's result does not depend on the rows beside it (a matrix-vector product over several rows
    may round the last bit differently from the same row alone). And numpy keeps the GIL for it: a
    dot product of two vectors (``np.dot``, ``np.linalg.norm``) releases and retakes the GIL, which
    in a busy server costs a wait of up to the interpreter's switch interval (5 ms) each time,
    while another thread runs; one call per row made a search wait that often."""
    return np.asarray(np.matmul(rows[:, None, :], vector[:, None])[:, 0, 0], dtype=np.float32)


def _relevance(query: npt.ArrayLike, vectors: npt.ArrayLike, centroid: Centroid) -> npt.NDArray[np.float32]:
    """:func:`relevance` in float32, as ``(m · u) / |m| - c · u`` with ``u = unit(q - c)``: the same
    quantity as ``(unit(m) - c) · u``, computed without an operation over the whole matrix (numpy
    releases the GIL for those, see :func:`_row_dots`), and each row on its own."""
    rows = np.asarray(vectors, dtype=np.float32)
    if rows.ndim == 1:
        rows = rows.reshape(1, -1)
    shift = _shift(centroid.mean, centroid.rows)
    u = _query_part(query, shift)
    norms = np.maximum(np.sqrt(np.matmul(rows[:, None, :], rows[:, :, None])[:, 0, 0]), np.float32(1e-12))
    return np.asarray(_row_dots(rows, u) / norms - np.float32(shift @ u), dtype=np.float32)


def _query_part(query: npt.ArrayLike, shift: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """``unit(q - shift)``: the direction the query adds to the scope."""
    q = _unit_rows(query)[0] - shift
    return np.asarray(q / max(float(np.sqrt(q @ q)), 1e-12), dtype=np.float32)


def sample_rows(n: int) -> npt.NDArray[np.int64]:
    """Indices of the (at most ``BACKGROUND_SAMPLE``) evenly spaced rows the background is measured on."""
    if n <= BACKGROUND_SAMPLE:
        return np.arange(n, dtype=np.int64)
    return np.linspace(0, n - 1, BACKGROUND_SAMPLE).round().astype(np.int64)


def measure_background(sample: npt.ArrayLike, mean: npt.ArrayLike, rows: int) -> Background | None:
    """The background of a scope from a sample of its memories' vectors and its centroid.

    Args:
        sample: vectors of (a sample of) the scope's current memories, one per row.
        mean: the centroid of the scope's unit vectors.
        rows: how many current memories the scope has (the centroid's shrinkage).

    Returns:
        Mean and standard deviation of the relevance of every sampled row to every other, or None
        with fewer than two rows or no spread.
    """
    units = _unit_rows(sample)
    if len(units) < 2:
        return None
    shifted = units - _shift(np.asarray(mean, dtype=np.float32), rows)
    pairs = _unit_rows(shifted) @ shifted.T  # row i as the query, column j as the memory
    off = pairs[~np.eye(len(units), dtype=bool)]
    std = float(off.std())
    return Background(mean=float(off.mean()), std=std) if std > 1e-9 else None


def mean_of_unit_rows(vectors: npt.ArrayLike) -> Centroid | None:
    """The centroid of ``vectors`` (each row normalised first) with the scope's background; None
    without rows."""
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim != 2 or len(matrix) == 0:
        return None
    units = _unit_rows(matrix)
    mean = np.asarray(units.mean(axis=0), dtype=np.float32)
    rows = len(units)
    return Centroid(mean=mean, rows=rows, background=measure_background(units[sample_rows(rows)], mean, rows))


def centered_cosines(query: npt.ArrayLike, vectors: npt.ArrayLike, centroid: Centroid) -> npt.NDArray[np.float64]:
    """Cosine of each row of ``vectors`` with ``query``, both measured from the shrunk centroid."""
    shift = _shift(centroid.mean, centroid.rows)
    q = _unit_rows(query)[0] - shift
    m = _unit_rows(vectors) - shift
    qn = max(float(np.linalg.norm(q)), 1e-12)
    mn = np.maximum(np.linalg.norm(m, axis=1), 1e-12)
    return np.asarray((m @ q) / (mn * qn), dtype=np.float64)


def relevance(query: npt.ArrayLike, vectors: npt.ArrayLike, centroid: Centroid) -> npt.NDArray[np.float64]:
    """``unit(q - c) · (m - c)`` for each row ``m`` of ``vectors``: how far a memory's part beyond
    the scope reaches along what the query adds to the scope (``c`` the shrunk centroid)."""
    return np.asarray(_relevance(query, vectors, centroid), dtype=np.float64)


def relevance_z(query: npt.ArrayLike, vectors: npt.ArrayLike, centroid: Centroid) -> npt.NDArray[np.float64] | None:
    """:func:`relevance` in standard deviations above the scope's background; None when the
    centroid has no background."""
    bg = centroid.background
    if bg is None:
        return None
    return (relevance(query, vectors, centroid) - bg.mean) / bg.std


def relevance_z_each(query: npt.ArrayLike, vectors: npt.ArrayLike, centroid: Centroid) -> list[float] | None:
    """``float(relevance_z(query, [row], centroid)[0])`` for each row of ``vectors``, with the query's
    part and the rows' normalisation computed once for all rows (the relevance floor of a search,
    ``search.py``); None when the centroid has no background.

    Each row's product with the query is computed on its own (:func:`_row_dots`), so this gives
    exactly the floats of one call per row.
    """
    bg = centroid.background
    if bg is None:
        return None
    return [(float(r) - bg.mean) / bg.std for r in _relevance(query, vectors, centroid)]
