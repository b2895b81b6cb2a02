"""add / get / update / delete / list / bulk on a real DuckDB file (seed 000 and 004 scenarios)."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from stratamem import ErrorCode, Layer, Memory, MemoryError, TenantContext

U1 = {"user_id": "u1"}


def test_add_returns_full_entry(mem: Memory, acme: TenantContext) -> None:
    out = mem.add(
        acme,
        content="When debugging TypeScript, check tsconfig.json first",
        layer="agent",
        identifiers={"agentId": "agent_debugger", "userId": "user_123", "projectId": "ignored"},
        metadata={"tags": ["debugging", "typescript"], "source": {"type": "conversation", "reference": "msg_abc123"}},
    )
    m = out.memory
    assert out.embedding_generated is True
    assert re.fullmatch(r"[0-9a-f-]{36}", m.id)
    assert m.tenant_id == "acme" and m.layer is Layer.AGENT
    assert m.identifiers.present() == {"agent_id": "agent_debugger", "user_id": "user_123"}
    assert m.metadata["tags"] == ["debugging", "typescript"]
    assert m.version == 1 and m.etag and m.status == "active"
    assert m.content_hash.startswith("sha256:")
    assert m.created_at == m.updated_at and m.created_at.tzinfo is not None
    assert m.provenance.agent_id == "agent_debugger" and m.provenance.source == "conversation"
    js = m.to_json_dict()
    assert js["createdAt"].endswith("Z") or js["createdAt"].endswith("+00:00")
    assert js["identifiers"]["agentId"] == "agent_debugger"
    assert mem.get(acme, m.id) == m


def test_session_provenance_recorded(mem: Memory, acme: TenantContext) -> None:
    m = mem.add(acme, content="draft the RFC", layer="session", identifiers={"userId": "u1", "sessionId": "s9"}).memory
    assert m.provenance.created_in_session_id == "s9"


def test_get_missing_and_cross_tenant_return_none(mem: Memory, acme: TenantContext, globex: TenantContext) -> None:
    mid = mem.add(acme, content="secret plan", layer="user", identifiers=U1).memory.id
    assert mem.get(acme, "does-not-exist") is None
    assert mem.get(globex, mid) is None


def test_update_content_reembeds_and_bumps(mem: Memory, acme: TenantContext) -> None:
    first = mem.add(acme, content="likes tea", layer="user", identifiers=U1, metadata={"tags": ["drink"]}).memory
    out = mem.update(acme, first.id, content="likes green tea")
    m = out.memory
    assert out.embedding_regenerated is True
    assert m.content == "likes green tea" and m.version == 2 and m.etag != first.etag
    assert m.updated_at >= first.updated_at and m.created_at == first.created_at
    assert m.content_hash != first.content_hash
    assert mem.get(acme, first.id) == m


def test_update_metadata_only_merges_without_reembedding(mem: Memory, acme: TenantContext) -> None:
    first = mem.add(
        acme, content="likes tea", layer="user", identifiers=U1, metadata={"tags": ["drink"], "a": 1, "b": 2}
    ).memory
    calls = mem.engine.embeddings.model_calls
    out = mem.update(acme, first.id, metadata={"b": 3, "c": 4, "a": None})
    assert out.embedding_regenerated is False
    assert mem.engine.embeddings.model_calls == calls
    assert out.memory.metadata == {"tags": ["drink"], "b": 3, "c": 4}
    assert out.memory.version == 2


def test_update_same_content_does_not_reembed(mem: Memory, acme: TenantContext) -> None:
    first = mem.add(acme, content="likes tea", layer="user", identifiers=U1).memory
    assert mem.update(acme, first.id, content="likes tea").embedding_regenerated is False


def test_update_if_match(mem: Memory, acme: TenantContext) -> None:
    first = mem.add(acme, content="v1", layer="user", identifiers=U1).memory
    second = mem.update(acme, first.id, content="v2", if_match=first.etag).memory
    with pytest.raises(MemoryError) as err:
        mem.update(acme, first.id, content="v3", if_match=first.etag)
    assert err.value.code is ErrorCode.CONFLICT
    assert err.value.details["current_etag"] == second.etag
    assert mem.get(acme, first.id).content == "v2"  # type: ignore[union-attr]


def test_update_missing_or_cross_tenant_is_not_found(mem: Memory, acme: TenantContext, globex: TenantContext) -> None:
    mid = mem.add(acme, content="v1", layer="user", identifiers=U1).memory.id
    for ctx, target in ((acme, "nope"), (globex, mid)):
        with pytest.raises(MemoryError) as err:
            mem.update(ctx, target, content="hijack")
        assert err.value.code is ErrorCode.MEMORY_NOT_FOUND
        assert err.value.message == f"no memory with id {target!r}"
    assert mem.get(acme, mid).content == "v1"  # type: ignore[union-attr]


def test_concurrent_updates_never_lose_a_write(mem: Memory, acme: TenantContext) -> None:
    mid = mem.add(acme, content="counter", layer="user", identifiers=U1, metadata={}).memory.id
    errors: list[Exception] = []

    def worker(n: int) -> None:
        try:
            mem.update(acme, mid, metadata={f"k{n}": n})
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    final = mem.get(acme, mid)
    assert final is not None
    applied = {k for k in final.metadata if k.startswith("k")}
    # Every update either landed or reported CONFLICT; none vanished silently.
    assert len(applied) + len(errors) == 8
    assert all(isinstance(e, MemoryError) and e.code is ErrorCode.CONFLICT for e in errors)
    assert final.version == 1 + len(applied)


def test_delete_is_idempotent_and_tenant_scoped(mem: Memory, acme: TenantContext, globex: TenantContext) -> None:
    mid = mem.add(acme, content="to delete", layer="user", identifiers=U1).memory.id
    assert mem.delete(globex, mid).success is True
    assert mem.get(acme, mid) is not None  # the other tenant's delete did nothing
    assert mem.delete(acme, mid).success is True
    assert mem.get(acme, mid) is None
    assert mem.delete(acme, mid).success is True


def test_delete_if_match(mem: Memory, acme: TenantContext) -> None:
    m = mem.add(acme, content="guarded", layer="user", identifiers=U1).memory
    with pytest.raises(MemoryError) as err:
        mem.delete(acme, m.id, if_match="stale")
    assert err.value.code is ErrorCode.CONFLICT
    assert mem.delete(acme, m.id, if_match=m.etag).success


def test_bulk_add_is_atomic(mem: Memory, acme: TenantContext) -> None:
    items = [{"content": f"fact {i}", "layer": "user", "identifiers": U1} for i in range(5)]
    items.append({"content": "bad", "layer": "session", "identifiers": U1})
    with pytest.raises(MemoryError) as err:
        mem.bulk_add(acme, items)
    assert err.value.code is ErrorCode.MISSING_IDENTIFIER and err.value.details["index"] == 5
    assert mem.list(acme).total_count == 0
    out = mem.bulk_add(acme, items[:5])
    assert len(out.results) == 5 and all(r.embedding_generated for r in out.results)
    assert mem.list(acme, layer="user", identifiers=U1).total_count == 5


def test_bulk_add_duplicate_contents_embed_once(mem: Memory, acme: TenantContext) -> None:
    out = mem.bulk_add(acme, [{"content": "same", "layer": "user", "identifiers": U1}] * 3)
    assert [r.embedding_generated for r in out.results] == [True, False, False]
    assert mem.engine.embeddings.model_calls == 1


def test_bulk_delete(mem: Memory, acme: TenantContext, globex: TenantContext) -> None:
    ids = [
        r.memory.id
        for r in mem.bulk_add(
            acme, [{"content": f"m{i}", "layer": "user", "identifiers": U1} for i in range(4)]
        ).results
    ]
    assert mem.bulk_delete(globex, ids).deleted == 0
    out = mem.bulk_delete(acme, [*ids[:3], "missing"])
    assert out.deleted == 3 and out.failed == []
    assert mem.list(acme).total_count == 1


def test_expired_entries_are_never_returned(open_mem: Callable[..., Memory], acme: TenantContext) -> None:
    now = [datetime(2026, 1, 1, tzinfo=UTC)]
    mem = open_mem(clock=lambda: now[0])
    m = mem.add(
        acme, content="ephemeral note", layer="user", identifiers=U1, expires_at=now[0] + timedelta(hours=1)
    ).memory
    assert mem.get(acme, m.id) is not None
    now[0] += timedelta(hours=2)
    assert mem.get(acme, m.id) is None
    assert mem.list(acme, layer="user", identifiers=U1).total_count == 0
    assert mem.search(acme, "ephemeral note", identifiers=U1, threshold=0).results == []


def test_stats_and_health(mem: Memory, acme: TenantContext) -> None:
    mem.add(acme, content="a", layer="user", identifiers=U1)
    mem.add(acme, content="b", layer="project", identifiers={"projectId": "p"})
    st = mem.stats(acme)
    assert st.total == 2 and st.by_layer == {"project": 1, "user": 1} and st.provider == "duckdb"
    health = mem.health_check()
    assert health.status == "healthy" and health.latency_ms >= 0 and health.components["storage"].status == "healthy"
    caps = mem.capabilities()
    assert caps.vector_search and caps.bulk_operations and caps.embedding_dimensions == 384
    assert caps.distance_metrics == ["cosine"] and caps.persistent


def test_generate_embedding(mem: Memory) -> None:
    vec = mem.generate_embedding("hello world")
    assert len(vec) == 384 and abs(sum(x * x for x in vec) - 1.0) < 1e-4


def test_context_manager_closes(db_path: object, acme: TenantContext) -> None:
    with Memory.open(db_path, embedder="hashing") as m:  # type: ignore[arg-type]
        mid = m.add(acme, content="persisted", layer="user", identifiers=U1).memory.id
    with Memory.open(db_path, embedder="hashing") as m:  # type: ignore[arg-type]
        assert m.get(acme, mid) is not None
