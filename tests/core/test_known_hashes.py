"""The embedded store skips embedding-cache lookups that cannot succeed (providers/duckdb/database.py
``KnownHashes``), and never loses a cached vector it must find."""

from __future__ import annotations

from pathlib import Path

from stratamem import Memory, TenantContext
from stratamem.providers.duckdb import DuckDBProvider
from stratamem.providers.duckdb.database import KnownHashes

T = TenantContext(tenant_id="acme", principal="u1")
WHO = {"user_id": "u1"}


def test_sets_load_once_learn_writes_and_forget_by_tenant() -> None:
    known, loads = KnownHashes(), []

    def load(hashes: list[str]) -> object:
        return lambda: loads.append(1) or hashes

    key = ("memories", "acme", "m")
    assert known.maybe_present(key, ["a", "b"], load(["a"])) == ["a"]
    assert known.maybe_present(key, ["a", "c"], load(["a", "c"])) == ["a"]  # loaded once: "c" came another way
    known.add("memories", "acme", "m", ["c"])
    assert known.maybe_present(key, ["c"], load([])) == ["c"] and len(loads) == 1
    known.add("memories", "other", "m", ["x"])  # a set not loaded is not created by a write
    assert known.maybe_present(("memories", "other", "m"), ["x"], load([])) == []
    known.forget("acme")
    assert known.maybe_present(key, ["c", "d"], load(["d"])) == ["d"] and len(loads) == 3
    known.forget()
    assert known.maybe_present(("memories", "other", "m"), ["x"], load(["x"])) == ["x"]


def _hash(mem: Memory, text: str) -> str:
    out = mem.add(T, text, layer="user", identifiers=WHO)
    return out.memory.content_hash


def test_cache_hits_survive_adds_updates_and_rows_copied_in(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "m.duckdb", embedder="hashing") as mem:
        provider = mem.engine.provider
        assert isinstance(provider, DuckDBProvider)
        model = mem.engine.embeddings.model_id
        first = _hash(mem, "the backend runs on PostgreSQL 16")
        assert set(provider.cache_get("acme", model, [first, "sha256:" + "0" * 64])) == {first}  # set loaded
        second = _hash(mem, "deploys happen on Fridays")  # learnt from the add
        assert set(provider.cache_get("acme", model, [second])) == {second}
        updated = mem.update(T, mem.list(T, layer="user", identifiers=WHO).memories[0].id, content="tabs, not spaces")
        new_hash = updated.memory.content_hash
        assert set(provider.cache_get("acme", model, [new_hash])) == {new_hash}
        # a row copied in without add (as a migration does): the sets are forgotten and reloaded
        columns = provider.table_columns("memories")
        assert columns is not None
        row = provider._cursor().execute(f"SELECT {', '.join(columns)} FROM memories LIMIT 1").fetchone()
        assert row is not None
        values = dict(zip(columns, row, strict=True))
        values.update(id="copied-1", content_hash="sha256:" + "1" * 64)
        provider.upsert_rows("memories", columns, ["tenant_id", "id"], [[values[c] for c in columns]])
        assert "sha256:" + "1" * 64 in provider.cache_get("acme", model, ["sha256:" + "1" * 64])
        # the same text written again is not embedded again
        again = mem.add(T, "deploys happen on Fridays", layer="user", identifiers={"user_id": "u2"})
        assert again.embedding_generated is False
