"""The knowledge-graph service behind ``mem.graph`` (SDK), the REST router and the CLI.

:func:`attach_graph` is called once by the engine: on a provider that meets
``contracts.GraphBackend`` (DuckDB, PostgreSQL) it registers the
:class:`~stratamem.graph.store.GraphStore` write hook and returns a :class:`GraphService`; on any
other provider (the in-memory store) it returns a :class:`GraphUnavailable` whose methods raise
``CONFIGURATION_ERROR`` and whose health reports the graph as disabled.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

from ..errors import ErrorCode, MemoryError
from ..layers import scope_key
from ..model import HealthCheckResult, Layer, LayerIdentifiers, SearchResult, TenantContext
from ..providers.contracts import GraphBackend, SqlStore, implements
from ..providers.graph_sql import Dialect
from ..validation import check_limit
from .extract import GraphExtractor, LLMBackedExtractor, LLMGraphExtractor, normalize_name
from .integrity import (
    IntegrityReport,
    graph_tenants,
    purge,
    scan_tenant,
    validate_entity_edge,
    validate_memory_edge,
)
from .metrics import CACHE_STATS
from .schema import GRAPH_TABLES
from .store import GraphStore, edge_id, entity_id, generations_for, label_of, now_naive
from .traverse import (
    GraphNode,
    GraphQueries,
    Neighbor,
    PathEdge,
    PathResult,
    RelatedResult,
    detect_pgq,
    render,
)

if TYPE_CHECKING:
    from ..engine import MemoryEngine

#: The tables of the store's schema (``ready``), per dialect.
TABLES_SQL = {
    "duckdb": "SELECT table_name FROM duckdb_tables()",
    "postgres": "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()",
}

#: Score of a graph-expanded search result = score of the hit it was reached from, times this factor.
EXPANSION_FACTOR = 0.8


class GraphStats(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tenant_id: str
    enabled: bool
    memory_nodes: int
    entities: int
    memory_edges: int
    entity_edges: int


class GraphUnavailable:
    """``mem.graph`` on providers without a graph: every call is a CONFIGURATION_ERROR."""

    available = False

    def __init__(self, provider_name: str) -> None:
        self.provider_name = provider_name

    def _fail(self, *_: Any, **__: Any) -> Any:
        raise MemoryError(
            ErrorCode.CONFIGURATION_ERROR,
            f"the knowledge graph is not supported by provider {self.provider_name}; "
            "use the DuckDB or PostgreSQL store",
            operation="graph",
        )

    related = path = neighbors = stats = set_enabled = is_enabled = link = relate = check = _fail
    purge = set_extractor = reindex = entity_id = expand_search = _fail

    def health(self) -> HealthCheckResult:
        return HealthCheckResult.model_validate(
            {
                "status": "degraded",
                "latency_ms": 0.0,
                "components": {
                    "graph": {
                        "status": "degraded",
                        "message": f"graph disabled: not supported by provider {self.provider_name}",
                    }
                },
            }
        )

    def ready(self) -> bool:
        return False


class GraphService:
    available = True

    def __init__(self, engine: MemoryEngine) -> None:
        self.engine = engine
        provider = engine.provider
        if not isinstance(provider, GraphBackend):
            raise TypeError(f"provider {provider.name} is not a knowledge-graph backend (contracts.GraphBackend)")
        self.provider: GraphBackend = provider
        gens = generations_for(provider.database_key())
        self.dialect: Dialect = "postgres" if provider.graph_dialect == "postgres" else "duckdb"
        self.store = GraphStore(
            enabled_by_default=engine.config.graph_enabled,
            generations=gens,
            cursor=provider.graph_cursor,
            dialect=self.dialect,
        )
        self.queries = GraphQueries(self.provider, gens)
        self.pgq_available = (
            isinstance(provider, SqlStore) and self.dialect == "duckdb" and detect_pgq(provider.new_cursor)
        )
        engine.hooks.write_hooks.append(self.store)
        # status / expiry / access-count writes that bypass the hooks: cached rows forget them
        engine.hooks.row_listeners.append(gens.rows_changed)

    # -- helpers -------------------------------------------------------------------------------
    def _op(self, name: str, ctx: Any) -> Any:
        return self.engine.operation(f"graph.{name}", ctx)

    @contextmanager
    def _tenant_op(self, name: str, ctx: Any) -> Iterator[tuple[TenantContext, dict[str, Any]]]:
        """A traversal: its nodes and paths span every scope, so it needs a tenant-wide grant."""
        with self._op(name, ctx) as (t, extra):
            self.engine.require_tenant_grant(t, f"graph.{name}")
            yield t, extra

    # -- traversal -----------------------------------------------------------------------------
    def related(
        self, ctx: Any, node: str, hops: int = 2, *, limit: int = 50, include_entities: bool = False
    ) -> RelatedResult:
        """Memories (and optionally entities) within ``hops`` of a memory id or entity name,
        nearest first, each with its path and reasoning text."""
        with self._tenant_op("related", ctx) as (t, extra):
            out = self.queries.related(
                t.tenant_id,
                node,
                hops,
                limit=check_limit(limit, 50, 500, "graph"),
                include_entities=include_entities,
                now=self.engine.now(),
            )
            extra["result_count"] = len(out.items)
            return out

    def path(self, ctx: Any, a: str, b: str, *, max_hops: int = 6) -> PathResult:
        """Shortest path between two memories or entities, with intermediate nodes and reasoning."""
        with self._tenant_op("path", ctx) as (t, _):
            return self.queries.path(t.tenant_id, a, b, max_hops=max_hops)

    def neighbors(
        self,
        ctx: Any,
        node: str,
        *,
        rel_type: str | None = None,
        direction: Literal["out", "in", "both"] = "both",
        limit: int = 100,
    ) -> list[Neighbor]:
        with self._tenant_op("neighbors", ctx) as (t, _):
            if direction not in ("out", "in", "both"):
                raise MemoryError(
                    ErrorCode.INVALID_PARAMS, "direction must be out, in or both", details={"field": "direction"}
                )
            return self.queries.neighbors(
                t.tenant_id, node, rel_type=rel_type, direction=direction, limit=check_limit(limit, 100, 1000, "graph")
            )

    # -- configuration -------------------------------------------------------------------------
    def set_enabled(self, ctx: Any, enabled: bool) -> None:
        """Switch extraction on/off for this tenant (stored in the database)."""
        with self._op("set_enabled", ctx) as (t, _), self.provider.graph_transaction() as tx:
            self.store.set_enabled(tx, t.tenant_id, bool(enabled))
        self.store.forget_setting(t.tenant_id)

    def is_enabled(self, ctx: Any) -> bool:
        with self._op("is_enabled", ctx) as (t, _), self.provider.graph_read() as cur:
            self.store.forget_setting(t.tenant_id)
            return self.store.enabled(cur, t.tenant_id)

    def set_extractor(self, extractor: GraphExtractor | LLMGraphExtractor) -> None:
        """Use another extractor (an LLM one via the ``extract_graph`` protocol) for new writes."""
        if isinstance(extractor, LLMGraphExtractor):
            self.store.extractor = LLMBackedExtractor(extractor)
        else:
            self.store.extractor = extractor

    def reindex(self, ctx: Any) -> int:
        """(Re)build this tenant's graph from its active memories (e.g. after enabling it)."""
        with self._op("reindex", ctx) as (t, extra):
            entries = [e for e in self.provider.iter_entries(t.tenant_id) if e.status == "active"]
            with self.provider.graph_transaction() as tx:
                self.store.hard_delete(tx, t.tenant_id, [e.id for e in entries])
                for i in range(0, len(entries), 500):
                    self.store.index_entries(tx, entries[i : i + 500])
            extra["count"] = len(entries)
            return len(entries)

    # -- manual edges (validated) ----------------------------------------------------------------
    def link(
        self,
        ctx: Any,
        source_memory_id: str,
        target: str,
        rel_type: str = "RELATES_TO",
        *,
        target_kind: Literal["memory", "entity"] = "memory",
    ) -> str:
        """Add a typed edge from a memory to another memory or an entity id; both ends must exist."""
        with self._op("link", ctx) as (t, _):
            rel = _rel(rel_type)
            with self.provider.graph_transaction() as tx:
                validate_memory_edge(tx, t.tenant_id, source_memory_id, target, target_kind)
                eid = edge_id(source_memory_id, target, rel)
                tx.execute(
                    "INSERT INTO memory_edges VALUES (?, ?, ?, ?, ?, ?, ?, 1.0, ?, NULL) "
                    # the id hashes both ends and the type: only the time and the deletion mark change
                    "ON CONFLICT (tenant_id, edge_id) DO UPDATE SET created_at = excluded.created_at, "
                    "deleted_at = NULL",
                    [t.tenant_id, eid, source_memory_id, target, target_kind, rel, source_memory_id, now_naive()],
                )
            self.store.generations.bump(t.tenant_id)
            return eid

    def relate(self, ctx: Any, source_entity: str, target_entity: str, rel_type: str, *, memory_id: str) -> str:
        """Add a typed edge between two existing entity ids, attributed to ``memory_id``."""
        with self._op("relate", ctx) as (t, _):
            rel = _rel(rel_type)
            with self.provider.graph_transaction() as tx:
                validate_entity_edge(tx, t.tenant_id, source_entity, target_entity)
                if (
                    tx.execute(
                        "SELECT 1 FROM memory_nodes WHERE tenant_id = ? AND node_id = ?", [t.tenant_id, memory_id]
                    ).fetchone()
                    is None
                ):
                    raise MemoryError(
                        ErrorCode.INVALID_PARAMS,
                        f"memory node {memory_id!r} does not exist",
                        details={"missing": "memory", "id": memory_id},
                    )
                eid = edge_id(memory_id, source_entity, target_entity, rel)
                tx.execute(
                    "INSERT INTO entity_edges VALUES (?, ?, ?, ?, ?, ?, ?, NULL) "
                    "ON CONFLICT (tenant_id, edge_id) DO UPDATE SET created_at = excluded.created_at, "
                    "deleted_at = NULL",
                    [t.tenant_id, eid, source_entity, target_entity, rel, memory_id, now_naive()],
                )
            self.store.generations.bump(t.tenant_id)
            return eid

    def entity_id(self, ctx: Any, name: str, type_: str) -> str:
        t = self.engine.check_context(ctx, "graph.entity_id")
        return entity_id(t.tenant_id, normalize_name(name), type_.upper())

    # -- integrity -----------------------------------------------------------------------------
    def check(
        self, *, repair: bool = False, tenant_id: str | None = None, principal: str | None = None
    ) -> IntegrityReport:
        """Integrity scan of every tenant (or one); orphans are reported to ``engine.audit``."""
        report = IntegrityReport(repaired=repair)
        with self.provider.graph_transaction() as tx:
            tenants = [tenant_id] if tenant_id is not None else graph_tenants(tx)
            for tid in tenants:
                found = scan_tenant(tx, tid, repair=repair)
                report.tenants.append(found)
                if found.total:
                    self.engine.audit.record(
                        tenant_id=tid,
                        principal=principal,
                        action="graph.integrity_scan",
                        outcome="ok" if repair else "error",
                        code=None,
                        details={"orphans": found.orphans, "repaired": found.repaired, "sample_ids": found.sample_ids},
                    )
        for t in report.tenants:
            if t.repaired:
                self.store.generations.bump(t.tenant_id)
        return report

    def purge(
        self, *, retention: timedelta = timedelta(days=7), tenant_id: str | None = None, now: datetime | None = None
    ) -> int:
        """Permanently remove graph rows soft-deleted longer than ``retention`` ago."""
        cutoff = ((now or datetime.now(UTC)) - retention).astimezone(UTC).replace(tzinfo=None)
        removed = 0
        with self.provider.graph_transaction() as tx:
            for tid in [tenant_id] if tenant_id is not None else graph_tenants(tx):
                n = purge(tx, tid, cutoff)
                removed += n
                if n:
                    self.store.generations.bump(tid)
        return removed

    def stats(self, ctx: Any) -> GraphStats:
        with self._op("stats", ctx) as (t, _), self.provider.graph_read() as cur:
            counts = {}
            for table, sql in (
                ("memory_nodes", "SELECT count(*) FROM memory_nodes WHERE tenant_id = ? AND deleted_at IS NULL"),
                ("entities", "SELECT count(*) FROM entities WHERE tenant_id = ? AND deleted_at IS NULL"),
                ("memory_edges", "SELECT count(*) FROM memory_edges WHERE tenant_id = ? AND deleted_at IS NULL"),
                ("entity_edges", "SELECT count(*) FROM entity_edges WHERE tenant_id = ? AND deleted_at IS NULL"),
            ):
                counts[table] = int(cur.execute(sql, [t.tenant_id]).fetchone()[0])
            self.store.forget_setting(t.tenant_id)
            return GraphStats(tenant_id=t.tenant_id, enabled=self.store.enabled(cur, t.tenant_id), **counts)

    # -- health (counts and integrity of one tenant's graph) -------------------------------------
    def health(self) -> HealthCheckResult:
        start = time.perf_counter()
        status: Any = "healthy"
        if self.dialect == "postgres":
            message = "postgres: CSR snapshots built from PostgreSQL, recursive SQL fallback"
        else:
            message = "pgq: duckpgq loaded" if self.pgq_available else "pgq: unavailable, recursive SQL"
        try:
            with self.provider.graph_read() as cur:
                cur.execute("SELECT 1").fetchone()
        except Exception as exc:
            status, message = "unhealthy", f"{type(exc).__name__}"
        return HealthCheckResult.model_validate(
            {
                "status": status,
                "latency_ms": round((time.perf_counter() - start) * 1000, 3),
                "components": {
                    "graph": {"status": status, "message": message},
                    "graph_cache": {"status": "healthy", "message": f"hit ratio {CACHE_STATS.ratio:.3f}"},
                },
            }
        )

    def ready(self) -> bool:
        """True when every graph table exists and a traversal query runs."""
        try:
            with self.provider.graph_read() as cur:
                names = {r[0] for r in cur.execute(TABLES_SQL[self.dialect]).fetchall()}
                if not set(GRAPH_TABLES) <= names:
                    return False
                # a tenant that cannot exist (no NUL byte: PostgreSQL text refuses it)
                self.queries._bfs(cur, "\x01ready", ["\x01"], 1, None)
            return True
        except Exception:
            return False

    # -- search expansion ------------------------------------------------------------------------
    def expand_search(
        self,
        tctx: TenantContext,
        results: Sequence[SearchResult],
        identifiers: LayerIdentifiers,
        layers: Sequence[Layer],
        predicate: Callable[[dict[str, Any]], bool] | None,
        limit: int,
        seeds: int = 3,
    ) -> list[SearchResult]:
        """Results linked through a shared entity to the top ``seeds`` hits, scored lower."""
        top = list(results[:seeds])
        if not top:
            return []
        scopes = [f"{layer.value}:{scope_key(layer, identifiers)}" for layer in layers]
        links = self.queries.shared_entity_links(tctx.tenant_id, [r.memory.id for r in top], scopes, limit)
        if not links:
            return []
        by_id = {r.memory.id: r for r in top}
        with self.provider.graph_read() as cur:
            linked = [lk[1] for lk in links]
            entries = {e.id: e for e in self.provider.fetch_entries(cur, tctx.tenant_id, linked, False)}
        now = self.engine.now()
        out: list[SearchResult] = []
        present = {r.memory.id for r in results}
        for seed, other, _eid, name in links:
            entry = entries.get(other)
            if entry is None or other in present or (entry.expires_at is not None and entry.expires_at <= now):
                continue
            if predicate is not None and not predicate(entry.metadata):
                continue
            hit = by_id[seed]
            path = render(
                [
                    _mem_node(hit.memory.id, hit.memory.content, hit.layer.value),
                    _ent_node(name),
                    _mem_node(entry.id, entry.content, entry.layer.value),
                ],
                [_edge(seed, name, True), _edge(other, name, False)],
            )
            out.append(
                SearchResult(
                    memory=entry,
                    score=round(hit.score * EXPANSION_FACTOR, 6),
                    layer=entry.layer,
                    expanded_from=seed,
                    graph_path=path,
                )
            )
        return out


