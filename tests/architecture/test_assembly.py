"""The assembly builds the engine and attaches the features, which register through ``engine.hooks``."""

from __future__ import annotations

from pathlib import Path

from stratamem import Memory, TenantContext
from stratamem.assembly import assemble, build_engine, build_snapshots, graph_of, hygiene_of
from stratamem.embeddings import make_embedder
from stratamem.graph.service import GraphService, GraphUnavailable
from stratamem.graph.store import GraphStore
from stratamem.hooks import EngineHooks
from stratamem.hygiene.service import Hygiene
from stratamem.persistence.s3 import S3Settings
from stratamem.persistence.snapshots import SnapshotManager
from stratamem.providers import DuckDBProvider, InMemoryProvider


def test_build_engine_attaches_graph_and_hygiene_through_the_hooks(tmp_path: Path) -> None:
    provider = DuckDBProvider(tmp_path / "assembly.duckdb")
    engine = build_engine(provider, make_embedder("hashing"))
    try:
        hooks = engine.hooks
        assert isinstance(hooks, EngineHooks)
        assert isinstance(graph_of(engine), GraphService)
        assert isinstance(hygiene_of(engine), Hygiene)
        # the provider's lists are the hooks' lists: one home for every extension point
        assert hooks.write_hooks is provider.write_hooks
        assert hooks.row_listeners is provider.row_listeners
        assert any(isinstance(h, GraphStore) for h in hooks.write_hooks)
        assert [type(g).__name__ for g in hooks.guards] == ["SanitizeGuard", "SecretGuard", "PolicyGuard"]
        assert len(hooks.result_filters) == 1
        assert hygiene_of(engine).events.observe in hooks.observers
        # the engine's former attribute names are the same objects
        assert engine.guards is hooks.guards and engine.observers is hooks.observers
        assert engine.tenant_gates is hooks.tenant_gates and engine.access_hooks is hooks.access_hooks
    finally:
        engine.close()


def test_memory_open_goes_through_the_assembly_and_lifecycle_registers_its_hooks() -> None:
    with Memory.open(InMemoryProvider(), embedder="hashing") as mem:
        hooks = mem.engine.hooks
        assert isinstance(mem.graph, GraphUnavailable)  # the in-memory provider is no GraphBackend
        assert hooks.conflict is not None and mem.engine.conflict_hook is hooks.conflict
        # the hygiene's access history (memory_events) and the lifecycle's access statistics (importance)
        assert [h.__qualname__ for h in hooks.access_hooks] == ["EventLog.accessed", "Lifecycle._on_access"]
        t = TenantContext(tenant_id="acme", principal="u1")
        added = mem.add(t, "the user prefers tea", layer="user", identifiers={"user_id": "u1"})
        found = mem.search(t, "tea", identifiers={"user_id": "u1"})
        assert [r.memory.id for r in found.results] == [added.memory.id]


def test_assemble_builds_the_engine_and_its_lifecycle(tmp_path: Path) -> None:
    system = assemble(DuckDBProvider(tmp_path / "system.duckdb"), make_embedder("hashing"))
    try:
        assert system.lifecycle.engine is system.engine
        assert system.engine.hooks.conflict is not None  # the lifecycle registered its hooks
        mem = Memory(system.engine, lifecycle=system.lifecycle)
        assert mem.lifecycle is system.lifecycle
        manager = build_snapshots(system.engine, S3Settings(bucket="unused"))
        assert isinstance(manager, SnapshotManager) and manager.engine is system.engine
    finally:
        system.lifecycle.close()
        system.engine.close()
