"""Compressed adjacency of one tenant's graph and vectorised breadth-first search over it (numpy).

Node ids are sorted and numbered, so "the smallest id" is "the smallest index" and every tie rule of
the recursive CTE (:data:`~stratamem.graph.traverse.BFS_SQL`) and of the reference
:func:`~stratamem.graph.traverse.bfs_in_memory` becomes an integer comparison:

* a node's hop distance is the level at which it is first reached;
* its parent is the smallest-id node of the previous level adjacent to it;
* the edge kept from that parent is the smallest ``(rel_type, forward)`` one (relation codes are
  numbered in string order, ``False < True``).

Each level expands the whole frontier at once: the CSR rows of the frontier are gathered with
``np.repeat`` / ``np.cumsum``, already-reached nodes are masked out, and one stable sort by target
picks each new node's parent (rows are emitted parent-major and sorted by ``(target, rel, forward)``
inside a row, so the first entry per target is the tie winner). A hub entity costs one array slice,
not a Python loop over its neighbours.

:meth:`CSRGraph.shortest` is a bidirectional search (the smaller frontier grows first) that returns
exactly the path the one-sided search would: the canonical chain is rebuilt from the target by
choosing, at each step, the smallest-id neighbour that lies on a shortest path one level closer to
the start.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


class CSRGraph:
    """Undirected view (each stored edge in both directions) of one tenant's edges."""

    def __init__(
        self, ids: Sequence[str], src: Sequence[str], dst: Sequence[str], rel: Sequence[str], fwd: Sequence[bool]
    ) -> None:
        self.ids: list[str] = sorted({*ids, *src, *dst})
        self.index: dict[str, int] = {x: i for i, x in enumerate(self.ids)}
        n = len(self.ids)
        self.n = n
        rels = sorted(set(rel))
        code = {r: i for i, r in enumerate(rels)}
        index = self.index
        s = np.fromiter((index[x] for x in src), dtype=np.int64, count=len(src))
        d = np.fromiter((index[x] for x in dst), dtype=np.int64, count=len(dst))
        r = np.fromiter((code[x] for x in rel), dtype=np.int64, count=len(rel))
        f = np.fromiter(fwd, dtype=np.bool_, count=len(fwd))
        order = np.lexsort((f, r, d, s))
        s, d, r, f = s[order], d[order], r[order], f[order]
        self.rels: list[str] = [str(x) for x in rels]
        self.indices: IntArray = d
        self.rel: IntArray = r
        self.fwd: BoolArray = f
        self.indptr: IntArray = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(s, minlength=n), out=self.indptr[1:])

    # -- helpers -------------------------------------------------------------------------------
    def _gather(self, frontier: IntArray) -> tuple[IntArray, IntArray]:
        """(source node, CSR position) of every adjacency entry of ``frontier``, source-major."""
        begin = self.indptr[frontier]
        counts = self.indptr[frontier + 1] - begin
        total = int(counts.sum())
        if total == 0:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty
        offsets = np.cumsum(counts) - counts
        pos = np.arange(total, dtype=np.int64) + np.repeat(begin - offsets, counts)
        return np.repeat(frontier, counts), pos

    def degree(self, nodes: IntArray) -> int:
        return int((self.indptr[nodes + 1] - self.indptr[nodes]).sum())

    def edge(self, pos: int) -> tuple[str, bool]:
        return self.rels[int(self.rel[pos])], bool(self.fwd[pos])

    def edge_between(self, parent: int, child: int) -> int:
        """CSR position of the smallest ``(rel, forward)`` entry ``parent → child``."""
        lo, hi = int(self.indptr[parent]), int(self.indptr[parent + 1])
        return lo + int(np.searchsorted(self.indices[lo:hi], child))

    # -- breadth-first search ------------------------------------------------------------------
    def levels(self, starts: Sequence[int], hops: int, state: BfsState) -> Iterator[IntArray]:
        """Grow ``state`` level by level (up to ``hops``); yields each new level's nodes, id order."""
        frontier = np.unique(np.asarray(starts, dtype=np.int64))
        state.dist[frontier] = 0
        yield frontier
        for level in range(1, hops + 1):
            src, pos = self._gather(frontier)
            if not len(pos):
                return
            dst = self.indices[pos]
            fresh = state.dist[dst] < 0
            src, pos, dst = src[fresh], pos[fresh], dst[fresh]
            if not len(dst):
                return
            order = np.argsort(dst, kind="stable")
            dst, first = np.unique(dst[order], return_index=True)
            state.dist[dst] = level
            state.parent[dst] = src[order][first]
            state.edge[dst] = pos[order][first]
            frontier = dst
            yield frontier

    def new_state(self) -> BfsState:
        return BfsState(self.n)

    def chain(self, state: BfsState, node: int) -> list[int]:
        out = [node]
        while state.parent[out[-1]] >= 0:
            out.append(int(state.parent[out[-1]]))
        out.reverse()
        return out

    def shortest(self, starts: Sequence[int], target: int, max_hops: int) -> tuple[list[int], list[int]] | None:
        """Nodes and CSR edge positions of the canonical shortest path (None beyond ``max_hops``)."""
        n = self.n
        start_set = np.unique(np.asarray(starts, dtype=np.int64))
        if target in set(start_set.tolist()):
            return [target], []
        ds = np.full(n, -1, dtype=np.int64)
        dt = np.full(n, -1, dtype=np.int64)
        ds[start_set] = 0
        dt[target] = 0
        fs, ft = start_set, np.asarray([target], dtype=np.int64)
        ks = kt = 0
        meet = np.zeros(0, dtype=np.int64)
        while ks + kt < max_hops:
            grow_start = self.degree(fs) <= self.degree(ft)
            frontier, dist = (fs, ds) if grow_start else (ft, dt)
            _, pos = self._gather(frontier)
            nxt = np.unique(self.indices[pos])
            nxt = nxt[dist[nxt] < 0]
            if not len(nxt):
                return None
            if grow_start:
                ks += 1
                ds[nxt] = ks
                fs = nxt
                meet = nxt[dt[nxt] >= 0]
            else:
                kt += 1
                dt[nxt] = kt
                ft = nxt
                meet = nxt[ds[nxt] >= 0]
            if len(meet):
                break
        if not len(meet):
            return None
        total = ks + kt
        # on_path[m]: nodes at forward distance m on some shortest path, for m beyond the start side
        on_path: dict[int, BoolArray] = {}
        layer = np.zeros(n, dtype=np.bool_)
        layer[np.flatnonzero((ds == ks) & (dt == total - ks))] = True
        on_path[ks] = layer
        for m in range(ks + 1, total + 1):
            _, pos = self._gather(np.flatnonzero(on_path[m - 1]))
            nb = np.unique(self.indices[pos])
            nxt_layer = np.zeros(n, dtype=np.bool_)
            nxt_layer[nb[dt[nb] == total - m]] = True
            on_path[m] = nxt_layer
        nodes = [target]
        edges: list[int] = []
        x = target
        for m in range(total, 0, -1):
            lo, hi = int(self.indptr[x]), int(self.indptr[x + 1])
            nb = self.indices[lo:hi]
            ok = ds[nb] == m - 1 if m - 1 <= ks else on_path[m - 1][nb]
            parent = int(nb[ok].min())
            edges.append(self.edge_between(parent, x))
            nodes.append(parent)
            x = parent
        nodes.reverse()
        edges.reverse()
        return nodes, edges


