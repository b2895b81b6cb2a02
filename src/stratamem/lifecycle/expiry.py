"""TTL and soft delete: expired or deleted entries are hidden at once and removed later by cleanup.

Expired entries are never returned by get/search/list (the providers filter on ``expires_at``);
this module purges them ``ttl.purge_after`` after expiry, and purges soft-deleted entries
``ttl.soft_delete_retention`` after ``deleted_at``. Purging is a hard delete (graph hooks cascade).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from ..errors import ErrorCode, MemoryError
from ..layers import parse_identifiers, parse_layer, require_identifiers, scope_key
from ..model import TenantContext
from ..providers.base import Scope
from .config import TtlConfig
from .scan import ALL_STATUSES, iter_scope

if TYPE_CHECKING:
    from ..engine import MemoryEngine

PURGE_BATCH = 500


def _check_ids(ids: object, operation: str) -> list[str]:
    if not isinstance(ids, Sequence) or isinstance(ids, str) or not all(isinstance(i, str) and i.strip() for i in ids):
        raise MemoryError(
            ErrorCode.INVALID_PARAMS,
            "ids must be a list of non-empty strings",
            operation=operation,
            details={"field": "ids"},
        )
    return list(dict.fromkeys(ids))


def soft_delete(engine: MemoryEngine, ctx: TenantContext, ids: object) -> list[str]:
    """Mark entries deleted (``deleted_at`` = now): gone from get/search/list, purged later."""
    checked = _check_ids(ids, "soft_delete")
    done = engine.provider.set_status(ctx.tenant_id, checked, "deleted", engine.now())
    engine.audit.record(tenant_id=ctx.tenant_id, principal=ctx.principal, action="soft_delete", memory_ids=done)
    return done


def restore(engine: MemoryEngine, ctx: TenantContext, ids: object) -> list[str]:
    """Bring archived or soft-deleted (not yet purged) entries back to active."""
    checked = _check_ids(ids, "restore")
    done = engine.provider.set_status(ctx.tenant_id, checked, "active", engine.now())
    engine.audit.record(tenant_id=ctx.tenant_id, principal=ctx.principal, action="restore", memory_ids=done)
    return done


def purge(engine: MemoryEngine, tenant_id: str, cfg: TtlConfig, now: datetime | None = None) -> list[str]:
    """Hard-delete entries expired more than ``purge_after`` ago or soft-deleted more than
    ``soft_delete_retention`` ago; returns the purged ids."""
    now = now or engine.now()
    purged: list[str] = []
    while True:
        ids = engine.provider.purge_candidates(
            tenant_id,
            expired_before=now - cfg.purge_after,
            deleted_before=now - cfg.soft_delete_retention,
            limit=PURGE_BATCH,
        )
        if not ids:
            return purged
        done = engine.provider.delete(tenant_id, ids)
        engine.provider.clear_feedback(tenant_id, ids)
        purged += done
        if not done:
            return purged


def delete_by_scope(engine: MemoryEngine, ctx: TenantContext, layer: object, identifiers: object) -> int:
    """Hard-delete every entry (any status, expired or not) of one scope; returns the count."""
    op = "delete_by_scope"
    lyr = parse_layer(layer, op)
    ids = parse_identifiers(identifiers, op)  # type: ignore[arg-type]
    require_identifiers(lyr, ids, op)
    scope = Scope(lyr, scope_key(lyr, ids))
    now = engine.now()
    targets = [
        e.id
        for e in iter_scope(
            engine.provider, ctx.tenant_id, now, scope=scope, statuses=ALL_STATUSES, include_expired=True
        )
    ]
    deleted = 0
    for start in range(0, len(targets), PURGE_BATCH):
        chunk = targets[start : start + PURGE_BATCH]
        deleted += len(engine.provider.delete(ctx.tenant_id, chunk))
        engine.provider.clear_feedback(ctx.tenant_id, chunk)
    engine.audit.record(
        tenant_id=ctx.tenant_id, principal=ctx.principal, action=op, layer=lyr.value, details={"deleted": deleted}
    )
    return deleted
