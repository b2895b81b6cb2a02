"""Shared helpers: iterate stored entries page by page, write derived entries through the engine."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import TYPE_CHECKING

from ..model import AddMemoryInput, MemoryEntry, TenantContext
from ..providers.base import ACTIVE, ListQuery, MemoryProvider, Scope

if TYPE_CHECKING:
    from ..engine import MemoryEngine

ALL_STATUSES: tuple[str, ...] = ("active", "archived", "deleted")


def iter_scope(
    provider: MemoryProvider,
    tenant_id: str,
    now: datetime,
    *,
    scope: Scope | None = None,
    statuses: tuple[str, ...] = ACTIVE,
    include_expired: bool = False,
    batch: int = 500,
) -> Iterator[MemoryEntry]:
    """Every entry of a tenant (optionally one scope) with these statuses, oldest first."""
    after: tuple[datetime, str] | None = None
    while True:
        page = provider.list(
            ListQuery(
                tenant_id=tenant_id,
                now=now,
                scope=scope,
                after=after,
                limit=batch,
                statuses=statuses,
                include_expired=include_expired,
            )
        )
        yield from page.entries
        if not page.has_more or not page.entries:
            return
        after = (page.entries[-1].created_at, page.entries[-1].id)


def write_entries(
    engine: MemoryEngine, ctx: TenantContext, items: list[AddMemoryInput], operation: str
) -> list[MemoryEntry]:
    """Validate, guard, embed (cached) and store derived entries in one transaction."""
    if not items:
        return []
    return [out.memory for out in engine.add_many(ctx, items, operation)]
