"""The DuckDB lexical index: an inverted index kept in the same write transaction as the memories.

DuckDB's ``fts`` extension builds a static index that must be rebuilt after every change, which
would put a rebuild on the request path. Instead, two ordinary tables are maintained by a write
hook inside each add/update/delete transaction, so a memory is searchable by its words the moment
its write commits, and a rolled-back write leaves no postings behind:

* ``lexical_postings(tenant_id, layer, scope, term, memory_id, tf, length)`` — one row per
  (memory, distinct term), with the memory's length in terms;
* BM25 statistics (N, df, average length) are computed per query over the searched scope.

Migration 6 creates the tables and back-fills them from existing memories (stores created before
this feature), so the index is always derivable from the ``memories`` table.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from arro3.core import Table

from ..arrow_columns import arrow_column, arrow_table
from ..layers import scope_key
from ..model import MemoryEntry
from ..providers import duckdb_schema
from .lexical import BM25_B, BM25_K1, posting_docs, term_counts

SCHEMA_VERSION = 6


def _create(cur: Any, dims: int) -> None:
    cur.execute(
        """
        CREATE TABLE lexical_postings (
            tenant_id VARCHAR NOT NULL,
            layer     VARCHAR NOT NULL,
            scope     VARCHAR NOT NULL,
            term      VARCHAR NOT NULL,
            memory_id VARCHAR NOT NULL,
            tf        INTEGER NOT NULL,
            length    INTEGER NOT NULL
        )
        """
    )
    rows = cur.execute("SELECT tenant_id, id, layer, scope, content FROM memories").fetchall()
    _insert(cur, [(r[0], r[1], r[2], r[3], r[4]) for r in rows])


duckdb_schema.MIGRATIONS.append(duckdb_schema.Migration(SCHEMA_VERSION, "lexical index (hybrid search)", _create))
if __name__ not in duckdb_schema.FEATURE_SCHEMA_MODULES:
    duckdb_schema.FEATURE_SCHEMA_MODULES.append(__name__)


def _insert(cur: Any, docs: Sequence[tuple[str, str, str, str, str]]) -> None:
    """Postings of (tenant_id, memory_id, layer, scope, content) documents."""
    _write(cur, _postings(docs))


def _postings(docs: Sequence[tuple[str, str, str, str, str]]) -> Table | None:
    """The ``lexical_postings`` rows of these documents as an Arrow table (None: no terms)."""
    cols: dict[str, builtins.list[Any]] = {
        k: [] for k in ("tenant_id", "layer", "scope", "term", "memory_id", "tf", "length")
    }
    for tenant_id, memory_id, layer, scope, content in docs:
        counts = term_counts(content)
        length = sum(counts.values())
        for term, tf in counts.items():
            cols["tenant_id"].append(tenant_id)
            cols["layer"].append(layer)
            cols["scope"].append(scope)
            cols["term"].append(term)
            cols["memory_id"].append(memory_id)
            cols["tf"].append(tf)
            cols["length"].append(length)
    if not cols["term"]:
        return None
    return arrow_table({k: arrow_column(v, "i32" if k in ("tf", "length") else "s") for k, v in cols.items()})


def _write(cur: Any, table: Table | None) -> None:
    if table is None:
        return
    cur.register("stratamem_postings", table)
    try:
        cur.execute(
            "INSERT INTO lexical_postings SELECT tenant_id, layer, scope, term, memory_id, tf, length "
            "FROM stratamem_postings"
        )
    finally:
        cur.unregister("stratamem_postings")


def _remove(cur: Any, tenant_id: str, ids: Sequence[str]) -> None:
    cur.execute(
        "DELETE FROM lexical_postings WHERE tenant_id = ? AND list_contains(?::JSON::VARCHAR[], memory_id)",
        [tenant_id, json.dumps(list(ids))],
    )


@dataclass(frozen=True)
class _Prepared:
    table: Table | None


class DuckDBLexicalIndex:
    """``WriteHook`` keeping ``lexical_postings`` in step with ``memories`` (same transaction)."""

    def after_add(self, tx: Any, entries: Sequence[MemoryEntry]) -> None:
        _insert(tx, posting_docs(entries))

    def prepare_add(self, reader: Any, entries: Sequence[MemoryEntry]) -> _Prepared:
        """Tokenise ahead of the transaction (``PreparingWriteHook``): the postings need no vectors."""
        return _Prepared(_postings(posting_docs(entries)))

    def after_add_prepared(
        self, tx: Any, entries: Sequence[MemoryEntry], prepared: _Prepared, *, unchanged: bool = False
    ) -> None:
        _write(tx, prepared.table)  # the postings depend on the entries alone

    def after_update(self, tx: Any, entry: MemoryEntry, previous: MemoryEntry) -> None:
        same_scope = entry.layer == previous.layer and scope_key(entry.layer, entry.identifiers) == scope_key(
            previous.layer, previous.identifiers
        )
        if entry.content == previous.content and same_scope:
            return
        _remove(tx, entry.tenant_id, [entry.id])
        self.after_add(tx, [entry])

    def after_delete(self, tx: Any, tenant_id: str, ids: Sequence[str]) -> None:
        _remove(tx, tenant_id, ids)


def lexical_scores_sql() -> str:
    """A subquery ``(id, lex)`` of normalised BM25 scores for one scope.

    Parameters, in order: the query terms (one JSON list), tenant_id, layer, scope — bound by the
    caller; the BM25 constants are module floats, not user values.
    """
    k1, b = float(BM25_K1), float(BM25_B)
    return f"""
        (WITH qt AS (SELECT DISTINCT unnest(?::JSON::VARCHAR[]) AS term),
        scoped AS (SELECT term, memory_id, tf, length FROM lexical_postings
                   WHERE tenant_id = ? AND layer = ? AND scope = ?),
        stats AS (SELECT count(DISTINCT memory_id)::DOUBLE AS n,
                         greatest(avg(length), 1e-9)::DOUBLE AS avgdl
                  FROM (SELECT DISTINCT memory_id, length FROM scoped)),
        hits AS (SELECT s.* FROM scoped s SEMI JOIN qt ON s.term = qt.term),
        w AS (SELECT term, ln(1 + (stats.n - count(*) + 0.5) / (count(*) + 0.5)) AS idf
              FROM hits, stats GROUP BY term, stats.n),
        best AS (SELECT (coalesce(sum(idf), 0)
                         + ((SELECT count(*) FROM qt) - count(*)) * ln(1 + (any_value(stats.n) + 0.5) / 0.5))
                        * {k1 + 1.0} AS best FROM w, stats)
        SELECT hits.memory_id AS id,
               sqrt(least(1.0, sum(w.idf * hits.tf * {k1 + 1.0}
                   / (hits.tf + {k1} * (1 - {b} + {b} * hits.length / stats.avgdl))) / any_value(best.best))) AS lex
        FROM hits JOIN w ON hits.term = w.term, stats, best
        GROUP BY hits.memory_id)
    """
