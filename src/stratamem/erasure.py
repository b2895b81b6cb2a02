"""Right to be forgotten: ``forget_user(engine, ctx, user_id)`` removes what a tenant stores of one user.

Removed: every memory whose identifiers name the user (user, agent and session layers; any status,
expired or not), and with them, in the same store transaction, their graph nodes and edges (and
entities no longer mentioned) and the tenant's cached embedding vectors of content nobody stores
any more; their feedback rows and ``memory_events`` rows; and the user's API keys are revoked.
Shared-layer memories carry no user id and stay (promotion redacts PII on the way there).
Snapshots taken earlier still hold the data until they expire (``snapshot_retention``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from .errors import ErrorCode, MemoryError
from .graph.service import GraphService
from .lifecycle.scan import ALL_STATUSES, iter_scope
from .providers.base import MemoryProvider
from .server.keys import key_identifiers

if TYPE_CHECKING:
    from .engine import MemoryEngine

BATCH = 500


class ForgetUserReport(BaseModel):
    """What ``forget_user`` removed (counts)."""

    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True)

    tenant_id: str
    user_id: str
    memories: int
    graph_memory_nodes: int
    graph_entities: int
    graph_edges: int
    events: int
    keys_revoked: int


def _delete_events(provider: MemoryProvider, tenant_id: str, memory_ids: Sequence[str]) -> int:
    """Delete the ``memory_events`` rows of these memories (the provider's governance store); the
    number deleted. A provider without an event log raises ``CONFIGURATION_ERROR``."""
    if not memory_ids:
        return 0
    return provider.delete_memory_events(tenant_id, memory_ids)


def _graph_counts(engine: MemoryEngine, ctx: Any) -> tuple[int, int, int]:
    if not isinstance(engine.graph, GraphService):
        return 0, 0, 0
    s = engine.graph.stats(ctx)
    return s.memory_nodes, s.entities, s.memory_edges + s.entity_edges


def forget_user(engine: MemoryEngine, ctx: Any, user_id: Any) -> ForgetUserReport:
    """Remove every memory, graph node/edge, event row and cached vector of ``user_id`` in the
    caller's tenant and revoke the user's API keys (needs a tenant-wide grant)."""
    with engine.operation("forget_user", ctx) as (tctx, extra):
        if not isinstance(user_id, str) or not user_id.strip() or len(user_id) > 256:
            raise MemoryError(
                ErrorCode.INVALID_PARAMS,
                "user_id must be a non-empty string of at most 256 characters",
                operation="forget_user",
                details={"field": "userId"},
            )
        engine.require_tenant_grant(tctx, "forget_user")
        engine.hygiene.events.flush()  # queued events are written before they are deleted
        provider = engine.provider
        ids = [
            e.id
            for e in iter_scope(provider, tctx.tenant_id, engine.now(), statuses=ALL_STATUSES, include_expired=True)
            if e.identifiers.user_id == user_id
        ]
        nodes0, entities0, edges0 = _graph_counts(engine, tctx)
        deleted: list[str] = []
        for start in range(0, len(ids), BATCH):
            chunk = ids[start : start + BATCH]
            deleted += provider.delete(tctx.tenant_id, chunk)  # graph rows and cached vectors go with them
            try:
                provider.clear_feedback(tctx.tenant_id, chunk)
            except MemoryError as exc:
                if exc.code is not ErrorCode.CONFIGURATION_ERROR:  # a provider without feedback has none
                    raise
        nodes1, entities1, edges1 = _graph_counts(engine, tctx)
        events = _delete_events(provider, tctx.tenant_id, ids)
        revoked = 0
        try:
            records = provider.api_key_list(tctx.tenant_id)
        except MemoryError:
            records = []
        now = datetime.now(UTC)
        for rec in records:
            if rec.revoked_at is None and key_identifiers(rec).get("userId") == user_id:
                revoked += int(provider.api_key_revoke(tctx.tenant_id, rec.key_id, now))
        report = ForgetUserReport(
            tenant_id=tctx.tenant_id,
            user_id=user_id,
            memories=len(deleted),
            graph_memory_nodes=nodes0 - nodes1,
            graph_entities=entities0 - entities1,
            graph_edges=edges0 - edges1,
            events=events,
            keys_revoked=revoked,
        )
        engine.audit.record(
            tenant_id=tctx.tenant_id,
            principal=tctx.principal,
            action="forget_user",
            details=report.model_dump(exclude={"tenant_id"}),
        )
        extra["deleted"] = len(deleted)
        return report
