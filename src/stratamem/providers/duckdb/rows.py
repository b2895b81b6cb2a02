"""How a memory maps to a row of the ``memories`` table and back (columns, Arrow batches)."""

from __future__ import annotations

import builtins
import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
from arro3.core import Array, Table

from ...arrow_columns import Kind, arrow_column, vector_column
from ...layers import scope_key
from ...model import MemoryEntry
from ..base import (
    dump_json,
    entry_from_parts,
    identifiers_json,
    provenance_json,
    to_naive_utc,
)
from .connection import DuckDBConnection
from .database import _text_list

_COLUMNS = (
    "tenant_id, id, layer, content, content_hash, identifiers, metadata, provenance, tier, status, "
    "version, etag, importance, access_count, created_at, updated_at, expires_at, last_accessed_at, "
    "deleted_at"
)
_N_COLS = 19
_INSERT_COLUMNS = (
    "tenant_id, id, layer, scope, content, content_hash, identifiers, metadata, provenance, tier, status, "
    "version, etag, importance, access_count, created_at, updated_at, expires_at, last_accessed_at, "
    "deleted_at, embedding"
)
#: Arrow type of each ``_INSERT_COLUMNS`` column but the vector: "s" string, "i32", "f64", "i64", "ts"
#: a naive UTC timestamp in microseconds.
_ARROW_TYPES: list[Kind] = [
    "s",
    "s",
    "s",
    "s",
    "s",
    "s",
    "s",
    "s",
    "s",
    "s",
    "s",
    "i32",
    "s",
    "f64",
    "i64",
    "ts",
    "ts",
    "ts",
    "ts",
    "ts",
]


log = logging.getLogger("stratamem.duckdb")


#: Most ids looked up through the id index in one statement; more are matched by a scan.
BY_IDS_MAX = 256


def by_ids(tenant_id: str, ids: Sequence[str]) -> tuple[str, list[Any]]:
    """A WHERE condition on ``memories`` for the tenant's rows with these ids, and its parameters.

    DuckDB uses an ART index for a lookup only when the filter is on the index's one column: with
    ``tenant_id = ?`` beside ``id = ?`` (or with the (tenant_id, id) primary key) it scans the whole
    table, about 9 ms at 100k memories. So the ids are matched by the ``idx_memories_id`` index in a
    subquery and the tenant is checked on the rows it finds: 1-2 ms. The tenant stays a bound
    parameter; only the number of ``?`` depends on the input. Over :data:`BY_IDS_MAX` ids, one scan."""
    if len(ids) > BY_IDS_MAX:
        return "tenant_id = ? AND list_contains(?::JSON::VARCHAR[], id)", [tenant_id, _text_list(ids)]
    marks = ", ".join("?" * len(ids))
    return f"rowid IN (SELECT rowid FROM memories WHERE id IN ({marks})) AND tenant_id = ?", [*ids, tenant_id]


