"""Graph traversal: multi-hop paths and neighbourhoods, answered by recursive SQL.

Recursive SQL in DuckDB: a breadth-first search written as a ``WITH RECURSIVE … USING KEY (node)``
CTE. The key makes the recursion a dictionary (one row per reached node), the ``recurring`` table
lets each step skip nodes already reached, so the first row for a node carries its minimum hop
distance and its predecessor — enough to rebuild every path in Python without a second query.
Edges are walked in both directions (a memory and the entity it mentions are neighbours either way);
the path keeps each edge's stored direction for the reasoning text
(``Project A ←WORKS_ON— Alice —MENTIONS→ memory leak``).

SQL/PGQ (the duckpgq extension) is feature-detected with ``LOAD duckpgq`` (never installed from the
network). The recursive SQL is the implementation used in every case; ``pgq_available`` reports
whether the extension could be loaded.

Ties are deterministic: among the parents one level up the smallest id wins, and among its edges to
the node the smallest ``(rel_type, forward)``.

The default engine (``adjacency_cache=True``) loads a tenant's graph once per write generation into
a CSR snapshot (:mod:`.csr`) and answers with numpy breadth-first search: same trees, same order,
same ties as the CTE (property-tested), with ``related`` stopping after the level that completes
``limit`` and building objects only for returned rows. The tenant's active memory rows are cached
next to it and kept coherent by the row-change log (status, expiry, access counts, updates); the
recursive CTE remains the fallback (``adjacency_cache=False``).

Every query binds ``tenant_id`` (``$tenant``); results are cached per tenant and invalidated by
any graph write or memory-row change of that tenant (see ``store.Generations``).
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from ..errors import ErrorCode, MemoryError
from ..model import MemoryEntry
from ..providers.contracts import GraphBackend
from .csr import CSRGraph, as_index
from .extract import normalize_name
from .metrics import CACHE_STATS, observe
from .store import Generations, json_list

NodeKind = Literal["memory", "entity"]


class _GraphModel(BaseModel):
    """snake_case attributes; camelCase JSON with ``by_alias=True`` (the REST surface), either on input."""

    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True)


class GraphNode(_GraphModel):
    id: str
    kind: NodeKind
    label: str
    #: Entity type, or the memory's layer.
    type: str


class PathEdge(_GraphModel):
    source: str
    target: str
    rel_type: str
    #: True when the stored edge points from the earlier path node to the later one.
    forward: bool


class RelatedItem(_GraphModel):
    node: GraphNode
    hops: int
    nodes: list[GraphNode]
    edges: list[PathEdge]
    reasoning: str
    memory: MemoryEntry | None = None


class RelatedResult(_GraphModel):
    start: list[GraphNode]
    hops: int
    items: list[RelatedItem]
    cached: bool = False


class PathResult(_GraphModel):
    found: bool
    hops: int | None = None
    nodes: list[GraphNode] = Field(default_factory=list)
    edges: list[PathEdge] = Field(default_factory=list)
    reasoning: str | None = None
    cached: bool = False


class Neighbor(_GraphModel):
    node: GraphNode
    rel_type: str
    direction: Literal["out", "in"]


#: Breadth-first search from ``$starts`` up to ``$hops``; stops early once ``$target`` is reached.
BFS_SQL = """WITH RECURSIVE
adj AS MATERIALIZED (
    SELECT source_id AS s, target_id AS d, rel_type AS rel, true AS fwd
      FROM memory_edges WHERE tenant_id = $tenant AND deleted_at IS NULL
    UNION ALL
    SELECT target_id, source_id, rel_type, false
      FROM memory_edges WHERE tenant_id = $tenant AND deleted_at IS NULL
    UNION ALL
    SELECT source_id, target_id, rel_type, true
      FROM entity_edges WHERE tenant_id = $tenant AND deleted_at IS NULL
    UNION ALL
    SELECT target_id, source_id, rel_type, false
      FROM entity_edges WHERE tenant_id = $tenant AND deleted_at IS NULL
),
bfs(node, dist, parent, rel, fwd) USING KEY (node) AS (
    SELECT unnest($starts::JSON::VARCHAR[]), 0, NULL::VARCHAR, NULL::VARCHAR, NULL::BOOLEAN
    UNION
    SELECT adj.d, min(bfs.dist) + 1, min(bfs.node),
           arg_min(adj.rel, (bfs.node, adj.rel, adj.fwd)), arg_min(adj.fwd, (bfs.node, adj.rel, adj.fwd))
      FROM bfs JOIN adj ON adj.s = bfs.node
     WHERE bfs.dist < $hops
       AND adj.d NOT IN (SELECT node FROM recurring.bfs)
       AND NOT EXISTS (SELECT 1 FROM recurring.bfs r WHERE r.node = $target)
     GROUP BY adj.d
)
SELECT node, dist, parent, rel, fwd FROM bfs ORDER BY dist, node"""

#: The same breadth-first search on PostgreSQL, whose recursive CTEs allow neither aggregates nor a
#: second reference to the recursive table: (node, distance) pairs reachable by a walk (UNION keeps
#: each pair once, so at most nodes x hops rows), a node's distance is its smallest, and its parent
#: is chosen afterwards among the nodes one level closer, with the same tie rule. It does not stop
#: early at ``$target``: the tree up to the target's level is the same.
BFS_SQL_POSTGRES = """WITH RECURSIVE
adj AS MATERIALIZED (
    SELECT source_id AS s, target_id AS d, rel_type AS rel, true AS fwd
      FROM memory_edges WHERE tenant_id = $tenant AND deleted_at IS NULL
    UNION ALL
    SELECT target_id, source_id, rel_type, false
      FROM memory_edges WHERE tenant_id = $tenant AND deleted_at IS NULL
    UNION ALL
    SELECT source_id, target_id, rel_type, true
      FROM entity_edges WHERE tenant_id = $tenant AND deleted_at IS NULL
    UNION ALL
    SELECT target_id, source_id, rel_type, false
      FROM entity_edges WHERE tenant_id = $tenant AND deleted_at IS NULL
),
walk(node, dist) AS (
    SELECT DISTINCT x COLLATE "C", 0 FROM json_array_elements_text($starts::json) AS x
    UNION
    SELECT adj.d, walk.dist + 1 FROM walk JOIN adj ON adj.s = walk.node WHERE walk.dist < $hops
),
best AS (SELECT node, min(dist) AS dist FROM walk GROUP BY node)
SELECT b.node, b.dist, p.parent, p.rel, p.fwd
  FROM best b
  LEFT JOIN LATERAL (
      SELECT a.s AS parent, a.rel, a.fwd FROM adj a JOIN best q ON q.node = a.s AND q.dist = b.dist - 1
       WHERE a.d = b.node ORDER BY a.s COLLATE "C", a.rel COLLATE "C", a.fwd LIMIT 1
  ) p ON b.dist > 0
 ORDER BY b.dist, b.node COLLATE "C"
