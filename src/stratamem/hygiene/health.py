"""Memory health report: counts, age, duplicates and rejected writes of a tenant's memories.

* totals by category (``metadata.category``) and by source (``metadata.source.type``:
  inferred | explicit; anything else counts as ``other``);
* average age of live memories, in days;
* duplicate rate: share of live memories that have a near-duplicate stored earlier in the same
  scope (same content hash, or similarity score ≥ ``duplicate_score``);
* write-rejection rate: (ignored + refused writes) / (write attempts) from memory_events;
* search-hit rate: searches with at least one result / searches, from memory_events.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import BaseModel, Field

from ..layers import scope_key
from ..model import MemoryEntry
from ..providers.base import score_to_cosine

if TYPE_CHECKING:
    from ..engine import MemoryEngine


class MemoryHealth(BaseModel):
    tenant_id: str
    generated_at: datetime
    total_memories: int
    memories_by_category: dict[str, int]
    memories_by_source: dict[str, int]
    average_age_days: float
    duplicate_rate: float
    write_rejection_rate: float
    search_hit_rate: float
    events: dict[str, int] = Field(default_factory=dict)


def source_of(entry: MemoryEntry) -> str:
    src = entry.metadata.get("source")
    kind = src.get("type") if isinstance(src, dict) else src
    return kind if kind in ("inferred", "explicit") else "other"


def duplicate_count(entries: list[MemoryEntry], duplicate_score: float) -> int:
    """Entries with an earlier near-duplicate in the same (layer, scope)."""
    groups: dict[tuple[str, str], list[MemoryEntry]] = defaultdict(list)
    for e in entries:
        groups[(e.layer.value, scope_key(e.layer, e.identifiers))].append(e)
    cos_min = score_to_cosine(duplicate_score)
    dups = 0
    for group in groups.values():
        group.sort(key=lambda e: (e.created_at, e.id))
        seen: set[str] = set()
        vectors = [e.embedding for e in group]
        matrix = np.asarray(vectors, dtype=np.float32) if all(v is not None for v in vectors) else None
        for i, e in enumerate(group):
            dup = e.content_hash in seen
            if not dup and matrix is not None and i:
                dup = bool(np.max(matrix[:i] @ matrix[i]) >= cos_min)
            seen.add(e.content_hash)
            dups += int(dup)
    return dups


def compute_health(
    engine: MemoryEngine, tenant_id: str, *, since: datetime | None = None, duplicate_score: float = 0.95
) -> MemoryHealth:
    now = engine.now()
    live = [
        e
        for e in engine.provider.iter_entries(tenant_id)
        if e.status == "active" and (e.expires_at is None or e.expires_at > now)
    ]
    by_category: dict[str, int] = defaultdict(int)
    by_source: dict[str, int] = {"inferred": 0, "explicit": 0}
    for e in live:
        cat = e.metadata.get("category")
        by_category[cat if isinstance(cat, str) else "uncategorized"] += 1
        src = source_of(e)
        by_source[src] = by_source.get(src, 0) + 1
    ages = [(now - e.created_at).total_seconds() / 86400.0 for e in live]
    events: dict[str, int]
    try:
        events = engine.provider.count_memory_events(tenant_id, since)
    except Exception:  # provider without an event log
        events = {}
    attempts = sum(events.get(k, 0) for k in ("create", "ignore", "reject", "dedupe"))
    rejected = events.get("ignore", 0) + events.get("reject", 0)
    searches = events.get("search", 0)

    def ratio(a: int, b: int) -> float:
        return round(a / b, 4) if b else 0.0

    payload: dict[str, Any] = {
        "tenant_id": tenant_id,
        "generated_at": now,
        "total_memories": len(live),
        "memories_by_category": dict(sorted(by_category.items())),
        "memories_by_source": by_source,
        "average_age_days": round(sum(ages) / len(ages), 4) if ages else 0.0,
        "duplicate_rate": ratio(duplicate_count(live, duplicate_score), len(live)),
        "write_rejection_rate": ratio(rejected, attempts),
        "search_hit_rate": ratio(events.get("search.hit", 0), searches),
        "events": dict(sorted(events.items())),
    }
    return MemoryHealth.model_validate(payload)
