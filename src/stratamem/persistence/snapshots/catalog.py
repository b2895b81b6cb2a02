"""The store side of a snapshot: which tables are exported, their columns and keys, a consistent
read of all of them, and how each table's rows split into partitions.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import duckdb

from ...errors import ErrorCode, MemoryError
from ...providers.duckdb import schema as duckdb_schema
from ..manifest import (
    Partitioning,
    TableEntry,
)
from .base import _NO_RANGE, _PARENT_ROW, _PARENTS, _ROW, _TIME_COLUMNS, SnapshotBase, _ident, _Table


class CatalogMixin(SnapshotBase):
    """Tables, schema and partitioning of the store being snapshotted."""

    # ================================================================================ catalog
    def _tables(self, cur: Any) -> builtins.list[_Table]:
        rows = cur.execute(
            "SELECT c.table_name FROM information_schema.columns c "
            "JOIN information_schema.tables t ON t.table_catalog = c.table_catalog "
            " AND t.table_schema = c.table_schema AND t.table_name = c.table_name "
            "WHERE c.column_name = 'tenant_id' AND t.table_type = 'BASE TABLE' AND c.table_schema = 'main' "
            " AND c.table_catalog = current_database() ORDER BY c.table_name"
        ).fetchall()
        out: builtins.list[_Table] = []
        for (name,) in rows:
            if name in self.exclude:
                continue
            cols = cur.execute(
                "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = 'main' "
                "AND table_catalog = current_database() AND table_name = ? ORDER BY ordinal_position",
                [name],
            ).fetchall()
            pk = cur.execute(
                "SELECT constraint_column_names FROM duckdb_constraints() WHERE schema_name = 'main' "
                "AND database_name = current_database() AND table_name = ? AND constraint_type = 'PRIMARY KEY'",
                [name],
            ).fetchone()
            out.append(_Table(name, [(str(c), str(t)) for c, t in cols], list(pk[0]) if pk else []))
        return self._parents_first(cur, out)

    @staticmethod
    def _parents_first(cur: Any, tables: builtins.list[_Table]) -> builtins.list[_Table]:
        """Tables ordered so that a foreign key's target comes before the table referencing it
        (inserts in this order, deletes in reverse)."""
        refs: dict[str, set[str]] = {}
        for child, parent in cur.execute(
            "SELECT table_name, referenced_table FROM duckdb_constraints() WHERE constraint_type = 'FOREIGN KEY' "
            "AND schema_name = 'main' AND database_name = current_database()"
        ).fetchall():
            refs.setdefault(str(child), set()).add(str(parent))
        by_name = {t.name: t for t in tables}
        ordered: builtins.list[_Table] = []
        seen: set[str] = set()

        def visit(name: str, stack: frozenset[str]) -> None:
            if name in seen or name in stack or name not in by_name:
                return
            for parent in sorted(refs.get(name, ())):
                visit(parent, stack | {name})
            seen.add(name)
            ordered.append(by_name[name])

        for t in tables:
            visit(t.name, frozenset())
        return ordered

    @staticmethod
    def _schema_info(cur: Any) -> tuple[builtins.list[int], str | None, int | None]:
        versions = sorted(duckdb_schema.applied_versions(cur))
        meta = dict(cur.execute("SELECT key, value FROM store_meta").fetchall())
        dims = meta.get("embedding_dimensions")
        return versions, meta.get("embedding_model"), int(dims) if dims else None

    @contextmanager
    def _snapshot_cursor(self) -> Iterator[Any]:
        """A cursor inside one read transaction: every table is read at the same point in time."""
        try:
            with self.provider.consistent_read() as cur:
                yield cur
        except duckdb.Error as exc:
            raise MemoryError(
                ErrorCode.PROVIDER_ERROR,
                f"snapshot export failed: {type(exc).__name__}",
                operation="snapshot",
                details={"error": str(exc)[:500]},
            ) from exc

    def tenants(self) -> builtins.list[str]:
        """Every tenant with rows in any exported table."""
        with self._snapshot_cursor() as cur:
            found: set[str] = set()
            for table in self._tables(cur):
                found.update(
                    r[0] for r in cur.execute(f"SELECT DISTINCT tenant_id FROM {_ident(table.name)}").fetchall()
                )
        return sorted(found)

    # ============================================================================ partitions
    def _partitioning(
        self, cur: Any, table: _Table, tenant_id: str, prev: TableEntry | None, done: dict[str, Partitioning]
    ) -> Partitioning:
        """How ``table``'s rows of the tenant split into files: by time when the table has a time
        column, else by the time of the row they belong to (``_PARENTS``, from ``done``: the
        partitionings of this push so far), else by hash."""
        types = dict(table.columns)
        target = self.partition_rows
        time_col = next((c for c in _TIME_COLUMNS if types.get(c, "").upper().startswith("TIMESTAMP")), None)
        parent = next(((c, *_PARENTS[c]) for c in _PARENTS if c in types and _PARENTS[c][0] != table.name), None)
        if time_col is None and parent is not None and done.get(parent[1], _NO_RANGE).kind == "range":
            column, parent_table, parent_key = parent
            return Partitioning(
                kind="parent",
                columns=[column],
                bounds=list(done[parent_table].bounds),
                parent=f"{parent_table}.{parent_key}",
            )
        if time_col is not None:
            bounds = (
                list(prev.partitioning.bounds)
                if (prev is not None and prev.partitioning.kind == "range" and prev.partitioning.columns == [time_col])
                else []
            )
            col, typ = _ident(time_col), types[time_col]
            tail_sql = f" AND {col} >= $last::{typ}" if bounds else ""
            params: dict[str, Any] = {"tenant": tenant_id}
            if bounds:
                params["last"] = bounds[-1]
            row = cur.execute(
                f"SELECT count(*) FROM {_ident(table.name)} WHERE tenant_id = $tenant{tail_sql}",
                params,
            ).fetchone()
            if int(row[0]) > target:
                new = cur.execute(
                    f"SELECT CAST({col} AS VARCHAR) FROM (SELECT {col}, row_number() OVER (ORDER BY {col}) AS rn "
                    f"FROM {_ident(table.name)} WHERE tenant_id = $tenant{tail_sql}) "
                    "WHERE rn > 1 AND (rn - 1) % $target = 0 ORDER BY rn",
                    {**params, "target": target},
                ).fetchall()
                for (b,) in new:
                    if not bounds or b > bounds[-1]:
                        bounds.append(b)
                # the last chunk stays in the (open-ended) tail partition
            return Partitioning(kind="range", columns=[time_col], bounds=bounds)
        key = [c for c in table.primary_key if c != "tenant_id"] or [c for c, _ in table.columns if c != "tenant_id"]
        rows = int(
            cur.execute(
                f"SELECT count(*) FROM {_ident(table.name)} WHERE tenant_id = ?",
                [tenant_id],
            ).fetchone()[0]
        )
        wanted = max(1, math.ceil(rows / target))
        buckets = wanted
        if prev is not None and prev.partitioning.kind == "hash" and prev.partitioning.columns == key:
            old = prev.partitioning.buckets
            if old / 4 <= wanted <= old * 4:
                buckets = old
        return Partitioning(kind="hash", columns=key, buckets=buckets)

    @staticmethod
    def _part_source(table: _Table, part: Partitioning, tables: dict[str, _Table]) -> tuple[str, str, dict[str, Any]]:
        """(FROM clause with the table aliased ``_ROW``, the partition-number expression, parameters)."""
        source = f"{_ident(table.name)} AS {_ROW}"
        if part.kind == "range":
            col = part.columns[0]
            typ = dict(table.columns)[col]
            return (
                source,
                f"len(list_filter($bounds::{typ}[], b -> b <= {_ROW}.{_ident(col)}))",
                {"bounds": part.bounds},
            )
        if part.kind == "parent" and part.parent:
            parent_table, parent_key = part.parent.split(".", 1)
            typ = dict(tables[parent_table].columns)["created_at"]
            # a row whose parent is gone (NULL time) lands in partition 0; names are quoted identifiers
            return (
                f"{source} LEFT JOIN (SELECT {_ident(parent_key)} AS k, created_at AS t FROM "
                f"{_ident(parent_table)} WHERE tenant_id = $tenant) AS {_PARENT_ROW} "
                f"ON {_PARENT_ROW}.k = {_ROW}.{_ident(part.columns[0])}",
                f"coalesce(len(list_filter($bounds::{typ}[], b -> b <= {_PARENT_ROW}.t)), 0)",
                {"bounds": part.bounds},
            )
        cols = ", ".join(f"{_ROW}.{_ident(c)}" for c in part.columns)
        return source, f"CAST(hash({cols}) % $buckets AS INTEGER)", {"buckets": part.buckets}

    def _fingerprints(
        self, cur: Any, table: _Table, part: Partitioning, tenant_id: str, tables: dict[str, _Table]
    ) -> dict[int, tuple[int, str]]:
        source, expr, params = self._part_source(table, part, tables)
        rows = cur.execute(
            f"SELECT {expr} AS p, count(*), bit_xor(hash({_ROW})), sum(hash({_ROW})::HUGEINT) "
            f"FROM {source} WHERE {_ROW}.tenant_id = $tenant GROUP BY p",
            {**params, "tenant": tenant_id},
        ).fetchall()
        return {int(p): (int(n), f"{n}:{x}:{s}") for p, n, x, s in rows}

    def _fk_children(self, cur: Any) -> builtins.list[str]:
        names = {t.name for t in self._tables(cur)}
        rows = cur.execute(
            "SELECT DISTINCT table_name FROM duckdb_constraints() WHERE constraint_type = 'FOREIGN KEY' "
            "AND schema_name = 'main' AND database_name = current_database() ORDER BY table_name"
        ).fetchall()
        return [str(r[0]) for r in rows if str(r[0]) in names]
