"""The one typed object through which features plug into the engine (``engine.hooks``).

Each field says when it runs and whether it may raise. Features register by appending to these
lists (or setting ``conflict``) when they are attached (``stratamem/assembly.py``, ``Memory``);
the engine runs them and knows no feature. ``write_hooks`` and ``row_listeners`` are the provider's
own lists (they run inside its write transactions), reached here so that every hook has one home.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .model import Layer, MemoryEntry, TenantContext
from .providers.base import WriteHook


@dataclass
class OperationEvent:
    """What observers receive after each operation."""

    operation: str
    tenant_id: str | None
    duration_s: float
    error_code: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    #: Who called (``TenantContext.principal``), for audit observers.
    principal: str | None = None


Observer = Callable[[OperationEvent], None]

#: Post-search filter: receives the context and the merged (layer, hit) pairs, returns those to keep
#: (governance: results violating the tenant's policies are dropped and the filtering audited).
ResultFilter = Callable[[TenantContext, list[tuple[Layer, Any]]], list[tuple[Layer, Any]]]

#: Called on an update's ``if_match`` mismatch with (context, stored entry, new content, patch);
#: stores a conflict entry and returns its id (or None).
ConflictHook = Callable[[TenantContext, MemoryEntry, str | None, Mapping[str, Any] | None], str | None]


class WriteGuard(Protocol):
    """Governance hook run before a write; returns the (possibly rewritten) content or raises."""

    def check_write(
        self, ctx: TenantContext, operation: str, content: str, layer: Layer, metadata: Mapping[str, Any]
    ) -> str: ...


@dataclass
class EngineHooks:
    """Every extension point of the engine and its provider."""

    #: Inside the provider's write transaction of every add/update/delete (graph rows, lexical
    #: postings, per-user quota). May raise: the transaction rolls back and the write fails.
    write_hooks: list[WriteHook]
    #: Inside the provider's write transaction when rows change outside add/update/delete (access
    #: counts, status, expiry), with (tenant id, ids): read caches forget those rows. Must not raise.
    row_listeners: list[Callable[[str, Sequence[str]], None]]
    #: Before every write, in order: may rewrite the content, or raise (the write fails).
    guards: list[WriteGuard] = field(default_factory=list)
    #: After every operation, with its outcome (metrics, tracing, audit, memory_events). An exception
    #: is logged and ignored: observers never break an operation.
    observers: list[Observer] = field(default_factory=list)
    #: On the merged results of a search, before the limit: return the hits to keep. May raise (the
    #: search fails).
    result_filters: list[ResultFilter] = field(default_factory=list)
    #: With (tenant id, operation) after every context check, before the operation touches the
    #: store; may block or raise (a lazy snapshot load completes the tenant's data here first).
    tenant_gates: list[Callable[[str, str], None]] = field(default_factory=list)
    #: After get/search with the entries read (importance tracking). An exception is logged and
    #: ignored: access tracking never fails a read.
    access_hooks: list[Callable[[TenantContext, Sequence[MemoryEntry]], None]] = field(default_factory=list)
    #: On an update's if_match mismatch (one, or None). An exception is logged and ignored.
    conflict: ConflictHook | None = None
