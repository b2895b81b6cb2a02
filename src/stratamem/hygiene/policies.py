"""Per-tenant governance policies (validated on every write), stored in the database.

A :class:`TenantPolicy` holds deny patterns (case-insensitive regular expressions), the allowed
categories, a maximum content length, the PII mode (reject | redact | allow) and a per-user quota
(``max_memories``). Writes that break it fail with POLICY_VIOLATION (``details.policy`` names the
rule) or QUOTA_EXCEEDED; search drops stored results that break it and audits the filtering.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..errors import ErrorCode, MemoryError
from ..llm.base import Category
from ..model import Layer, MemoryEntry, TenantContext
from .pii import find_pii

if TYPE_CHECKING:
    from ..engine import MemoryEngine

PiiMode = Literal["reject", "redact", "allow"]
_STRICTNESS: tuple[PiiMode, ...] = ("allow", "redact", "reject")
#: Layers that belong to one user (PII follows ``pii_mode``); every other layer is shared.
OWN_LAYERS = frozenset({Layer.AGENT, Layer.USER, Layer.SESSION})

MAX_PATTERNS = 100
MAX_PATTERN_LENGTH = 500


class TenantPolicy(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    #: Content matching any of these (case-insensitive regular expressions) is refused / filtered.
    deny_patterns: list[str] = Field(default_factory=list, max_length=MAX_PATTERNS)
    #: When set, a memory whose ``metadata.category`` is outside this list is refused / filtered.
    allowed_categories: list[Category] | None = None
    #: Longest content in characters (in addition to the engine's own limit).
    max_length: int | None = Field(None, ge=1)
    #: What to do with PII (email, phone, card, IBAN, SSN, IP) in the caller's own layers (agent, user,
    #: session): reject, redact before storing, or allow.
    pii_mode: PiiMode = "allow"
    #: The same for shared layers (project, team, org, company, object), which other people read:
    #: redacted unless the tenant decides otherwise. The stricter of the two modes applies there.
    shared_pii_mode: PiiMode = "redact"
    #: Live memories per user (identifiers.user_id, any layer); None = unlimited.
    max_memories: int | None = Field(None, ge=1)

    @field_validator("deny_patterns")
    @classmethod
    def _compile(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            if not pattern or len(pattern) > MAX_PATTERN_LENGTH:
                raise ValueError(f"deny patterns must be 1..{MAX_PATTERN_LENGTH} characters")
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"invalid deny pattern {pattern!r}: {exc}") from None
        return patterns

    def compiled(self) -> list[re.Pattern[str]]:
        return [re.compile(p, re.I) for p in self.deny_patterns]

    def pii_mode_for(self, layer: Layer | None) -> PiiMode:
        """The PII mode of a write to ``layer`` (None: the own-layer mode)."""
        if layer is None or layer in OWN_LAYERS:
            return self.pii_mode
        return max(self.pii_mode, self.shared_pii_mode, key=_STRICTNESS.index)

    def violation(
        self, content: str, metadata: Mapping[str, Any], layer: Layer | None = None
    ) -> tuple[str, dict[str, Any]] | None:
        """The first rule ``content``/``metadata`` break, with details, or None (PII redact/allow pass)."""
        if self.max_length is not None and len(content) > self.max_length:
            return "max_length", {"max_length": self.max_length, "length": len(content)}
        for i, pattern in enumerate(self.compiled()):
            if pattern.search(content):
                return "deny_patterns", {"pattern_index": i, "pattern": self.deny_patterns[i]}
        category = metadata.get("category")
        if self.allowed_categories is not None and category is not None and category not in self.allowed_categories:
            return "allowed_categories", {"category": category, "allowed": list(self.allowed_categories)}
        if self.pii_mode_for(layer) == "reject":
            kinds = sorted({m.kind for m in find_pii(content)})
            if kinds:
                return "pii_mode", {"pii_mode": "reject", "kinds": kinds}
        return None

    def allows(self, entry: MemoryEntry) -> str | None:
        """None when a stored entry may be returned; else the name of the rule it breaks."""
        found = self.violation(entry.content, entry.metadata, entry.layer)
        return found[0] if found else None


DEFAULT_POLICY = TenantPolicy()


class PolicyManager:
    """``mem.policies``: get / set / reset a tenant's policy. Cached per engine for a few seconds."""

    default = DEFAULT_POLICY

    def __init__(self, engine: MemoryEngine, *, ttl_s: float = 5.0) -> None:
        self.engine = engine
        self.ttl_s = ttl_s
        self._cache: dict[str, tuple[float, TenantPolicy]] = {}
        self._lock = threading.Lock()

    def effective(self, tenant_id: str) -> TenantPolicy:
        """The tenant's policy for enforcement (default policy when none is stored)."""
        now = time.monotonic()
        with self._lock:
            hit = self._cache.get(tenant_id)
            if hit is not None and now - hit[0] < self.ttl_s:
                return hit[1]
        try:
            stored = self.engine.provider.get_tenant_policy(tenant_id)
        except MemoryError as exc:
            if exc.code == ErrorCode.CONFIGURATION_ERROR:  # provider without policy support
                stored = None
            else:
                raise
        policy = TenantPolicy.model_validate(stored) if stored else DEFAULT_POLICY
        with self._lock:
            self._cache[tenant_id] = (now, policy)
        return policy

    def get(self, ctx: Any) -> TenantPolicy:
        with self.engine.operation("policy_get", ctx) as (tctx, _):
            return self.effective(tctx.tenant_id)

    def set(self, ctx: Any, policy: TenantPolicy | Mapping[str, Any] | None = None, /, **fields: Any) -> TenantPolicy:
        """Replace the policy (``policy``) or change some of its fields (keyword arguments)."""
        with self.engine.operation("policy_set", ctx) as (tctx, extra):
            base = self.effective(tctx.tenant_id) if policy is None else None
            try:
                if policy is None:
                    assert base is not None
                    new = TenantPolicy.model_validate({**base.model_dump(), **fields})
                else:
                    data = policy.model_dump() if isinstance(policy, TenantPolicy) else dict(policy)
                    new = TenantPolicy.model_validate({**data, **fields})
            except ValidationError as exc:
                err = exc.errors()[0]
                where = ".".join(str(p) for p in err.get("loc", ()))
                raise MemoryError(
                    ErrorCode.INVALID_PARAMS,
                    f"invalid policy {where}: {err.get('msg')}",
                    operation="policy_set",
                    details={"field": where},
                ) from None
            self._store(tctx, new)
            extra["policy"] = new.model_dump()
            return new

    def reset(self, ctx: Any) -> TenantPolicy:
        with self.engine.operation("policy_reset", ctx) as (tctx, _):
            self._store(tctx, DEFAULT_POLICY)
            return DEFAULT_POLICY

    def _store(self, tctx: TenantContext, policy: TenantPolicy) -> None:
        self.engine.provider.put_tenant_policy(tctx.tenant_id, policy.model_dump(), datetime.now(UTC))
        with self._lock:
            self._cache.pop(tctx.tenant_id, None)
        self.engine.audit.record(
            tenant_id=tctx.tenant_id,
            principal=tctx.principal,
            action="policy.set",
            details={"fields": sorted(policy.model_dump(exclude_defaults=True))},
        )
