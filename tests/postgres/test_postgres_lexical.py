"""PostgreSQL lexical index: migration 6 back-fills old stores; a rolled-back write leaves no postings."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from psycopg import sql

from stratamem import Memory, TenantContext
from stratamem.retrieval.lexical import bm25_normalized, fuse_scores, query_terms, term_counts

from .conftest import admin

ACME = TenantContext(tenant_id="acme-lex", principal="u1")
U1 = {"user_id": "u1"}
DOCS = ["Invoice INV-88412 was paid late", "Bob moved to the Lisbon office", "Alice prefers green tea"]


def _scores(mem: Memory, query: str, weight: float) -> dict[str, float]:
    res = mem.search(ACME, query, identifiers=U1, layers=["user"], threshold=0.0, limit=10, hybrid_weight=weight)
    return {r.memory.content: r.score for r in res.results}


def test_migration_backfills_postings_of_an_old_store(
    open_pg: Callable[..., Memory], pg_url: str, pg_schema: str
) -> None:
    mem = open_pg()
    for doc in DOCS:
        mem.add(ACME, doc, layer="user", identifiers=U1)
    mem.close()
    # Make it a store from before this feature: no postings table, migration 6 not recorded.
    with admin(pg_url) as conn:
        conn.execute(sql.SQL("DROP TABLE {}.lexical_postings").format(sql.Identifier(pg_schema)))
        conn.execute(sql.SQL("DELETE FROM {}.schema_version WHERE version = 6").format(sql.Identifier(pg_schema)))
    mem = open_pg()
    with admin(pg_url) as conn:
        row = conn.execute(
            sql.SQL("SELECT count(*) FROM {}.lexical_postings WHERE tenant_id = %s").format(sql.Identifier(pg_schema)),
            [ACME.tenant_id],
        ).fetchone()
    assert row is not None and row[0] == sum(len(term_counts(d)) for d in DOCS)
    query = "invoice 88412"
    dense = _scores(mem, query, 0.0)
    docs = {d: (c, sum(c.values())) for d in DOCS if (c := term_counts(d))}
    lex = bm25_normalized(query_terms(query), docs)
    fused = _scores(mem, query, 1.0)
    assert fused[DOCS[0]] > dense[DOCS[0]]
    for content, score in fused.items():
        # the lexical gate amplifies the 6-decimal rounding of the dense score (see the conformance test)
        assert score == pytest.approx(fuse_scores(dense[content], lex.get(content, 0.0), 1.0), abs=1e-5 + 1e-9)


def test_rolled_back_add_leaves_no_postings(pg_mem: Memory, pg_url: str, pg_schema: str) -> None:
    class Boom:
        def after_add(self, tx: object, entries: object) -> None:
            raise RuntimeError("hook failed")

        def after_update(self, tx: object, entry: object, previous: object) -> None:
            return None

        def after_delete(self, tx: object, tenant_id: str, ids: object) -> None:
            return None

    pg_mem.engine.provider.write_hooks.append(Boom())
    with pytest.raises(Exception):  # noqa: B017 - whatever the engine wraps it in, the write must not commit
        pg_mem.add(ACME, "A zanzibar rollback probe", layer="user", identifiers=U1)
    pg_mem.engine.provider.write_hooks.pop()
    with admin(pg_url) as conn:
        row = conn.execute(
            sql.SQL("SELECT count(*) FROM {}.lexical_postings WHERE term = 'zanzibar'").format(
                sql.Identifier(pg_schema)
            )
        ).fetchone()
    assert row is not None and row[0] == 0
