"""The exact scan's chunked matrix-vector product equals numpy's in one call, at every size."""

from __future__ import annotations

import numpy as np
import pytest

from stratamem.retrieval.partition_search import MATVEC_ROWS, matvec


@pytest.mark.parametrize("rows", [0, 1, MATVEC_ROWS - 1, MATVEC_ROWS, MATVEC_ROWS + 1, 3 * MATVEC_ROWS + 7])
def test_chunked_product_equals_one_product(rows: int) -> None:
    rng = np.random.default_rng(rows)
    matrix = rng.standard_normal((rows, 384)).astype(np.float32)
    vector = rng.standard_normal(384).astype(np.float32)
    got = matvec(matrix, vector)
    assert got.shape == (rows,) and got.dtype == np.float32
    np.testing.assert_allclose(got, matrix @ vector, rtol=1e-5, atol=1e-5)


def test_rows_selected_by_index_are_scanned_like_a_slice() -> None:
    rng = np.random.default_rng(7)
    matrix = rng.standard_normal((5000, 16)).astype(np.float32)
    vector = rng.standard_normal(16).astype(np.float32)
    slots = rng.choice(5000, size=2500, replace=False)
    np.testing.assert_allclose(matvec(matrix[slots], vector), matrix[slots] @ vector, rtol=1e-5, atol=1e-5)
