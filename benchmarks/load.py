"""Concurrent load on a real ``stratamem serve``: throughput, latency percentiles, errors.

    python benchmarks/load.py [--memories 2500] [--clients 16] [--seconds 30] [--search-share 0.8]
                              [--embedder onnx] [--no-batch-queries] [--store PATH] [--out PATH]
                              [--tenant bench-load] [--rss-every 10]

1. Writes ``--memories`` synthetic memories (benchmarks/sentences.py) into a fresh DuckDB store, one
   tenant and user, with the SDK's ``bulk_add``, and creates an API key. With ``--store PATH`` the
   store is kept at PATH, and a later run with the same PATH reuses it (a new API key, no ingest):
   a 100k store takes minutes to build, and the adds of a run make it grow by their number.
2. Measures the embedder's own batched throughput (texts/s, batches of 64) in this process, on
   texts like the ones the clients send, just before the load: the ratio of the server's search
   throughput to it is what carries over between machines.
3. Starts ``stratamem serve`` on the store (a subprocess, waits for /ready; the per-key rate limit
   off unless ``STRATAMEM_RATE_LIMIT_PER_SECOND`` is set, since one key serves every client). The
   server runs the code of the checkout that holds this file (its ``src/`` comes first on the
   server's ``PYTHONPATH``): to measure another branch or worktree, run its own ``load.py``. It runs ``--clients``
   asyncio httpx clients for ``--seconds``: each request is a search (``--search-share``) or an add
   of a new memory. The server's resident memory is read at the start, every ``--rss-every``
   seconds (with the memory its DuckDB store says it holds, from /metrics), and at the end.

Prints requests/s (overall, searches, adds; and completed per ``--rss-every`` window, which shows
whether the first seconds are as fast as the rest), p50/p95/p99 per kind, errors, the embedder's batched
throughput and the ratio, texts per model run of the query micro-batching and adds per transaction
of the group commit (from the server's /metrics); writes JSON to ``--out`` (default benchmarks/results/load.json).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import httpx

from sentences import SentenceGenerator
from stratamem import Memory, TenantContext
from stratamem.embeddings import make_embedder
from stratamem.server.keys import create_key

ROOT = Path(__file__).resolve().parent.parent
TENANT = "bench-load"
#: One series of ``stratamem_store_memory_bytes`` in the /metrics text: its value.
STORE_MEMORY = re.compile(r'^stratamem_store_memory_bytes\{tag="([^"]*)"\} ([0-9.e+]+)$', re.M)
USER = "u1"


def pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_mb(pid: int) -> float:
    """Resident memory of a process (Linux /proc; 0 elsewhere)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def histogram(url: str, name: str) -> dict[str, float]:
    """Observations and their sum of one histogram of the server's /metrics (0 when absent)."""
    values = {"count": 0.0, "sum": 0.0}
    for line in httpx.get(url + "/metrics", timeout=30).text.splitlines():
        for key in values:
            if line.startswith(f"{name}_{key} "):
                values[key] = float(line.split()[1])
    return values


def query_batch_sizes(url: str) -> dict[str, float]:
    """Runs and texts of the server's query micro-batching, from its /metrics."""
    values = histogram(url, "stratamem_embedding_query_batch_size")
    return {
        "model_runs": values["count"],
        "texts": values["sum"],
        "mean_batch": values["sum"] / values["count"] if values["count"] else 0.0,
    }


def add_group_sizes(url: str) -> dict[str, float]:
    """Transactions and adds of the server's group commit of adds (``add_groups.py``), from its /metrics."""
    values = histogram(url, "stratamem_add_group_size")
    return {
        "transactions": values["count"],
        "adds": values["sum"],
        "mean_group": values["sum"] / values["count"] if values["count"] else 0.0,
    }


