"""The one place that builds the system: provider → embedding service → engine → features.

:func:`assemble` is what ``Memory.open`` calls (and so the server, MCP and CLI, which open their store
with ``Memory.open``). It builds the engine with :func:`build_engine`: the engine initialises the
store and the embedding service, then the features that hook into it are attached, in this order:
the knowledge graph (a write hook and traversal service where the provider is a ``GraphBackend``),
then hygiene (guards, quota, search filter, event log). It then builds the lifecycle
(:func:`build_lifecycle`: access statistics, conflicts, expiry, maintenance), which registers its
hooks on the engine. Snapshots need S3 settings, so :func:`build_snapshots` runs when they are first
used (``mem.snapshots`` or ``mem.configure_snapshots``). The engine imports no feature module (it
sees them through ``stratamem.features``); :func:`graph_of` and :func:`hygiene_of` give the attached
features back with their own types.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .config import MemoryConfig
from .embeddings import Embedder
from .engine import Clock, MemoryEngine
from .graph.extract import ConfiguredExtractor
from .graph.service import GraphService, GraphUnavailable, attach_graph
from .hygiene.service import Hygiene
from .lifecycle.manager import Lifecycle
from .persistence.s3 import S3Settings
from .persistence.snapshots import SnapshotManager
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


@dataclass(frozen=True)
class System:
    """What :func:`assemble` built: the engine with its features attached, and the lifecycle."""

    engine: MemoryEngine
    lifecycle: Lifecycle


def assemble(
    provider: MemoryProvider, embedder: Embedder, config: MemoryConfig | None = None, *, clock: Clock | None = None
) -> System:
    """The whole system on ``provider``: the engine (graph and hygiene attached) and its lifecycle."""
    engine = build_engine(provider, embedder, config, clock=clock)
    try:
        return System(engine, build_lifecycle(engine))
    except BaseException:
        engine.close()
        raise


def build_lifecycle(engine: MemoryEngine) -> Lifecycle:
    """The lifecycle feature on ``engine``; it registers its access and conflict hooks there, and uses
    the write gate's LLM and prompts (consolidation, reflection) when one is configured."""
    return Lifecycle(engine, llm=lambda: hygiene_of(engine).llm, prompts=lambda: hygiene_of(engine).config.prompts)


def build_snapshots(engine: MemoryEngine, settings: S3Settings | None = None, **kwargs: Any) -> SnapshotManager:
    """The snapshot feature on ``engine`` (``settings`` None: from the environment)."""
    return SnapshotManager(engine, settings, **kwargs)


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
