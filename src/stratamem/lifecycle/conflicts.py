"""Optimistic-concurrency conflicts: a stale ``if_match`` update is kept as a conflict entry.

On an ``if_match`` mismatch the update is rejected with CONFLICT *and* the caller's new content is
stored as a separate entry in the same scope with ``conflict: true`` and ``conflict_of`` = the
original id (in provenance and mirrored in metadata, so it can be filtered); ``list_conflicts``
lists them for review. The conflict entry's id is in the error's ``details.conflict_id``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..model import AddMemoryInput, Layer, ListMemoriesOutput, MemoryEntry, TenantContext
from . import metrics
from .scan import write_entries

if TYPE_CHECKING:
    from ..engine import MemoryEngine

log = logging.getLogger("stratamem.lifecycle")


class ConflictRecorder:
    """Engine conflict hook; returns the id of the stored conflict entry, never raises."""

    def __init__(self, engine: MemoryEngine) -> None:
        self.engine = engine

    def __call__(
        self, ctx: TenantContext, current: MemoryEntry, content: str | None, patch: Mapping[str, Any] | None
    ) -> str | None:
        try:
            metadata = dict(current.metadata)
            for key, value in (patch or {}).items():
                if value is None:
                    metadata.pop(key, None)
                else:
                    metadata[key] = value
            metadata["conflict"] = True
            metadata["conflict_of"] = current.id
            provenance = current.provenance.model_copy(update={"conflict": True, "conflict_of": current.id})
            item = AddMemoryInput(
                content=content if content is not None else current.content,
                layer=current.layer.value,
                identifiers=current.identifiers,
                metadata=metadata,
                tier=current.tier,
                provenance=provenance,
            )
            stored = write_entries(self.engine, ctx, [item], "update")[0]
            metrics.CONFLICTS.inc()
            self.engine.audit.record(
                tenant_id=ctx.tenant_id,
                principal=ctx.principal,
                action="conflict",
                outcome="denied",
                code="CONFLICT",
                memory_ids=[current.id, stored.id],
                layer=current.layer.value,
            )
            return stored.id
        except Exception:
            log.warning("could not store the conflict entry of %s", current.id, exc_info=True)
            return None


def hide_conflicts(ctx: TenantContext, hits: list[tuple[Layer, Any]]) -> list[tuple[Layer, Any]]:
    """Search result filter: conflict entries are for review (``list_conflicts``), never search hits."""
    return [(layer, hit) for layer, hit in hits if not hit.entry.provenance.conflict]


def list_conflicts(
    engine: MemoryEngine,
    ctx: Any,
    memory_id: str | None = None,
    *,
    layer: Any = None,
    identifiers: Any = None,
    cursor: str | None = None,
    limit: int | None = None,
) -> ListMemoriesOutput:
    flt: dict[str, Any] = {"conflict": True}
    if memory_id is not None:
        flt["conflict_of"] = memory_id
    return engine.list(ctx, layer, identifiers, cursor, limit, flt)