def build_store(db: Path, n: int, embedder: str, gen: SentenceGenerator, tenant: str = TENANT) -> tuple[str, float]:
    """The store with ``n`` memories and an API key; returns the key and the ingest time."""
    started = time.perf_counter()
    with Memory.open(db, embedder=embedder) as mem:
        ctx = TenantContext(tenant_id=tenant, principal="bench")
        for start in range(0, n, 1000):
            batch = gen.texts(min(1000, n - start))
            mem.bulk_add(ctx, [{"content": t, "layer": "user", "identifiers": {"user_id": USER}} for t in batch])
        key = create_key(mem.engine.provider, tenant, "writer", identifiers={"user_id": USER}).key
    return key, time.perf_counter() - started


def reuse_store(db: Path, embedder: str, tenant: str = TENANT) -> tuple[str, int]:
    """A new API key on a store built by an earlier run (``--store``), and its number of memories."""
    with Memory.open(db, embedder=embedder) as mem:
        ctx = TenantContext(tenant_id=tenant, principal="bench")
        stored = mem.list(ctx, layer="user", identifiers={"user_id": USER}, limit=1).total_count
        return create_key(mem.engine.provider, tenant, "writer", identifiers={"user_id": USER}).key, stored


def embedder_throughput(embedder: str, texts: list[str]) -> float:
    """Texts per second of the embedder alone, batches of 64 (after one warm-up run)."""
    model = make_embedder(embedder)
    model.warm_up()
    started = time.perf_counter()
    for i in range(0, len(texts), 64):
        model.embed(texts[i : i + 64])
    rate = len(texts) / (time.perf_counter() - started)
    model.close()
    return rate


