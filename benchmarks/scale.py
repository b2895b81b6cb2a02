"""Scale benchmark: one big partition among many tenants, on realistic sentences.

    python benchmarks/scale.py [--sizes 10000 100000] [--embedder local] [--queries 200] \\
        [--other-tenants 100] [--other-size 100] [--ann-threshold N] [--keep DIR] [--inline-appends]

For each size, on a fresh DuckDB file through the public SDK: ``--other-tenants`` tenants of
``--other-size`` memories each are stored first, then ``size`` memories of one tenant in ONE partition
(layer ``user``, ``user_id=u1``), all with ``bulk_add`` batches of 1000 sentences from
``benchmarks/sentences.py`` (random Gaussian vectors would make every ANN index look broken).

Measured:

* ingest rate of the big tenant (memories/s, ``bulk_add`` calls only) against the embedder's own
  batched throughput (``embedder.embed`` of the same 1000 texts just before each of the first
  ``--embed-sample`` / 1000 batches, so both see the same load on the machine); the ratio (ingest
  of those batches / embedder on the same texts) is the share of the model's speed ingestion keeps;
* warm-up: the first search after ingesting (it loads the partition into the provider's in-process
  search index) and the time until its HNSW index is built (``search_index.wait_ready()``); then,
  after closing and reopening the store, the open time, the first search and the time from the open
  until the index is ready again (the index lives in process memory only);
* search latency p50/p95: (a) ``mem.search`` end to end with distinct queries (query embedding
  included), (b) the same queries again (query vectors cached by the engine), (c) the provider alone
  (``provider.search(SearchQuery(...))`` built like ``MemoryEngine.search`` does, vectors embedded
  beforehand) at ``min_score`` 0 and 0.7, and the exact scan (``exact=True``) for reference; plus the
  query embedding on its own. (a) and (b) run twice: with the default bookkeeping (the access
  statistics and the ``memory_events`` row handed to the store before ``search`` returns and written
  by its append worker right after; ``--inline-appends``: written before it returns), then with both
  queued by the engine's background workers (``access_write``/``events_write="background"``); that
  variant runs once more with ``--pace-ms`` between searches (back to back, the workers' writes compete with the
  next query's embedding for the cores; paced, they finish between requests, as with an agent that
  does something between two searches);
* recall@10 of the default (ANN) path against ``exact=True``, hybrid (``hybrid_weight``) and dense only;
* RSS (now, and the process peak ``ru_maxrss``, which covers every size run so far), and the size of
  the ``.duckdb`` file plus its ``.wal`` after closing.

Targets (at 100k): search p50 <= 10 ms, p95 <= 25 ms end to end; provider p50 <= 3 ms; ingest >= 90 %
of the embedder's batched throughput; recall@10 >= 0.95. Prints a table (rows = metrics, columns =
sizes), writes benchmarks/results/scale.json with the machine and the command line.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import random
import resource
import shlex
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from sentences import Fact, SentenceGenerator
from stratamem import Memory, TenantContext
from stratamem.config import MemoryConfig
from stratamem.embeddings import Embedder, make_embedder
from stratamem.embeddings.base import Matrix
from stratamem.layers import scope_key
from stratamem.model import Layer, LayerIdentifiers
from stratamem.providers.base import Scope, SearchQuery
from stratamem.providers.duckdb import DuckDBProvider
from stratamem.retrieval.search_index import SearchIndex

BATCH = 1000
MAIN = TenantContext(tenant_id="bench-main")
MAIN_IDS = {"user_id": "u1"}
#: Warm-up queries (first search after ingesting, first after reopening); never among the timed ones.
WARM = ("What does the user usually prefer for meetings?", "Which tools does the team use for deployments?")

# (key, label, target) in table order; the target column states what the issue asks for at 100k.
ROWS: tuple[tuple[str, str, str], ...] = (
    ("memories", "memories in the big partition", ""),
    ("other_memories", "memories of other tenants", ""),
    ("other_ingest_per_s", "ingest, other tenants (memories/s)", ""),
    ("embed_per_s", "embedder batched throughput (texts/s)", ""),
    ("ingest_per_s", "ingest, big tenant (memories/s)", ""),
    ("ingest_sample_per_s", "ingest, same texts as the embedder (memories/s)", ""),
    ("ingest_ratio", "ingest / embedder throughput, same texts", ">= 0.90"),
    ("ingest_first_search_ms", "first search after ingest (ms)", ""),
    ("ingest_ready_s", "index ready after ingest (s)", ""),
    ("ann_partitions", "partitions served by ANN", ""),
    ("open_s", "reopen: Memory.open (s)", ""),
    ("first_search_ms", "reopen: first search (ms)", ""),
    ("ready_after_open_s", "reopen: index ready after open (s)", ""),
    ("search_p50_ms", "search end to end p50, default bookkeeping (ms)", "<= 10"),
    ("search_p95_ms", "search end to end p95, default bookkeeping (ms)", "<= 25"),
    ("search_cached_p50_ms", "search, query vector cached p50 (ms)", ""),
    ("search_cached_p95_ms", "search, query vector cached p95 (ms)", ""),
    ("search_bg_p50_ms", "search end to end, background bookkeeping p50 (ms)", "<= 10"),
    ("search_bg_p95_ms", "search end to end, background bookkeeping p95 (ms)", "<= 25"),
    ("search_cached_bg_p50_ms", "search cached, background bookkeeping p50 (ms)", ""),
    ("search_cached_bg_p95_ms", "search cached, background bookkeeping p95 (ms)", ""),
    ("search_paced_p50_ms", "search end to end, background, paced p50 (ms)", "<= 10"),
    ("search_paced_p95_ms", "search end to end, background, paced p95 (ms)", "<= 25"),
    ("provider_p50_ms", "provider search p50 (ms)", "<= 3"),
    ("provider_p95_ms", "provider search p95 (ms)", ""),
    ("provider_ms07_p50_ms", "provider search min_score 0.7 p50 (ms)", "<= 3"),
    ("provider_ms07_p95_ms", "provider search min_score 0.7 p95 (ms)", ""),
    ("exact_p50_ms", "provider exact scan p50 (ms)", ""),
    ("exact_p95_ms", "provider exact scan p95 (ms)", ""),
    ("query_embed_p50_ms", "query embedding alone p50 (ms)", ""),
    ("recall_hybrid", "recall@10 vs exact, hybrid", ">= 0.95"),
    ("recall_dense", "recall@10 vs exact, dense only", ">= 0.95"),
    ("rss_baseline_mb", "RSS before open (MB)", ""),
    ("rss_after_ingest_mb", "RSS after ingest (MB)", ""),
    ("rss_end_mb", "RSS after searches (MB)", ""),
    ("rss_peak_mb", "peak RSS of the process so far (MB)", ""),
    ("file_mb", "file size .duckdb + .wal (MB)", ""),
)


def pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def rss_mb() -> float:
    """Current resident set size (VmRSS) in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux


def file_mb(path: Path) -> float:
    wal = path.with_name(path.name + ".wal")
    return sum(p.stat().st_size for p in (path, wal) if p.exists()) / 1e6


def timed_ms(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000


def batches(gen: Iterator[Fact], n: int) -> Iterator[list[Fact]]:
    done = 0
    while done < n:
        k = min(BATCH, n - done)
        yield [next(gen) for _ in range(k)]
        done += k


def memory_config(args: argparse.Namespace) -> MemoryConfig:
    return MemoryConfig(ann_threshold=args.ann_threshold, graph_enabled=not args.no_graph)


def open_memory(path: Path, embedder: Embedder, args: argparse.Namespace) -> Memory:
    return Memory.open(
        DuckDBProvider(path, defer_appends=not args.inline_appends), embedder=embedder, config=memory_config(args)
    )


def duckdb_provider(mem: Memory) -> DuckDBProvider:
    provider = mem.engine.provider
    assert isinstance(provider, DuckDBProvider), "the scale benchmark runs on the DuckDB provider"
    return provider


def search_index(provider: DuckDBProvider) -> SearchIndex:
    index = provider.search_index
    assert index is not None, "the search index is disabled (MemoryConfig.search_index)"
    return index


def wait_index(provider: DuckDBProvider) -> None:
    """Block until every background HNSW build has finished."""
    if not search_index(provider).wait_ready(timeout=3600):
        raise RuntimeError("the search index was not ready after an hour")


def ingest_others(mem: Memory, gen: Iterator[Fact], tenants: int, per_tenant: int) -> float:
    """Store the other tenants' memories; returns memories per second."""
    start = time.perf_counter()
    for t in range(tenants):
        ctx = TenantContext(tenant_id=f"other-{t:03d}")
        for batch in batches(gen, per_tenant):
            mem.bulk_add(
                ctx,
                [
                    {"content": f.text, "layer": "user", "identifiers": {"user_id": f"u{i % 3 + 1}"}}
                    for i, f in enumerate(batch)
                ],
            )
    elapsed = time.perf_counter() - start
    return tenants * per_tenant / elapsed if elapsed > 0 else float("nan")


@dataclasses.dataclass
class Ingest:
    per_s: float  # memories per second over every bulk_add call of the big partition
    sample_per_s: float  # the same, over the sample batches only
    embed_per_s: float  # embedder.embed alone on the sample batches' texts
    queries: list[str]  # queries of the facts at the target positions


def ingest_main(
    mem: Memory, embedder: Embedder, gen: Iterator[Fact], size: int, sample: int, targets: set[int]
) -> Ingest:
    """Store ``size`` facts in the big partition with ``bulk_add`` batches of ``BATCH``.

    Right before each of the batches holding the first ``sample`` facts, the same texts go through
    ``embedder.embed`` alone, so the model's own throughput is measured on the same texts and under
    the same conditions (other load on the machine) as their ingestion.
    """
    spent = sample_spent = embed_spent = 0.0
    embedded = 0
    queries: list[str] = []
    for start, batch in zip(range(0, size, BATCH), batches(gen, size), strict=True):
        queries += [f.query for i, f in enumerate(batch, start) if i in targets]
        texts = [f.text for f in batch]
        if start < sample:
            t0 = time.perf_counter()
            embedder.embed(texts)
            embed_spent += time.perf_counter() - t0
        items = [{"content": text, "layer": "user", "identifiers": MAIN_IDS} for text in texts]
        t0 = time.perf_counter()
        mem.bulk_add(MAIN, items)
        took = time.perf_counter() - t0
        spent += took
        if start < sample:
            sample_spent += took
            embedded += len(texts)
    return Ingest(size / spent, embedded / sample_spent, embedded / embed_spent, queries)


def sdk(mem: Memory, query: str) -> Callable[[], object]:
    """An SDK search of the big partition (threshold 0: every query gets its 10 hits)."""
    return lambda: mem.search(MAIN, query, identifiers=MAIN_IDS, layers=["user"], limit=10, threshold=0.0)


def embed_one(embedder: Embedder, query: str) -> Callable[[], object]:
    return lambda: embedder.embed_queries([query])  # what a search runs (the int8 query model by default)


def search_query(
    vector: Any, text: str, lexical_weight: float, *, min_score: float = 0.0, exact: bool = False
) -> SearchQuery:
    """The query ``MemoryEngine.search`` sends to the provider for the big partition."""
    ids = LayerIdentifiers.model_validate(MAIN_IDS)
    return SearchQuery(
        tenant_id=MAIN.tenant_id,
        scope=Scope(Layer.USER, scope_key(Layer.USER, ids)),
        vector=vector,
        text=text,
        limit=10,
        min_score=min_score,
        now=datetime.now(UTC),
        include_embedding=True,
        lexical_weight=lexical_weight,
        exact=exact,
    )


def run(size: int, args: argparse.Namespace, embedder: Embedder) -> tuple[dict[str, Any], dict[str, Any]]:
    """One size; returns (the table's metrics, the index stats)."""
    rng = random.Random(args.seed + size)
    gen = SentenceGenerator(args.seed)
    out: dict[str, Any] = {"memories": size, "other_memories": args.other_tenants * args.other_size}
    with tempfile.TemporaryDirectory(prefix="stratamem-scale-") as tmp:
        folder = Path(args.keep) if args.keep else Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"scale-{size}.duckdb"
        for old in (path, path.with_name(path.name + ".wal")):
            old.unlink(missing_ok=True)
        out["rss_baseline_mb"] = rss_mb()

        # 1. ingest: other tenants, then the big partition; the embedder alone on the first sentences
        mem = open_memory(path, embedder, args)
        out["other_ingest_per_s"] = ingest_others(mem, gen, args.other_tenants, args.other_size)
        targets = set(rng.sample(range(size), min(size, 4 * args.queries)))
        ingest = ingest_main(mem, embedder, gen, size, max(2 * BATCH, args.embed_sample), targets)
        candidates = ingest.queries
        out["ingest_per_s"], out["embed_per_s"] = ingest.per_s, ingest.embed_per_s
        out["ingest_sample_per_s"] = ingest.sample_per_s
        out["ingest_ratio"] = ingest.sample_per_s / ingest.embed_per_s
        provider = duckdb_provider(mem)
        # the index mirrors a partition from its first search on; HNSW is then built in the background
        t0 = time.perf_counter()
        out["ingest_first_search_ms"] = timed_ms(sdk(mem, WARM[0]))
        wait_index(provider)
        out["ingest_ready_s"] = time.perf_counter() - t0
        out["rss_after_ingest_mb"] = rss_mb()
        mem.close()
        out["file_mb"] = file_mb(path)

        # 2. warm-up after reopening
        queries = [q for q in dict.fromkeys(candidates) if q not in WARM]
        rng.shuffle(queries)
        queries, queries_bg, queries_paced = (
            queries[: args.queries],
            queries[args.queries : 2 * args.queries],
            queries[2 * args.queries : 3 * args.queries],
        )
        t_open = time.perf_counter()
        mem = open_memory(path, embedder, args)
        out["open_s"] = time.perf_counter() - t_open
        provider = duckdb_provider(mem)
        out["first_search_ms"] = timed_ms(sdk(mem, WARM[1]))
        wait_index(provider)
        out["ready_after_open_s"] = time.perf_counter() - t_open
        index_stats = search_index(provider).stats()
        out["ann_partitions"] = sum(1 for p in index_stats["ann_partitions"] if p["ready"])

        # 3. latency: (a) end to end, (b) query vector cached, (c) provider only
        e2e = [timed_ms(sdk(mem, q)) for q in queries]
        cached = [timed_ms(sdk(mem, q)) for q in queries]
        # (d) the same with bookkeeping off the request path: access tracking and the memory_events row
        # written by background workers (LifecycleConfig.access_write, HygieneConfig.events_write)
        mem.lifecycle.config = mem.lifecycle.config.model_copy(update={"access_write": "background"})
        mem.engine.hygiene.configure(events_write="background")
        e2e_bg = [timed_ms(sdk(mem, q)) for q in queries_bg]
        cached_bg = [timed_ms(sdk(mem, q)) for q in queries_bg]
        paced = []
        for q in queries_paced:
            time.sleep(args.pace_ms / 1000)
            paced.append(timed_ms(sdk(mem, q)))
        mem.lifecycle.flush()
        mem.engine.hygiene.events.flush()
        mem.lifecycle.config = mem.lifecycle.config.model_copy(update={"access_write": "sync"})
        mem.engine.hygiene.configure(events_write="sync")
        embed_ms = [timed_ms(embed_one(embedder, q)) for q in queries]
        vectors: Matrix = embedder.embed(queries)
        w = mem.engine.config.hybrid_weight

        def prov(i: int, **kw: Any) -> Callable[[], object]:
            query = search_query(vectors[i], queries[i], w, **kw)
            return lambda: provider.search(query)

        n = len(queries)
        provider_ms = [timed_ms(prov(i)) for i in range(n)]
        provider07_ms = [timed_ms(prov(i, min_score=0.7)) for i in range(n)]
        exact_ms = [timed_ms(prov(i, exact=True)) for i in range(n)]
        for key, values in (
            ("search", e2e),
            ("search_cached", cached),
            ("search_bg", e2e_bg),
            ("search_cached_bg", cached_bg),
            ("search_paced", paced),
            ("provider", provider_ms),
            ("provider_ms07", provider07_ms),
            ("exact", exact_ms),
        ):
            out[f"{key}_p50_ms"] = statistics.median(values)
            out[f"{key}_p95_ms"] = pct(values, 0.95)
        out["query_embed_p50_ms"] = statistics.median(embed_ms)

        # 4. recall@10 of the default path against the exact scan
        for name, weight in (("hybrid", w), ("dense", 0.0)):
            recalls = []
            for i in range(n):
                approx = {h.entry.id for h in provider.search(search_query(vectors[i], queries[i], weight)).hits}
                exact = {
                    h.entry.id for h in provider.search(search_query(vectors[i], queries[i], weight, exact=True)).hits
                }
                recalls.append(len(approx & exact) / len(exact) if exact else 1.0)
            out[f"recall_{name}"] = statistics.fmean(recalls)

        # 5. memory
        out["rss_end_mb"] = rss_mb()
        out["rss_peak_mb"] = peak_rss_mb()
        mem.close()
        out["queries"] = n
    return out, index_stats


def fmt(value: object) -> str:
    if isinstance(value, float):
        if value != value:  # NaN
            return "n/a"
        if abs(value) >= 100:
            return f"{value:,.0f}"
        return f"{value:.3f}" if abs(value) < 1 else f"{value:.2f}"
    return str(value)


def print_table(rows: list[dict[str, Any]], sizes: Sequence[int]) -> None:
    header = ["metric", *(f"{s:,}" for s in sizes), "target (100k)"]
    table = [header] + [[label, *(fmt(r.get(key, "")) for r in rows), target] for key, label, target in ROWS]
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    for j, line in enumerate(table):
        print(" | ".join(cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i]) for i, cell in enumerate(line)))
        if j == 0:
            print("-+-".join("-" * wd for wd in widths))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--embedder", default="onnx", help="onnx[:DIR], local or hashing[:DIM]")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--other-tenants", type=int, default=100)
    parser.add_argument("--other-size", type=int, default=100)
    parser.add_argument(
        "--ann-threshold",
        type=int,
        default=MemoryConfig.model_fields["ann_threshold"].default,
        help="MemoryConfig.ann_threshold: live rows above which a partition is served by HNSW (default %(default)s)",
    )
    parser.add_argument(
        "--embed-sample",
        type=int,
        default=10_000,
        help="sentences (at least 2000) timed through embedder.embed for the throughput baseline "
        "(default: ten batches; on this noisy VM the ratio of a single batch pair moves by "
        "several hundredths)",
    )
    parser.add_argument("--no-graph", action="store_true", help="graph_enabled=False (no entity extraction on add)")
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch intra-op threads of the local embedder (default: torch's own choice); "
        "1 is far steadier when other processes share the cores",
    )
    parser.add_argument(
        "--pace-ms", type=float, default=50.0, help="pause before each search of the paced background run (ms)"
    )
    parser.add_argument(
        "--inline-appends",
        action="store_true",
        help="DuckDBProvider(defer_appends=False): a search's bookkeeping is written before it "
        "returns (the default writes it on the store's worker right after)",
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", type=Path, default=None, help="keep the store files in this folder")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "scale.json")
    args = parser.parse_args()

    if args.threads is not None:
        import torch

        torch.set_num_threads(args.threads)
    load_before = os.getloadavg()
    embedder = make_embedder(args.embedder)
    embedder.embed(SentenceGenerator(args.seed + 1).texts(64))  # load the model before anything is timed
    rows: list[dict[str, Any]] = []
    stats: list[dict[str, Any]] = []
    for size in args.sizes:
        t0 = time.perf_counter()
        row, index_stats = run(size, args, embedder)
        rows.append(row)
        stats.append(index_stats)
        print(f"size {size:,}: done in {time.perf_counter() - t0:.0f} s; index stats {index_stats}", flush=True)
    print_table(rows, args.sizes)

    args.out.parent.mkdir(parents=True, exist_ok=True)
    config = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    report = {
        "benchmark": "scale",
        "command": shlex.join(["python", *sys.argv]),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {
            "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "duckdb": duckdb.__version__,
            # 1-minute load average before and after: other work on the machine skews every number
            "loadavg_before": load_before[0],
            "loadavg_after": os.getloadavg()[0],
        },
        "embedder": {"name": args.embedder, "model_id": embedder.model_id, "dimensions": embedder.dimensions},
        "config": config,
        "memory_config": memory_config(args).model_dump(),
        "targets": {key: target for key, _, target in ROWS if target},
        "results": [{**row, "index_stats": st} for row, st in zip(rows, stats, strict=True)],
    }
    args.out.write_text(json.dumps(report, indent=2, default=str))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
