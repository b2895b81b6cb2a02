"""Graph traversal (seed 000 "Dynamic Graph Reasoning", "SQL/PGQ Query Interface").

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

Every query binds ``tenant_id`` (``$tenant``); results are cached per tenant and invalidated by
any graph write of that tenant (see ``store.Generations``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..errors import ErrorCode, MemoryError
from ..model import MemoryEntry
from .extract import normalize_name
from .metrics import CACHE_STATS, observe
from .store import Generations, json_list

NodeKind = Literal["memory", "entity"]


class GraphNode(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    kind: NodeKind
    label: str
    #: Entity type, or the memory's layer.
    type: str


class PathEdge(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: str
    target: str
    rel_type: str
    #: True when the stored edge points from the earlier path node to the later one.
    forward: bool


class RelatedItem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    node: GraphNode
    hops: int
    nodes: list[GraphNode]
    edges: list[PathEdge]
    reasoning: str
    memory: MemoryEntry | None = None


class RelatedResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    start: list[GraphNode]
    hops: int
    items: list[RelatedItem]
    cached: bool = False


class PathResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    found: bool
    hops: int | None = None
    nodes: list[GraphNode] = Field(default_factory=list)
    edges: list[PathEdge] = Field(default_factory=list)
    reasoning: str | None = None
    cached: bool = False


class Neighbor(BaseModel):
    model_config = ConfigDict(extra="forbid")

    node: GraphNode
    rel_type: str
    direction: Literal["out", "in"]


#: Breadth-first search from ``$starts`` up to ``$hops``; stops early once ``$target`` is reached.
BFS_SQL = (
    """WITH RECURSIVE
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
    SELECT adj.d, min(bfs.dist) + 1, min(bfs.node), arg_min(adj.rel, bfs.node), arg_min(adj.fwd, bfs.node)
      FROM bfs JOIN adj ON adj.s = bfs.node
     WHERE bfs.dist < $hops
       AND adj.d NOT IN (SELECT node FROM recurring.bfs)
       AND NOT EXISTS (SELECT 1 FROM recurring.bfs r WHERE r.node = $target)
     GROUP BY adj.d
)
SELECT node, dist, parent, rel, fwd FROM bfs ORDER BY dist, node"""
)

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

ALL_NODES_SQL = """
SELECT node_id, 'memory', label, layer, NULL, NULL FROM memory_nodes WHERE tenant_id = $tenant AND deleted_at IS NULL
UNION ALL
SELECT entity_id, 'entity', name, type, norm_name, epoch_us(created_at) FROM entities
 WHERE tenant_id = $tenant AND deleted_at IS NULL