def start_server(db: Path, port: int, embedder: str, batch_queries: bool) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""),
        # one key stands for all the clients: its per-key rate limit (50/s by default) would cap the load
        "STRATAMEM_RATE_LIMIT_PER_SECOND": os.environ.get("STRATAMEM_RATE_LIMIT_PER_SECOND", "0"),
    }
    cmd = [
        sys.executable,
        "-m",
        "stratamem",
        "serve",
        "--db",
        str(db),
        "--port",
        str(port),
        "--embedder",
        embedder,
        "--log-level",
        "warning",
        "--batch-queries" if batch_queries else "--no-batch-queries",
    ]
    # stderr goes to a file, not a pipe: a pipe nobody reads fills up and blocks the server's logging
    log = tempfile.TemporaryFile()  # noqa: SIM115  open while the server runs; closed when collected
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            log.seek(0)
            raise RuntimeError(f"server exited: {log.read().decode(errors='replace')}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/ready", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    proc.kill()
    raise RuntimeError("the server did not become ready in 120 s")


async def drive(
    url: str,
    key: str,
    clients: int,
    seconds: float,
    search_share: float,
    queries: list[str],
    new_texts: list[str],
    seed: int,
    window: float = 10.0,
) -> dict[str, Any]:
    """``window``: seconds per bucket of the completed-requests series (is the first bucket as fast
    as the later ones: did the server's warm start load what a request needs)."""
    latencies: dict[str, list[float]] = {"search": [], "add": []}
    done_at: list[float] = []  # perf_counter of each successful request's completion
    errors: dict[str, int] = {}
    messages: dict[str, str] = {}  # the first response body of each kind of error
    rng = random.Random(seed)
    stop_at = time.monotonic() + seconds
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)

    async def client(http: httpx.AsyncClient) -> None:
        while time.monotonic() < stop_at:
            kind = "search" if rng.random() < search_share else "add"
            if kind == "search":
                path = "/v1/memories/search"
                body: dict[str, Any] = {"query": rng.choice(queries), "identifiers": {"userId": USER}, "limit": 10}
            else:
                path = "/v1/memories"
                # past the prepared texts: a short hex tag (a long run of digits reads as a card number
                # to the secret scanner, which refuses the add)
                text = new_texts.pop() if new_texts else f"an extra note {rng.getrandbits(32):08x}"
                body = {"content": text, "layer": "user", "identifiers": {"userId": USER}}
            started = time.perf_counter()
            try:
                r = await http.post(path, json=body)
                ok = r.status_code < 400
                label = str(r.status_code)
            except httpx.HTTPError as exc:
                ok, label = False, type(exc).__name__
            if ok:
                now = time.perf_counter()
                latencies[kind].append((now - started) * 1000)
                done_at.append(now)
            else:
                errors[f"{kind} {label}"] = errors.get(f"{kind} {label}", 0) + 1
                if label.isdigit():
                    messages.setdefault(f"{kind} {label}", r.text[:300])

    async with httpx.AsyncClient(
        base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60, limits=limits
    ) as http:
        started = time.perf_counter()
        await asyncio.gather(*(client(http) for _ in range(clients)))
        elapsed = time.perf_counter() - started
    total = sum(len(v) for v in latencies.values())
    buckets = [0] * max(1, int(elapsed // window) + 1)
    for t in done_at:
        buckets[min(len(buckets) - 1, int((t - started) // window))] += 1
    # the last bucket is partial (and drains in-flight requests): reported as a rate over its own span
    spans = [window] * (len(buckets) - 1) + [elapsed - window * (len(buckets) - 1)]
    return {
        "requests_per_s_by_window": [n / span for n, span in zip(buckets, spans, strict=True) if span > 0.5],
        "elapsed_s": elapsed,
        "requests_per_s": total / elapsed,
        "searches_per_s": len(latencies["search"]) / elapsed,
        "adds_per_s": len(latencies["add"]) / elapsed,
        "latency_ms": {
            kind: {
                "n": len(v),
                "p50": pct(v, 0.5),
                "p95": pct(v, 0.95),
                "p99": pct(v, 0.99),
                "mean": statistics.fmean(v) if v else 0.0,
            }
            for kind, v in latencies.items()
        },
        "errors": errors,
        "error_examples": messages,
    }


async def with_rss_samples(
    load: Coroutine[Any, Any, dict[str, Any]], pid: int, every: float, url: str
) -> tuple[dict[str, Any], list[float], list[float], dict[str, float]]:
    """Run ``load`` while reading, every ``every`` seconds, the server's RSS (MB) and the memory its
    store's engine says it holds (``stratamem_store_memory_bytes`` on /metrics, MB): whether the
    resident memory levels off, and how much of it is the database's."""
    rss: list[float] = []
    store: list[float] = []
    tags: dict[str, float] = {}  # the last sample, MB per tag

    async def sample() -> None:
        async with httpx.AsyncClient(base_url=url, timeout=10) as http:
            while True:
                rss.append(rss_mb(pid))
                try:
                    text = (await http.get("/metrics")).text
                    found = {tag: float(v) / 1e6 for tag, v in STORE_MEMORY.findall(text)}
                    store.append(sum(found.values()))
                    tags.clear()
                    tags.update(found)
                except httpx.HTTPError:
                    store.append(float("nan"))
                await asyncio.sleep(every)

    sampler = asyncio.create_task(sample())
    try:
        result = await load
    finally:
        sampler.cancel()
    return result, rss, store, tags


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=2500)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--search-share", type=float, default=0.8)
    parser.add_argument("--embedder", default="onnx")
    parser.add_argument(
        "--batch-queries",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="the server's micro-batching of query embeddings (default on)",
    )
    parser.add_argument("--embed-sample", type=int, default=512, help="texts for the embedder's own throughput")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--store", type=Path, default=None, help="keep the store at this path; reuse it when it exists")
    parser.add_argument(
        "--tenant", default=TENANT, help="the clients' tenant (a store kept by scale.py --keep: bench-main)"
    )
    parser.add_argument(
        "--rss-every",
        type=float,
        default=10.0,
        help="seconds between samples of the server's RSS, and per bucket of the req/s series",
    )
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "load.json")
    args = parser.parse_args(argv)

    gen = SentenceGenerator(args.seed)
    with tempfile.TemporaryDirectory(prefix="stratamem-load-") as tmp:
        db = args.store if args.store is not None else Path(tmp) / "load.duckdb"
        stored = 0
        if db.exists():
            key, stored = reuse_store(db, args.embedder, args.tenant)
            gen.texts(args.memories)  # the same queries as the run that built it
            print(f"store: reusing {db} ({stored} memories)", file=sys.stderr)
        else:
            db.parent.mkdir(parents=True, exist_ok=True)
            key, ingest_s = build_store(db, args.memories, args.embedder, gen, args.tenant)
            print(f"store: {args.memories} memories in {ingest_s:.1f} s", file=sys.stderr)
        facts = gen.take(2000)
        queries = [f.query for f in facts]
        # The adds write texts the store does not hold: a reused store holds the adds of earlier runs,
        # so each run takes its texts from a generator seeded with the store's size.
        new_texts = [f.text for f in facts] if not stored else SentenceGenerator(args.seed + stored).texts(2000)
        embed_rate = embedder_throughput(args.embedder, queries[: args.embed_sample])
        port = free_port()
        proc = start_server(db, port, args.embedder, args.batch_queries)
        try:
            rss_start = rss_mb(proc.pid)
            load, rss_series, store_series, store_tags = asyncio.run(
                with_rss_samples(
                    drive(
                        f"http://127.0.0.1:{port}",
                        key,
                        args.clients,
                        args.seconds,
                        args.search_share,
                        queries,
                        new_texts,
                        args.seed,
                        args.rss_every,
                    ),
                    proc.pid,
                    args.rss_every,
                    f"http://127.0.0.1:{port}",
                )
            )
            rss_end = rss_mb(proc.pid)
            batching = query_batch_sizes(f"http://127.0.0.1:{port}")
            grouping = add_group_sizes(f"http://127.0.0.1:{port}")
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()

    result = {
        "memories": args.memories,
        "clients": args.clients,
        "seconds": args.seconds,
        "search_share": args.search_share,
        "embedder": args.embedder,
        "batch_queries": args.batch_queries,
        "embedder_batched_texts_per_s": embed_rate,
        "search_share_of_embedder_throughput": load["searches_per_s"] / embed_rate if embed_rate else 0.0,
        "server_rss_mb": {"start": rss_start, "end": rss_end, "every_s": args.rss_every, "samples": rss_series},
        "store_memory_mb": store_series,
        "store_memory_last_mb_by_tag": store_tags,
        "query_batching": batching,
        "add_groups": grouping,
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
        **load,
    }
    lat = load["latency_ms"]
    print(
        f"{args.clients} clients, {args.seconds:g} s, {args.memories} memories, "
        f"{args.search_share:.0%} search, embedder {args.embedder}, batching {'on' if args.batch_queries else 'off'}"
    )
    print(
        f"throughput   {load['requests_per_s']:.1f} req/s  (search {load['searches_per_s']:.1f}/s, "
        f"add {load['adds_per_s']:.1f}/s)"
    )
    for kind in ("search", "add"):
        row = lat[kind]
        print(f"{kind:<7} n={row['n']:<6} p50 {row['p50']:.1f} ms  p95 {row['p95']:.1f} ms  p99 {row['p99']:.1f} ms")
    print(f"req/s every {args.rss_every:g} s: " + " ".join(f"{v:.0f}" for v in load["requests_per_s_by_window"]))
    print(f"errors       {sum(load['errors'].values())} {load['errors'] or ''}")
    for label, body in load["error_examples"].items():
        print(f"  {label}: {body}")
    print(
        f"embedder     {embed_rate:.0f} texts/s batched; searches/s as a share of it: "
        f"{result['search_share_of_embedder_throughput']:.2f}"
    )
    print(f"server RSS   {rss_start:.0f} -> {rss_end:.0f} MB")
    print(f"RSS every {args.rss_every:g} s: " + " ".join(f"{v:.0f}" for v in rss_series))
    print("  of it DuckDB:  " + " ".join(f"{v:.0f}" for v in store_series))
    print("  DuckDB by tag: " + ", ".join(f"{k} {v:.0f}" for k, v in sorted(store_tags.items(), key=lambda kv: -kv[1])))
    if batching["model_runs"]:
        print(
            f"batching     {batching['texts']:.0f} query texts in {batching['model_runs']:.0f} model runs "
            f"(mean {batching['mean_batch']:.2f})"
        )
    if grouping["transactions"]:
        print(
            f"add groups   {grouping['adds']:.0f} adds in {grouping['transactions']:.0f} transactions "
            f"(mean {grouping['mean_group']:.2f})"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(f"wrote {args.out}")
    return 1 if load["errors"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
