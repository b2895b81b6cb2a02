"""Seed 000 Memory Promotion / Promotion Trigger / PII Redaction / Sensitivity Check /
Session Cleanup; seed 002 §5.3, §8.7, §11."""

from __future__ import annotations

from datetime import timedelta

import pytest
from prometheus_client import REGISTRY

from stratamem import Memory, MemoryError, TenantContext
from stratamem.lifecycle.config import LifecycleConfig, SessionCleanupConfig
from stratamem.lifecycle.promotion import can_promote
from stratamem.model import Layer

from .conftest import T0, Clock, access

S = {"user_id": "u1", "session_id": "s1"}


def _blocked(reason: str) -> float:
    return REGISTRY.get_sample_value("stratamem_lifecycle_promotions_blocked_total", {"reason": reason}) or 0.0


def test_important_session_memory_promoted_to_user_with_redaction(lmem: Memory, acme: TenantContext) -> None:
    src = lmem.add(
        acme,
        "Alice's address is alice@example.com, call 123-456-7890",
        layer="session",
        identifiers=S,
        metadata={"tags": ["contact"], "source": {"type": "conversation"}},
        provenance={"agentId": "planner", "confidence": 0.7},
    ).memory
    access(lmem, acme, src.id, 3)  # importance 0.8 == threshold
    result = lmem.close_session(acme, "u1", "s1")
    assert result.evaluated == 1
    assert result.target_layer == Layer.USER
    assert [p.source_id for p in result.promoted] == [src.id]
    assert result.promoted[0].importance == 0.8
    promoted = lmem.get(acme, result.promoted[0].promoted_id)
    assert promoted is not None
    assert promoted.content == "Alice's address is [REDACTED_EMAIL], call [REDACTED_PHONE]"
    assert promoted.layer == Layer.USER and promoted.identifiers.user_id == "u1"
    assert promoted.metadata["promotedFromId"] == src.id
    assert promoted.metadata["tags"] == ["contact"]
    prov = promoted.provenance
    assert (prov.promoted_from_id, prov.agent_id, prov.confidence, prov.source, prov.created_in_session_id) == (
        src.id,
        "planner",
        0.7,
        "conversation",
        "s1",
    )
    audit = lmem.engine.audit.recent(tenant_id=acme.tenant_id, action="close_session")[-1]
    assert audit.details["promoted"] == 1 and "alice" not in audit.model_dump_json()


def test_below_threshold_not_promoted(lmem: Memory, acme: TenantContext) -> None:
    src = lmem.add(acme, "minor remark", layer="session", identifiers=S).memory
    access(lmem, acme, src.id, 2)  # 0.5*0.4 + 0.5 = 0.7
    result = lmem.close_session(acme, "u1", "s1")
    assert result.promoted == [] and result.blocked == []


@pytest.mark.parametrize("flag", ["sensitive", "private"])
def test_sensitive_or_private_never_promoted(lmem: Memory, acme: TenantContext, flag: str) -> None:
    src = lmem.add(
        acme, "my therapy appointment is on Tuesday", layer="session", identifiers=S, metadata={flag: True}
    ).memory
    access(lmem, acme, src.id, 5)
    before = _blocked(flag)
    stats_before = lmem.lifecycle.stats.blocked_promotions
    result = lmem.close_session(acme, "u1", "s1")
    assert result.promoted == []
    assert [(b.source_id, b.reason) for b in result.blocked] == [(src.id, flag)]
    assert _blocked(flag) == before + 1
    assert lmem.lifecycle.stats.blocked_promotions == stats_before + 1
    rec = lmem.engine.audit.recent(tenant_id=acme.tenant_id, action="promotion_blocked")[-1]
    assert rec.outcome == "denied" and rec.memory_ids == [src.id] and rec.details["reason"] == flag
    assert lmem.list(acme, "user", identifiers={"user_id": "u1"}).total_count == 0
    with pytest.raises(MemoryError) as exc:
        lmem.promote(acme, src.id, "user")
    assert exc.value.code.value == "POLICY_VIOLATION" and exc.value.details["policy"] == flag


def test_project_target_when_project_given(lmem: Memory, acme: TenantContext) -> None:
    src = lmem.add(acme, "we chose PostgreSQL 16", layer="session", identifiers=S).memory
    access(lmem, acme, src.id, 5)
    result = lmem.close_session(acme, "u1", "s1", project_id="p1")
    assert result.target_layer == Layer.PROJECT
    promoted = lmem.get(acme, result.promoted[0].promoted_id)
    assert promoted is not None and promoted.layer == Layer.PROJECT and promoted.identifiers.project_id == "p1"


