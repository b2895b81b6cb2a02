"""DuckDB: reads and writes of memories by id go through the id index (``rows.by_ids``) and stay
within the caller's tenant.

DuckDB uses an ART index only for a filter on the index's one column; with the tenant beside the
id, a lookup by id scanned the whole table (about 9 ms at 100k memories, for every ``get`` and
twice for every ``update``, which each supersession of an add does).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from stratamem import Memory, TenantContext
from stratamem.providers.duckdb import DuckDBProvider
from stratamem.providers.duckdb.rows import BY_IDS_MAX, by_ids

ACME = TenantContext(tenant_id="acme")
IDS = {"user_id": "u1"}


def _provider(mem: Memory) -> DuckDBProvider:
    provider = mem.engine.provider
    assert isinstance(provider, DuckDBProvider)
    return provider


def _scan_types(provider: DuckDBProvider, sql: str, params: list[Any], tmp_path: Path) -> list[str]:
    """The scan type of every table scan of the statement's plan (DuckDB's JSON profile)."""
    out = tmp_path / "profile.json"
    cur = provider._cursor()
    cur.execute("PRAGMA enable_profiling='json'")
    cur.execute(f"PRAGMA profiling_output='{out}'")
    try:
        cur.execute(sql, params).fetchall()
    finally:
        cur.execute("PRAGMA disable_profiling")
    found: list[str] = []

    def walk(node: dict[str, Any]) -> None:
        kind = (node.get("extra_info") or {}).get("Type")
        if kind:
            found.append(str(kind))
        for child in node.get("children", []):
            walk(child)

    walk(json.loads(out.read_text()))
    return found


def test_a_lookup_by_id_uses_the_id_index(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "m.duckdb", embedder="hashing") as mem:
        ids = [
            r.memory.id
            for r in mem.bulk_add(
                ACME, [{"content": f"note number {i}", "layer": "user", "identifiers": IDS} for i in range(50)]
            ).results
        ]
        provider = _provider(mem)
        where, params = by_ids("acme", ids[10:13])
        assert "Index Scan" in _scan_types(provider, f"SELECT id FROM memories WHERE {where}", params, tmp_path)
        assert sorted(
            r[0] for r in provider._cursor().execute(f"SELECT id FROM memories WHERE {where}", params).fetchall()
        ) == sorted(ids[10:13])


def test_get_update_and_fetch_by_id_stay_in_the_callers_tenant(tmp_path: Path) -> None:
    """The same id in two tenants (the primary key is (tenant_id, id)): each tenant reads and writes
    its own row only."""
    with Memory.open(tmp_path / "m.duckdb", embedder="hashing") as mem:
        mine = mem.add(ACME, "the user prefers dark mode", layer="user", identifiers=IDS).memory
        provider = _provider(mem)
        stored = provider.get("acme", mine.id, mem.engine.now(), include_embedding=True)
        assert stored is not None
        theirs = stored.model_copy(update={"tenant_id": "globex", "content": "globex's own note"})
        provider.add([theirs])
        now = mem.engine.now()
        got_mine, got_theirs = provider.get("acme", mine.id, now), provider.get("globex", mine.id, now)
        assert got_mine is not None and got_mine.content == "the user prefers dark mode"
        assert got_theirs is not None and got_theirs.content == "globex's own note"

        changed = got_theirs.model_copy(update={"content": "globex changed it", "version": got_theirs.version + 1})
        assert provider.update(changed, got_theirs)
        after_mine, after_theirs = provider.get("acme", mine.id, now), provider.get("globex", mine.id, now)
        assert after_mine is not None and after_mine.content == "the user prefers dark mode"
        assert after_mine.version == got_mine.version
        assert after_theirs is not None and after_theirs.content == "globex changed it"
        # a stale version is refused, and another tenant's id is not found
        assert not provider.update(changed, got_theirs)
        assert provider.get("initech", mine.id, now) is None

        with provider._read() as cur:
            assert [e.content for e in provider.fetch_entries(cur, "globex", [mine.id], False)] == ["globex changed it"]


def test_many_ids_are_fetched_with_or_without_the_index(tmp_path: Path) -> None:
    """Up to ``BY_IDS_MAX`` ids through the index, more by one scan: the same rows, in the order asked."""
    with Memory.open(tmp_path / "m.duckdb", embedder="hashing") as mem:
        n = BY_IDS_MAX + 20
        ids = [
            r.memory.id
            for r in mem.bulk_add(
                ACME,
                [{"content": f"fact {i} about item {i * 7}", "layer": "user", "identifiers": IDS} for i in range(n)],
            ).results
        ]
        provider = _provider(mem)
        asked = [*reversed(ids), "not-an-id"]
        with provider._read() as cur:
            everything = provider.fetch_entries(cur, "acme", asked, False)
            some = provider.fetch_entries(cur, "acme", asked[:5], False)
            none = provider.fetch_entries(cur, "globex", asked[:5], False)
        assert [e.id for e in everything] == list(reversed(ids))
        assert [e.id for e in some] == asked[:5] and none == []


def test_a_store_created_before_the_index_gets_it_when_opened(tmp_path: Path) -> None:
    path = tmp_path / "m.duckdb"
    with Memory.open(path, embedder="hashing") as mem:
        memory_id = mem.add(ACME, "the user lives in Berlin", layer="user", identifiers=IDS).memory.id
        cur = _provider(mem)._cursor()
        cur.execute("DROP INDEX idx_memories_id")
        cur.execute("DELETE FROM schema_version WHERE version = 10")
    with Memory.open(path, embedder="hashing") as mem:
        cur = _provider(mem)._cursor()
        names = [
            r[0]
            for r in cur.execute("SELECT index_name FROM duckdb_indexes() WHERE table_name = 'memories'").fetchall()
        ]
        assert "idx_memories_id" in names
        assert mem.get(ACME, memory_id).content == "the user lives in Berlin"
