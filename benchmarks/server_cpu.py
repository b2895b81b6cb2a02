"""CPU time the server spends per REST request (search, add), measured from its process counters.

    python benchmarks/server_cpu.py [--memories 2000] [--embedder hashing] [--requests 400]
                                    [--clients 4] [--py-spy PATH] [--out PATH]

Wall-clock throughput on a machine shared with other jobs says little; the CPU time the server
process used per request does not depend on how long it waited for a core. The script builds a
store of ``--memories`` memories (as benchmarks/load.py does), starts ``stratamem serve`` on it,
warms it up, then sends ``--requests`` searches and then ``--requests`` adds from ``--clients``
concurrent clients and reads the server's user+system CPU time (``/proc/<pid>/stat``) before and
after each kind: CPU ms per request.

With ``--py-spy PATH`` (the py-spy binary) it also samples the server with py-spy during each kind
and splits the samples by phase of the request (HTTP and event loop, auth, rate limit, request
parsing, engine, embedding, provider search/store, telemetry, response serialisation, thread
hand-offs): the deepest marked frame of each sample names its phase. Threads outside Python (the
ONNX Runtime's own pool) are not sampled; their CPU is in the total only.

Prints a table; writes JSON to ``--out`` (default benchmarks/results/server_cpu.json). Linux only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import subprocess
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from load import USER, build_store, free_port, start_server
from sentences import SentenceGenerator

ROOT = Path(__file__).resolve().parent.parent
TICK = os.sysconf("SC_CLK_TCK")

#: (phase, substring of a py-spy frame "function (file:line)"); the deepest matching frame wins, and
#: of the markers matching one frame the first listed.
PHASES: list[tuple[str, str]] = [
    ("embedding", "stratamem/embeddings/"),
    ("provider", "stratamem/providers/"),
    ("ratelimit", "stratamem/coordination/ratelimit"),
    ("ratelimit", "check_rate (stratamem/server/ratelimit"),
    ("auth", "stratamem/server/keys.py"),
    ("auth", "stratamem/server/auth.py"),
    ("auth", "authenticate_request (stratamem/server/deps"),
    ("telemetry", "stratamem/telemetry/"),
    ("engine", "stratamem/"),
    ("serialise response", "serialize_response (fastapi/"),
    ("serialise response", "render (starlette/responses"),
    ("serialise response", "render (fastapi/responses"),
    ("parse request", "request_body_to_args (fastapi/"),
    ("parse request", "_validate_value_with_model_field (fastapi/"),
    ("parse request", "body (starlette/requests"),
    ("parse request", "json (starlette/requests"),
    ("dependencies", "solve_dependencies (fastapi/"),
    ("thread hand-off", "anyio/"),
    ("thread hand-off", "concurrent/futures"),
    ("thread hand-off", "threading.py"),
    ("http + event loop", "uvicorn/"),
    ("http + event loop", "h11/"),
    ("http + event loop", "httptools"),
    ("http + event loop", "starlette/"),
    ("http + event loop", "fastapi/"),
    ("http + event loop", "asyncio/"),
    ("http + event loop", "uvloop"),
]


#: Leaf frames of a thread that waits (py-spy counts some lock waits as active): left out of the shares.
WAITS = (
    "Condition.wait",
    "_worker (concurrent/futures",
    "EpollSelector.select (",
    "MicroBatchingEmbedder._run (",
    "_run (stratamem/embeddings/batching",
    "Runner.run (asyncio/runners",  # uvloop: its loop (waiting or not) is C code below this frame
)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def phase_of(stack: str) -> str:
    frames = stack.split(";")
    for frame in reversed(frames):
        for phase, marker in PHASES:
            if marker in frame:
                return phase
    return "other"


def split_by_phase(raw: Path) -> dict[str, float]:
    """Shares of py-spy's samples (``--format raw``: ``stack count`` lines) by phase."""
    counts: Counter[str] = Counter()
    for line in raw.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if stack and n.isdigit() and not stack.rsplit(";", 1)[-1].startswith(WAITS):
            counts[phase_of(stack)] += int(n)
    total = sum(counts.values()) or 1
    return {phase: n / total for phase, n in counts.most_common()}