"""

NEIGHBORS_SQL = """
SELECT target_id AS node, rel_type, 'out' AS direction FROM memory_edges
 WHERE tenant_id = $tenant AND source_id = $node AND deleted_at IS NULL
UNION
SELECT source_id, rel_type, 'in' FROM memory_edges
 WHERE tenant_id = $tenant AND target_id = $node AND deleted_at IS NULL
UNION
SELECT target_id, rel_type, 'out' FROM entity_edges
 WHERE tenant_id = $tenant AND source_id = $node AND deleted_at IS NULL
UNION
SELECT source_id, rel_type, 'in' FROM entity_edges
 WHERE tenant_id = $tenant AND target_id = $node AND deleted_at IS NULL
ORDER BY 3 DESC, 2, 1
"""

NODES_SQL = """
SELECT node_id, 'memory', label, layer FROM memory_nodes
 WHERE tenant_id = $tenant AND deleted_at IS NULL AND list_contains($ids::JSON::VARCHAR[], node_id)
UNION ALL
SELECT entity_id, 'entity', name, type FROM entities
 WHERE tenant_id = $tenant AND deleted_at IS NULL AND list_contains($ids::JSON::VARCHAR[], entity_id)
"""

ADJACENCY_SQL = """
SELECT source_id, target_id, rel_type, true FROM memory_edges WHERE tenant_id = $tenant AND deleted_at IS NULL
UNION ALL
SELECT target_id, source_id, rel_type, false FROM memory_edges WHERE tenant_id = $tenant AND deleted_at IS NULL
UNION ALL
SELECT source_id, target_id, rel_type, true FROM entity_edges WHERE tenant_id = $tenant AND deleted_at IS NULL
UNION ALL
SELECT target_id, source_id, rel_type, false FROM entity_edges WHERE tenant_id = $tenant AND deleted_at IS NULL
"""

#: ``tenant_id || ''`` keeps DuckDB from answering a whole-tenant read through the single-column
#: ``(tenant_id)`` ART index: that fetches matching rows one by one, far slower for a whole
#: tenant than a filtered sequential scan. ``$tenant`` stays a bound parameter.
ALL_NODES_SQL = """
SELECT node_id, 'memory', label, layer, NULL, NULL FROM memory_nodes
 WHERE tenant_id || '' = $tenant AND deleted_at IS NULL
UNION ALL
SELECT entity_id, 'entity', name, type, norm_name, epoch_us(created_at) FROM entities
 WHERE tenant_id || '' = $tenant AND deleted_at IS NULL