def _rel(rel_type: str) -> str:
    rel = str(rel_type).strip().upper()
    if not re.fullmatch(r"[A-Z][A-Z0-9_]{0,39}", rel):
        raise MemoryError(
            ErrorCode.INVALID_PARAMS,
            "rel_type must be UPPER_SNAKE_CASE (max 40 characters)",
            details={"field": "rel_type"},
        )
    return rel


def _mem_node(mid: str, content: str, layer: str) -> GraphNode:
    return GraphNode(id=mid, kind="memory", label=label_of(content), type=layer)


def _ent_node(name: str) -> GraphNode:
    return GraphNode(id=name, kind="entity", label=name, type="ENTITY")


def _edge(memory_id: str, name: str, forward: bool) -> PathEdge:
    return PathEdge(source=memory_id, target=name, rel_type="MENTIONS", forward=forward)


def attach_graph(engine: MemoryEngine) -> GraphService | GraphUnavailable:
    if implements(engine.provider, GraphBackend):
        return GraphService(engine)
    return GraphUnavailable(engine.provider.name)


class AsyncGraph:
    """Coroutine facade over :class:`GraphService` (``AsyncMemory.graph``)."""

    def __init__(self, graph: GraphService | GraphUnavailable) -> None:
        self.sync: Any = graph

    async def related(self, ctx: Any, node: str, hops: int = 2, **kwargs: Any) -> RelatedResult:
        result: RelatedResult = await asyncio.to_thread(self.sync.related, ctx, node, hops, **kwargs)
        return result

    async def path(self, ctx: Any, a: str, b: str, **kwargs: Any) -> PathResult:
        result: PathResult = await asyncio.to_thread(self.sync.path, ctx, a, b, **kwargs)
        return result

    async def neighbors(self, ctx: Any, node: str, **kwargs: Any) -> list[Neighbor]:
        result: list[Neighbor] = await asyncio.to_thread(self.sync.neighbors, ctx, node, **kwargs)
        return result

    async def check(self, **kwargs: Any) -> IntegrityReport:
        result: IntegrityReport = await asyncio.to_thread(self.sync.check, **kwargs)
        return result
