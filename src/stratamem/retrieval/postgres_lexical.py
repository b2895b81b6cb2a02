"""The PostgreSQL lexical index: the DuckDB postings design (``duckdb_lexical``), ported to PostgreSQL.

``ts_rank``/``ts_rank_cd`` are not BM25, so PostgreSQL keeps the same inverted index as DuckDB and
computes the same normalised BM25 in one SQL query, which makes fused scores identical across
providers for the same data and query (see ``providers.base`` and ``retrieval.lexical``):

* ``lexical_postings(tenant_id, layer, scope, term, memory_id, tf, length)`` — one row per
  (memory, distinct term) produced by the shared Python tokenizer (``lexical.term_counts``), so both
  stores index exactly the same terms;
* the rows are written by a ``WriteHook`` inside each add/update/delete transaction (the psycopg
  connection is ``tx``), so a memory is searchable by its words the moment its write commits and a
  rolled-back write leaves no postings behind;
* BM25 statistics (N, df, average length) are computed per query over the searched scope.

Migration 6 creates the table (``tenant_id`` leading every index) and back-fills it from existing
memories, so stores created before this feature get their index on open.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..layers import scope_key
from ..model import MemoryEntry
from ..providers import postgres_schema
from .lexical import BM25_B, BM25_K1, gate_sql, posting_docs, term_counts

SCHEMA_VERSION = 6
_DESCRIPTION = "lexical index (hybrid search)"


def _create(conn: Any, dims: int) -> None:
    conn.execute(
        """
        CREATE TABLE IF NOT EXISTS lexical_postings (
            tenant_id TEXT    NOT NULL,
            layer     TEXT    NOT NULL,
            scope     TEXT    NOT NULL,
            term      TEXT    NOT NULL,
            memory_id TEXT    NOT NULL,
            tf        INTEGER NOT NULL,
            length    INTEGER NOT NULL,
            PRIMARY KEY (tenant_id, layer, scope, term, memory_id)
        )
        """
    )
    conn.execute("CREATE INDEX IF NOT EXISTS lexical_postings_memory_idx ON lexical_postings (tenant_id, memory_id)")
    with conn.cursor(name="stratamem_lexical_backfill") as cur:
        cur.itersize = 1000
        cur.execute("SELECT tenant_id, id, layer, scope, content FROM memories")
        batch: list[tuple[str, str, str, str, str]] = []
        for row in cur:
            batch.append((row[0], row[1], row[2], row[3], row[4]))
            if len(batch) >= 1000:
                _insert(conn, batch)
                batch = []
        _insert(conn, batch)


if not any(m.version == SCHEMA_VERSION for m in postgres_schema.MIGRATIONS):
    postgres_schema.MIGRATIONS.append(postgres_schema.Migration(SCHEMA_VERSION, _DESCRIPTION, _create))


def _insert(conn: Any, docs: Sequence[tuple[str, str, str, str, str]]) -> None:
    """Postings of (tenant_id, memory_id, layer, scope, content) documents (binary COPY)."""
    _copy(conn, _rows(docs))


def _rows(docs: Sequence[tuple[str, str, str, str, str]]) -> list[tuple[str, str, str, str, str, int, int]]:
    rows: list[tuple[str, str, str, str, str, int, int]] = []
    for tenant_id, memory_id, layer, scope, content in docs:
        counts = term_counts(content)
        length = sum(counts.values())
        rows += [(tenant_id, layer, scope, term, memory_id, tf, length) for term, tf in counts.items()]
    return rows


def _copy(conn: Any, rows: Sequence[tuple[str, str, str, str, str, int, int]]) -> None:
    if not rows:
        return
    with (
        conn.cursor() as cur,
        cur.copy(
            "COPY lexical_postings (tenant_id, layer, scope, term, memory_id, tf, length) FROM STDIN (FORMAT BINARY)"
        ) as cp,
    ):
        cp.set_types(["text", "text", "text", "text", "text", "int4", "int4"])
        for row in rows:
            cp.write_row(row)


@dataclass(frozen=True)
class _Prepared:
    rows: list[tuple[str, str, str, str, str, int, int]]


def _remove(conn: Any, tenant_id: str, ids: Sequence[str]) -> None:
    conn.execute("DELETE FROM lexical_postings WHERE tenant_id = %s AND memory_id = ANY(%s)", [tenant_id, list(ids)])


class PostgresLexicalIndex:
    """``WriteHook`` keeping ``lexical_postings`` in step with ``memories`` (same transaction)."""

    def after_add(self, tx: Any, entries: Sequence[MemoryEntry]) -> None:
        _insert(tx, posting_docs(entries))

    def prepare_add(self, reader: Any, entries: Sequence[MemoryEntry]) -> _Prepared:
        """Tokenise ahead of the transaction (``PreparingWriteHook``): the postings need no vectors."""
        return _Prepared(_rows(posting_docs(entries)))

    def after_add_prepared(
        self, tx: Any, entries: Sequence[MemoryEntry], prepared: _Prepared, *, unchanged: bool = False
    ) -> None:
        _copy(tx, prepared.rows)  # the postings depend on the entries alone

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
    """A subquery ``(id, lex)`` of normalised BM25 scores for one scope (PostgreSQL port of DuckDB's).

    Parameters, in order: the query terms (a text array), tenant_id, layer, scope — bound by the
    caller; the BM25 constants are module floats, not user values. All arithmetic is float8.
    """
    k1, b = float(BM25_K1), float(BM25_B)
    return f"""
        (WITH qt AS (SELECT DISTINCT unnest(%s::text[]) AS term),
        scoped AS (SELECT term, memory_id, tf, length FROM lexical_postings
                   WHERE tenant_id = %s AND layer = %s AND scope = %s),
        stats AS (SELECT count(*)::float8 AS n, greatest(avg(length)::float8, 1e-9::float8) AS avgdl
                  FROM (SELECT DISTINCT memory_id, length FROM scoped) d),
        hits AS (SELECT s.* FROM scoped s WHERE s.term IN (SELECT term FROM qt)),
        w AS (SELECT term, ln(1::float8 + (stats.n - count(*) + 0.5::float8) / (count(*) + 0.5::float8)) AS idf
              FROM hits, stats GROUP BY term, stats.n),
        best AS (SELECT (coalesce(sum(idf), 0::float8) + ((SELECT count(*) FROM qt) - count(*))::float8
                                * ln(1::float8 + (max(stats.n) + 0.5::float8) / 0.5::float8))
                        * {k1 + 1.0}::float8 AS best FROM w, stats)
        SELECT hits.memory_id AS id,
               sqrt(least(1::float8, sum(w.idf * hits.tf * {k1 + 1.0}::float8
                   / (hits.tf + {k1}::float8 * (1::float8 - {b}::float8 + {b}::float8 * hits.length / stats.avgdl)))
                   / max(best.best))) AS lex
        FROM hits JOIN w ON hits.term = w.term, stats, best
        GROUP BY hits.memory_id)
    """


def fused_scope_sql(dense_sql: str) -> str:
    """Rows of ``dense_sql`` (which must expose the clamped dense score as ``dense``) with the fused ``score``.

    Parameters, in order: the lexical weight, then ``dense_sql``'s, then :func:`lexical_scores_sql`'s.
    """
    gate = gate_sql("m.dense")
    return (
        f"SELECT m.*, m.dense + %s * coalesce(l.lex, 0::float8) * (1::float8 - m.dense) * {gate} AS score "
        f"FROM ({dense_sql}) m LEFT JOIN {lexical_scores_sql()} l ON m.id = l.id"
    )
