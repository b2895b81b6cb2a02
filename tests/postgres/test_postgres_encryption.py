"""Encryption at rest of a PostgreSQL store (docs/security.md): with a key, ``memories.metadata`` is
encrypted per tenant; content, identifiers and vectors stay plaintext for SQL (full-text search,
scope filters, pgvector) and rely on the server's disk encryption. These tests pin both halves."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from psycopg import sql

from stratamem import Memory, TenantContext
from stratamem.errors import ErrorCode, MemoryError

KEY = "a key configured for a PostgreSQL store"
CTX = TenantContext(tenant_id="acme", principal="u1")
USER = {"user_id": "u1"}


def _raw(pg_url: str, schema: str) -> list[tuple[str, str, str]]:
    with psycopg.connect(pg_url) as conn:
        rows: Any = conn.execute(
            sql.SQL("SELECT content, metadata::text, identifiers::text FROM {}.memories ORDER BY created_at").format(
                sql.Identifier(schema)
            )
        ).fetchall()
    return [tuple(r) for r in rows]


def _store_meta(pg_url: str, schema: str) -> dict[str, str]:
    with psycopg.connect(pg_url) as conn:
        rows: Any = conn.execute(sql.SQL("SELECT key, value FROM {}.store_meta").format(sql.Identifier(schema)))
        return dict(rows.fetchall())


def test_metadata_encrypted_content_plaintext_and_features_work(
    open_pg: Callable[..., Memory], pg_url: str, pg_schema: str
) -> None:
    mem = open_pg(encryption_key=KEY)
    out = mem.add(
        CTX, "Quarterly figures for Brannoch", layer="user", identifiers=USER, metadata={"ref": "Tellurian-4", "n": 2}
    )
    [(content, metadata, identifiers)] = _raw(pg_url, pg_schema)
    assert content == "Quarterly figures for Brannoch"  # full-text search needs it in SQL
    assert "Tellurian" not in metadata and "$stratamem_enc" in metadata
    assert "u1" in identifiers
    # reads decrypt; the metadata filter (evaluated in Python) sees the plaintext
    assert mem.get(CTX, out.memory.id).metadata == {"ref": "Tellurian-4", "n": 2}  # type: ignore[union-attr]
    hits = mem.search(CTX, "Brannoch", identifiers=USER, threshold=0.0, filter={"ref": "Tellurian-4"}).results
    assert [h.memory.id for h in hits] == [out.memory.id]
    assert mem.search(CTX, "Brannoch", identifiers=USER, threshold=0.0, filter={"ref": "other"}).results == []
    assert mem.list(CTX, "user", identifiers=USER, filter={"n": 2}).total_count == 1
    mem.update(CTX, out.memory.id, metadata={"ref": "Zebulon-5"})
    assert "Zebulon" not in _raw(pg_url, pg_schema)[0][1]
    assert mem.get(CTX, out.memory.id).metadata == {"ref": "Zebulon-5", "n": 2}  # type: ignore[union-attr]


@pytest.mark.parametrize("key", [None, "some other key, long enough"])
def test_missing_or_wrong_key_is_refused_at_open(
    open_pg: Callable[..., Memory], pg_url: str, pg_schema: str, key: str | None
) -> None:
    mem = open_pg(encryption_key=KEY)
    mem.add(CTX, "kept row", layer="user", identifiers=USER, metadata={"a": 1})
    mem.close()
    before = _raw(pg_url, pg_schema), _store_meta(pg_url, pg_schema)
    with pytest.raises(MemoryError) as err:
        open_pg(encryption_key=key)
    assert err.value.code is ErrorCode.CONFIGURATION_ERROR
    assert err.value.details["reason"] == ("encryption_key_missing" if key is None else "encryption_key_wrong")
    assert KEY not in str(err.value.to_dict())
    assert (_raw(pg_url, pg_schema), _store_meta(pg_url, pg_schema)) == before


def test_rotation_keeps_old_rows_readable_with_the_previous_key(
    open_pg: Callable[..., Memory], pg_url: str, pg_schema: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem = open_pg(encryption_key=KEY)
    old = mem.add(CTX, "written with the old key", layer="user", identifiers=USER, metadata={"v": "old"})
    mem.close()
    previous = tmp_path / "previous.keys"
    previous.write_text(KEY + "\n")
    monkeypatch.setenv("STRATAMEM_ENCRYPTION_PREVIOUS_KEY_FILE", str(previous))
    new_key = "the new PostgreSQL key, long enough"
    mem = open_pg(encryption_key=new_key)
    assert mem.get(CTX, old.memory.id).metadata == {"v": "old"}  # type: ignore[union-attr]
    mem.add(CTX, "written with the new key", layer="user", identifiers=USER, metadata={"v": "new"})
    assert sorted(e.metadata["v"] for e in mem.export(CTX)) == ["new", "old"]


def test_plain_metadata_without_a_key(open_pg: Callable[..., Memory], pg_url: str, pg_schema: str) -> None:
    mem = open_pg()
    mem.add(CTX, "plain row", layer="user", identifiers=USER, metadata={"ref": "Visible-1"})
    assert "Visible-1" in _raw(pg_url, pg_schema)[0][1]
    assert "metadata_encryption_key_id" not in _store_meta(pg_url, pg_schema)
