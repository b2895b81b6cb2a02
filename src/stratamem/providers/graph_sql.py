"""One SQL text for the graph on DuckDB and PostgreSQL.

The graph's statements are written once, in the DuckDB dialect they were first written in
(``?`` and ``$name`` parameters, ``list_contains($ids::JSON::VARCHAR[], col)`` for "col is one of
these ids", ``epoch_us``). On PostgreSQL the graph reads and writes through :class:`PgSqlCursor`,
which rewrites exactly those constructs into PostgreSQL's and binds the same parameters (psycopg's
``%s`` / ``%(name)s``); every value stays a bound parameter. Statements that cannot be shared
(bulk row inserts, the recursive breadth-first search, catalogue queries) are chosen by dialect
where they are used.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

Dialect = Literal["duckdb", "postgres"]

_IDS = r"(\?|\$[A-Za-z_]\w*)::JSON::VARCHAR\[\]"
_ARG = r"(\([^()]*\)|[\w.]+)"  # a column, or an expression in parentheses
_LIST_CONTAINS = re.compile(r"list_contains\(\s*" + _IDS + r",\s*" + _ARG + r"\s*\)")
_LIST_POSITION = re.compile(r"list_position\(\s*" + _IDS + r",\s*" + _ARG + r"\s*\)")
_EPOCH_US = re.compile(r"epoch_us\(([\w.]+)\)")
_NAMED = re.compile(r"\$([A-Za-z_]\w*)")
#: DuckDB-only planner hint (``tenant_id || ''`` avoids a single-column ART index); PostgreSQL
#: should use its (tenant_id, ...) B-tree indexes.
_NO_INDEX = re.compile(r"tenant_id \|\| '' =")


def _array(param: str) -> str:
    return f"ARRAY(SELECT json_array_elements_text({param}::json))"


def translate(sql: str) -> str:
    """The PostgreSQL (psycopg) text of a graph statement written in the DuckDB dialect."""
    out = sql.replace("%", "%%")
    out = _LIST_CONTAINS.sub(lambda m: f"({m.group(2)} = ANY({_array(m.group(1))}))", out)
    out = _LIST_POSITION.sub(lambda m: f"array_position({_array(m.group(1))}, {m.group(2)})", out)
    out = _EPOCH_US.sub(lambda m: f"(extract(epoch FROM {m.group(1)}) * 1000000)::bigint", out)
    out = _NO_INDEX.sub("tenant_id =", out)
    out = _NAMED.sub(lambda m: f"%({m.group(1)})s", out)
    return out.replace("?", "%s")


_CACHE: dict[str, str] = {}


def _translated(sql: str) -> str:
    text = _CACHE.get(sql)
    if text is None:
        text = translate(sql)
        if len(_CACHE) < 4096:
            _CACHE[sql] = text
    return text


class PgSqlCursor:
    """A DuckDB-like cursor (``execute(...).fetchall()``) over an open psycopg connection.

    ``fetchone()`` after a statement that returns no rows gives ``(rowcount,)``, as DuckDB's
    ``DELETE`` / ``UPDATE`` do. Anything else is delegated to the connection.
    """

    dialect: Dialect = "postgres"

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self._cur: Any = None

    def execute(self, sql: str, params: Sequence[Any] | Mapping[str, Any] | None = None) -> PgSqlCursor:
        args: Any = params
        if isinstance(params, Mapping):
            used = set(_NAMED.findall(sql))
            args = {k: v for k, v in params.items() if k in used}
        self._cur = self.conn.execute(_translated(sql), args if args else None)
        return self

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with self.conn.cursor() as cur:
            cur.executemany(_translated(sql), rows)

    def fetchone(self) -> Any:
        if self._cur is None:
            return None
        if self._cur.description is None:
            return (self._cur.rowcount,)
        return self._cur.fetchone()

    def fetchall(self) -> list[Any]:
        if self._cur is None or self._cur.description is None:
            return []
        return list(self._cur.fetchall())

    def close(self) -> None:
        self._cur = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.conn, name)


def dialect_of(cur: Any) -> Dialect:
    """``postgres`` for a :class:`PgSqlCursor`, else ``duckdb``."""
    return "postgres" if isinstance(cur, PgSqlCursor) else "duckdb"


__all__ = ["Dialect", "PgSqlCursor", "dialect_of", "translate"]
