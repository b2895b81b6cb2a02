"""Snapshot benchmark: push, incremental pushes, pull + cold start to the first query, bytes written.

    python benchmarks/snapshot_bench.py [--sizes 10000 100000] [--partition-rows 5000]

Needs an S3-compatible endpoint: STRATAMEM_S3_URL (or STRATAMEM_TEST_S3_URL written to .services.env
by scripts/start_seaweedfs.sh) plus credentials (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or the
STRATAMEM_TEST_S3_* pair). Memories use the hashing embedder. Per size: full push of a fresh store;
incremental push after 1% new memories (appends); incremental push after 1% random updates
(scattered: touches most partitions); cold start = ``Memory.open_from_snapshot`` into an in-memory
DuckDB (download + verify + import everything) until the first search returns; lazy = the same
with ``lazy=True`` (the open returns after --budget at most, the search waits for its tenant, cache
tables follow in the background); lazy0 = ``lazy=True, budget_s=0`` (the open returns after the
manifests, the search waits for the query tables being loaded in the background); on demand =
``lazy=True, budget_s=0, background=False`` (the search itself loads the tenant). Wall and CPU
seconds are reported with the load average: on a shared machine wall times include contention.
``--store`` reuses a store built by an earlier run (skips the ingest). Prints a table, writes
benchmarks/results/snapshot_bench.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import tempfile
import time
import uuid
from pathlib import Path

from stratamem import Memory, TenantContext
from stratamem.persistence import S3Settings, S3Store

ROOT = Path(__file__).resolve().parent.parent
WORDS = [
    "dark mode",
    "PostgreSQL",
    "tabs",
    "weekly releases",
    "Rust",
    "CI",
    "GraphQL",
    "billing",
    "Kubernetes",
    "vim",
    "rendering",
    "Berlin",
    "on-call",
    "feature flags",
    "type hints",
    "latency",
    "caching",
    "tests",
]


def settings() -> S3Settings | None:
    env_file = ROOT / ".services.env"
    if env_file.is_file():
        for line in env_file.read_text().splitlines():
            key, sep, value = line.partition("=")
            if sep:
                os.environ.setdefault(key.strip(), value.strip())
    url = os.environ.get("STRATAMEM_S3_URL") or os.environ.get("STRATAMEM_TEST_S3_URL")
    if not url:
        return None
    return S3Settings(
        endpoint_url=url,
        bucket=f"bench-{uuid.uuid4().hex[:10]}",
        access_key_id=os.environ.get("AWS_ACCESS_KEY_ID") or os.environ.get("STRATAMEM_TEST_S3_ACCESS_KEY"),
        secret_access_key=os.environ.get("AWS_SECRET_ACCESS_KEY") or os.environ.get("STRATAMEM_TEST_S3_SECRET_KEY"),
    )


def text(rng: random.Random, i: int) -> str:
    return (
        f"The user {rng.choice(['likes', 'uses', 'avoids', 'asked about'])} {rng.choice(WORDS)} "
        f"and {rng.choice(WORDS)} (note {i})."
    )


def run(
    size: int, s3s: S3Settings, partition_rows: int, rng: random.Random, budget_s: float, store: Path | None = None
) -> dict[str, object]:
    ctx = TenantContext(tenant_id="bench")
    ids = {"user_id": "u1"}
    row: dict[str, object] = {"memories": size}
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "b.duckdb"
        if store is not None:  # a store built earlier (same generator): skip the ingest
            shutil.copyfile(store, db)
        with Memory.open(db, embedder="hashing") as mem:
            if store is None:
                t0 = time.perf_counter()
                for start in range(0, size, 1000):
                    mem.bulk_add(
                        ctx,
                        [
                            {"content": text(rng, start + j), "layer": "user", "identifiers": ids}
                            for j in range(min(1000, size - start))
                        ],
                    )
                row["ingest_s"] = round(time.perf_counter() - t0, 2)
            else:
                row["ingest_s"] = None
                row["memories"] = mem.stats(ctx).total
            _push_and_update(mem, ctx, ids, size, s3s, partition_rows, rng, row)
    row.update(cold_start(s3s, ctx, ids, budget_s))
    store3 = S3Store(s3s)
    keys = [str(o["Key"]) for o in store3.list("")]
    store3.delete(keys)
    store3.client.delete_bucket(Bucket=s3s.bucket)
    return row


def _push_and_update(
    mem: Memory,
    ctx: TenantContext,
    ids: dict[str, str],
    size: int,
    s3s: S3Settings,
    partition_rows: int,
    rng: random.Random,
    row: dict[str, object],
) -> None:
    mgr = mem.configure_snapshots(s3s, partition_rows=partition_rows)
    full = mgr.push(ctx)[0]
    row.update(push_s=full.duration_s, push_files=full.files_written, push_bytes=full.bytes_written)

    n = max(1, size // 100)
    mem.bulk_add(ctx, [{"content": text(rng, size + j), "layer": "user", "identifiers": ids} for j in range(n)])
    inc = mgr.push(ctx)[0]
    row.update(
        inc_append_s=inc.duration_s,
        inc_append_files=inc.files_written,
        inc_append_reused=inc.files_reused,
        inc_append_bytes=inc.bytes_written,
    )

    all_ids = [e.id for e in mem.export(ctx)]
    for mid in rng.sample(all_ids, n):
        mem.update(ctx, mid, metadata={"touched": True})
    upd = mgr.push(ctx)[0]
    row.update(inc_update_s=upd.duration_s, inc_update_files=upd.files_written, inc_update_bytes=upd.bytes_written)


def _first_query(s3s: S3Settings, ctx: TenantContext, ids: dict[str, str], **kwargs: object) -> dict[str, object]:
    """Open from the snapshot, run one search; wall and CPU time to the first answer, then to full load."""
    w, c = time.perf_counter(), time.process_time()
    mem = Memory.open_from_snapshot("bench", settings=s3s, **kwargs)  # type: ignore[arg-type]
    opened = time.perf_counter() - w
    res = mem.search(ctx, "the user likes dark mode", identifiers=ids, threshold=0.0, limit=5)
    out: dict[str, object] = {
        "open_s": round(opened, 3),
        "first_query_s": round(time.perf_counter() - w, 3),
        "first_query_cpu_s": round(time.process_time() - c, 3),
        "hits": len(res.results),
        "status_at_first_query": mem.snapshots.status().model_dump(
            include={"partitions_loaded", "partitions_pending", "bytes_loaded", "bytes_total", "cache_imports_pending"}
        ),
    }
    mem.snapshots.wait_loaded()
    out["all_loaded_s"] = round(time.perf_counter() - w, 3)
    report = mem.snapshots.last_reports[0]
    out["pull_bytes"] = mem.snapshots.status().bytes_loaded if report.lazy else report.bytes_downloaded
    mem.close()
    return out


def cold_start(s3s: S3Settings, ctx: TenantContext, ids: dict[str, str], budget_s: float) -> dict[str, object]:
    """Eager (download + verify + import everything, then query), lazy (the open waits at most the
    budget; the query waits for its tenant) and on-demand (no background thread: the query loads it)."""
    row: dict[str, object] = {}
    eager = _first_query(s3s, ctx, ids)
    row.update(
        cold_start_s=eager["first_query_s"],
        cold_start_cpu_s=eager["first_query_cpu_s"],
        pull_bytes=eager["pull_bytes"],
        first_query_hits=eager["hits"],
    )
    lazy = _first_query(s3s, ctx, ids, lazy=True, budget_s=budget_s)
    row.update(
        lazy_open_s=lazy["open_s"],
        lazy_first_query_s=lazy["first_query_s"],
        lazy_first_query_cpu_s=lazy["first_query_cpu_s"],
        lazy_all_loaded_s=lazy["all_loaded_s"],
        lazy_status_at_first_query=lazy["status_at_first_query"],
    )
    lazy0 = _first_query(s3s, ctx, ids, lazy=True, budget_s=0.0)
    row.update(
        lazy0_first_query_s=lazy0["first_query_s"],
        lazy0_first_query_cpu_s=lazy0["first_query_cpu_s"],
        lazy0_all_loaded_s=lazy0["all_loaded_s"],
    )
    demand = _first_query(s3s, ctx, ids, lazy=True, budget_s=0.0, background=False)
    row.update(
        on_demand_open_s=demand["open_s"],
        on_demand_first_query_s=demand["first_query_s"],
        on_demand_first_query_cpu_s=demand["first_query_cpu_s"],
    )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000])
    parser.add_argument("--partition-rows", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--budget", type=float, default=3.0, help="cold-start budget of the lazy pull (s)")
    parser.add_argument(
        "--store",
        nargs="*",
        default=[],
        help="reuse DuckDB stores built earlier (one per size, same order; '-' = ingest)",
    )
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "snapshot_bench.json")
    args = parser.parse_args()
    s3s = settings()
    if s3s is None:
        print("no S3 endpoint: set STRATAMEM_S3_URL or run scripts/start_seaweedfs.sh")
        return
    rng = random.Random(args.seed)
    stores = [None if v == "-" else Path(v) for v in args.store] + [None] * (len(args.sizes) - len(args.store))
    load_before = os.getloadavg()
    rows = [
        run(size, s3s, args.partition_rows, rng, args.budget, store)
        for size, store in zip(args.sizes, stores, strict=True)
    ]
    cols = [
        "memories",
        "ingest_s",
        "push_s",
        "push_bytes",
        "inc_append_s",
        "inc_append_files",
        "inc_append_bytes",
        "inc_update_s",
        "inc_update_files",
        "cold_start_s",
        "cold_start_cpu_s",
        "pull_bytes",
        "lazy_open_s",
        "lazy_first_query_s",
        "lazy_first_query_cpu_s",
        "lazy_all_loaded_s",
        "lazy0_first_query_s",
        "on_demand_first_query_s",
    ]
    print(" | ".join(f"{c:>16}" for c in cols))
    for r in rows:
        print(" | ".join(f"{r[c]!s:>16}" for c in cols))
    load = {"before": load_before, "after": os.getloadavg(), "cpus": os.cpu_count()}
    print(f"load average {load['before']} -> {load['after']} on {load['cpus']} CPUs (wall times include contention)")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "benchmark": "snapshot",
                "python": platform.python_version(),
                "partition_rows": args.partition_rows,
                "budget_s": args.budget,
                "load_average": load,
                "results": rows,
            },
            indent=2,
        )
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
