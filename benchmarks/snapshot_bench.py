"""Snapshot benchmark: push, incremental pushes, pull + cold start to the first query, bytes written.

    python benchmarks/snapshot_bench.py [--sizes 10000 100000] [--partition-rows 5000]

Needs an S3-compatible endpoint: STRATAMEM_S3_URL (or STRATAMEM_TEST_S3_URL written to .services.env
by scripts/start_seaweedfs.sh) plus credentials (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or the
STRATAMEM_TEST_S3_* pair). Memories use the hashing embedder. Per size: full push of a fresh store;
incremental push after 1% new memories (appends); incremental push after 1% random updates
(scattered: touches most partitions); cold start = ``Memory.open_from_snapshot`` into an in-memory
DuckDB (download + verify + hydrate) until the first search returns; lazy cold start = the same
with ``lazy=True`` (newest partitions within --budget, rest in the background). Prints a table, writes
benchmarks/results/snapshot_bench.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import tempfile
import time
import uuid
from pathlib import Path

from stratamem import Memory, TenantContext
from stratamem.persistence import S3Settings, S3Store

ROOT = Path(__file__).resolve().parent.parent
WORDS = ["dark mode", "PostgreSQL", "tabs", "weekly releases", "Rust", "CI", "GraphQL", "billing", "Kubernetes",
         "vim", "rendering", "Berlin", "on-call", "feature flags", "type hints", "latency", "caching", "tests"]


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
        endpoint_url=url, bucket=f"bench-{uuid.uuid4().hex[:10]}",
        access_key_id=os.environ.get("AWS_ACCESS_KEY_ID") or os.environ.get("STRATAMEM_TEST_S3_ACCESS_KEY"),
        secret_access_key=os.environ.get("AWS_SECRET_ACCESS_KEY") or os.environ.get("STRATAMEM_TEST_S3_SECRET_KEY"),
    )


def text(rng: random.Random, i: int) -> str:
    return f"The user {rng.choice(['likes', 'uses', 'avoids', 'asked about'])} {rng.choice(WORDS)} " \
           f"and {rng.choice(WORDS)} (note {i})."


def run(size: int, s3s: S3Settings, partition_rows: int, rng: random.Random,
        budget_s: float) -> dict[str, object]:
    ctx = TenantContext(tenant_id="bench")
    ids = {"user_id": "u1"}
    row: dict[str, object] = {"memories": size}
    with tempfile.TemporaryDirectory() as tmp, Memory.open(Path(tmp) / "b.duckdb", embedder="hashing") as mem:
        t0 = time.perf_counter()
        for start in range(0, size, 1000):
            mem.bulk_add(ctx, [{"content": text(rng, start + j), "layer": "user", "identifiers": ids}
                               for j in range(min(1000, size - start))])
        row["ingest_s"] = round(time.perf_counter() - t0, 2)
        mgr = mem.configure_snapshots(s3s, partition_rows=partition_rows)
        full = mgr.push(ctx)[0]
        row.update(push_s=full.duration_s, push_files=full.files_written, push_bytes=full.bytes_written)

        n = max(1, size // 100)
        mem.bulk_add(ctx, [{"content": text(rng, size + j), "layer": "user", "identifiers": ids} for j in range(n)])
        inc = mgr.push(ctx)[0]
        row.update(inc_append_s=inc.duration_s, inc_append_files=inc.files_written,
                   inc_append_reused=inc.files_reused, inc_append_bytes=inc.bytes_written)

        all_ids = [e.id for e in mem.export(ctx)]
        for mid in rng.sample(all_ids, n):
            mem.update(ctx, mid, metadata={"touched": True})
        upd = mgr.push(ctx)[0]
        row.update(inc_update_s=upd.duration_s, inc_update_files=upd.files_written,
                   inc_update_bytes=upd.bytes_written)

    t0 = time.perf_counter()
    cold = Memory.open_from_snapshot("bench", settings=s3s)
    res = cold.search(ctx, "the user likes dark mode", identifiers=ids, threshold=0.0, limit=5)
    row["cold_start_s"] = round(time.perf_counter() - t0, 3)
    report = cold.snapshots.last_reports[0]
    row.update(pull_s=report.duration_s, pull_bytes=report.bytes_downloaded, first_query_hits=len(res.results),
               restored_rows=report.tables.get("memories"))
    cold.close()

    # lazy cold start: newest partitions first within the budget, the rest in the background
    t0 = time.perf_counter()
    lazy = Memory.open_from_snapshot("bench", settings=s3s, lazy=True, budget_s=budget_s)
    res = lazy.search(ctx, "the user likes dark mode", identifiers=ids, threshold=0.0, limit=5)
    row["lazy_first_query_s"] = round(time.perf_counter() - t0, 3)
    lrep = lazy.snapshots.last_reports[0]
    row["lazy_files_loaded"] = f"{lrep.files_loaded}/{lrep.files_total}"
    row["lazy_first_query_hits"] = len(res.results)
    lazy.snapshots.wait_loaded()
    row["lazy_all_loaded_s"] = round(time.perf_counter() - t0, 3)
    lazy.close()
    store = S3Store(s3s)
    keys = [str(o["Key"]) for o in store.list("")]
    store.delete(keys)
    store.client.delete_bucket(Bucket=s3s.bucket)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000])
    parser.add_argument("--partition-rows", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--budget", type=float, default=3.0, help="cold-start budget of the lazy pull (s)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "snapshot_bench.json")
    args = parser.parse_args()
    s3s = settings()
    if s3s is None:
        print("no S3 endpoint: set STRATAMEM_S3_URL or run scripts/start_seaweedfs.sh")
        return
    rng = random.Random(args.seed)
    rows = [run(size, s3s, args.partition_rows, rng, args.budget) for size in args.sizes]
    cols = ["memories", "ingest_s", "push_s", "push_bytes", "inc_append_s", "inc_append_files", "inc_append_bytes",
            "inc_update_s", "inc_update_files", "cold_start_s", "pull_s", "pull_bytes", "lazy_first_query_s",
            "lazy_files_loaded", "lazy_all_loaded_s"]
    print(" | ".join(f"{c:>16}" for c in cols))
    for r in rows:
        print(" | ".join(f"{r[c]!s:>16}" for c in cols))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"benchmark": "snapshot", "python": platform.python_version(),
                                    "partition_rows": args.partition_rows, "results": rows}, indent=2))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