"""

MAX_HOPS = 6


class _Snapshot:
    def __init__(self) -> None:
        self.adj: dict[str, list[tuple[str, str, bool]]] = {}
        self.nodes: dict[str, GraphNode] = {}
        self.names: dict[str, list[tuple[Any, str]]] = {}


def bfs_in_memory(adj: dict[str, list[tuple[str, str, bool]]], starts: Sequence[str], hops: int,
                  target: str | None) -> dict[str, tuple[int, str | None, str | None, bool | None]]:
    """The recursive CTE's semantics over an adjacency dict: first reach = hop distance; among
    parents at the same level the smallest id wins (rel/direction of the edge from that parent)."""
    tree: dict[str, tuple[int, str | None, str | None, bool | None]] = {
        s: (0, None, None, None) for s in dict.fromkeys(starts)}
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


def detect_pgq(conn: Any) -> bool:
    """True when the duckpgq extension loads from the local extension directory (no download)."""
    try:
        cur = conn.cursor()
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


def _short(node: GraphNode) -> str:
    if node.kind == "entity":
        return node.label
    text = node.label if len(node.label) <= 48 else node.label[:47] + "…"
    return f'"{text}"'


class GraphQueries:
    """Read side of the graph for one DuckDB provider."""

    def __init__(self, provider: Any, generations: Generations, *, cache_size: int = 2048,
                 adjacency_cache: bool = True, adjacency_tenants: int = 64) -> None:
        self.provider = provider
        self.generations = generations
        self._cache = _LRU(cache_size)
        #: ``True``: a tenant's adjacency is loaded once per write generation (one tenant-scoped SQL
        #: scan) and breadth-first searches run over it in memory; ``False``: every traversal runs
        #: the recursive CTE. Both give the same tree (tested).
        self.adjacency_cache = adjacency_cache
        self._adjacency = _LRU(adjacency_tenants)

    # -- plumbing ------------------------------------------------------------------------------
    def _stable_generation(self, tenant_id: str) -> int | None:
        """The tenant's write generation, or None while a write transaction is in flight.

        The generation is bumped inside the write transaction, before it commits; a value read
        while no writer holds the lock, and unchanged when a result is stored, guarantees the
        result was computed from committed data of that generation.
        """
        lock = self.provider.db.write_lock
        if not lock.acquire(blocking=False):
            return None
        try:
            return self.generations.get(tenant_id)
        finally:
            lock.release()

    def _put(self, cache: _LRU, key: tuple[Any, ...], stable: int | None, value: Any) -> None:
        if stable is not None and stable == key[1] == self.generations.get(str(key[0])):
            cache.put(key, value)

    def _cached(self, tenant_id: str, key: tuple[Any, ...]) -> tuple[tuple[Any, ...], int | None, Any]:
        stable = self._stable_generation(tenant_id)
        full = (tenant_id, self.generations.get(tenant_id), *key)
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
            raise MemoryError(ErrorCode.INVALID_PARAMS, "a memory id or entity name is required",
                              details={"field": "node"})
        if self.adjacency_cache:
            snap = self._snapshot(cur, tenant_id)
            if ref in snap.nodes:
                return [ref]
            named = snap.names.get(normalize_name(ref))
            if named:
                return [nid for _, nid in named]
            raise MemoryError(ErrorCode.MEMORY_NOT_FOUND, f"no memory or entity {ref!r} in the knowledge graph",
                              details={"node": ref}, retryable=False)
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
            raise MemoryError(ErrorCode.MEMORY_NOT_FOUND, f"no memory or entity {ref!r} in the knowledge graph",
                              details={"node": ref}, retryable=False)
        return [r[0] for r in rows]

    def _bfs(self, cur: Any, tenant_id: str, starts: Sequence[str], hops: int,
             target: str | None) -> dict[str, tuple[int, str | None, str | None, bool | None]]:
        if self.adjacency_cache:
            return bfs_in_memory(self._adjacency_of(cur, tenant_id), starts, hops, target)
        return self._bfs_sql(cur, tenant_id, starts, hops, target)

    def _adjacency_of(self, cur: Any, tenant_id: str) -> dict[str, list[tuple[str, str, bool]]]:
        return self._snapshot(cur, tenant_id).adj

    def _snapshot(self, cur: Any, tenant_id: str) -> _Snapshot:
        """The tenant's live nodes and adjacency at the current write generation (two scans)."""
        stable = self._stable_generation(tenant_id)
        key = (tenant_id, self.generations.get(tenant_id))
        snap: _Snapshot | None = self._adjacency.get(key)
        if snap is None:
            snap = _Snapshot()
            for s, d, rel, fwd in cur.execute(ADJACENCY_SQL, {"tenant": tenant_id}).fetchall():
                snap.adj.setdefault(s, []).append((d, rel, bool(fwd)))
            for nid, kind, label, type_, norm, created in cur.execute(ALL_NODES_SQL, {"tenant": tenant_id}).fetchall():
                snap.nodes[nid] = GraphNode(id=nid, kind=kind, label=label, type=type_)
                if norm is not None:
                    snap.names.setdefault(norm, []).append((created, nid))
            for refs in snap.names.values():
                refs.sort()
            self._put(self._adjacency, key, stable, snap)
        return snap

    def _bfs_sql(self, cur: Any, tenant_id: str, starts: Sequence[str], hops: int,
                 target: str | None) -> dict[str, tuple[int, str | None, str | None, bool | None]]:
        rows = cur.execute(BFS_SQL, {"tenant": tenant_id, "starts": json_list(starts), "hops": hops,
                                     "target": target or ""}).fetchall()
        return {r[0]: (int(r[1]), r[2], r[3], r[4]) for r in rows}

    @staticmethod
    def _chain(tree: dict[str, tuple[int, str | None, str | None, bool | None]],
               node: str) -> tuple[list[str], list[PathEdge]]:
        ids = [node]
        edges: list[PathEdge] = []
        cur = node
        while True:
            _, parent, rel, fwd = tree[cur]
            if parent is None:
                break
            forward = bool(fwd)
            edges.append(PathEdge(source=parent if forward else cur, target=cur if forward else parent,
                                  rel_type=str(rel), forward=forward))
            ids.append(parent)
            cur = parent
        ids.reverse()
        edges.reverse()
        return ids, edges

    @staticmethod
    def _check_hops(hops: Any) -> int:
        if isinstance(hops, bool) or not isinstance(hops, int) or not 1 <= hops <= MAX_HOPS:
            raise MemoryError(ErrorCode.INVALID_PARAMS, f"hops must be an integer from 1 to {MAX_HOPS}",
                              details={"field": "hops", "max": MAX_HOPS})
        return hops

    # -- queries -------------------------------------------------------------------------------
    def related(self, tenant_id: str, ref: str, hops: int = 2, *, limit: int = 50,
                include_entities: bool = False, now: Any = None) -> RelatedResult:
        hops = self._check_hops(hops)
        with observe("find_related", tenant_id, hops) as timer:
            key, stable, hit = self._cached(tenant_id, ("related", ref, hops, limit, include_entities))
            if hit is not None:
                timer.cached = True
                timer.result_count = len(hit.items)
                return hit.model_copy(update={"cached": True})  # type: ignore[no-any-return]
            with self.provider._read() as cur:
                starts = self.resolve(cur, tenant_id, ref)
                tree = self._bfs(cur, tenant_id, starts, hops, None)
                reached = [n for n, v in tree.items() if v[0] > 0]
                nodes = self._nodes(cur, tenant_id, list(tree))
                memory_ids = [n for n in reached if n in nodes and nodes[n].kind == "memory"]
                # Nearest first: fetch rows in pages until ``limit`` live memories are found.
                entries: dict[str, MemoryEntry] = {}
                for i in range(0, len(memory_ids), 2 * limit):
                    page = memory_ids[i:i + 2 * limit]
                    entries.update({e.id: e for e in self.provider._fetch_ids(cur, tenant_id, page, False)
                                    if e.status == "active"
                                    and (now is None or e.expires_at is None or e.expires_at > now)})
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
                items.append(RelatedItem(node=node, hops=tree[node_id][0], nodes=path_nodes, edges=edges,
                                         reasoning=render(path_nodes, edges), memory=entries.get(node_id)))
                if len(items) >= limit:
                    break
            result = RelatedResult(start=[nodes[s] for s in starts if s in nodes], hops=hops, items=items)
            timer.result_count = len(items)
            self._put(self._cache, key, stable, result)
            return result

    def path(self, tenant_id: str, a: str, b: str, *, max_hops: int = MAX_HOPS) -> PathResult:
        max_hops = self._check_hops(max_hops)
        with observe("shortest_path", tenant_id, max_hops) as timer:
            key, stable, hit = self._cached(tenant_id, ("path", a, b, max_hops))
            if hit is not None:
                timer.cached = True
                timer.result_count = len(hit.nodes)
                return hit.model_copy(update={"cached": True})  # type: ignore[no-any-return]
            with self.provider._read() as cur:
                starts = self.resolve(cur, tenant_id, a)
                targets = self.resolve(cur, tenant_id, b)
                tree: dict[str, tuple[int, str | None, str | None, bool | None]] = {}
                if set(starts) & set(targets):
                    node = next(s for s in starts if s in targets)
                    tree = {node: (0, None, None, None)}
                    reached = node
                else:
                    # One BFS per target entity of that name, keeping the shortest.
                    reached = ""
                    for target in targets:
                        candidate = self._bfs(cur, tenant_id, starts, max_hops, target)
                        if target in candidate and (not reached or candidate[target][0] < tree[reached][0]):
                            tree, reached = candidate, target
                if not reached:
                    result = PathResult(found=False)
                else:
                    ids, edges = self._chain(tree, reached)
                    nodes = self._nodes(cur, tenant_id, ids)
                    path_nodes = [nodes[i] for i in ids if i in nodes]
                    result = PathResult(found=True, hops=len(edges), nodes=path_nodes, edges=edges,
                                        reasoning=render(path_nodes, edges))
            timer.result_count = len(result.nodes)
            self._put(self._cache, key, stable, result)
            return result

    def neighbors(self, tenant_id: str, ref: str, *, rel_type: str | None = None,
                  direction: Literal["out", "in", "both"] = "both", limit: int = 100) -> list[Neighbor]:
        with observe("neighbors", tenant_id, 1) as timer, self.provider._read() as cur:
            starts = self.resolve(cur, tenant_id, ref)
            seen: dict[tuple[str, str, str], None] = {}
            for start in starts:
                for node, rel, dirn in cur.execute(NEIGHBORS_SQL, {"tenant": tenant_id, "node": start}).fetchall():
                    if (rel_type is None or rel == rel_type.upper()) and direction in ("both", dirn):
                        seen.setdefault((node, rel, dirn), None)
            nodes = self._nodes(cur, tenant_id, sorted({k[0] for k in seen}))
            out = [Neighbor(node=nodes[n], rel_type=r, direction=d)
                   for (n, r, d) in seen if n in nodes][:limit]
            timer.result_count = len(out)
            return out

    def shared_entity_links(self, tenant_id: str, seeds: Sequence[str], scopes: Sequence[str],
                            limit: int) -> list[tuple[str, str, str, str]]:
        """Memories (in ``scopes``: "layer:scope") sharing an entity with a seed memory:
        (seed id, other id, entity id, entity name), closest seeds first."""
        if not seeds:
            return []
        with self.provider._read() as cur:
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
                   AND list_contains($scopes::JSON::VARCHAR[], m.layer || ':' || m.scope)
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