"""

MAX_HOPS = 6


#: Memory rows of a tenant kept in its snapshot (raw columns; a MemoryEntry is built only for the
#: rows a query returns). Larger tenants fetch the rows of the candidates with SQL instead.
ROW_CACHE_LIMIT = 200_000


class _Snapshot:
    """One tenant's graph at one write generation: CSR adjacency, nodes, names, live memory rows."""

    def __init__(self, graph: CSRGraph, nodes: dict[str, GraphNode]) -> None:
        self.graph = graph
        self.nodes = nodes
        self.names: dict[str, list[tuple[Any, str]]] = {}
        self.known: npt.NDArray[np.bool_] = np.zeros(graph.n, dtype=np.bool_)
        self.memory: npt.NDArray[np.bool_] = np.zeros(graph.n, dtype=np.bool_)
        for nid, node in nodes.items():
            i = graph.index[nid]
            self.known[i] = True
            self.memory[i] = node.kind == "memory"


class _Rows:
    """A tenant's active memory rows (raw columns until first returned, then the MemoryEntry).

    Independent of the graph generation: kept coherent by the row-change log of
    :class:`~stratamem.graph.store.Generations` (ids changed by any write are marked stale and read
    again with SQL when a query needs them), so a graph write does not reload every row.
    """

    def __init__(self, live: dict[str, Any] | None, row_gen: int) -> None:
        #: None: the tenant is too large to cache; every candidate row is fetched with SQL.
        self.live = live
        self.stale: set[str] = set()
        self.row_gen = row_gen
        self.lock = threading.Lock()


def bfs_in_memory(
    adj: dict[str, list[tuple[str, str, bool]]], starts: Sequence[str], hops: int, target: str | None
) -> dict[str, tuple[int, str | None, str | None, bool | None]]:
    """The recursive CTE's semantics over an adjacency dict: first reach = hop distance; among
    parents at the same level the smallest id wins (rel/direction of the edge from that parent)."""
    tree: dict[str, tuple[int, str | None, str | None, bool | None]] = {
        s: (0, None, None, None) for s in dict.fromkeys(starts)
    }
    frontier = sorted(tree)
    dist = 0
    while frontier and dist < hops and (not target or target not in tree):
        dist += 1
        found: dict[str, tuple[str, str, bool]] = {}
        for node in frontier:
            for d, rel, fwd in adj.get(node, ()):
                if d in tree:
                    continue
                best = found.get(d)
                if best is None or node < best[0] or (node == best[0] and (rel, fwd) < best[1:]):
                    found[d] = (node, rel, fwd)
        for d, (parent, rel, fwd) in found.items():
            tree[d] = (dist, parent, rel, fwd)
        frontier = sorted(found)
    return dict(sorted(tree.items(), key=lambda kv: (kv[1][0], kv[0])))


def detect_pgq(new_cursor: Callable[[], Any]) -> bool:
    """True when the duckpgq extension loads from the local extension directory (no download);
    ``new_cursor`` opens a cursor of its own on the database (``GraphBackend.new_cursor``)."""
    try:
        cur = new_cursor()
        try:
            cur.execute("LOAD duckpgq")
        finally:
            cur.close()
        return True
    except Exception:
        return False


class _LRU:
    def __init__(self, size: int) -> None:
        self.size = size
        self._data: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Any:
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                return self._data[key]
        return None

    def put(self, key: Hashable, value: Any) -> None:
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.size:
                self._data.popitem(last=False)


def render(nodes: Sequence[GraphNode], edges: Sequence[PathEdge]) -> str:
    """``A —REL→ B ←REL2— C``: labels joined by each edge in its stored direction."""
    if not nodes:
        return ""
    parts = [_short(nodes[0])]
    for edge, node in zip(edges, nodes[1:], strict=True):
        parts.append(f"—{edge.rel_type}→" if edge.forward else f"←{edge.rel_type}—")
        parts.append(_short(node))
    return " ".join(parts)


def _edge(parent: str, child: str, rel: str, forward: bool) -> PathEdge:
    """The edge walked from ``parent`` to ``child``, in its stored direction."""
    return PathEdge(
        source=parent if forward else child, target=child if forward else parent, rel_type=rel, forward=forward
    )


def _short(node: GraphNode) -> str:
    if node.kind == "entity":
        return node.label
    text = node.label if len(node.label) <= 48 else node.label[:47] + "…"
    return f'"{text}"'


