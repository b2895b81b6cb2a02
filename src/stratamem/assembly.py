"""The one place that builds the system: provider → embedding service → engine → features.

:func:`build_engine` opens the engine on a provider (the engine initialises the store and the
embedding service) and attaches the features that hook into it, in this order: the knowledge graph
(a write hook and traversal service where the provider is a ``GraphBackend``), then hygiene (guards,
quota, search filter, event log). ``Memory.open`` calls it; the lifecycle and snapshot features are
attached by :class:`~stratamem.sdk.Memory` on the engine built here. The engine imports no feature
module (it sees them through ``stratamem.features``); :func:`graph_of` and :func:`hygiene_of` give the
attached features back with their own types.
"""

from __future__ import annotations

from .config import MemoryConfig
from .embeddings import Embedder
from .engine import Clock, MemoryEngine
from .graph.extract import ConfiguredExtractor
from .graph.service import GraphService, GraphUnavailable, attach_graph
from .hygiene.service import Hygiene
from .providers.base import MemoryProvider


def build_engine(
    provider: MemoryProvider, embedder: Embedder, config: MemoryConfig | None = None, *, clock: Clock | None = None
) -> MemoryEngine:
    """An engine on ``provider`` with the knowledge graph and hygiene attached."""
    engine = MemoryEngine(provider, embedder, config, clock=clock)
    engine.graph = attach_graph(engine)
    hygiene = Hygiene.install(engine)
    engine.hygiene = hygiene
    if isinstance(engine.graph, GraphService):
        # graph extraction uses the LLM the write gate uses (when it offers extract_graph), else the rules
        engine.graph.store.extractor = ConfiguredExtractor(lambda: hygiene.llm)
    return engine


def graph_of(engine: MemoryEngine) -> GraphService | GraphUnavailable:
    """The knowledge graph attached to ``engine`` by :func:`build_engine`."""
    graph = engine.graph
    if not isinstance(graph, GraphService | GraphUnavailable):
        raise TypeError(f"engine.graph is a {type(graph).__name__}, not the knowledge graph")
    return graph


def hygiene_of(engine: MemoryEngine) -> Hygiene:
    """The hygiene feature attached to ``engine`` by :func:`build_engine`."""
    hygiene = engine.hygiene
    if not isinstance(hygiene, Hygiene):
        raise TypeError(f"engine.hygiene is a {type(hygiene).__name__}, not Hygiene")
    return hygiene
