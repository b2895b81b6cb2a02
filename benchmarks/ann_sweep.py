"""HNSW search expansion against partition size, on real sentence embeddings.

    python benchmarks/ann_sweep.py [--sizes 100000 300000 1000000] [--expansions 192 384 512 768 896]
        [--queries 600] [--embedder onnx] [--cache DIR] [--store-check]

As many sentences of ``benchmarks/sentences.py`` as the largest size (the texts ``scale.py`` stores
in its big partition, same seed) are embedded once and kept in ``--cache`` (default
``~/.cache/stratamem/bench``; 1M sentences take ~55 min with ONNX on 2 cores, 1.5 GB). For each size
the first ``size`` vectors get an HNSW graph built as the store builds it (``SearchIndex`` defaults:
int8, connectivity 32, expansion 128 on add; 2 threads here, 1 in the store). Each expansion, and
the one ``search_expansion`` picks for that size, is measured: dense recall@10 of the 64 best
candidates re-scored in float32 against the exact top 10 (numpy), and the graph search's latency.
The queries are the questions of ``--queries`` facts sampled like ``scale.py`` samples them.

``--store-check`` then stores the largest size through the SDK (``Memory.bulk_add`` with an
embedder that looks the cached vectors up, graph off), and compares ``provider.search`` (hybrid and
dense, the expansion ``search_expansion`` picks) with ``exact=True``: recall@10 and latency.

Prints a table, writes benchmarks/results/ann_sweep.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shlex
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from sentences import SentenceGenerator
from stratamem import Memory, MemoryConfig, TenantContext
from stratamem.embeddings import make_embedder
from stratamem.embeddings.base import Embedder, Matrix
from stratamem.layers import scope_key
from stratamem.model import Layer, LayerIdentifiers
from stratamem.providers.base import Scope, SearchQuery
from stratamem.retrieval.search_index import SearchIndex, search_expansion

OTHER = 100 * 100  # scale.py stores 100 tenants of 100 memories first
CANDIDATES = 64  # dense candidates an ANN search re-scores (search_index.Partition.search)


def texts_and_queries(size: int, queries: int, seed: int) -> tuple[list[str], list[str]]:
    gen = iter(SentenceGenerator(seed))
    for _ in range(OTHER):
        next(gen)
    facts = [next(gen) for _ in range(size)]
    targets = sorted(random.Random(seed + size).sample(range(size), min(size, queries)))
    return [f.text for f in facts], list(dict.fromkeys(facts[i].query for i in targets))


def cached_vectors(
    texts: Sequence[str], qtexts: Sequence[str], embedder: Embedder, folder: Path, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """The texts' vectors from the cache (a file of at least as many sentences of the same seed and
    model: its first rows are these texts), embedded and written there first if there is none."""
    folder.mkdir(parents=True, exist_ok=True)
    model = embedder.model_id.replace("/", "_")
    for done in sorted(folder.glob(f"sentences-{seed}-*-{model}.done"), key=lambda p: int(p.name.split("-")[2])):
        if int(done.name.split("-")[2]) >= len(texts):
            return (
                np.load(done.with_suffix(".npy"), mmap_mode="r")[: len(texts)],
                np.asarray(embedder.embed(list(qtexts)), dtype=np.float32),
            )
    stem = folder / f"sentences-{seed}-{len(texts)}-{model}"
    out = np.lib.format.open_memmap(
        stem.with_suffix(".npy"), mode="w+", dtype=np.float32, shape=(len(texts), embedder.dimensions)
    )
    t0 = time.perf_counter()
    for start in range(0, len(texts), 1000):
        out[start : start + 1000] = embedder.embed(list(texts[start : start + 1000]))
        if start % 100_000 == 0:
            print(f"embedded {start:,} sentences in {time.perf_counter() - t0:.0f} s", flush=True)
    out.flush()
    del out
    stem.with_suffix(".done").write_text("ok")
    return (
        np.load(stem.with_suffix(".npy"), mmap_mode="r"),
        np.asarray(embedder.embed(list(qtexts)), dtype=np.float32),
    )


def exact_top(x: np.ndarray, q: np.ndarray, k: int = 10) -> np.ndarray:
    """Row ids of the exact cosine top ``k`` per query (vectors are unit length)."""
    best = np.full((len(q), k), -1, dtype=np.int64)
    scores = np.full((len(q), k), -np.inf, dtype=np.float32)
    for start in range(0, len(x), 100_000):
        block = q @ np.asarray(x[start : start + 100_000]).T
        idx = np.argpartition(-block, k, axis=1)[:, :k]
        cand = np.concatenate([best, idx + start], axis=1)
        cs = np.concatenate([scores, np.take_along_axis(block, idx, 1)], axis=1)
        order = np.argsort(-cs, axis=1)[:, :k]
        best, scores = np.take_along_axis(cand, order, 1), np.take_along_axis(cs, order, 1)
    return best


def sweep(x: np.ndarray, q: np.ndarray, expansions: Sequence[int]) -> list[dict[str, Any]]:
    from usearch.index import Index

    defaults = SearchIndex(x.shape[1], None)
    x = np.ascontiguousarray(x)  # in memory, as the store's partition matrix
    want = exact_top(x, q)
    graph = Index(
        ndim=x.shape[1],
        metric="cos",
        dtype=defaults.ann_dtype,
        connectivity=defaults.connectivity,
        expansion_add=defaults.expansion_add,
    )
    t0 = time.perf_counter()
    graph.add(np.arange(len(x), dtype=np.int64), x, threads=2)
    build_s = time.perf_counter() - t0
    rows = []
    for ef in sorted({*expansions, search_expansion(defaults.expansion_search, len(x))}):
        graph.expansion_search = ef
        recalls, ms = [], []
        for i in range(len(q)):
            t1 = time.perf_counter()
            keys = np.asarray(graph.search(q[i], CANDIDATES, threads=1).keys, dtype=np.int64).reshape(-1)
            top = keys[np.argsort(-(x[keys] @ q[i]))[:10]]
            ms.append((time.perf_counter() - t1) * 1000)
            recalls.append(len(set(top.tolist()) & set(want[i].tolist())) / 10)
        ms.sort()
        rows.append(
            {
                "rows": len(x),
                "expansion": ef,
                "recall_dense": statistics.fmean(recalls),
                "graph_p50_ms": statistics.median(ms),
                "graph_p95_ms": ms[int(0.95 * len(ms))],
                "build_s": build_s,
                "chosen": ef == search_expansion(defaults.expansion_search, len(x)),
            }
        )
        print(
            f"{len(x):>9,} rows  expansion {ef:>4}  recall {rows[-1]['recall_dense']:.3f}  "
            f"p50 {rows[-1]['graph_p50_ms']:.2f} ms",
            flush=True,
        )
    return rows


class _Lookup(Embedder):
    """The cached vectors of known texts (no model): stores a million rows in minutes."""

    def __init__(
        self, model_id: str, texts: Sequence[str], x: np.ndarray, qtexts: Sequence[str], q: np.ndarray
    ) -> None:
        self.model_id, self.dimensions = model_id, x.shape[1]
        self._rows = {t: i for i, t in enumerate(texts)}
        self._queries = {t: i for i, t in enumerate(qtexts)}
        self._x, self._q = x, q

    def embed(self, texts: Sequence[str]) -> Matrix:
        out = np.empty((len(texts), self.dimensions), dtype=np.float32)
        for k, text in enumerate(texts):
            if text in self._rows:
                out[k] = self._x[self._rows[text]]
            elif text in self._queries:
                out[k] = self._q[self._queries[text]]
            else:
                raise KeyError(f"no cached vector for {text[:40]!r}")
        return out


def store_check(
    texts: Sequence[str], x: np.ndarray, qtexts: Sequence[str], q: np.ndarray, model_id: str
) -> dict[str, Any]:
    ctx, ids = TenantContext(tenant_id="bench-main"), {"user_id": "u1"}
    out: dict[str, Any] = {"rows": len(texts)}
    with (
        tempfile.TemporaryDirectory(prefix="stratamem-ann-") as tmp,
        Memory.open(
            Path(tmp) / "sweep.duckdb",
            embedder=_Lookup(model_id, texts, x, qtexts, q),
            config=MemoryConfig(graph_enabled=False),
        ) as mem,
    ):
        t0 = time.perf_counter()
        for start in range(0, len(texts), 1000):
            mem.bulk_add(
                ctx, [{"content": t, "layer": "user", "identifiers": ids} for t in texts[start : start + 1000]]
            )
        out["store_s"] = time.perf_counter() - t0
        provider = mem.engine.provider
        scope = Scope(Layer.USER, scope_key(Layer.USER, LayerIdentifiers.model_validate(ids)))

        def query(i: int, weight: float, exact: bool = False) -> SearchQuery:
            return SearchQuery(
                tenant_id=ctx.tenant_id,
                scope=scope,
                vector=q[i],
                text=qtexts[i],
                limit=10,
                min_score=0.0,
                now=datetime.now(UTC),
                include_embedding=True,
                lexical_weight=weight,
                exact=exact,
            )

        provider.search(query(0, 0.0))
        index = provider.search_index  # type: ignore[attr-defined]
        index.wait_ready(7200)
        out["index_ready_s"] = time.perf_counter() - t0 - out["store_s"]
        out["expansion"] = index.stats()["ann_partitions"][0]["expansion_search"]
        for name, weight in (("hybrid", mem.engine.config.hybrid_weight), ("dense", 0.0)):
            ms, got = [], []
            for i in range(len(q)):  # timed apart from the exact scans, which evict the caches
                t1 = time.perf_counter()
                got.append({h.entry.id for h in provider.search(query(i, weight)).hits})
                ms.append((time.perf_counter() - t1) * 1000)
            recalls = []
            for i in range(len(q)):
                want = {h.entry.id for h in provider.search(query(i, weight, exact=True)).hits}
                recalls.append(len(got[i] & want) / len(want))
            ms.sort()
            out[f"recall_{name}"] = statistics.fmean(recalls)
            out[f"{name}_p50_ms"], out[f"{name}_p95_ms"] = statistics.median(ms), ms[int(0.95 * len(ms))]
    print(
        f"store check, {len(texts):,} rows, expansion {out['expansion']}: recall hybrid "
        f"{out['recall_hybrid']:.3f} / dense {out['recall_dense']:.3f}; provider.search p50 hybrid "
        f"{out['hybrid_p50_ms']:.2f} ms / dense {out['dense_p50_ms']:.2f} ms",
        flush=True,
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 300_000, 1_000_000])
    parser.add_argument("--expansions", type=int, nargs="+", default=[192, 256, 384, 512, 768, 896])
    parser.add_argument("--queries", type=int, default=600)
    parser.add_argument("--embedder", default="onnx", help="local, onnx[:DIR] or hashing[:DIM]")
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "stratamem" / "bench")
    parser.add_argument(
        "--store-check",
        action="store_true",
        help="also store the largest size through the SDK and check provider.search",
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "ann_sweep.json")
    args = parser.parse_args()

    largest = max(args.sizes)
    embedder = make_embedder(args.embedder)
    texts, qtexts = texts_and_queries(largest, args.queries, args.seed)
    x, q = cached_vectors(texts, qtexts, embedder, args.cache, args.seed)
    rows = [row for size in sorted(args.sizes) for row in sweep(x[:size], q, args.expansions)]
    check = store_check(texts, x, qtexts, q, embedder.model_id) if args.store_check else None

    print(f"\n{'rows':>9} | {'expansion':>9} | {'recall@10 dense':>15} | {'graph p50 ms':>12} | chosen")
    for r in rows:
        print(
            f"{r['rows']:>9,} | {r['expansion']:>9} | {r['recall_dense']:>15.3f} | {r['graph_p50_ms']:>12.2f} | "
            f"{'<-' if r['chosen'] else ''}"
        )
    picks = ", ".join(f"{s:,} rows -> {search_expansion(192, s)}" for s in sorted(args.sizes))
    print(f"search_expansion picks: {picks}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "benchmark": "ann_sweep",
                "command": shlex.join(["python", *sys.argv]),
                "date": datetime.now(UTC).isoformat(timespec="seconds"),
                "machine": {
                    "platform": platform.platform(),
                    "cpus": os.cpu_count(),
                    "python": platform.python_version(),
                },
                "embedder": embedder.model_id,
                "queries": len(qtexts),
                "sweep": rows,
                "store_check": check,
            },
            indent=2,
        )
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