async def send(url: str, key: str, kind: str, n: int, clients: int, queries: list[str], texts: list[str]) -> int:
    """``n`` requests of one kind from ``clients`` concurrent clients; returns the errors."""
    errors = 0
    todo = list(range(n))
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)

    async def client(http: httpx.AsyncClient) -> None:
        nonlocal errors
        while todo:
            i = todo.pop()
            if kind == "search":
                path = "/v1/memories/search"
                body: dict[str, Any] = {
                    "query": queries[i % len(queries)],
                    "identifiers": {"userId": USER},
                    "limit": 10,
                }
            else:
                path = "/v1/memories"
                body = {"content": texts.pop(), "layer": "user", "identifiers": {"userId": USER}}
            r = await http.post(path, json=body)
            errors += r.status_code >= 400

    async with httpx.AsyncClient(
        base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=120, limits=limits
    ) as http:
        await asyncio.gather(*(client(http) for _ in range(clients)))
    return errors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--embedder", default="hashing")
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=60)
    parser.add_argument("--py-spy", type=Path, default=None, help="py-spy binary: split the CPU by phase")
    parser.add_argument("--raw-dir", type=Path, default=None, help="keep py-spy's raw stacks here")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "server_cpu.json")
    args = parser.parse_args(argv)

    gen = SentenceGenerator(args.seed)
    result: dict[str, Any] = {
        "memories": args.memories,
        "embedder": args.embedder,
        "requests": args.requests,
        "clients": args.clients,
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
        "kinds": {},
    }
    with tempfile.TemporaryDirectory(prefix="stratamem-cpu-") as tmp:
        db = Path(tmp) / "cpu.duckdb"
        key, _ = build_store(db, args.memories, args.embedder, gen)
        facts = gen.take(args.requests + args.warmup)
        queries = [f.query for f in facts]
        texts = [f.text for f in facts]
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        proc = start_server(db, port, args.embedder, True)
        try:
            for kind in ("search", "add"):
                asyncio.run(send(url, key, kind, args.warmup, args.clients, queries, texts))
            for kind in ("search", "add"):
                spy = None
                raw = Path(tmp) / f"{kind}.txt"
                if args.py_spy:
                    spy = subprocess.Popen(
                        [str(args.py_spy), "record", "--pid", str(proc.pid), "--format", "raw", "-o", str(raw)],
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                    )
                    time.sleep(1.0)  # attached before the first request
                before = cpu_seconds(proc.pid)
                started = time.perf_counter()
                errors = asyncio.run(send(url, key, kind, args.requests, args.clients, queries, texts))
                elapsed = time.perf_counter() - started
                used = cpu_seconds(proc.pid) - before
                row: dict[str, Any] = {
                    "cpu_ms_per_request": used * 1000 / args.requests,
                    "wall_s": elapsed,
                    "errors": errors,
                }
                if spy is not None:
                    spy.send_signal(2)  # SIGINT: py-spy writes its file and exits
                    spy.wait(timeout=60)
                    if raw.exists():
                        row["phase_share"] = split_by_phase(raw)
                        if args.raw_dir:
                            args.raw_dir.mkdir(parents=True, exist_ok=True)
                            (args.raw_dir / raw.name).write_text(raw.read_text())
                result["kinds"][kind] = row
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()

    print(
        f"server CPU per request: {args.memories} memories, embedder {args.embedder}, "
        f"{args.requests} requests per kind, {args.clients} clients"
    )
    for kind, row in result["kinds"].items():
        print(f"{kind:<7} {row['cpu_ms_per_request']:.2f} ms CPU/request  (errors {row['errors']})")
        for phase, share in row.get("phase_share", {}).items():
            print(f"    {phase:<20} {share * row['cpu_ms_per_request']:6.2f} ms  {share:5.1%}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(f"wrote {args.out}")
    return 1 if any(row["errors"] for row in result["kinds"].values()) else 0


if __name__ == "__main__":
    raise SystemExit(main())
