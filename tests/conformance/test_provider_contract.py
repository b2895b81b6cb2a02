"""Provider contract (SPEC R-PROV): the same behaviour from every backend.

Tests go through the public SDK where the engine adds nothing (so any provider difference shows),
and straight to the trait for what only the trait exposes (capabilities, health, optimistic
update, write hooks, the embedding cache).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from stratamem import ErrorCode, Layer, Memory, MemoryEntry, MemoryError, TenantContext
from stratamem.providers.base import ListQuery, Scope, SearchQuery

from .conftest import PROVIDER_FACTORIES

U1 = {"user_id": "u1"}
NASTY = [
    "'; DROP TABLE memories; --",
    '" OR 1=1 --',
    "Robert'); DELETE FROM embedding_cache WHERE ('1'='1",
    "$$; SELECT pg_sleep(5); $$",
    "\\x00 \\' %s %(x)s {0} ?",
    "emoji 🧠 and ünïcödé — and a\ttab",
]


def test_capabilities_and_health(store: Memory) -> None:
    caps = store.capabilities()
    assert caps.vector_search is True
    assert caps.embedding_dimensions == 384
    assert "cosine" in caps.distance_metrics
    assert caps.max_content_length >= 1000
    health = store.health_check()
    assert health.status == "healthy"
    assert health.latency_ms >= 0
    assert health.components["storage"].status == "healthy"


def test_add_get_round_trip_keeps_every_field(store: Memory, tenant: TenantContext) -> None:
    expires = datetime.now(UTC) + timedelta(days=3)
    out = store.add(
        tenant,
        content="Deploys go out on Tuesdays ✓",
        layer="project",
        identifiers={"projectId": "p1", "userId": "not-stored"},
        metadata={
            "tags": ["ops", "deploy"],
            "source": {"type": "doc", "reference": "wiki/42"},
            "nested": {"level": 2, "ok": True},
            "confidence": 0.75,
        },
        tier="long_term",
        expires_at=expires,
        importance=0.4,
        provenance={"agent_id": "a7", "confidence": 0.9},
    )
    got = store.get(tenant, out.memory.id)
    assert got is not None
    assert got == out.memory
    assert got.identifiers.present() == {"project_id": "p1"}
    assert got.metadata["nested"] == {"level": 2, "ok": True}
    assert got.tier == "long_term" and got.importance == pytest.approx(0.4)
    assert got.provenance.agent_id == "a7" and got.provenance.source == "doc"
    assert got.expires_at is not None and abs((got.expires_at - expires).total_seconds()) < 1e-3
    assert got.created_at.tzinfo is not None and got.status == "active" and got.version == 1


@pytest.mark.parametrize("text", NASTY)
def test_hostile_strings_are_stored_verbatim(store: Memory, tenant: TenantContext, text: str) -> None:
    before = store.stats(tenant).total
    out = store.add(
        tenant,
        content=text,
        layer="user",
        identifiers={"user_id": text[:200]},
        metadata={"tags": [text], text[:40]: text},
    )
    got = store.get(tenant, out.memory.id)
    assert got is not None
    assert got.content == text and got.identifiers.user_id == text[:200].strip()
    assert got.metadata["tags"] == [text] and got.metadata[text[:40]] == text
    hits = store.search(tenant, text, identifiers={"user_id": text[:200]}, threshold=0.0, filter={"tags": [text]})
    assert [r.memory.id for r in hits.results] == [out.memory.id]
    assert store.stats(tenant).total == before + 1


def test_other_tenant_sees_nothing(store: Memory, tenant: TenantContext, other_tenant: TenantContext) -> None:
    mine = store.add(tenant, content="the launch code is blue", layer="user", identifiers=U1).memory
    assert store.get(other_tenant, mine.id) is None
    assert store.search(other_tenant, "the launch code is blue", identifiers=U1, threshold=0.0).results == []
    assert store.list(other_tenant, layer="user", identifiers=U1).total_count == 0
    with pytest.raises(MemoryError) as err:
        store.update(other_tenant, mine.id, content="hijacked")
    assert err.value.code is ErrorCode.MEMORY_NOT_FOUND
    assert store.delete(other_tenant, mine.id).success is True  # idempotent, and a no-op
    still = store.get(tenant, mine.id)
    assert still is not None and still.content == "the launch code is blue"
    assert store.engine.provider.delete(other_tenant.tenant_id, [mine.id]) == []


def test_update_is_optimistic_on_version(store: Memory, tenant: TenantContext) -> None:
    provider = store.engine.provider
    entry = store.add(tenant, content="v1", layer="user", identifiers=U1).memory
    newer = entry.model_copy(update={"content": "v2", "version": 2, "etag": "e2", "embedding": None})
    assert provider.update(newer, entry) is True
    stale = entry.model_copy(update={"content": "v2-lost", "version": 2, "etag": "e2b", "embedding": None})
    assert provider.update(stale, entry) is False  # stored version is 2 now, not 1
    got = store.get(tenant, entry.id)
    assert got is not None and got.content == "v2" and got.version == 2


def test_delete_reports_only_existing_ids(store: Memory, tenant: TenantContext) -> None:
    provider = store.engine.provider
    a = store.add(tenant, content="a", layer="user", identifiers=U1).memory.id
    b = store.add(tenant, content="b", layer="user", identifiers=U1).memory.id
    assert sorted(provider.delete(tenant.tenant_id, [a, "missing", b])) == sorted([a, b])
    assert provider.delete(tenant.tenant_id, [a, b]) == []
    assert store.get(tenant, a) is None and store.get(tenant, b) is None


def test_list_pages_cover_everything_once(store: Memory, tenant: TenantContext) -> None:
    ids = {
        o.memory.id
        for o in store.bulk_add(
            tenant,
            [
                {
                    "content": f"note {i}",
                    "layer": "user",
                    "identifiers": U1,
                    "metadata": {"n": i, "tags": ["even" if i % 2 == 0 else "odd"]},
                }
                for i in range(23)
            ],
        ).results
    }
    store.add(tenant, content="other scope", layer="user", identifiers={"user_id": "u2"})
    seen: list[str] = []
    cursor = None
    while True:
        page = store.list(tenant, layer="user", identifiers=U1, cursor=cursor, limit=5)
        assert page.total_count == 23
        seen += [m.id for m in page.memories]
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert len(seen) == len(set(seen)) == 23 and set(seen) == ids
    evens: list[str] = []
    cursor = None
    while True:
        page = store.list(tenant, layer="user", identifiers=U1, cursor=cursor, limit=4, filter={"tags": ["even"]})
        assert page.total_count == 12
        evens += [m.id for m in page.memories]
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert len(evens) == 12
    assert store.list(tenant).total_count == 24  # no layer: the whole tenant


def test_search_scores_order_scope_and_filter(store: Memory, tenant: TenantContext) -> None:
    store.bulk_add(
        tenant,
        [
            {
                "content": f"the build server number {i} uses gradle",
                "layer": "project",
                "identifiers": {"project_id": "p1"},
                "metadata": {"rank": i, "tags": ["ci"] if i < 3 else ["misc"]},
            }
            for i in range(8)
        ],
    )
    store.add(
        tenant, content="the build server number 0 uses gradle", layer="project", identifiers={"project_id": "p2"}
    )
    res = store.search(
        tenant, "the build server number 0 uses gradle", identifiers={"project_id": "p1"}, threshold=0.0, limit=5
    )
    scores = [r.score for r in res.results]
    assert len(scores) == 5 and all(0.0 <= s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)
    assert res.results[0].memory.content == "the build server number 0 uses gradle"
    assert res.results[0].score == pytest.approx(1.0, abs=1e-4)
    assert {r.memory.identifiers.project_id for r in res.results} == {"p1"}
    assert res.total_count == 8
    # the filter runs before the cut: all three "ci" entries come back although they are not all top-3
    flt = store.search(
        tenant,
        "gradle build server number 7",
        identifiers={"project_id": "p1"},
        threshold=0.0,
        limit=3,
        filter={"tags": ["ci"]},
    )
    assert sorted(r.memory.metadata["rank"] for r in flt.results) == [0, 1, 2] and flt.total_count == 3
    rng = store.search(
        tenant, "gradle", identifiers={"project_id": "p1"}, threshold=0.0, filter={"custom": {"rank": {"gte": 6}}}
    )
    assert sorted(r.memory.metadata["rank"] for r in rng.results) == [6, 7]


def test_search_min_score_and_expiry_at_the_provider(store: Memory, tenant: TenantContext) -> None:
    provider = store.engine.provider
    now = datetime.now(UTC)
    live = store.add(tenant, content="alpha beta gamma", layer="user", identifiers=U1).memory
    soon = store.add(
        tenant, content="alpha beta gamma delta", layer="user", identifiers=U1, expires_at=now + timedelta(seconds=30)
    ).memory
    vector = np.asarray(store.generate_embedding("alpha beta gamma"), dtype=np.float32)
    scope = Scope(Layer.USER, '["u1"]')

    def run(at: datetime, min_score: float) -> list[str]:
        page = provider.search(
            SearchQuery(
                tenant_id=tenant.tenant_id,
                scope=scope,
                vector=vector,
                text="alpha beta gamma",
                limit=10,
                min_score=min_score,
                now=at,
            )
        )
        return [h.entry.id for h in page.hits]

    assert set(run(now, 0.0)) == {live.id, soon.id}
    assert run(now + timedelta(minutes=1), 0.0) == [live.id]  # expired: never returned
    assert run(now, 0.9999) == [live.id]  # only the identical text clears a near-1 threshold
    assert provider.get(tenant.tenant_id, soon.id, now + timedelta(minutes=1)) is None
    page = provider.list(ListQuery(tenant_id=tenant.tenant_id, now=now + timedelta(minutes=1), scope=scope))
    assert [e.id for e in page.entries] == [live.id]


def test_embedding_cache_is_per_tenant_and_model(
    store: Memory, tenant: TenantContext, other_tenant: TenantContext
) -> None:
    provider = store.engine.provider
    vec = np.arange(384, dtype=np.float32) / 384.0
    provider.cache_put(tenant.tenant_id, "model-a", {"sha256:x": vec})
    got = provider.cache_get(tenant.tenant_id, "model-a", ["sha256:x", "sha256:missing"])
    assert list(got) == ["sha256:x"] and np.allclose(got["sha256:x"], vec)
    assert provider.cache_get(other_tenant.tenant_id, "model-a", ["sha256:x"]) == {}
    assert provider.cache_get(tenant.tenant_id, "model-b", ["sha256:x"]) == {}
    provider.cache_put(tenant.tenant_id, "model-a", {"sha256:x": vec * 0})  # first write wins
    assert np.allclose(provider.cache_get(tenant.tenant_id, "model-a", ["sha256:x"])["sha256:x"], vec)
    # a batch lookup (DuckDB: the present hashes first, then their vectors) returns exactly the
    # tenant's own vectors, and nothing when none is present
    provider.cache_put(tenant.tenant_id, "model-a", {"sha256:y": vec * 2})
    provider.cache_put(other_tenant.tenant_id, "model-a", {"sha256:z": vec * 3, "sha256:y": vec * 4})
    got = provider.cache_get(tenant.tenant_id, "model-a", ["sha256:missing", "sha256:y", "sha256:z", "sha256:x"])
    assert sorted(got) == ["sha256:x", "sha256:y"]
    assert np.allclose(got["sha256:x"], vec) and np.allclose(got["sha256:y"], vec * 2)
    assert provider.cache_get(tenant.tenant_id, "model-a", ["sha256:z", "sha256:missing"]) == {}


def test_same_content_embeds_once_and_cache_follows_deletes(store: Memory, tenant: TenantContext) -> None:
    first = store.add(tenant, content="repeatable fact", layer="user", identifiers=U1)
    second = store.add(tenant, content="repeatable fact", layer="user", identifiers={"user_id": "u2"})
    assert first.embedding_generated is True and second.embedding_generated is False
    provider, model = store.engine.provider, store.engine.embeddings.model_id
    chash = first.memory.content_hash
    store.delete(tenant, first.memory.id)
    assert chash in provider.cache_get(tenant.tenant_id, model, [chash])  # still held by the second
    store.delete(tenant, second.memory.id)
    assert provider.cache_get(tenant.tenant_id, model, [chash]) == {}


class _FailingHook:
    def __init__(self) -> None:
        self.seen: list[str] = []

    def after_add(self, tx: Any, entries: Sequence[MemoryEntry]) -> None:
        self.seen += [e.id for e in entries]
        if any("boom" in e.content for e in entries):
            raise RuntimeError("hook failed")

    def after_update(self, tx: Any, entry: MemoryEntry, previous: MemoryEntry) -> None:
        if "boom" in entry.content:
            raise RuntimeError("hook failed")

    def after_delete(self, tx: Any, tenant_id: str, ids: Sequence[str]) -> None:
        self.seen += [f"deleted:{i}" for i in ids]


def test_write_hooks_share_the_transaction(store: Memory, tenant: TenantContext) -> None:
    hook = _FailingHook()
    store.engine.provider.write_hooks.append(hook)
    ok = store.add(tenant, content="fine", layer="user", identifiers=U1).memory
    assert hook.seen == [ok.id]
    with pytest.raises(MemoryError):
        store.bulk_add(
            tenant,
            [
                {"content": "good one", "layer": "user", "identifiers": U1},
                {"content": "boom", "layer": "user", "identifiers": U1},
            ],
        )
    assert store.list(tenant, layer="user", identifiers=U1).total_count == 1  # neither row of the batch
    with pytest.raises(MemoryError):
        store.update(tenant, ok.id, content="boom now")
    got = store.get(tenant, ok.id)
    assert got is not None and got.content == "fine" and got.version == 1
    store.delete(tenant, ok.id)
    assert hook.seen[-1] == f"deleted:{ok.id}"


def test_bulk_adds_prepared_ahead_store_what_single_adds_store(
    store: Memory, tenant: TenantContext, other_tenant: TenantContext
) -> None:
    """A batch of ``prepare_ahead_min``+ items is prepared while it is embedded (``prepare_add``):
    the same texts added one by one in another tenant must search identically, lexical part included."""
    texts = [
        f"Ops note {i}: the {('blue', 'green', 'canary')[i % 3]} rollout of service-{i % 7} waits for "
        f"ticket QX-{1000 + i}"
        for i in range(store.engine.prepare_ahead_min + 8)
    ]
    store.bulk_add(tenant, [{"content": t, "layer": "user", "identifiers": U1} for t in texts])
    for t in texts:
        store.add(other_tenant, content=t, layer="user", identifiers=U1)
    for query in ("QX-1017", "canary rollout of service-3", "ticket"):
        got = [
            store.search(ctx, query, identifiers=U1, layers=["user"], limit=5, threshold=0.0, hybrid_weight=0.5)
            for ctx in (tenant, other_tenant)
        ]
        assert got[0].results, query
        assert [(r.memory.content, round(r.score, 9)) for r in got[0].results] == [
            (r.memory.content, round(r.score, 9)) for r in got[1].results
        ], query
    assert (
        store.search(tenant, "QX-1017", identifiers=U1, layers=["user"], limit=1, hybrid_weight=0.5)
        .results[0]
        .memory.content
        == texts[17]
    )


def test_reopen_keeps_data_and_model(open_store: Callable[..., Memory], tenant: TenantContext) -> None:
    first = open_store()
    mid = first.add(tenant, content="durable", layer="user", identifiers=U1).memory.id
    persistent = first.capabilities().persistent
    first.close()
    again = open_store()
    got = again.get(tenant, mid)
    assert got is not None and got.content == "durable"
    again.close()
    with pytest.raises(MemoryError) as err:
        open_store(embedder="hashing:64")
    assert err.value.code is ErrorCode.CONFIGURATION_ERROR
    assert "384" in err.value.message and "64" in err.value.message
    assert persistent in (True, False)


def test_iteration_counts_and_tenants(store: Memory, tenant: TenantContext) -> None:
    provider = store.engine.provider
    store.add(tenant, content="u", layer="user", identifiers=U1)
    store.add(tenant, content="p", layer="project", identifiers={"project_id": "p"})
    store.add(tenant, content="p2", layer="project", identifiers={"project_id": "p"})
    assert provider.count_by_layer(tenant.tenant_id, datetime.now(UTC)) == {"project": 2, "user": 1}
    exported = list(provider.iter_entries(tenant.tenant_id, batch_size=2))
    assert [e.content for e in exported] == ["u", "p", "p2"]
    assert all(e.embedding is not None and len(e.embedding) == 384 for e in exported)
    assert tenant.tenant_id in provider.tenants()
    # the operator's gauge: live memories per layer over every tenant, in one call
    # (a PostgreSQL store is shared with other tests' tenants: compare with what it held before)
    before = provider.count_live_by_layer(datetime.now(UTC))
    other = TenantContext(tenant_id=f"{tenant.tenant_id}-other", principal="p")
    store.add(other, content="o", layer="user", identifiers=U1)
    gone = store.add(other, content="soon gone", layer="user", identifiers=U1).memory.id
    store.delete(other, gone)
    now = datetime.now(UTC)
    after = provider.count_live_by_layer(now)
    assert after.get("user", 0) - before.get("user", 0) == 1 and after.get("project") == before.get("project")
    per_tenant: dict[str, int] = {}
    for t in provider.tenants():
        for layer, n in provider.count_by_layer(t, now).items():
            per_tenant[layer] = per_tenant.get(layer, 0) + n
    assert after == per_tenant


def test_concurrent_writers_lose_nothing(store: Memory, tenant: TenantContext) -> None:
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            for i in range(25):
                store.add(tenant, content=f"writer {n} item {i}", layer="user", identifiers=U1)
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert store.list(tenant, layer="user", identifiers=U1).total_count == 100


def test_generate_embedding_matches_the_engine(store: Memory, provider_name: str, tmp_path: Path) -> None:
    vec = store.generate_embedding("hello world")
    assert len(vec) == 384 and abs(sum(x * x for x in vec) - 1.0) < 1e-4
    assert vec == pytest.approx(store.engine.embeddings.embed_query("hello world", "test").tolist(), abs=1e-6)
    bare = PROVIDER_FACTORIES[provider_name](tmp_path / "bare")
    with pytest.raises(RuntimeError):
        bare.generate_embedding("no embedder attached")


def test_a_batch_repeating_a_content_stores_each_memory_and_one_cached_vector(
    store: Memory, tenant: TenantContext
) -> None:
    store.add(tenant, content="cached before the batch", layer="user", identifiers=U1)
    items = [
        {"content": text, "layer": "user", "identifiers": U1}
        for text in ("repeated in the batch", "cached before the batch", "repeated in the batch", "new")
    ]
    out = store.bulk_add(tenant, items)
    assert [r.embedding_generated for r in out.results] == [True, False, False, True]
    assert len({r.memory.id for r in out.results}) == 4
    provider, model = store.engine.provider, store.engine.embeddings.model_id
    hashes = [r.memory.content_hash for r in out.results]
    assert set(provider.cache_get(tenant.tenant_id, model, hashes)) == set(hashes)
    a, b = out.results[0].memory, out.results[2].memory
    store.delete(tenant, a.id)
    assert a.content_hash in provider.cache_get(tenant.tenant_id, model, [a.content_hash])  # b still holds it
    store.delete(tenant, b.id)
    assert provider.cache_get(tenant.tenant_id, model, [a.content_hash]) == {}
