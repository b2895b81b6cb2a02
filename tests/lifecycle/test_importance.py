from __future__ import annotations

import threading
from datetime import timedelta

from stratamem import Memory, TenantContext
from stratamem.lifecycle.config import ImportanceConfig, LifecycleConfig
from stratamem.lifecycle.importance import compute_importance
from stratamem.providers.inmemory import InMemoryProvider

from .conftest import T0, Clock, access

S = {"user_id": "u1", "session_id": "s1"}


def test_formula_documented_values() -> None:
    cfg = ImportanceConfig()
    # 0.5 * min(1, n/5) + 0.5 * 0.5^(days/7)
    assert compute_importance(cfg, access_count=0, last_access=T0, now=T0) == 0.5
    assert compute_importance(cfg, access_count=3, last_access=T0, now=T0) == 0.8
    assert compute_importance(cfg, access_count=5, last_access=T0, now=T0) == 1.0
    assert compute_importance(cfg, access_count=5, last_access=T0, now=T0 + timedelta(days=7)) == 0.75
    assert compute_importance(cfg, access_count=0, last_access=T0, now=T0 + timedelta(days=14), explicit=0.9) == 0.9
    custom = ImportanceConfig(frequency_weight=1.0, recency_weight=0.0, saturation_accesses=10)
    assert compute_importance(custom, access_count=4, last_access=T0, now=T0) == 0.4


def test_get_updates_access_count_and_importance(lmem: Memory, acme: TenantContext, clock: Clock) -> None:
    mid = lmem.add(acme, "likes green tea", layer="session", identifiers=S).memory.id
    access(lmem, acme, mid, 3)
    clock.advance(hours=1)
    entry = lmem.get(acme, mid)
    assert entry is not None
    assert entry.access_count == 3
    assert entry.last_accessed_at == T0
    assert entry.importance == 0.8
    assert entry.version == 1  # an access is not an edit


def test_search_hits_update_in_one_batch(lmem: Memory, acme: TenantContext) -> None:
    a = lmem.add(acme, "the deploy runs on fridays", layer="user", identifiers={"user_id": "u1"}).memory.id
    b = lmem.add(acme, "the deploy runs on fridays at noon", layer="user", identifiers={"user_id": "u1"}).memory.id
    c = lmem.add(acme, "completely unrelated cooking note", layer="user", identifiers={"user_id": "u1"}).memory.id
    calls: list[int] = []
    original = lmem.engine.provider.record_access

    def counting(tenant_id: str, importance: dict[str, float], now: object) -> int:
        calls.append(len(importance))
        return original(tenant_id, importance, now)  # type: ignore[arg-type]

    lmem.engine.provider.record_access = counting  # type: ignore[method-assign,assignment]
    out = lmem.search(acme, "the deploy runs on fridays", identifiers={"user_id": "u1"}, threshold=0.8)
    hit_ids = {r.memory.id for r in out.results}
    assert {a, b} <= hit_ids and c not in hit_ids
    assert calls == [len(hit_ids)]  # one batched write for all hits
    lmem.engine.provider.record_access = original  # type: ignore[method-assign]
    got = lmem.engine.provider.get(acme.tenant_id, a, lmem.engine.now())
    assert got is not None and got.access_count == 1


def test_explicit_importance_survives_access(lmem: Memory, acme: TenantContext) -> None:
    mid = lmem.add(acme, "critical fact", layer="user", identifiers={"user_id": "u1"}, importance=0.95).memory.id
    access(lmem, acme, mid, 2)
    entry = lmem.get(acme, mid)
    assert entry is not None and entry.importance == 0.95


class _BrokenTracking(InMemoryProvider):
    def record_access(self, tenant_id: str, importance: object, now: object) -> int:  # type: ignore[override]
        raise RuntimeError("disk full")


def test_tracking_failure_never_fails_the_read(acme: TenantContext, clock: Clock) -> None:
    with Memory.open(_BrokenTracking(), embedder="hashing", clock=clock) as mem:
        mid = mem.add(acme, "still readable", layer="user", identifiers={"user_id": "u1"}).memory.id
        assert mem.get(acme, mid) is not None
        assert mem.search(acme, "still readable", identifiers={"user_id": "u1"}).results


def test_tracking_can_be_turned_off(lmem: Memory, acme: TenantContext) -> None:
    lmem.lifecycle.config = LifecycleConfig(track_access=False)
    mid = lmem.add(acme, "quiet", layer="user", identifiers={"user_id": "u1"}).memory.id
    access(lmem, acme, mid, 2)
    entry = lmem.get(acme, mid)
    assert entry is not None and entry.access_count == 0


def test_background_accesses_queued_behind_a_slow_write_are_coalesced(lmem: Memory, acme: TenantContext) -> None:
    lmem.lifecycle.config = LifecycleConfig(access_write="background")
    a = lmem.add(acme, "coalesced one", layer="user", identifiers={"user_id": "u1"}).memory.id
    b = lmem.add(acme, "coalesced two", layer="user", identifiers={"user_id": "u1"}).memory.id
    provider = lmem.engine.provider
    calls: list[dict[str, int] | None] = []
    release = threading.Event()
    real = provider.record_access

    def slow_first(*args: object, **kwargs: object) -> int:
        calls.append(kwargs.get("counts"))  # type: ignore[arg-type]
        if len(calls) == 1:
            assert release.wait(30)  # a slow store: later accesses queue up meanwhile
        return real(*args, **kwargs)  # type: ignore[arg-type]

    provider.record_access = slow_first  # type: ignore[method-assign]
    access(lmem, acme, a, 5)
    access(lmem, acme, b, 2)
    release.set()
    lmem.lifecycle.flush()
    ea, eb = (lmem.engine.provider.get(acme.tenant_id, i, lmem.engine.now()) for i in (a, b))
    assert ea is not None and eb is not None and (ea.access_count, eb.access_count) == (5, 2)
    # the first write (one access, or all of them if the worker started late), then the rest together
    assert 1 <= len(calls) <= 2
    assert any(c is not None and c.get(a, 1) > 1 for c in calls)


def test_background_access_writes(lmem: Memory, acme: TenantContext) -> None:
    lmem.lifecycle.config = LifecycleConfig(access_write="background")
    mid = lmem.add(acme, "async tracked", layer="user", identifiers={"user_id": "u1"}).memory.id
    access(lmem, acme, mid, 3)
    lmem.lifecycle.flush()
    entry = lmem.engine.provider.get(acme.tenant_id, mid, lmem.engine.now())
    assert entry is not None and entry.access_count == 3 and entry.last_accessed_at == T0
