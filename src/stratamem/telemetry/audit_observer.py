"""Engine observer that writes the audit log (:mod:`stratamem.telemetry.audit`).

Recorded: every write (add, update, delete, bulk_*, and any operation not known to be a read), every
denial (auth/policy codes), and every cross-tenant attempt: a get/update/delete of an id that does
not exist for the caller's tenant but does exist under another one (the caller still just sees
"not found"). Never memory content.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..engine import MemoryEngine
    from ..hooks import OperationEvent

log = logging.getLogger("stratamem.audit")

READ_OPS = frozenset({"search", "get", "list", "stats", "export", "health"})
DENIAL_CODES = frozenset(
    {
        "MISSING_TENANT_CONTEXT",
        "INVALID_TENANT_CONTEXT",
        "UNAUTHORIZED",
        "FORBIDDEN",
        "POLICY_VIOLATION",
        "UNSAFE_CONTENT",
        "QUOTA_EXCEEDED",
        "RATE_LIMITED",
    }
)


class AuditObserver:
    def __init__(self, engine: MemoryEngine) -> None:
        self.engine = engine

    def _cross_tenant(self, event: OperationEvent) -> bool:
        mid = event.extra.get("memory_id")
        if not isinstance(mid, str) or not event.tenant_id:
            return False
        missing = (
            (event.operation == "get" and event.extra.get("found") is False)
            or (event.operation == "update" and event.error_code == "MEMORY_NOT_FOUND")
            or (event.operation == "delete" and event.error_code is None and event.extra.get("deleted") == 0)
        )
        if not missing:
            return False
        try:
            return bool(self.engine.provider.id_exists_in_other_tenant(str(event.tenant_id), mid))
        except Exception:  # a provider without the check: no cross-tenant signal, never a failure
            return False

    def __call__(self, event: OperationEvent) -> None:
        code = event.error_code
        cross = self._cross_tenant(event)
        denied = code in DENIAL_CODES
        if event.operation in READ_OPS and not denied and not cross:
            return
        ids = event.extra.get("memory_ids")
        if not isinstance(ids, list):
            mid = event.extra.get("memory_id")
            ids = [mid] if isinstance(mid, str) else []
        self.engine.audit.record(
            tenant_id=str(event.tenant_id) if event.tenant_id is not None else None,
            principal=event.principal,
            action=event.operation,
            outcome="denied" if denied or cross else ("error" if code else "ok"),
            code=code if code else ("MEMORY_NOT_FOUND" if cross else None),
            memory_ids=[str(i) for i in ids][:100],
            layer=event.extra.get("layer") if isinstance(event.extra.get("layer"), str) else None,
            cross_tenant=cross,
            details={"duration_ms": round(event.duration_s * 1000, 3)},
        )


def install(engine: MemoryEngine) -> AuditObserver:
    for obs in engine.hooks.observers:
        if isinstance(obs, AuditObserver):
            return obs
    obs = AuditObserver(engine)
    engine.hooks.observers.append(obs)
    return obs