class RowsMixin(DuckDBConnection):
    """Row encoding and decoding of ``memories``."""

    # ------------------------------------------------------------------------------------ rows
    def _row_values(self, e: MemoryEntry) -> list[Any]:
        return [*self._scalar_values(e), np.asarray(e.embedding, dtype=np.float32)]

    def _scalar_values(self, e: MemoryEntry, scopes: dict[tuple[Any, ...], tuple[str, str]] | None = None) -> list[Any]:
        """A row's values in ``_INSERT_COLUMNS`` order, all but the vector. ``scopes`` memoises the
        scope key and identifiers JSON of a batch's (layer, identifiers), mostly one for a whole batch."""

        key = (e.layer, *e.identifiers.__dict__.values())
        scoped = scopes.get(key) if scopes is not None else None
        if scoped is None:
            scoped = (scope_key(e.layer, e.identifiers), identifiers_json(e))
            if scopes is not None:
                scopes[key] = scoped
        return [
            e.tenant_id,
            e.id,
            e.layer.value,
            scoped[0],
            e.content,
            e.content_hash,
            scoped[1],
            dump_json(e.metadata) if e.metadata else "{}",
            provenance_json(e),
            e.tier,
            e.status,
            e.version,
            e.etag,
            e.importance,
            e.access_count,
            to_naive_utc(e.created_at),
            to_naive_utc(e.updated_at),
            to_naive_utc(e.expires_at),
            to_naive_utc(e.last_accessed_at),
            to_naive_utc(e.deleted_at),
        ]

    def _prepare_rows(self, entries: Sequence[MemoryEntry]) -> builtins.list[Array]:
        """The Arrow columns of ``entries`` but the vector (built ahead of ``add`` by ``prepare_add``)."""
        scopes: dict[tuple[Any, ...], tuple[str, str]] = {}
        rows = [self._scalar_values(e, scopes) for e in entries]
        return [arrow_column([r[i] for r in rows], t) for i, t in enumerate(_ARROW_TYPES)]

    @contextmanager
    def _prepare_reader(self) -> Iterator[Any]:
        with self._read(appends=False) as cur:  # hooks read their own tables (the graph: entities)
            yield cur

    def _write_generation(self) -> int | None:
        return self.db.generation

    def _arrow_batch(self, columns: builtins.list[Array], entries: Sequence[MemoryEntry]) -> Table:
        """Rows as an Arrow table: DuckDB ingests it without per-value Python conversion."""
        dims = int(self.db.dims or 0)
        flat = np.asarray([e.embedding for e in entries], dtype=np.float32).reshape(-1)  # one conversion
        vectors = vector_column(flat, dims)
        return Table.from_arrays([*columns, vectors], names=[c.strip() for c in _INSERT_COLUMNS.split(",")])

    def _entry(self, row: Sequence[Any], with_embedding: bool) -> MemoryEntry:
        (
            tenant_id,
            id_,
            layer,
            content,
            chash,
            idents,
            metadata,
            prov,
            tier,
            status,
            version,
            etag,
            importance,
            access_count,
            created_at,
            updated_at,
            expires_at,
            last_accessed_at,
            deleted_at,
        ) = row[:_N_COLS]
        return entry_from_parts(
            id=id_,
            tenant_id=tenant_id,
            layer=layer,
            content=content,
            content_hash=chash,
            identifiers=idents,
            metadata=metadata,
            provenance=prov,
            tier=tier,
            status=status,
            version=version,
            etag=etag,
            importance=importance,
            access_count=access_count,
            created_at=created_at,
            updated_at=updated_at,
            expires_at=expires_at,
            last_accessed_at=last_accessed_at,
            deleted_at=deleted_at,
            embedding=row[_N_COLS] if with_embedding else None,
        )

    def _select(self, with_embedding: bool) -> str:
        return f"SELECT {_COLUMNS}{', embedding' if with_embedding else ''} FROM memories"

    def _fetch_ids(
        self, cur: Any, tenant_id: str, ids: Sequence[str], with_embedding: bool
    ) -> builtins.list[MemoryEntry]:
        if not ids:
            return []
        where, params = by_ids(tenant_id, ids)
        rows = cur.execute(f"{self._select(with_embedding)} WHERE {where}", params).fetchall()
        by_id = {r[1]: self._entry(r, with_embedding) for r in rows}
        return [by_id[i] for i in ids if i in by_id]

    # ------------------------------------------------ row access for features (contracts.GraphBackend)
    def select_sql(self, with_embedding: bool) -> str:
        """``SELECT <memory columns> FROM memories``; a WHERE clause may follow, rows decode with
        :meth:`entry_from_row`."""
        return self._select(with_embedding)

    def entry_from_row(self, row: Sequence[Any], with_embedding: bool) -> MemoryEntry:
        """The memory of one row selected by :meth:`select_sql`."""
        return self._entry(row, with_embedding)

    def fetch_entries(
        self, cur: Any, tenant_id: str, ids: Sequence[str], with_embedding: bool
    ) -> builtins.list[MemoryEntry]:
        """The tenant's memories with these ids (any status), in the order of ``ids``, read on ``cur``."""
        return self._fetch_ids(cur, tenant_id, ids, with_embedding)