class GraphQueries:
    """Read side of the graph for one provider (DuckDB or PostgreSQL)."""

    def __init__(
        self,
        provider: GraphBackend,
        generations: Generations,
        *,
        cache_size: int = 2048,
        adjacency_cache: bool = True,
        adjacency_tenants: int = 64,
        row_cache_limit: int = ROW_CACHE_LIMIT,
    ) -> None:
        self.provider = provider
        self.generations = generations
        self._cache = _LRU(cache_size)
        #: ``True``: a tenant's graph is loaded once per write generation (tenant-scoped SQL scans)
        #: into a CSR snapshot and searched with numpy; ``False``: every traversal runs the recursive
        #: CTE. Both give the same results (tested, including a property test).
        self.adjacency_cache = adjacency_cache
        self.row_cache_limit = row_cache_limit
        self._adjacency = _LRU(adjacency_tenants)
        self._rows = _LRU(adjacency_tenants)

    # -- plumbing ------------------------------------------------------------------------------
    def _versions(self, tenant_id: str, cur: Any = None) -> tuple[Any, Any]:
        """(graph, row) generations of the tenant; on a store with a database-side counter (PostgreSQL:
        writers may be other servers) each is paired with it, read before the data it keys."""
        graph, rows = self.generations.get(tenant_id), self.generations.row_generation(tenant_id)
        shared = self.provider.graph_generation(tenant_id, cur)
        if shared is None:
            return graph, rows
        return (graph, shared), (rows, shared)

    def _stable_versions(self, tenant_id: str, cur: Any = None) -> tuple[Any, Any] | None:
        """The tenant's (graph, row) generations, or None while a write transaction is in flight.

        Generations are bumped inside the write transaction, before it commits; a value read while
        no writer holds the lock, and unchanged when a result is stored, guarantees the result was
        computed from committed data of that generation.
        """
        # bookkeeping appends queued by finished operations (providers/append_queue.py) are written
        # first: their writer holds the lock, and would make a result computed now uncacheable
        self.provider.flush_appends()
        lock = self.provider.writer_lock()
        if not lock.acquire(blocking=False):
            return None
        try:
            return self._versions(tenant_id, cur)
        finally:
            lock.release()

    def _put(self, key: tuple[Any, ...], stable: tuple[Any, Any] | None, value: Any) -> None:
        if stable is not None and stable == (key[1], key[2]) == self._versions(str(key[0])):
            self._cache.put(key, value)

    def _cached(self, tenant_id: str, key: tuple[Any, ...]) -> tuple[tuple[Any, ...], tuple[Any, Any] | None, Any]:
        stable = self._stable_versions(tenant_id)
        full = (tenant_id, *(stable if stable is not None else self._versions(tenant_id)), *key)
        value = self._cache.get(full)
        CACHE_STATS.record(value is not None)
        return full, stable, value

    def _nodes(self, cur: Any, tenant_id: str, ids: Sequence[str]) -> dict[str, GraphNode]:
        if not ids:
            return {}
        if self.adjacency_cache:
            known = self._snapshot(cur, tenant_id).nodes
            return {i: known[i] for i in ids if i in known}
        rows = cur.execute(NODES_SQL, {"tenant": tenant_id, "ids": json_list(ids)}).fetchall()
        return {r[0]: GraphNode(id=r[0], kind=r[1], label=r[2], type=r[3]) for r in rows}

    def resolve(self, cur: Any, tenant_id: str, ref: str) -> list[str]:
        """A memory id, an entity id, or an entity name (every type of that name) → node ids."""
        if not isinstance(ref, str) or not ref.strip() or len(ref) > 512:
            raise MemoryError(
                ErrorCode.INVALID_PARAMS, "a memory id or entity name is required", details={"field": "node"}
            )
        if self.adjacency_cache:
            snap = self._snapshot(cur, tenant_id)
            if ref in snap.nodes:
                return [ref]
            named = snap.names.get(normalize_name(ref))
            if named:
                return [nid for _, nid in named]
            raise MemoryError(
                ErrorCode.MEMORY_NOT_FOUND,
                f"no memory or entity {ref!r} in the knowledge graph",
                details={"node": ref},
                retryable=False,
            )
        row = cur.execute(
            "SELECT node_id FROM memory_nodes WHERE tenant_id = ? AND node_id = ? AND deleted_at IS NULL "
            "UNION ALL SELECT entity_id FROM entities WHERE tenant_id = ? AND entity_id = ? AND deleted_at IS NULL",
            [tenant_id, ref, tenant_id, ref],
        ).fetchone()
        if row:
            return [row[0]]
        rows = cur.execute(
            "SELECT entity_id FROM entities WHERE tenant_id = ? AND norm_name = ? AND deleted_at IS NULL "
            "ORDER BY created_at, entity_id",
            [tenant_id, normalize_name(ref)],
        ).fetchall()
        if not rows:
            raise MemoryError(
                ErrorCode.MEMORY_NOT_FOUND,
                f"no memory or entity {ref!r} in the knowledge graph",
                details={"node": ref},
                retryable=False,
            )
        return [r[0] for r in rows]

    def _bfs(
        self, cur: Any, tenant_id: str, starts: Sequence[str], hops: int, target: str | None
    ) -> dict[str, tuple[int, str | None, str | None, bool | None]]:
        if not self.adjacency_cache:
            return self._bfs_sql(cur, tenant_id, starts, hops, target)
        graph = self._snapshot(cur, tenant_id).graph
        state = graph.new_state()
        goal = graph.index.get(target) if target else None
        for _ in graph.levels(as_index(graph, starts), hops, state):
            if goal is not None and state.dist[goal] >= 0:
                break
        tree = state.tree(graph)
        missing = [s for s in dict.fromkeys(starts) if s not in graph.index]
        if missing:  # starts without any edge or node row still count as reached at distance 0
            tree = dict(
                sorted(
                    {**tree, **{s: (0, None, None, None) for s in missing}}.items(), key=lambda kv: (kv[1][0], kv[0])
                )
            )
        return tree

    def _snapshot(self, cur: Any, tenant_id: str) -> _Snapshot:
        """The tenant's live graph at the current write generation (tenant-scoped scans)."""
        stable = self._stable_versions(tenant_id, cur)
        key = (tenant_id, stable[0] if stable is not None else self._versions(tenant_id, cur)[0])
        snap: _Snapshot | None = self._adjacency.get(key)
        if snap is not None:
            return snap
        edges = cur.execute(ADJACENCY_SQL, {"tenant": tenant_id}).fetchall()
        node_rows = cur.execute(ALL_NODES_SQL, {"tenant": tenant_id}).fetchall()
        graph = CSRGraph(
            [r[0] for r in node_rows],
            [e[0] for e in edges],
            [e[1] for e in edges],
            [e[2] for e in edges],
            [bool(e[3]) for e in edges],
        )
        nodes: dict[str, GraphNode] = {}
        names: dict[str, list[tuple[Any, str]]] = {}
        for nid, kind, label, type_, norm, created in node_rows:
            nodes[nid] = GraphNode(id=nid, kind=kind, label=label, type=type_)
            if norm is not None:
                names.setdefault(norm, []).append((created, nid))
        for refs in names.values():
            refs.sort()
        snap = _Snapshot(graph, nodes)
        snap.names = names
        if stable is not None and stable[0] == key[1] == self._versions(tenant_id, cur)[0]:
            self._adjacency.put(key, snap)
        return snap

    def _rows_of(self, cur: Any, tenant_id: str, snap: _Snapshot) -> _Rows:
        if self.provider.graph_generation(tenant_id, cur) is not None:
            # other servers change rows without this process's row-change log: read them with SQL
            return _Rows(None, -1)
        rows: _Rows | None = self._rows.get(tenant_id)
        if rows is not None and self._sync_rows(rows, tenant_id):
            return rows
        stable = self._stable_versions(tenant_id, cur)
        rows = _Rows(None, stable[1] if stable else -1)
        # Loaded only with no write in flight (its row-change notice could predate the load).
        if stable is not None and int(snap.memory.sum()) <= self.row_cache_limit:
            found = cur.execute(
                f"{self.provider.select_sql(False)} WHERE tenant_id = ? AND status = 'active'", [tenant_id]
            ).fetchall()
            rows.live = {r[1]: r for r in found}
            if self._sync_rows(rows, tenant_id):
                self._rows.put(tenant_id, rows)
            else:
                rows.live = None
        return rows

    def _sync_rows(self, rows: _Rows, tenant_id: str) -> bool:
        """Mark the rows changed since ``rows`` last looked stale; False: reload instead (the log
        no longer reaches back, or too much changed)."""
        with rows.lock:
            changed = self.generations.rows_changed_since(tenant_id, rows.row_gen)
            if changed is None:
                return False
            if changed:
                if rows.live is not None:
                    for i in changed:
                        rows.live.pop(i, None)
                rows.stale |= changed
                rows.row_gen = self.generations.row_generation(tenant_id)
            return rows.live is None or len(rows.stale) <= max(1024, len(rows.live) // 4)

    def _live_entries(
        self, cur: Any, tenant_id: str, rows: _Rows, ids: Sequence[str], now: Any, need: int
    ) -> dict[str, MemoryEntry]:
        """Active, unexpired memories among ``ids`` (in order) until ``need`` are found."""
        out: dict[str, MemoryEntry] = {}
        unknown = [i for i in ids if rows.live is None or i in rows.stale]
        fetched: dict[str, MemoryEntry] = {}
        fetched_upto = 0
        for i in ids:
            if rows.live is not None and i not in rows.stale:
                value = rows.live.get(i)
                if value is None:
                    continue
                if not isinstance(value, MemoryEntry):
                    value = self.provider.entry_from_row(value, False)
                    rows.live[i] = value
                entry: MemoryEntry | None = value
            else:
                while i not in fetched and fetched_upto < len(unknown):
                    page = unknown[fetched_upto : fetched_upto + max(2 * need, 16)]
                    fetched_upto += len(page)
                    fetched.update(self._fetch_rows(cur, tenant_id, rows, page))
                entry = fetched.get(i)
            if (
                entry is None
                or entry.status != "active"
                or (now is not None and entry.expires_at is not None and entry.expires_at <= now)
            ):
                continue
            out[i] = entry
            if len(out) >= need:
                break
        return out

    def _fetch_rows(self, cur: Any, tenant_id: str, rows: _Rows, ids: Sequence[str]) -> dict[str, MemoryEntry]:
        stable = self._stable_versions(tenant_id, cur)
        found = {e.id: e for e in self.provider.fetch_entries(cur, tenant_id, ids, False)}
        if rows.live is not None and stable is not None:
            with rows.lock:
                if stable[1] == rows.row_gen == self.generations.row_generation(tenant_id):
                    for i in ids:
                        rows.stale.discard(i)
                        entry = found.get(i)
                        if entry is not None and entry.status == "active":
                            rows.live[i] = entry
        return found

    def _bfs_sql(
        self, cur: Any, tenant_id: str, starts: Sequence[str], hops: int, target: str | None
    ) -> dict[str, tuple[int, str | None, str | None, bool | None]]:
        sql = BFS_SQL_POSTGRES if self.provider.graph_dialect == "postgres" else BFS_SQL
        rows = cur.execute(
            sql, {"tenant": tenant_id, "starts": json_list(starts), "hops": hops, "target": target or ""}
        ).fetchall()
        return {r[0]: (int(r[1]), r[2], r[3], r[4]) for r in rows}

    @staticmethod
    def _chain(
        tree: dict[str, tuple[int, str | None, str | None, bool | None]], node: str
    ) -> tuple[list[str], list[PathEdge]]:
        ids = [node]
        edges: list[PathEdge] = []
        cur = node
        while True:
            _, parent, rel, fwd = tree[cur]
            if parent is None:
                break
            edges.append(_edge(parent, cur, str(rel), bool(fwd)))
            ids.append(parent)
            cur = parent
        ids.reverse()
        edges.reverse()
        return ids, edges

    @staticmethod
    def _check_hops(hops: Any) -> int:
        if isinstance(hops, bool) or not isinstance(hops, int) or not 1 <= hops <= MAX_HOPS:
            raise MemoryError(
                ErrorCode.INVALID_PARAMS,
                f"hops must be an integer from 1 to {MAX_HOPS}",
                details={"field": "hops", "max": MAX_HOPS},
            )
        return hops

    # -- queries -------------------------------------------------------------------------------
    def related(
        self,
        tenant_id: str,
        ref: str,
        hops: int = 2,
        *,
        limit: int = 50,
        include_entities: bool = False,
        now: Any = None,
    ) -> RelatedResult:
        hops = self._check_hops(hops)
        with observe("find_related", tenant_id, hops) as timer:
            key, stable, hit = self._cached(tenant_id, ("related", ref, hops, limit, include_entities))
            if hit is not None:
                timer.cached = True
                timer.result_count = len(hit.items)
                return hit.model_copy(update={"cached": True})  # type: ignore[no-any-return]
            with self.provider.graph_read() as cur:
                starts = self.resolve(cur, tenant_id, ref)
                if self.adjacency_cache:
                    result = self._related_snapshot(cur, tenant_id, starts, hops, limit, include_entities, now)
                else:
                    result = self._related_sql(cur, tenant_id, starts, hops, limit, include_entities, now)
            timer.result_count = len(result.items)
            self._put(key, stable, result)
            return result

    def _related_snapshot(
        self, cur: Any, tenant_id: str, starts: Sequence[str], hops: int, limit: int, include_entities: bool, now: Any
    ) -> RelatedResult:
        """Level by level over the CSR snapshot; stops after the level that completes ``limit``
        results (nearer levels always come first, ids order each level), and builds result objects
        only for the returned nodes."""
        snap = self._snapshot(cur, tenant_id)
        rows = self._rows_of(cur, tenant_id, snap)
        graph = snap.graph
        state = graph.new_state()
        path_ok = np.zeros(graph.n, dtype=np.bool_)  # every node of the path has a live node row
        chosen: list[int] = []
        entries: dict[str, MemoryEntry] = {}
        for level, reached in enumerate(graph.levels(as_index(graph, starts), hops, state)):
            if level == 0:
                path_ok[reached] = snap.known[reached]
                continue
            path_ok[reached] = snap.known[reached] & path_ok[state.parent[reached]]
            keep = path_ok[reached] if include_entities else path_ok[reached] & snap.memory[reached]
            candidates = reached[keep]
            is_memory = snap.memory[candidates].tolist()
            order = candidates.tolist()
            mems = [graph.ids[i] for i, m in zip(order, is_memory, strict=True) if m]
            live = self._live_entries(cur, tenant_id, rows, mems, now, limit - len(chosen)) if mems else {}
            entries.update(live)
            for i, m in zip(order, is_memory, strict=True):
                if not m or graph.ids[i] in live:
                    chosen.append(i)
                    if len(chosen) >= limit:
                        break
            if len(chosen) >= limit:
                break
        items: list[RelatedItem] = []
        for i in chosen:
            chain = graph.chain(state, i)
            path_nodes = [snap.nodes[graph.ids[c]] for c in chain]
            edges = []
            for parent, child in itertools.pairwise(chain):
                rel, fwd = graph.edge(int(state.edge[child]))
                edges.append(_edge(graph.ids[parent], graph.ids[child], rel, fwd))
            node_id = graph.ids[i]
            items.append(
                RelatedItem(
                    node=snap.nodes[node_id],
                    hops=len(edges),
                    nodes=path_nodes,
                    edges=edges,
                    reasoning=render(path_nodes, edges),
                    memory=entries.get(node_id),
                )
            )
        return RelatedResult(start=[snap.nodes[s] for s in starts if s in snap.nodes], hops=hops, items=items)

    def _related_sql(
        self, cur: Any, tenant_id: str, starts: Sequence[str], hops: int, limit: int, include_entities: bool, now: Any
    ) -> RelatedResult:
        tree = self._bfs_sql(cur, tenant_id, starts, hops, None)
        reached = [n for n, v in tree.items() if v[0] > 0]
        nodes = self._nodes(cur, tenant_id, list(tree))
        memory_ids = [n for n in reached if n in nodes and nodes[n].kind == "memory"]
        # Nearest first: fetch rows in pages until ``limit`` live memories are found.
        entries: dict[str, MemoryEntry] = {}
        for i in range(0, len(memory_ids), 2 * limit):
            page = memory_ids[i : i + 2 * limit]
            entries.update(
                {
                    e.id: e
                    for e in self.provider.fetch_entries(cur, tenant_id, page, False)
                    if e.status == "active" and (now is None or e.expires_at is None or e.expires_at > now)
                }
            )
            if len(entries) >= limit:
                break
        items: list[RelatedItem] = []
        for node_id in reached:  # already ordered by hop distance, then id
            node = nodes.get(node_id)
            if node is None or (node.kind == "entity" and not include_entities):
                continue
            if node.kind == "memory" and node_id not in entries:
                continue
            ids, edges = self._chain(tree, node_id)
            if any(i not in nodes for i in ids):
                continue
            path_nodes = [nodes[i] for i in ids]
            items.append(
                RelatedItem(
                    node=node,
                    hops=tree[node_id][0],
                    nodes=path_nodes,
                    edges=edges,
                    reasoning=render(path_nodes, edges),
                    memory=entries.get(node_id),
                )
            )
            if len(items) >= limit:
                break
        return RelatedResult(start=[nodes[s] for s in starts if s in nodes], hops=hops, items=items)

    def path(self, tenant_id: str, a: str, b: str, *, max_hops: int = MAX_HOPS) -> PathResult:
        max_hops = self._check_hops(max_hops)
        with observe("shortest_path", tenant_id, max_hops) as timer:
            key, stable, hit = self._cached(tenant_id, ("path", a, b, max_hops))
            if hit is not None:
                timer.cached = True
                timer.result_count = len(hit.nodes)
                return hit.model_copy(update={"cached": True})  # type: ignore[no-any-return]
            with self.provider.graph_read() as cur:
                starts = self.resolve(cur, tenant_id, a)
                targets = self.resolve(cur, tenant_id, b)
                if self.adjacency_cache:
                    ids, edges = self._path_snapshot(cur, tenant_id, starts, targets, max_hops)
                else:
                    ids, edges = self._path_sql(cur, tenant_id, starts, targets, max_hops)
                if not ids:
                    result = PathResult(found=False)
                else:
                    nodes = self._nodes(cur, tenant_id, ids)
                    path_nodes = [nodes[i] for i in ids if i in nodes]
                    result = PathResult(
                        found=True, hops=len(edges), nodes=path_nodes, edges=edges, reasoning=render(path_nodes, edges)
                    )
            timer.result_count = len(result.nodes)
            self._put(key, stable, result)
            return result

    def _path_sql(
        self, cur: Any, tenant_id: str, starts: Sequence[str], targets: Sequence[str], max_hops: int
    ) -> tuple[list[str], list[PathEdge]]:
        if set(starts) & set(targets):
            return [next(s for s in starts if s in targets)], []
        # One BFS per target entity of that name, keeping the shortest (the first on a tie).
        tree: dict[str, tuple[int, str | None, str | None, bool | None]] = {}
        reached = ""
        for target in targets:
            candidate = self._bfs_sql(cur, tenant_id, starts, max_hops, target)
            if target in candidate and (not reached or candidate[target][0] < tree[reached][0]):
                tree, reached = candidate, target
        return self._chain(tree, reached) if reached else ([], [])

    def _path_snapshot(
        self, cur: Any, tenant_id: str, starts: Sequence[str], targets: Sequence[str], max_hops: int
    ) -> tuple[list[str], list[PathEdge]]:
        if set(starts) & set(targets):
            return [next(s for s in starts if s in targets)], []
        graph = self._snapshot(cur, tenant_id).graph
        sources = as_index(graph, starts)
        best: tuple[list[int], list[int]] | None = None
        for target in as_index(graph, targets):
            bound = max_hops if best is None else len(best[1]) - 1
            found = graph.shortest(sources, target, bound) if sources and bound >= 1 else None
            if found is not None:
                best = found
        if best is None:
            return [], []
        chain, positions = best
        edges = []
        for (parent, child), pos in zip(itertools.pairwise(chain), positions, strict=True):
            rel, fwd = graph.edge(pos)
            edges.append(_edge(graph.ids[parent], graph.ids[child], rel, fwd))
        return [graph.ids[i] for i in chain], edges

    def neighbors(
        self,
        tenant_id: str,
        ref: str,
        *,
        rel_type: str | None = None,
        direction: Literal["out", "in", "both"] = "both",
        limit: int = 100,
    ) -> list[Neighbor]:
        with observe("neighbors", tenant_id, 1) as timer, self.provider.graph_read() as cur:
            starts = self.resolve(cur, tenant_id, ref)
            seen: dict[tuple[str, str, str], None] = {}
            for start in starts:
                for node, rel, dirn in cur.execute(NEIGHBORS_SQL, {"tenant": tenant_id, "node": start}).fetchall():
                    if (rel_type is None or rel == rel_type.upper()) and direction in ("both", dirn):
                        seen.setdefault((node, rel, dirn), None)
            nodes = self._nodes(cur, tenant_id, sorted({k[0] for k in seen}))
            out = [Neighbor(node=nodes[n], rel_type=r, direction=d) for (n, r, d) in seen if n in nodes][:limit]
            timer.result_count = len(out)
            return out

    def shared_entity_links(
        self, tenant_id: str, seeds: Sequence[str], scopes: Sequence[str], limit: int
    ) -> list[tuple[str, str, str, str]]:
        """Memories (in ``scopes``: "layer:scope") sharing an entity with a seed memory:
        (seed id, other id, entity id, entity name), closest seeds first."""
        if not seeds:
            return []
        with self.provider.graph_read() as cur:
            rows = cur.execute(
                """
                SELECT a.source_id, b.source_id, e.entity_id, e.name
                  FROM memory_edges a
                  JOIN memory_edges b ON b.tenant_id = a.tenant_id AND b.target_id = a.target_id
                   AND b.source_id <> a.source_id AND b.deleted_at IS NULL AND b.rel_type = 'MENTIONS'
                  JOIN entities e ON e.tenant_id = a.tenant_id AND e.entity_id = a.target_id AND e.deleted_at IS NULL
                  JOIN memories m ON m.tenant_id = b.tenant_id AND m.id = b.source_id AND m.status = 'active'
                 WHERE a.tenant_id = $tenant AND a.deleted_at IS NULL AND a.rel_type = 'MENTIONS'
                   AND list_contains($seeds::JSON::VARCHAR[], a.source_id)
                   AND NOT list_contains($seeds::JSON::VARCHAR[], b.source_id)
                   AND list_contains($scopes::JSON::VARCHAR[], (m.layer || ':' || m.scope))
                 ORDER BY list_position($seeds::JSON::VARCHAR[], a.source_id), b.source_id, e.name
                """,
                {"tenant": tenant_id, "seeds": json_list(seeds), "scopes": json_list(scopes)},
            ).fetchall()
        out: list[tuple[str, str, str, str]] = []
        taken: set[str] = set()
        for seed, other, eid, name in rows:
            if other not in taken:
                taken.add(other)
                out.append((seed, other, eid, name))
                if len(out) >= limit:
                    break
        return out
