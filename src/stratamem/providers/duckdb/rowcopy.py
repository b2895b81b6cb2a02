"""Tenant rows of one table read and written as plain tuples: the moving of a tenant between
stores (``stratamem.migration``) copies the tables that are not memories this way.

Values cross the boundary in one form for every provider: JSON columns as Python objects (here
stored as ``VARCHAR`` text), timestamps as aware UTC datetimes (here naive UTC ``TIMESTAMP``).
"""

from __future__ import annotations

import builtins
import json
import re
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

from ...errors import ErrorCode, MemoryError
from ..base import dump_json, to_naive_utc
from .connection import DuckDBConnection

_NAME_RE = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


def _ident(name: str) -> str:
    """A table or column name of the store's own schema (checked, then quoted)."""
    if not _NAME_RE.match(name):
        raise MemoryError(ErrorCode.INVALID_PARAMS, f"invalid table or column name {name!r}", operation="migrate")
    return f'"{name}"'


class RowCopyMixin(DuckDBConnection):
    """``table_columns``, ``tenant_rows`` and ``upsert_rows`` (see ``stratamem.migration.RowStore``)."""

    def table_columns(self, table: str) -> builtins.list[str] | None:
        """Column names of ``table`` in order, or None when the store has no such table."""
        with self._read(appends=False) as cur:
            rows = cur.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = ? AND table_schema = "
                "current_schema() ORDER BY ordinal_position",
                [table],
            ).fetchall()
        return [str(r[0]) for r in rows] or None

    def tenant_rows(
        self,
        table: str,
        columns: Sequence[str],
        tenant_id: str,
        *,
        order_by: Sequence[str],
        json_columns: Sequence[str] = (),
        batch_size: int = 1000,
    ) -> Iterator[tuple[Any, ...]]:
        """Every row of ``table`` whose ``tenant_id`` is this tenant, ordered by ``order_by``."""
        cols = ", ".join(_ident(c) for c in columns)
        order = ", ".join(_ident(c) for c in order_by)
        parse = [c in json_columns for c in columns]
        with self._read() as cur:
            cur.execute(f"SELECT {cols} FROM {_ident(table)} WHERE tenant_id = ? ORDER BY {order}", [tenant_id])
            while True:
                batch = cur.fetchmany(batch_size)
                if not batch:
                    return
                for row in batch:
                    yield tuple(_load(v, j) for v, j in zip(row, parse, strict=True))

    def upsert_rows(
        self,
        table: str,
        columns: Sequence[str],
        key: Sequence[str],
        rows: Sequence[Sequence[Any]],
        *,
        json_columns: Sequence[str] = (),
    ) -> int:
        """Insert ``rows`` in one transaction; a row whose ``key`` exists replaces the stored one."""
        if not rows:
            return 0
        cols = ", ".join(_ident(c) for c in columns)
        rest = [c for c in columns if c not in key]
        action = (
            "DO UPDATE SET " + ", ".join(f"{_ident(c)} = excluded.{_ident(c)}" for c in rest) if rest else "DO NOTHING"
        )
        statement = (
            f"INSERT INTO {_ident(table)} ({cols}) VALUES ({', '.join('?' for _ in columns)}) "
            f"ON CONFLICT ({', '.join(_ident(c) for c in key)}) {action}"
        )
        dump = [c in json_columns for c in columns]
        values = [[_store(v, j) for v, j in zip(row, dump, strict=True)] for row in rows]
        with self.transaction(settle=table == "memories") as cur:
            cur.executemany(statement, values)
        self.db.known_hashes.forget()  # rows came in without add (database.KnownHashes)
        return len(values)


def _load(value: Any, is_json: bool) -> Any:
    if is_json and isinstance(value, str):
        return json.loads(value)
    if isinstance(value, datetime) and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value


def _store(value: Any, is_json: bool) -> Any:
    if is_json:
        return dump_json(value)
    if isinstance(value, datetime):
        return to_naive_utc(value)
    return value
