"""The relevance measure of the default search's floor (``retrieval/centering.py``)."""

from __future__ import annotations

import numpy as np

from stratamem import MemoryConfig
from stratamem.retrieval.centering import (
    BACKGROUND_SAMPLE,
    SHRINK_ROWS,
    centered_cosines,
    mean_of_unit_rows,
    relevance,
    relevance_z,
    relevance_z_each,
    sample_rows,
)

DIMS = 8


def _axis(i: float) -> np.ndarray:
    return np.eye(DIMS, dtype=np.float32)[int(i)]


def _scope() -> np.ndarray:
    """A scope whose memories share axis 0 ("about Dana") and differ on axes 2..7, plus a memory that
    is almost only the shared part with a trace of axis 1, and one that is clearly about axis 1."""
    shared = _axis(0)
    rows = [shared + 0.6 * _axis(2 + i % 6) for i in range(18)]
    rows.append(shared + 0.05 * _axis(1))  # "User's name is Dana"
    rows.append(shared + 0.6 * _axis(1))  # the answer
    return np.vstack(rows)


def test_relevance_does_not_inflate_a_memory_that_is_mostly_the_shared_part() -> None:
    scope = _scope()
    centroid = mean_of_unit_rows(scope)
    assert centroid is not None
    query = _axis(0) + 0.6 * _axis(1)
    cos = centered_cosines(query, scope[-2:], centroid)
    rel = relevance(query, scope[-2:], centroid)
    z = relevance_z(query, scope[-2:], centroid)
    floor = MemoryConfig().relevance_floor
    assert z is not None and floor is not None
    # the centered cosine counts only the direction of the near-centroid memory's small remainder, and
    # would pass the former floor of 0.2; its relevance also counts how little of it is left beyond
    # the scope, and it stays under the default floor while the answer passes it
    assert cos[0] > 0.2 and rel[0] < rel[1] / 4
    assert z[0] < floor < z[1]


def test_relevance_is_measured_in_units_of_the_scope_background() -> None:
    scope = _scope()
    centroid = mean_of_unit_rows(scope)
    assert centroid is not None and centroid.background is not None
    assert centroid.background.std > 0
    z = relevance_z(_axis(0) + 0.6 * _axis(1), scope, centroid)
    assert z is not None
    assert int(np.argmax(z)) == len(scope) - 1  # the answer stands out
    # a memory that is about another axis is no more related to this query than the background
    assert abs(float(z[0])) < 1.5 < float(z[-1])
    # one memory (or identical ones) has no background: the floor is then not applied
    one = mean_of_unit_rows(scope[:1])
    assert one is not None and one.background is None and relevance_z(scope[0], scope[:1], one) is None


def test_relevance_is_the_centered_projection_and_each_row_is_measured_on_its_own() -> None:
    """``(unit(m) - c) · unit(q - c)``, computed per row without whole-matrix numpy operations (which
    release the GIL): the same value as the direct formula, and a row's float the same alone or
    beside other rows (the relevance floor measures a layer's candidates in one call)."""
    rng = np.random.default_rng(3)
    shared = rng.normal(size=384)
    scope = (rng.normal(size=(60, 384)) + shared).astype(np.float32)
    centroid = mean_of_unit_rows(scope)
    assert centroid is not None and centroid.background is not None
    query = (rng.normal(size=384) + shared).astype(np.float32)
    rows = (scope[:20] * rng.uniform(0.2, 3.0, size=(20, 1))).astype(np.float32)  # rows of other scales
    shift = centroid.mean * (centroid.rows / (centroid.rows + SHRINK_ROWS))
    q = query / np.linalg.norm(query) - shift
    direct = (rows / np.linalg.norm(rows, axis=1, keepdims=True) - shift) @ (q / np.linalg.norm(q))
    assert np.allclose(relevance(query, rows, centroid), direct, atol=1e-5)
    together = relevance_z_each(query, list(rows), centroid)
    assert together is not None
    alone = [float(relevance_z(query, [row], centroid)[0]) for row in rows]  # type: ignore[index]
    assert together == alone  # bit for bit


def test_the_background_sample_is_evenly_spaced_and_bounded() -> None:
    assert sample_rows(5).tolist() == [0, 1, 2, 3, 4]
    big = sample_rows(10_000)
    assert len(big) == BACKGROUND_SAMPLE and big[0] == 0 and big[-1] == 9_999
    assert np.all(np.diff(big) > 0)


def test_the_lexical_match_is_read_back_from_a_fused_score() -> None:
    """The floor keeps a result with a strong lexical match (``search.LEXICAL_KEEP``); the match is
    recovered from the fused score and the two vectors."""
    from stratamem.retrieval.lexical import fuse_scores
    from stratamem.search import lexical_match

    query = _axis(0) + 0.8 * _axis(1)
    memory = _axis(0) + 0.5 * _axis(2)
    cosine = float(query @ memory / (np.linalg.norm(query) * np.linalg.norm(memory)))
    dense = (1 + cosine) / 2
    for lex in (0.0, 0.3, 0.7):
        score = fuse_scores(dense, lex, 0.5)
        assert abs(lexical_match(score, query, memory, 0.5) - lex) < 1e-5
    assert lexical_match(dense, query, memory, 0.0) == 0.0  # no lexical part without a weight
