"""The embedded store keeps one copy of a memory's vector: ``add`` writes none to ``embedding_cache``
and ``cache_get`` for the store's model reads the tenant's stored memories first."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from stratamem import Memory, TenantContext

U1 = {"user_id": "u1"}


def _count(mem: Memory, sql: str, *params: object) -> int:
    row = mem.engine.provider.db.conn.execute(sql, list(params)).fetchone()  # type: ignore[attr-defined]
    return int(row[0])


def test_adds_store_one_copy_and_the_cache_reads_it(tmp_path: Path) -> None:
    acme, globex = TenantContext(tenant_id="acme"), TenantContext(tenant_id="globex")
    with Memory.open(tmp_path / "s.duckdb", embedder="hashing") as mem:
        provider, model = mem.engine.provider, mem.engine.embeddings.model_id
        out = mem.bulk_add(
            acme,
            [{"content": f"fact {i} about the billing service", "layer": "user", "identifiers": U1} for i in range(40)],
        )
        assert _count(mem, "SELECT count(*) FROM embedding_cache") == 0
        stored = {r.memory.content_hash: r.memory.id for r in out.results}
        hashes = list(stored)
        got = provider.cache_get("acme", model, [*hashes, "sha256:absent"])  # batch: the hash join
        assert sorted(got) == sorted(hashes)
        for h, mid in stored.items():
            entry = mem.engine.get(acme, mid, include_embedding=True)
            assert entry is not None and np.allclose(got[h], np.asarray(entry.embedding, dtype=np.float32))
        one = provider.cache_get("acme", model, [hashes[0]])  # single: the (tenant_id, content_hash) index
        assert list(one) == [hashes[0]] and np.allclose(one[hashes[0]], got[hashes[0]])
        # never another tenant's vectors, never for another model
        assert provider.cache_get("globex", model, hashes) == {}
        assert provider.cache_get("acme", "another-model", hashes) == {}

        # the same content again is not embedded again, in this tenant only
        again = mem.add(acme, "fact 3 about the billing service", layer="user", identifiers={"user_id": "u2"})
        other = mem.add(globex, "fact 3 about the billing service", layer="user", identifiers=U1)
        assert again.embedding_generated is False and other.embedding_generated is True
        reopened_hash = again.memory.content_hash
    with Memory.open(tmp_path / "s.duckdb", embedder="hashing") as mem:  # a new process: no LRU, only the store
        calls = mem.engine.embeddings.model_calls
        assert (
            mem.add(acme, "fact 5 about the billing service", layer="user", identifiers=U1).embedding_generated is False
        )
        assert mem.engine.embeddings.model_calls == calls
        # deleting every memory holding a content forgets its vector
        for r in (
            mem.list(acme, "user", identifiers=U1, limit=100).memories
            + mem.list(acme, "user", identifiers={"user_id": "u2"}).memories
        ):
            if r.content_hash == reopened_hash:
                mem.delete(acme, r.id)
        assert mem.engine.provider.cache_get("acme", mem.engine.embeddings.model_id, [reopened_hash]) == {}
        # vectors embedded without being stored (the write gate's candidates) still go to the cache
        mem.engine.embeddings.embed_contents("acme", ["a candidate the gate rejected"], persist=True)
        assert _count(mem, "SELECT count(*) FROM embedding_cache WHERE tenant_id = ?", "acme") == 1
