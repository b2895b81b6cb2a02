"""What encryption at rest means for a PostgreSQL store (docs/security.md): stratamem encrypts no
column there (full-text search and scope filters run in SQL on plaintext); the data relies on the
server's disk encryption. These tests pin that documented behaviour so a change to it is deliberate."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from psycopg import sql

from stratamem import Memory, TenantContext

KEY = "a key configured for a PostgreSQL store"
CTX = TenantContext(tenant_id="acme", principal="u1")


def test_key_on_postgres_warns_and_columns_stay_plaintext(
    open_pg: Callable[..., Memory], pg_url: str, pg_schema: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="stratamem.providers"):
        mem = open_pg(encryption_key=KEY)
    assert any("not encrypted by stratamem" in r.getMessage() and KEY not in r.getMessage() for r in caplog.records)
    mem.add(CTX, "Quarterly figures for Brannoch", "user", {"user_id": "u1"}, metadata={"ref": "Tellurian-4"})
    # lexical search works because the content is plaintext in SQL (tsvector, postings)
    assert mem.search(CTX, "Brannoch", {"user_id": "u1"}, threshold=0.0).results
    with psycopg.connect(pg_url) as conn:
        row: Any = conn.execute(
            sql.SQL("SELECT content, metadata::text FROM {}.memories WHERE tenant_id = %s").format(
                sql.Identifier(pg_schema)
            ),
            ["acme"],
        ).fetchone()
    assert row[0] == "Quarterly figures for Brannoch" and "Tellurian-4" in row[1]
