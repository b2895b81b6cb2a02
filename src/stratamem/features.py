"""What the engine calls on the features assembled around it (``stratamem/assembly.py``).

The engine imports no feature module: it reaches the knowledge graph and hygiene only through these
protocols, and the assembly attaches the real objects right after building the engine.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from .model import Layer, LayerIdentifiers, SearchResult, TenantContext


class SearchExpansion(Protocol):
    """``engine.graph``: adds neighbours of the top hits to a search (``search(expand_graph=True)``)."""

    def expand_search(
        self,
        tctx: TenantContext,
        results: Sequence[SearchResult],
        identifiers: LayerIdentifiers,
        layers: Sequence[Layer],
        predicate: Callable[[dict[str, Any]], bool] | None,
        limit: int,
        seeds: int = 3,
    ) -> list[SearchResult]: ...


class Closeable(Protocol):
    def close(self) -> None: ...


class EventLog(Protocol):
    """The hygiene event log: ``flush`` writes what is queued, ``close`` also stops its worker."""

    def flush(self) -> None: ...

    def close(self) -> None: ...


class EventsFeature(Protocol):
    """``engine.hygiene``: its event log is written out when the engine closes."""

    @property
    def events(self) -> EventLog: ...