def test_configured_project_and_retention(lmem: Memory, acme: TenantContext, clock: Clock) -> None:
    lmem.lifecycle.config = LifecycleConfig(session=SessionCleanupConfig(project_id="p9", retention_period="2d"))
    a = lmem.add(acme, "remember the launch date", layer="session", identifiers=S, importance=0.9).memory
    b = lmem.add(acme, "small talk", layer="session", identifiers=S).memory
    result = lmem.close_session(acme, "u1", "s1")
    assert result.target_layer == Layer.PROJECT and len(result.promoted) == 1 and result.expiring == 2
    entry = lmem.get(acme, b.id)
    assert entry is not None and entry.expires_at == T0 + timedelta(days=2)
    clock.advance(days=2, seconds=1)
    assert lmem.get(acme, a.id) is None and lmem.get(acme, b.id) is None
    assert lmem.get(acme, result.promoted[0].promoted_id) is not None


def test_auto_delete_without_retention_soft_deletes(lmem: Memory, acme: TenantContext) -> None:
    lmem.lifecycle.config = LifecycleConfig(session=SessionCleanupConfig(retention_period=None))
    a = lmem.add(acme, "temp", layer="session", identifiers=S).memory
    result = lmem.close_session(acme, "u1", "s1")
    assert result.deleted == 1 and lmem.get(acme, a.id) is None


def test_promote_important_off(lmem: Memory, acme: TenantContext) -> None:
    lmem.lifecycle.config = LifecycleConfig(session=SessionCleanupConfig(promote_important=False, auto_delete=False))
    a = lmem.add(acme, "important", layer="session", identifiers=S, importance=1.0).memory
    result = lmem.close_session(acme, "u1", "s1")
    assert result.promoted == [] and result.expiring == 0
    entry = lmem.get(acme, a.id)
    assert entry is not None and entry.expires_at is None


# seed 002 §11: session → user, workspace, org, object; user → workspace, org; workspace → org;
# object → user, workspace, org. Everything downward/sideways is invalid.
VALID = [
    ("session", "user"),
    ("session", "project"),
    ("session", "org"),
    ("session", "object"),
    ("user", "project"),
    ("user", "org"),
    ("project", "org"),
    ("object", "user"),
    ("object", "project"),
    ("object", "org"),
    ("agent", "team"),
    ("team", "company"),
]
INVALID = [
    ("org", "user"),
    ("user", "session"),
    ("project", "user"),
    ("user", "user"),
    ("user", "object"),
    ("org", "project"),
    ("company", "org"),
    ("project", "object"),
]


@pytest.mark.parametrize(("src", "dst"), VALID)
def test_valid_promotions(src: str, dst: str) -> None:
    assert can_promote(Layer(src), Layer(dst))


@pytest.mark.parametrize(("src", "dst"), INVALID)
def test_invalid_promotions(src: str, dst: str) -> None:
    assert not can_promote(Layer(src), Layer(dst))


def test_promote_session_to_user_and_delete_original(lmem: Memory, acme: TenantContext) -> None:
    src = lmem.add(acme, "prefers vim", layer="session", identifiers=S, metadata={"tags": ["editor"]}).memory
    out = lmem.promote(
        acme, src.id, "user", delete_original=True, content="Prefers vim keybindings", tags=["editor", "pref"]
    )
    assert out.layer == Layer.USER and out.content == "Prefers vim keybindings"
    assert out.tags == ["editor", "pref"] and out.provenance.promoted_from_id == src.id
    assert lmem.get(acme, src.id) is None
    # workspace is seed 002's name for the project layer
    again = lmem.promote(acme, out.id, "workspace", identifiers={"project_id": "p1"})
    assert again.layer == Layer.PROJECT and again.provenance.promoted_from_id == out.id


def test_downward_promotion_rejected(lmem: Memory, acme: TenantContext) -> None:
    src = lmem.add(acme, "org policy", layer="org", identifiers={"org_id": "o1"}).memory
    with pytest.raises(MemoryError) as exc:
        lmem.promote(acme, src.id, "user", identifiers={"user_id": "u1"})
    assert exc.value.code.value == "INVALID_SCOPE_PROMOTION"
    assert exc.value.details == {"source_layer": "org", "target_layer": "user", "allowed": ["company"]}
    assert lmem.list(acme, "user", identifiers={"user_id": "u1"}).total_count == 0


def test_promote_missing_and_other_tenant(lmem: Memory, acme: TenantContext, globex: TenantContext) -> None:
    src = lmem.add(acme, "acme secret", layer="session", identifiers=S).memory
    with pytest.raises(MemoryError) as exc:
        lmem.promote(globex, src.id, "user")
    assert exc.value.code.value == "MEMORY_NOT_FOUND"
    with pytest.raises(MemoryError) as exc2:
        lmem.promote(acme, src.id, "project")
    assert exc2.value.code.value == "MISSING_IDENTIFIER"


def test_closing_twice_does_not_duplicate(lmem: Memory, acme: TenantContext) -> None:
    lmem.add(acme, "ship it on monday", layer="session", identifiers=S, importance=0.9)
    first = lmem.close_session(acme, "u1", "s1")
    second = lmem.close_session(acme, "u1", "s1")
    assert len(first.promoted) == 1 and second.promoted == [] and second.evaluated == 1
    assert lmem.list(acme, "user", identifiers={"user_id": "u1"}).total_count == 1