class BfsState:
    """Per-query arrays: hop distance (-1 = unreached), parent node and CSR edge position."""

    def __init__(self, n: int) -> None:
        self.dist: IntArray = np.full(n, -1, dtype=np.int64)
        self.parent: IntArray = np.full(n, -1, dtype=np.int64)
        self.edge: IntArray = np.full(n, -1, dtype=np.int64)

    def tree(self, graph: CSRGraph) -> dict[str, tuple[int, str | None, str | None, bool | None]]:
        """The reached tree as :func:`bfs_in_memory` returns it (ordered by distance, then id)."""
        reached = np.flatnonzero(self.dist >= 0)
        reached = reached[np.lexsort((reached, self.dist[reached]))]
        out: dict[str, tuple[int, str | None, str | None, bool | None]] = {}
        for i in reached.tolist():
            p = int(self.parent[i])
            if p < 0:
                out[graph.ids[i]] = (0, None, None, None)
            else:
                rel, fwd = graph.edge(int(self.edge[i]))
                out[graph.ids[i]] = (int(self.dist[i]), graph.ids[p], rel, fwd)
        return out


def as_index(graph: CSRGraph, ids: Sequence[str]) -> list[int]:
    return [graph.index[i] for i in ids if i in graph.index]


__all__ = ["BfsState", "CSRGraph", "as_index"]
