"""Storage backends side by side: the same ingest + search workload on DuckDB and PostgreSQL.

    python benchmarks/backends.py [--sizes 10000 100000] [--queries 200] [--pg-url postgresql://…]

Uses the deterministic *hashing* embedder on purpose: embedding costs next to nothing, so the
numbers isolate storage (insert, index maintenance, scoped vector scan, merge). Memories are spread
over three layers (user/project/team) of one tenant; every search queries all three (the SDK's
layered search), threshold 0, limit 10. Backends:

* ``duckdb`` — a fresh DuckDB file (exact scan of each scope);
* ``postgres`` — a fresh schema on the PostgreSQL server (``STRATAMEM_TEST_PG_URL``, or the URL in
  ``.services.env`` written by ``scripts/start_postgres.sh``), exact search;
* ``postgres-ann`` — the same PostgreSQL data searched through the HNSW index (``search_mode="ann"``).

Prints a table and writes ``benchmarks/results/backends.json``.

``--servers 1 3`` adds the same workload through the REST API of real ``stratamem serve``
processes (subprocesses on free ports, hashing embedder, rate limits off): the store is filled with
``size`` memories first, then ``--clients`` threads spread ``--http-ops`` requests (one add for
every three searches) over the servers round robin. DuckDB runs one server (one process owns the
file); PostgreSQL runs each server count given, sharing one schema and, with several servers, one
Redis (``--redis``, default ``redis://127.0.0.1:6379/0``) as in a real deployment::

    python benchmarks/backends.py --sizes 2000 --queries 100 --servers 1 3 --http-ops 600
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from core_latency import pct, sentence  # the same workload vocabulary
from stratamem import Memory, TenantContext

ROOT = Path(__file__).resolve().parent.parent
IDS = {"user_id": "u1", "project_id": "p1", "team_id": "t1"}
LAYERS = ["user", "project", "team"]


def pg_url_default() -> str | None:
    if os.environ.get("STRATAMEM_TEST_PG_URL"):
        return os.environ["STRATAMEM_TEST_PG_URL"]
    env = ROOT / ".services.env"
    if env.is_file():
        for line in env.read_text().splitlines():
            if line.startswith("STRATAMEM_TEST_PG_URL="):
                return line.split("=", 1)[1].strip()
    return None


def ingest(mem: Memory, ctx: TenantContext, size: int, rng: random.Random) -> dict[str, float]:
    start = time.perf_counter()
    batch = 500
    for i in range(0, size, batch):
        items = [
            {"content": f"{sentence(rng)} #{i + j}", "layer": LAYERS[(i + j) % 3], "identifiers": IDS}
            for j in range(min(batch, size - i))
        ]
        mem.bulk_add(ctx, items)
    ingest_s = time.perf_counter() - start
    add_ms = []
    for i in range(50):
        t0 = time.perf_counter()
        mem.add(ctx, content=f"single add {i}: {sentence(rng)}", layer="user", identifiers=IDS)
        add_ms.append((time.perf_counter() - t0) * 1000)
    return {"ingest_s": ingest_s, "ingest_per_s": size / ingest_s, "add_p50_ms": pct(add_ms, 0.5)}


def searches(mem: Memory, ctx: TenantContext, queries: int, rng: random.Random) -> dict[str, float]:
    texts = [sentence(rng) for _ in range(queries)]
    for q in texts[:5]:  # warm-up (connections, caches)
        mem.search(ctx, q, identifiers=IDS, threshold=0.0, limit=10)
    lat = []
    for q in texts:
        t0 = time.perf_counter()
        res = mem.search(ctx, q, identifiers=IDS, threshold=0.0, limit=10)
        lat.append((time.perf_counter() - t0) * 1000)
        assert res.results, "search returned nothing"
    return {"search_p50_ms": pct(lat, 0.5), "search_p95_ms": pct(lat, 0.95)}


def run_duckdb(size: int, queries: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    ctx = TenantContext(tenant_id="bench")
    with tempfile.TemporaryDirectory() as tmp, Memory.open(Path(tmp) / "bench.duckdb", embedder="hashing") as mem:
        out: dict[str, Any] = {"backend": "duckdb", "size": size, **ingest(mem, ctx, size, rng)}
        out.update(searches(mem, ctx, queries, rng))
    return out


def run_postgres(size: int, queries: int, seed: int, url: str) -> list[dict[str, Any]]:
    import psycopg
    from psycopg import sql

    from stratamem.providers.postgres import PostgresProvider

    rng = random.Random(seed)
    ctx = TenantContext(tenant_id="bench")
    schema = f"bench_{uuid.uuid4().hex[:10]}"
    store = f"{url}{'&' if '?' in url else '?'}schema={schema}"
    try:
        with Memory.open(store, embedder="hashing") as mem:
            exact: dict[str, Any] = {"backend": "postgres", "size": size, **ingest(mem, ctx, size, rng)}
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(sql.SQL("ANALYZE {}.memories").format(sql.Identifier(schema)))
            exact.update(searches(mem, ctx, queries, random.Random(seed + 1)))
        with Memory.open(PostgresProvider(store, search_mode="ann"), embedder="hashing") as mem:
            ann: dict[str, Any] = {
                "backend": "postgres-ann",
                "size": size,
                "ingest_s": None,
                "ingest_per_s": None,
                "add_p50_ms": None,
            }
            ann.update(searches(mem, ctx, queries, random.Random(seed + 1)))
        return [exact, ann]
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_servers(store: str, count: int, redis_url: str | None) -> list[tuple[subprocess.Popen[bytes], str]]:
    """``count`` ``stratamem serve`` processes on ``store``, ready to serve."""
    import httpx

    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""),
        "STRATAMEM_EMBEDDER": "hashing",
        "STRATAMEM_RATE_LIMIT_PER_SECOND": "0",
        "STRATAMEM_REDIS_PREFIX": f"bench-{uuid.uuid4().hex[:8]}",
    }
    procs = []
    for _ in range(count):
        port = free_port()
        args = [
            sys.executable,
            "-m",
            "stratamem",
            "serve",
            "--db",
            store,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--log-level",
            "warning",
            *(["--redis", redis_url] if redis_url else []),
        ]
        procs.append(
            (
                subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
                f"http://127.0.0.1:{port}",
            )
        )
    deadline = time.monotonic() + 180
    for proc, url in procs:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"server {url} exited with {proc.returncode}")
            try:
                if httpx.get(url + "/ready", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"server {url} did not become ready")
            time.sleep(0.3)
    return procs


def stop_servers(procs: list[tuple[subprocess.Popen[bytes], str]]) -> None:
    for proc, _ in procs:
        proc.terminate()
    for proc, _ in procs:
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def http_load(urls: list[str], key: str, ops: int, clients: int, seed: int) -> dict[str, float]:
    """``ops`` requests (an add for every three searches) from ``clients`` threads, round robin over
    ``urls``; throughput over the whole run, latency per kind."""
    import httpx

    rest_ids = {"userId": "u1", "projectId": "p1", "teamId": "t1"}
    lat: dict[str, list[float]] = {"add": [], "search": []}
    lock = threading.Lock()
    errors: list[str] = []

    def client(n: int) -> None:
        rng = random.Random(seed * 1000 + n)
        sessions = [httpx.Client(base_url=u, headers={"Authorization": f"Bearer {key}"}, timeout=60) for u in urls]
        try:
            for i in range(n, ops, clients):
                c = sessions[i % len(sessions)]
                kind = "add" if i % 4 == 0 else "search"
                t0 = time.perf_counter()
                if kind == "add":
                    r = c.post(
                        "/v1/memories",
                        json={"content": f"{sentence(rng)} http {i}", "layer": LAYERS[i % 3], "identifiers": rest_ids},
                    )
                else:
                    r = c.post(
                        "/v1/memories/search",
                        json={"query": sentence(rng), "identifiers": rest_ids, "limit": 10, "threshold": 0},
                    )
                ms = (time.perf_counter() - t0) * 1000
                with lock:
                    if r.status_code >= 300:
                        errors.append(f"{kind} {r.status_code} {r.text[:200]}")
                    else:
                        lat[kind].append(ms)
        finally:
            for s in sessions:
                s.close()

    start = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(client, range(clients)))
    wall = time.perf_counter() - start
    if errors:
        raise RuntimeError(f"{len(errors)} failed requests, first: {errors[0]}")
    return {
        "http_ops_per_s": ops / wall,
        "http_add_p50_ms": pct(lat["add"], 0.5),
        "http_add_p95_ms": pct(lat["add"], 0.95),
        "http_search_p50_ms": pct(lat["search"], 0.5),
        "http_search_p95_ms": pct(lat["search"], 0.95),
    }


def run_servers(
    backend: str, store: str, size: int, counts: list[int], args: argparse.Namespace
) -> list[dict[str, Any]]:
    """Fill ``store`` with ``size`` memories, then the HTTP workload with each server count."""
    from stratamem.server.keys import create_key

    rng = random.Random(args.seed)
    ctx = TenantContext(tenant_id="bench")
    with Memory.open(store, embedder="hashing") as mem:
        ingest(mem, ctx, size, rng)
        key = create_key(mem.engine.provider, "bench", "writer").key
    rows = []
    for count in counts:
        procs = start_servers(store, count, args.redis if count > 1 else None)
        try:
            stats = http_load([u for _, u in procs], key, args.http_ops, args.clients, args.seed)
        finally:
            stop_servers(procs)
        rows.append(
            {
                "backend": f"{backend} http x{count}",
                "size": size,
                "servers": count,
                "clients": args.clients,
                "ops": args.http_ops,
                **stats,
            }
        )
        print(f"done {backend} {size} with {count} server(s)", flush=True)
    return rows


def run_http(size: int, args: argparse.Namespace) -> list[dict[str, Any]]:
    """The REST workload on each selected backend: DuckDB with one server, PostgreSQL with each count."""
    import psycopg
    from psycopg import sql

    rows: list[dict[str, Any]] = []
    if "duckdb" in args.backends and 1 in args.servers:
        with tempfile.TemporaryDirectory() as tmp:
            rows += run_servers("duckdb", str(Path(tmp) / "bench.duckdb"), size, [1], args)
    if "postgres" in args.backends and args.pg_url:
        schema = f"bench_{uuid.uuid4().hex[:10]}"
        try:
            rows += run_servers(
                "postgres",
                f"{args.pg_url}{'&' if '?' in args.pg_url else '?'}schema={schema}",
                size,
                sorted(args.servers),
                args,
            )
        finally:
            with psycopg.connect(args.pg_url, autocommit=True) as conn:
                conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
    return rows


def fmt(value: Any, digits: int = 2) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--pg-url", default=pg_url_default())
    parser.add_argument("--backends", nargs="+", default=["duckdb", "postgres"], choices=["duckdb", "postgres"])
    parser.add_argument(
        "--servers",
        type=int,
        nargs="*",
        default=[],
        help="also run the workload through this many `stratamem serve` processes (e.g. 1 3)",
    )
    parser.add_argument("--http-ops", type=int, default=600, help="requests of the HTTP workload")
    parser.add_argument("--clients", type=int, default=6, help="concurrent HTTP clients")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/0", help="Redis shared by several servers")
    args = parser.parse_args()
    http_rows: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    for size in args.sizes:
        if "duckdb" in args.backends:
            rows.append(run_duckdb(size, args.queries, args.seed))
            print(f"done duckdb {size}", flush=True)
        if "postgres" in args.backends:
            if not args.pg_url:
                print("PostgreSQL skipped: no --pg-url / STRATAMEM_TEST_PG_URL (run scripts/start_postgres.sh)")
            else:
                rows += run_postgres(size, args.queries, args.seed, args.pg_url)
                print(f"done postgres {size}", flush=True)
        if args.servers:
            http_rows += run_http(size, args)
    header = f"{'backend':<14}{'memories':>10}{'ingest/s':>12}{'add p50 ms':>12}{'search p50 ms':>15}{'p95 ms':>10}"
    print("\nembedder: hashing (storage cost only); search = 3 layers, limit 10, threshold 0")
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r['backend']:<14}{r['size']:>10,}{fmt(r['ingest_per_s'], 0):>12}{fmt(r['add_p50_ms']):>12}"
            f"{fmt(r['search_p50_ms']):>15}{fmt(r['search_p95_ms']):>10}"
        )
    if http_rows:
        head = (
            f"{'through REST':<20}{'memories':>10}{'req/s':>9}{'add p50':>9}{'add p95':>9}"
            f"{'search p50':>12}{'search p95':>12}"
        )
        print(f"\n{args.clients} concurrent clients, {args.http_ops} requests (1 add : 3 searches), latency in ms")
        print(head)
        print("-" * len(head))
        for r in http_rows:
            print(
                f"{r['backend']:<20}{r['size']:>10,}{fmt(r['http_ops_per_s'], 1):>9}{fmt(r['http_add_p50_ms'], 1):>9}"
                f"{fmt(r['http_add_p95_ms'], 1):>9}{fmt(r['http_search_p50_ms'], 1):>12}"
                f"{fmt(r['http_search_p95_ms'], 1):>12}"
            )
    out = ROOT / "benchmarks" / "results" / "backends.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "embedder": "hashing",
                "queries": args.queries,
                "machine": platform.platform(),
                "cpus": os.cpu_count(),
                "results": rows,
                "http": http_rows,
            },
            indent=2,
        )
    )
    print(f"\nwrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
