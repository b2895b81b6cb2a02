"""Knowledge-graph cost of single adds on a large DuckDB store (one tenant, graph on).

    python benchmarks/graph_add.py [--memories 20000] [--adds 200] [--db built.duckdb] [--keep built.duckdb]

Builds a store of ``--memories`` memories in one tenant through ``Memory.bulk_add`` (hashing
embedder: the ONNX one would make building the store take far longer than the adds measured; the
graph's share of an add does not depend on the embedder). Every memory mentions a person, one
project of a large pool and a shared tool, so the graph has many entities, most of them mentioned
by a handful of memories. ``--keep`` saves the built file; ``--db`` starts from a copy of such a
file instead of building one, so repeated runs (before/after a change) time the same store.

Then it times single ``Memory.add`` calls, alternating two kinds:

* ``plain``: a new memory;
* ``supersede``: a new memory with ``supersedes=[an older active memory]``, which marks the older
  memory superseded and soft-deletes its graph rows (``GraphStore.soft_delete``).

Every statement the graph runs inside these adds is timed too (the graph's cursor is wrapped), and
reported per statement kind (its first words): count per add, p50 and total. Prints tables and
writes benchmarks/results/graph_add.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import re
import shutil
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import duckdb

from stratamem import Memory, TenantContext

RESULTS = Path(__file__).resolve().parent / "results"
PEOPLE = ["Alice", "Bob Smith", "Carol", "Dave", "Erin", "Frank", "Grace Hopper", "Heidi", "Ivan", "Judy"]
VERBS = ["works on", "reported a bug in", "fixed", "depends on", "manages", "joined", "reviewed", "deployed"]
TOOLS = ["Redis", "PostgreSQL", "Kubernetes", "Kafka", "Terraform", "Grafana"]
PROJECTS = 5000
CTX = TenantContext(tenant_id="bench")
IDS = {"user_id": "u1"}
LOOKUP_INDEXES = [
    ("memory_edges", "memory_id"),
    ("memory_edges", "source_id"),
    ("memory_edges", "target_id"),
    ("entity_edges", "memory_id"),
    ("entity_edges", "source_id"),
    ("entity_edges", "target_id"),
    ("memory_nodes", "node_id"),
    ("entities", "entity_id"),
]


def sentence(rng: random.Random, i: int) -> str:
    project = f"Project P{rng.randrange(PROJECTS)}"
    return f"{rng.choice(PEOPLE)} {rng.choice(VERBS)} {project} with {rng.choice(TOOLS)} (note {i})."


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def build(path: Path, memories: int, rng: random.Random) -> None:
    with Memory.open(path, embedder="hashing") as mem:
        for start in range(0, memories, 1000):
            items = [
                {"content": sentence(rng, i), "layer": "user", "identifiers": IDS}
                for i in range(start, min(memories, start + 1000))
            ]
            mem.bulk_add(CTX, items)


class TimedCursor:
    """The graph's cursor with every ``execute`` timed under the statement's first words."""

    def __init__(self, inner: Any, times: dict[str, list[float]]) -> None:
        self._inner = inner
        self._times = times

    def execute(self, sql: str, *args: Any) -> Any:
        words = re.sub(r"\s+", " ", sql.strip()).split(" ")
        key = " ".join(words[:3])
        t0 = time.perf_counter()
        out = self._inner.execute(sql, *args)
        self._times[key].append((time.perf_counter() - t0) * 1000)
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--memories", type=int, default=20_000)
    ap.add_argument("--adds", type=int, default=200, help="single adds timed (half of them supersede one)")
    ap.add_argument("--db", type=Path, help="a store built by --keep (copied, never changed)")
    ap.add_argument("--keep", type=Path, help="save the built store here")
    ap.add_argument(
        "--lookup-indexes",
        action="store_true",
        help="add single-column ART indexes on the graph's id columns to the copy (an experiment: the schema has none)",
    )
    ap.add_argument("--out", type=Path, default=RESULTS / "graph_add.json")
    args = ap.parse_args()
    rng = random.Random(11)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "graph_add.duckdb"
        if args.db:
            shutil.copy(args.db, path)
            build_s = 0.0
        else:
            t0 = time.perf_counter()
            build(path, args.memories, rng)
            build_s = time.perf_counter() - t0
            if args.keep:
                shutil.copy(path, args.keep)
        if args.lookup_indexes:
            with duckdb.connect(str(path)) as con:
                for table, column in LOOKUP_INDEXES:
                    con.execute(f"CREATE INDEX IF NOT EXISTS bench_{table}_{column} ON {table} ({column})")
        with Memory.open(path, embedder="hashing") as mem:
            active = [e.id for e in mem.engine.provider.iter_entries(CTX.tenant_id) if e.status == "active"]
            rng.shuffle(active)
            graph: Any = mem.graph
            store = graph.store
            inner = store.cursor
            times: dict[str, dict[str, list[float]]] = {"plain": defaultdict(list), "supersede": defaultdict(list)}
            kind_now = ["plain"]
            store.cursor = lambda tx: TimedCursor(inner(tx), times[kind_now[0]])
            for i in range(5):  # warm-up: caches, prepared plans
                mem.add(CTX, content=sentence(rng, -i), layer="user", identifiers=IDS)
            for t in times.values():
                t.clear()
            lat: dict[str, list[float]] = {"plain": [], "supersede": []}
            for i in range(args.adds):
                kind = "supersede" if i % 2 else "plain"
                kind_now[0] = kind
                old = [active.pop()] if kind == "supersede" else None
                content = sentence(rng, args.memories + i)
                t0 = time.perf_counter()
                out = mem.add(CTX, content=content, layer="user", identifiers=IDS, supersedes=old)
                lat[kind].append((time.perf_counter() - t0) * 1000)
                if old:
                    assert out.superseded == old, (out.superseded, old)
    rows = [
        {
            "add": kind,
            "n": len(values),
            "p50_ms": round(statistics.median(values), 2),
            "p95_ms": round(pct(values, 0.95), 2),
            "graph_sql_ms_per_add": round(sum(sum(v) for v in times[kind].values()) / len(values), 2),
        }
        for kind, values in lat.items()
    ]
    statements = [
        {
            "add": kind,
            "statement": key,
            "per_add": round(len(values) / len(lat[kind]), 2),
            "p50_ms": round(statistics.median(values), 3),
            "ms_per_add": round(sum(values) / len(lat[kind]), 3),
        }
        for kind, per in times.items()
        for key, values in sorted(per.items(), key=lambda kv: -sum(kv[1]))
    ]
    print(f"store: {args.db or f'{args.memories} memories built in {build_s:.1f} s'}")
    for table in (rows, statements):
        cols = list(table[0])
        print(" | ".join(cols))
        print(" | ".join("---" for _ in cols))
        for row in table:
            print(" | ".join(str(row[c]) for c in cols))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps({"machine": platform.platform(), "adds": rows, "statements": statements}, indent=2) + "\n"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
