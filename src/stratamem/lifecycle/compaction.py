"""Compaction with a caller callback (many entries summarised into one, sources kept as provenance)
and consolidation of near-duplicates.

Compaction: every source must share one scope (layer + identifiers) and the result is written
there; the callback receives the source entries and returns the new content (sync or async);
any failure of the callback is wrapped in COMPACTION_FAILED. ``compactedFromIds`` and the sources'
agentId/source/confidence/createdInSessionId are kept.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ErrorCode, MemoryError
from ..layers import parse_layer, scope_key
from ..llm.base import LLMClient
from ..llm.metrics import record_fallback
from ..llm.rules import RuleBasedLLM
from ..model import AddMemoryInput, Layer, MemoryEntry, TenantContext
from .config import ConsolidationConfig
from .importance import importance_at
from .scan import write_entries

if TYPE_CHECKING:
    from ..engine import MemoryEngine
    from .config import LifecycleConfig

log = logging.getLogger("stratamem.lifecycle")

CompactionCallback = Callable[[list[MemoryEntry]], "str | Awaitable[str]"]

MAX_COMPACT_SOURCES = 1000
CONSOLIDATION_BLOCK = 1024


def _run_callback(callback: CompactionCallback, entries: list[MemoryEntry], operation: str) -> str:
    try:
        result: Any = callback(entries)
        if inspect.isawaitable(result):

            async def wait() -> Any:
                return await result

            result = asyncio.run(wait())
    except MemoryError:
        raise
    except Exception as exc:
        raise MemoryError(
            ErrorCode.COMPACTION_FAILED,
            f"the compaction callback failed: {type(exc).__name__}: {exc}",
            operation=operation,
            details={"error": type(exc).__name__},
            retryable=False,
        ) from exc
    if not isinstance(result, str) or not result.strip():
        raise MemoryError(
            ErrorCode.COMPACTION_FAILED,
            "the compaction callback must return non-empty text",
            operation=operation,
            details={"returned": type(result).__name__},
            retryable=False,
        )
    return result


def _provenance_of(sources: Sequence[MemoryEntry], ids: list[str]) -> dict[str, Any]:
    def first(attr: str) -> Any:
        return next((getattr(s.provenance, attr) for s in sources if getattr(s.provenance, attr) is not None), None)

    confidences = [s.provenance.confidence for s in sources if s.provenance.confidence is not None]
    return {
        "agent_id": first("agent_id"),
        "source": first("source"),
        "confidence": min(confidences) if confidences else None,
        "created_in_session_id": first("created_in_session_id"),
        "compacted_from_ids": ids,
    }


def compact(
    engine: MemoryEngine,
    ctx: TenantContext,
    source_ids: Any,
    callback: CompactionCallback,
    *,
    delete_sources: bool = False,
    target_layer: Any = None,
    tags: list[str] | None = None,
    metadata: Mapping[str, Any] | None = None,
    operation: str = "compact",
    soft_delete_sources: bool = False,
) -> MemoryEntry:
    if (
        not isinstance(source_ids, Sequence)
        or isinstance(source_ids, str)
        or not source_ids
        or not all(isinstance(i, str) and i for i in source_ids)
    ):
        raise MemoryError(
            ErrorCode.INVALID_PARAMS,
            "source_ids must be a non-empty list of ids",
            operation=operation,
            details={"field": "source_ids"},
        )
    if len(source_ids) > MAX_COMPACT_SOURCES:
        raise MemoryError(
            ErrorCode.INVALID_PARAMS,
            f"at most {MAX_COMPACT_SOURCES} source ids",
            operation=operation,
            details={"field": "source_ids", "max_items": MAX_COMPACT_SOURCES},
        )
    if not callable(callback):
        raise MemoryError(
            ErrorCode.INVALID_PARAMS, "callback must be callable", operation=operation, details={"field": "callback"}
        )
    ids = list(dict.fromkeys(source_ids))
    now = engine.now()
    sources: list[MemoryEntry] = []
    for mid in ids:
        entry = engine.get_visible(ctx, mid, operation)
        if entry is None:
            raise MemoryError(
                ErrorCode.MEMORY_NOT_FOUND,
                f"no memory with id {mid!r}",
                operation=operation,
                details={"id": mid},
                retryable=False,
            )
        sources.append(entry)
    scopes = {(s.layer, scope_key(s.layer, s.identifiers)) for s in sources}
    if len(scopes) != 1:
        raise MemoryError(
            ErrorCode.INVALID_PARAMS,
            "all source entries must share one scope (layer and identifiers); cross-scope compaction is not allowed",
            operation=operation,
            details={"scopes": sorted(f"{layer.value}:{key}" for layer, key in scopes)},
        )
    layer = sources[0].layer
    if target_layer is not None and parse_layer(target_layer, operation) != layer:
        raise MemoryError(
            ErrorCode.INVALID_PARAMS,
            f"the target scope must be the sources' scope ({layer.value})",
            operation=operation,
            details={"field": "target_layer", "layer": layer.value},
        )
    content = _run_callback(callback, [s.model_copy(deep=True) for s in sources], operation)
    md: dict[str, Any] = {}
    if tags is None:
        tags = list(dict.fromkeys(t for s in sources for t in s.tags))
    if tags:
        md["tags"] = list(tags)
    md.update(dict(metadata or {}))
    md["compactedFromIds"] = ids
    item = AddMemoryInput(
        content=content,
        layer=layer.value,
        identifiers=sources[0].identifiers,
        metadata=md,
        tier=sources[0].tier,
        provenance=_provenance_of(sources, ids),
    )
    result = write_entries(engine, ctx, [item], operation)[0]
    if delete_sources:
        engine.provider.delete(ctx.tenant_id, ids)
        engine.provider.clear_feedback(ctx.tenant_id, ids)
    elif soft_delete_sources:
        engine.provider.set_status(ctx.tenant_id, ids, "deleted", now)
    engine.audit.record(
        tenant_id=ctx.tenant_id,
        principal=ctx.principal,
        action=operation,
        outcome="ok",
        memory_ids=[result.id, *ids],
        layer=layer.value,
        details={"sources": len(ids), "delete_sources": delete_sources},
    )
    return result


def _keep_best(entries: list[MemoryEntry]) -> str:
    return max(entries, key=lambda e: (len(e.content), e.updated_at)).content


def _fixed(content: str) -> CompactionCallback:
    """A compaction callback that returns content decided beforehand."""

    def callback(_entries: list[MemoryEntry]) -> str:
        return content

    return callback


def merge_cluster(llm: LLMClient | None, cluster: list[MemoryEntry]) -> tuple[str, dict[str, Any]]:
    """The merged content of near-duplicates and the metadata it adds: with an LLM, its summary of
    every member (oldest first) and its category; with the rule engine, or when the LLM fails
    (``stratamem_llm_fallbacks_total{task="consolidation"}``), the longest member and nothing."""
    if llm is None or isinstance(llm, RuleBasedLLM):
        return _keep_best(cluster), {}
    try:
        summary = llm.summarize([e.content for e in sorted(cluster, key=lambda e: (e.created_at, e.id))])
        category = llm.classify(summary.content).category
    except Exception as exc:  # an LLM outage must not stop maintenance: keep the rule-based merge
        record_fallback("consolidation", exc)
        log.warning("LLM consolidation failed (%s); keeping the longest memory", type(exc).__name__)
        return _keep_best(cluster), {}
    return summary.content, {"category": category}


def consolidate(
    engine: MemoryEngine,
    cfg: LifecycleConfig,
    ctx: TenantContext,
    now: datetime | None = None,
    llm: LLMClient | None = None,
) -> list[MemoryEntry]:
    """Merge near-duplicates of every scope (of the target layers) that holds more than
    ``max_memories_before_trigger`` live entries. Each cluster becomes one compacted entry (the LLM's
    summary and category when one is configured, else the longest content; provenance kept, see
    :func:`merge_cluster`); the duplicates are soft-deleted (purged after retention)."""
    ccfg: ConsolidationConfig = cfg.consolidation
    if not ccfg.enabled:
        return []
    now = now or engine.now()
    groups: dict[tuple[Layer, str], list[MemoryEntry]] = {}
    for e in engine.provider.iter_entries(ctx.tenant_id):
        if e.status != "active" or (e.expires_at is not None and e.expires_at <= now):
            continue
        if e.layer not in ccfg.target_layers:
            continue
        groups.setdefault((e.layer, scope_key(e.layer, e.identifiers)), []).append(e)
    created: list[MemoryEntry] = []
    for entries in groups.values():
        if len(entries) <= ccfg.max_memories_before_trigger:
            continue
        entries.sort(key=lambda e: (-importance_at(cfg.importance, e, now), e.created_at, e.id))
        raw = np.vstack([np.asarray(e.embedding, dtype=np.float32) for e in entries])
        norms = np.linalg.norm(raw, axis=1, keepdims=True)
        matrix = (raw / np.where(norms == 0, 1.0, norms)).astype(np.float32)
        # cosine threshold equivalent to the score threshold; pairs found block by block (no n x n matrix)
        cos_min = 2.0 * ccfg.similarity_threshold - 1.0
        neighbours: dict[int, list[int]] = {}
        for start in range(0, len(entries), CONSOLIDATION_BLOCK):
            block = matrix[start : start + CONSOLIDATION_BLOCK] @ matrix.T
            rows, cols = np.nonzero(block >= cos_min)
            for r, c in zip(rows.tolist(), cols.tolist(), strict=True):
                if start + r < c:
                    neighbours.setdefault(start + r, []).append(c)
        taken: set[int] = set()
        for i in sorted(neighbours):
            if i in taken:
                continue
            members = [i, *(j for j in neighbours[i] if j not in taken)]
            if len(members) < 2:
                continue
            taken.update(members)
            cluster = [entries[j] for j in members]
            content, metadata = merge_cluster(llm, cluster)
            created.append(
                compact(
                    engine,
                    ctx,
                    [e.id for e in cluster],
                    _fixed(content),
                    operation="consolidate",
                    soft_delete_sources=True,
                    metadata=metadata,
                )
            )
    return created
