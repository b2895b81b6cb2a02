"""Arrow columns and tables handed to DuckDB and read back from it, on ``arro3-core``.

DuckDB ingests (``register``, or a replacement scan) and exports (a relation's
``__arrow_c_stream__``) Arrow data through the Arrow PyCapsule interface, so a small Arrow
implementation is enough: ``arro3-core`` is about 11 MB where pyarrow is about 170 MB, and the
embedded store needs no Arrow compute (filters, joins and encodings run in DuckDB's SQL).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Literal

import numpy as np
from arro3.core import Array, DataType, Table, fixed_size_list_array

#: Column kinds: string, 32- and 64-bit integers, double, and a naive (UTC) timestamp in microseconds.
Kind = Literal["s", "i32", "i64", "f64", "ts"]

_TYPES: dict[str, DataType] = {
    "s": DataType.string(),
    "i32": DataType.int32(),
    "i64": DataType.int64(),
    "f64": DataType.float64(),
}
_TIMESTAMP = DataType.timestamp("us")
_PARAMETER = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
_VARIABLE = "stratamem_param_"
_EPOCH = datetime(1970, 1, 1)
_MICROSECOND = timedelta(microseconds=1)


def arrow_column(values: Sequence[Any], kind: Kind) -> Array:
    """One Arrow column of Python values (``None`` is null).

    Args:
        values: The column's values; timestamps are naive ``datetime`` objects.
        kind: The column's type (see ``Kind``).

    Returns:
        The Arrow array.
    """
    if kind == "ts":
        # arro3 builds no timestamp array from datetime objects: microseconds since the epoch, cast
        # (numpy's datetime64 conversion of objects is several times slower)
        micros = [None if v is None else (v - _EPOCH) // _MICROSECOND for v in values]
        return Array(micros, _TYPES["i64"]).cast(_TIMESTAMP)
    return Array(values, _TYPES[kind])


def string_column(values: Sequence[str | None]) -> Array:
    """An Arrow string column.

    Args:
        values: The strings (``None`` is null).

    Returns:
        The Arrow array.
    """
    return Array(values, _TYPES["s"])


def vector_column(flat: np.ndarray, dims: int) -> Array:
    """A ``FLOAT[dims]`` column of vectors stored one after another in ``flat``.

    Args:
        flat: float32 values, ``dims`` per vector.
        dims: The vectors' dimension.

    Returns:
        A fixed-size list array of float32 values.
    """
    return fixed_size_list_array(Array.from_numpy(np.ascontiguousarray(flat, dtype=np.float32)), dims)


def arrow_table(columns: Mapping[str, Array]) -> Table:
    """An Arrow table of named columns (for ``register``).

    Args:
        columns: The columns by name, in order.

    Returns:
        The table.
    """
    return Table.from_arrays(list(columns.values()), names=list(columns))


def query_table(cur: Any, sql: str, params: Mapping[str, Any] | None = None) -> Table:
    """The result of a query as one Arrow table, each column in one chunk.

    DuckDB (1.5.5) materialises a relation that has parameters through Python objects before it
    exports Arrow (seconds for 10k rows of a partition, against tens of milliseconds), while one
    without parameters streams straight into Arrow. So each ``$name`` of ``sql`` is bound as a
    session variable of ``cur`` (``SET VARIABLE``, per connection, so per cursor) and read with
    ``getvariable``; ``sql`` must not contain ``$`` elsewhere (string literals included).

    Args:
        cur: A DuckDB connection or cursor.
        sql: The query, with ``$name`` parameters.
        params: The parameters' values by name.

    Returns:
        The result, columns combined into single chunks.
    """
    for name, value in (params or {}).items():
        cur.execute(f"SET VARIABLE {_VARIABLE}{name} = ?", [value])
    sql = _PARAMETER.sub(lambda m: f"getvariable('{_VARIABLE}{m.group(1)}')", sql)
    table = Table.from_arrow(cur.sql(sql))
    return table.combine_chunks() if table.num_rows else table


def numpy_column(table: Table, name: str | int) -> np.ndarray:
    """A column without nulls as a numpy array (zero-copy where Arrow allows it).

    Args:
        table: A table from ``query_table``.
        name: The column's name or position.

    Returns:
        The values.
    """
    return np.asarray(table.column(name).combine_chunks())
