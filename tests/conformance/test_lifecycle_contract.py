"""Lifecycle trait contract: the seven lifecycle provider methods behave the same on every backend.

``record_access``, ``set_status``, ``set_expiry``, ``purge_candidates``, ``add_feedback``,
``feedback_stats`` and ``clear_feedback`` are called straight on the provider (the engine would add
its own checks); memories are created through the SDK. Every test uses fresh tenant ids.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from stratamem import Memory, MemoryEntry, TenantContext

U1 = {"user_id": "u1"}
NOW = datetime.now(UTC).replace(microsecond=0) + timedelta(days=1)  # after every created_at
STATUSES = ("active", "archived", "deleted")


def _add(store: Memory, tenant: TenantContext, *contents: str) -> list[str]:
    return [store.add(tenant, c, layer="user", identifiers=U1).memory.id for c in contents]


def _stored(store: Memory, tenant: TenantContext, mid: str, at: datetime = NOW) -> MemoryEntry:
    entry = store.engine.provider.get(tenant.tenant_id, mid, at, statuses=STATUSES)
    assert entry is not None
    return entry


def test_record_access_counts_and_sets_importance(
    store: Memory, tenant: TenantContext, other_tenant: TenantContext
) -> None:
    p = store.engine.provider
    a, b = _add(store, tenant, "likes green tea", "works from Lisbon")
    before = _stored(store, tenant, a)
    assert p.record_access(tenant.tenant_id, {}, NOW) == 0
    assert p.record_access(tenant.tenant_id, {a: 0.7}, NOW) == 1
    after = _stored(store, tenant, a)
    assert (after.access_count, after.importance, after.last_accessed_at) == (before.access_count + 1, 0.7, NOW)
    assert (after.version, after.etag, after.content) == (before.version, before.etag, before.content)
    later = NOW + timedelta(minutes=5)
    assert p.record_access(tenant.tenant_id, {a: 0.8, b: 0.25}, later) == 2
    a2, b2 = _stored(store, tenant, a), _stored(store, tenant, b)
    assert (a2.access_count, a2.importance, a2.last_accessed_at) == (before.access_count + 2, 0.8, later)
    assert (b2.access_count, b2.importance, b2.last_accessed_at) == (1, 0.25, later)
    # another tenant naming these ids changes nothing
    p.record_access(other_tenant.tenant_id, {a: 0.01}, later + timedelta(hours=1))
    assert _stored(store, tenant, a) == a2
    # coalesced accesses (background tracking): each id by its own count
    assert p.record_access(tenant.tenant_id, {a: 0.9, b: 0.3}, later, counts={a: 3, b: 1}) == 2
    a3, b3 = _stored(store, tenant, a), _stored(store, tenant, b)
    assert (a3.access_count, a3.importance, b3.access_count) == (a2.access_count + 3, 0.9, 2)


def test_set_status_soft_delete_archive_restore(
    store: Memory, tenant: TenantContext, other_tenant: TenantContext
) -> None:
    p = store.engine.provider
    a, b = _add(store, tenant, "draft plan", "final plan")
    version = _stored(store, tenant, a).version
    assert p.set_status(tenant.tenant_id, [], "deleted", NOW) == []
    assert p.set_status(other_tenant.tenant_id, [a], "deleted", NOW) == []
    assert p.set_status(tenant.tenant_id, [a, "missing", a], "deleted", NOW) == [a]
    gone = _stored(store, tenant, a)
    assert (gone.status, gone.deleted_at, gone.version) == ("deleted", NOW, version)
    assert p.get(tenant.tenant_id, a, NOW) is None  # active-only read skips it
    assert _stored(store, tenant, b).status == "active"
    assert sorted(p.set_status(tenant.tenant_id, [b, a], "archived", NOW)) == sorted([a, b])
    assert {(e.status, e.deleted_at) for e in (_stored(store, tenant, a), _stored(store, tenant, b))} == {
        ("archived", None)
    }
    assert p.set_status(tenant.tenant_id, [a], "active", NOW) == [a]
    back = p.get(tenant.tenant_id, a, NOW)
    assert back is not None and back.deleted_at is None and back.version == version


def test_set_expiry_any_status(store: Memory, tenant: TenantContext, other_tenant: TenantContext) -> None:
    p = store.engine.provider
    a, b = _add(store, tenant, "promo code SPRING", "promo code AUTUMN")
    until = NOW + timedelta(hours=1)
    assert p.set_expiry(tenant.tenant_id, [], until) == 0
    assert p.set_expiry(other_tenant.tenant_id, [a], until) == 0
    assert p.set_expiry(tenant.tenant_id, [a, "missing"], until) == 1
    assert _stored(store, tenant, a).expires_at == until
    assert p.get(tenant.tenant_id, a, NOW) is not None
    assert p.get(tenant.tenant_id, a, until + timedelta(seconds=1)) is None  # expired
    p.set_status(tenant.tenant_id, [b], "deleted", NOW)
    assert p.set_expiry(tenant.tenant_id, [b], until) == 1  # soft-deleted rows too
    assert p.set_expiry(tenant.tenant_id, [a, b], None) == 2
    assert _stored(store, tenant, a).expires_at is None and _stored(store, tenant, b).expires_at is None


def test_purge_candidates(store: Memory, tenant: TenantContext, other_tenant: TenantContext) -> None:
    p = store.engine.provider
    expired, deleted, recent_del, live = _add(
        store, tenant, "old wifi code", "old door code", "new door code", "current wifi code"
    )
    _add(store, other_tenant, "their old code")
    p.set_expiry(tenant.tenant_id, [expired], NOW - timedelta(days=2))
    p.set_status(tenant.tenant_id, [deleted], "deleted", NOW - timedelta(days=10))
    p.set_status(tenant.tenant_id, [recent_del], "deleted", NOW)
    p.set_expiry(tenant.tenant_id, [live], NOW + timedelta(days=30))
    assert (
        p.purge_candidates(
            other_tenant.tenant_id, expired_before=NOW + timedelta(days=60), deleted_before=NOW + timedelta(days=60)
        )
        == []
    )
    got = p.purge_candidates(
        tenant.tenant_id, expired_before=NOW - timedelta(days=1), deleted_before=NOW - timedelta(days=7)
    )
    assert got == sorted([expired, deleted])
    # boundaries are inclusive; the result is ordered by id and cut at ``limit``
    everything = sorted([expired, deleted, recent_del, live])
    assert (
        p.purge_candidates(tenant.tenant_id, expired_before=NOW + timedelta(days=30), deleted_before=NOW) == everything
    )
    assert (
        p.purge_candidates(tenant.tenant_id, expired_before=NOW + timedelta(days=30), deleted_before=NOW, limit=2)
        == everything[:2]
    )
    assert (
        p.purge_candidates(
            tenant.tenant_id, expired_before=NOW - timedelta(days=3), deleted_before=NOW - timedelta(days=11)
        )
        == []
    )


def test_feedback_accumulates_per_tenant_and_clears(
    store: Memory, tenant: TenantContext, other_tenant: TenantContext
) -> None:
    p = store.engine.provider
    a, b, c = _add(store, tenant, "office in building 7", "office in building 9", "parking on level 2")
    assert p.feedback_stats(tenant.tenant_id) == {}
    assert p.add_feedback(tenant.tenant_id, [], 1.0, NOW) == {}
    assert p.add_feedback(tenant.tenant_id, [a, b, a], -1.0, NOW) == {a: (1, -1.0), b: (1, -1.0)}
    assert p.add_feedback(tenant.tenant_id, [a], 0.5, NOW) == {a: (2, -0.5)}
    assert p.add_feedback(tenant.tenant_id, [c, a], 0.25, NOW) == {a: (3, -0.25), c: (1, 0.25)}
    stats = p.feedback_stats(tenant.tenant_id)
    assert stats == {a: (3, -0.25), b: (1, -1.0), c: (1, 0.25)}
    assert list(stats) == sorted(stats)
    # another tenant's feedback on the same ids is separate
    assert p.add_feedback(other_tenant.tenant_id, [a], 1.0, NOW) == {a: (1, 1.0)}
    assert p.feedback_stats(other_tenant.tenant_id) == {a: (1, 1.0)}
    assert p.feedback_stats(tenant.tenant_id)[a] == (3, -0.25)
    p.clear_feedback(tenant.tenant_id, [])
    p.clear_feedback(tenant.tenant_id, [a, "missing"])
    assert p.feedback_stats(tenant.tenant_id) == {b: (1, -1.0), c: (1, 0.25)}
    assert p.feedback_stats(other_tenant.tenant_id) == {a: (1, 1.0)}
    assert p.add_feedback(tenant.tenant_id, [a], 1.0, NOW) == {a: (1, 1.0)}  # starts over after a clear


@pytest.mark.parametrize("reward", [-1.0, 0.0, 0.125, 1.0])
def test_feedback_reward_values_round_trip(store: Memory, tenant: TenantContext, reward: float) -> None:
    (a,) = _add(store, tenant, "one fact")
    p = store.engine.provider
    p.add_feedback(tenant.tenant_id, [a], reward, NOW)
    p.add_feedback(tenant.tenant_id, [a], reward, NOW)
    assert p.feedback_stats(tenant.tenant_id) == {a: (2, pytest.approx(2 * reward))}
