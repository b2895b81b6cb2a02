"""Tenant rows of one table read and written as plain tuples on PostgreSQL (see the DuckDB twin,
``providers/duckdb/rowcopy.py``): JSON columns cross as Python objects, timestamps as aware UTC."""

from __future__ import annotations

import builtins
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any

import psycopg
from psycopg import sql
from psycopg.types.json import Json

from .base import dump_json


class PostgresRowCopyMixin:
    """``table_columns``, ``tenant_rows`` and ``upsert_rows`` (see ``stratamem.migration.RowStore``)."""

    def _conn(self, operation: str) -> AbstractContextManager[psycopg.Connection[Any]]:
        raise NotImplementedError  # PostgresProvider's

    def transaction(self, operation: str = "write") -> AbstractContextManager[psycopg.Connection[Any]]:
        raise NotImplementedError  # PostgresProvider's

    def table_columns(self, table: str) -> builtins.list[str] | None:
        """Column names of ``table`` in order (the store's schema first on the search path), or None."""
        with self._conn("migrate") as conn:
            row = conn.execute("SELECT to_regclass(%s)::oid", [table]).fetchone()
            if row is None or row[0] is None:
                return None
            rows = conn.execute(
                "SELECT attname FROM pg_attribute WHERE attrelid = %s AND attnum > 0 AND NOT attisdropped "
                "ORDER BY attnum",
                [row[0]],
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
        """Every row of ``table`` whose ``tenant_id`` is this tenant, ordered by ``order_by``
        (binary collation, so the order is the same as DuckDB's)."""
        del json_columns  # psycopg loads ``json`` columns as Python objects already
        query = sql.SQL("SELECT {cols} FROM {table} WHERE tenant_id = %s ORDER BY {order}").format(
            cols=sql.SQL(", ").join(sql.Identifier(c) for c in columns),
            table=sql.Identifier(table),
            order=sql.SQL(", ").join(
                sql.SQL('{} COLLATE "C"').format(sql.Identifier(c)) if c != "created_at" else sql.Identifier(c)
                for c in order_by
            ),
        )
        # a server-side cursor (rows fetched in batches) lives inside a transaction
        with self.transaction("migrate") as conn, conn.cursor(name="stratamem_migrate") as cur:
            cur.itersize = batch_size
            cur.execute(query, [tenant_id])
            yield from (tuple(r) for r in cur)

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
        rest = [c for c in columns if c not in key]
        action = (
            sql.SQL("DO UPDATE SET ")
            + sql.SQL(", ").join(sql.SQL("{c} = excluded.{c}").format(c=sql.Identifier(c)) for c in rest)
            if rest
            else sql.SQL("DO NOTHING")
        )
        statement = sql.SQL("INSERT INTO {table} ({cols}) VALUES ({vals}) ON CONFLICT ({key}) {action}").format(
            table=sql.Identifier(table),
            cols=sql.SQL(", ").join(sql.Identifier(c) for c in columns),
            vals=sql.SQL(", ").join(sql.Placeholder() for _ in columns),
            key=sql.SQL(", ").join(sql.Identifier(c) for c in key),
            action=action,
        )
        wrap = [c in json_columns for c in columns]
        values = [[Json(v, dumps=dump_json) if j else v for v, j in zip(row, wrap, strict=True)] for row in rows]
        with self.transaction("migrate") as conn, conn.cursor() as cur:
            cur.executemany(statement, values)
        return len(values)
