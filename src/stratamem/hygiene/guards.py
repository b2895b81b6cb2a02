"""Write guards of the hygiene layer (run by the engine before every add/update, SDK or not).

Order: :class:`SanitizeGuard` (control characters, injection markers) → :class:`SecretGuard`
(UNSAFE_CONTENT) → :class:`PolicyGuard` (POLICY_VIOLATION; PII reject/redact). The per-user quota
needs the entry's identifiers, which guards do not see, so :class:`QuotaHook` is a provider write
hook: it counts inside the write transaction and aborts it with QUOTA_EXCEEDED.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import ErrorCode, MemoryError
from ..model import Layer, MemoryEntry, TenantContext
from .pii import redact_pii
from .sanitize import sanitize
from .secret_scan import scan_fields, secret_kinds

if TYPE_CHECKING:
    from ..engine import MemoryEngine
    from .policies import PolicyManager


def _deny(
    engine: MemoryEngine,
    ctx: TenantContext,
    operation: str,
    code: ErrorCode,
    layer: Layer | None,
    details: dict[str, Any],
) -> None:
    engine.audit.record(
        tenant_id=ctx.tenant_id,
        principal=ctx.principal,
        action=f"{operation}.guard",
        outcome="denied",
        code=code.value,
        layer=layer.value if layer else None,
        details=details,
    )


class SanitizeGuard:
    """Strips control characters and prompt-injection markers before anything is stored."""

    def __init__(self, engine: MemoryEngine) -> None:
        self.engine = engine

    def check_write(
        self, ctx: TenantContext, operation: str, content: str, layer: Layer, metadata: Mapping[str, Any]
    ) -> str:
        cleaned = sanitize(content)
        if not cleaned:
            _deny(self.engine, ctx, operation, ErrorCode.UNSAFE_CONTENT, layer, {"reason": "empty_after_sanitising"})
            raise MemoryError(
                ErrorCode.UNSAFE_CONTENT,
                "content consists only of control characters or prompt-injection markers",
                operation=operation,
                details={"reason": "empty_after_sanitising"},
                retryable=False,
            )
        return cleaned


class SecretGuard:
    """Refuses a write carrying credentials or card numbers anywhere it stores text (content, metadata
    keys and values, tier, identifiers), on normalised text: never stored, in any PII mode."""

    def __init__(self, engine: MemoryEngine) -> None:
        self.engine = engine

    def _refuse(self, ctx: TenantContext, operation: str, layer: Layer | None, found: Mapping[str, list[str]]) -> None:
        kinds = sorted({k for ks in found.values() for k in ks})
        fields = sorted(found)
        _deny(self.engine, ctx, operation, ErrorCode.UNSAFE_CONTENT, layer, {"kinds": kinds, "fields": fields})
        raise MemoryError(
            ErrorCode.UNSAFE_CONTENT,
            f"{fields[0]} looks like it contains a secret ({', '.join(kinds)}); secrets are never stored",
            operation=operation,
            details={"kinds": kinds, "fields": fields},
            retryable=False,
        )

    def check_write(
        self, ctx: TenantContext, operation: str, content: str, layer: Layer, metadata: Mapping[str, Any]
    ) -> str:
        found: dict[str, list[str]] = {}
        kinds = secret_kinds(content)
        if kinds:
            found["content"] = sorted(kinds)
        if metadata:
            found.update(scan_fields({"metadata": metadata}))
        if found:
            self._refuse(ctx, operation, layer, found)
        return content

    def check_fields(self, ctx: TenantContext, operation: str, layer: Layer | None, fields: Mapping[str, Any]) -> None:
        """The other stored strings of a write (``tier``, ``identifiers``)."""
        found = scan_fields(fields)
        if found:
            self._refuse(ctx, operation, layer, found)


class PolicyGuard:
    """Applies the tenant's policy: deny patterns, categories, max length, PII mode."""

    def __init__(self, engine: MemoryEngine, policies: PolicyManager) -> None:
        self.engine = engine
        self.policies = policies

    def check_write(
        self, ctx: TenantContext, operation: str, content: str, layer: Layer, metadata: Mapping[str, Any]
    ) -> str:
        policy = self.policies.effective(ctx.tenant_id)
        broken = policy.violation(content, metadata, layer)
        if broken is not None:
            rule, info = broken
            details = {"policy": rule, **{k: v for k, v in info.items() if k != "pattern"}}
            _deny(self.engine, ctx, operation, ErrorCode.POLICY_VIOLATION, layer, details)
            raise MemoryError(
                ErrorCode.POLICY_VIOLATION,
                f"content violates the tenant policy {rule!r}",
                operation=operation,
                details=details,
                retryable=False,
            )
        if policy.pii_mode_for(layer) == "redact":
            return redact_pii(content)
        return content


class QuotaHook:
    """Per-user quota (``TenantPolicy.max_memories``), checked in the add transaction."""

    def __init__(self, engine: MemoryEngine, policies: PolicyManager) -> None:
        self.engine = engine
        self.policies = policies

    def after_add(self, tx: Any, entries: Sequence[MemoryEntry]) -> None:
        by_user: dict[tuple[str, str], list[MemoryEntry]] = {}
        for e in entries:
            if e.identifiers.user_id:
                by_user.setdefault((e.tenant_id, e.identifiers.user_id), []).append(e)
        for (tenant_id, user_id), new in by_user.items():
            limit = self.policies.effective(tenant_id).max_memories
            if limit is None:
                continue
            existing = self.engine.provider.count_user_memories(
                tenant_id, user_id, self.engine.now(), exclude_ids=[e.id for e in new], tx=tx
            )
            if existing + len(new) > limit:
                details = {"max_memories": limit, "current": existing, "user_id": user_id}
                self.engine.audit.record(
                    tenant_id=tenant_id,
                    action="add.quota",
                    outcome="denied",
                    code=ErrorCode.QUOTA_EXCEEDED.value,
                    details=details,
                )
                raise MemoryError(
                    ErrorCode.QUOTA_EXCEEDED,
                    f"user {user_id!r} already has {existing} memories; the quota is {limit}",
                    operation="add",
                    details=details,
                    retryable=False,
                )

    def after_update(self, tx: Any, entry: MemoryEntry, previous: MemoryEntry) -> None:
        return None

    def after_delete(self, tx: Any, tenant_id: str, ids: Sequence[str]) -> None:
        return None


class PolicySearchFilter:
    """Drops search results that violate the tenant's policy and audits the filtering."""

    def __init__(self, engine: MemoryEngine, policies: PolicyManager) -> None:
        self.engine = engine
        self.policies = policies

    def __call__(self, ctx: TenantContext, hits: list[tuple[Layer, Any]]) -> list[tuple[Layer, Any]]:
        policy = self.policies.effective(ctx.tenant_id)
        if policy == self.policies.default:
            return hits
        kept: list[tuple[Layer, Any]] = []
        dropped: list[str] = []
        rules: set[str] = set()
        for layer, hit in hits:
            rule = policy.allows(hit.entry)
            if rule is None:
                kept.append((layer, hit))
            else:
                dropped.append(hit.entry.id)
                rules.add(rule)
        if dropped:
            self.engine.audit.record(
                tenant_id=ctx.tenant_id,
                principal=ctx.principal,
                action="search.policy_filter",
                outcome="ok",
                memory_ids=dropped,
                details={"filtered": len(dropped), "policies": sorted(rules)},
            )
        return kept
