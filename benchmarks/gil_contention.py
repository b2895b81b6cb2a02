"""Per-search numpy work alone and beside a busy Python thread (what a server's other requests are).

    python benchmarks/gil_contention.py [--rows 50] [--seconds 1.0] [--out PATH]

numpy releases the GIL around a BLAS dot product of two vectors (``np.dot``, ``np.linalg.norm``)
and around element-wise operations over more than a few hundred values. Alone that costs nothing;
in a server where another thread is running Python, each release hands the GIL over and the
caller waits up to the interpreter's switch interval (5 ms) to take it back. A search that did it
once per candidate waited that often. The rows:

- ``np.dot per row``: the pattern the relevance floor used, one dot product per candidate (reference);
- ``relevance_z_each``: the relevance floor of a search over ``--rows`` candidates;
- ``lexical_match per row``: the lexical part of each candidate's score (``search.lexical_match``);
- ``context dense scores``: the dense score of ``--rows`` turns read around the candidates.

Prints microseconds per call alone and with one busy thread, and their ratio; writes JSON to
``--out`` (default benchmarks/results/gil_contention.json).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from stratamem.retrieval.centering import mean_of_unit_rows, relevance_z_each
from stratamem.retrieval.context import _dense_scores
from stratamem.search import lexical_match

ROOT = Path(__file__).resolve().parent.parent


def per_call_us(fn: Callable[[], object], seconds: float) -> float:
    calls = 0
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        fn()
        calls += 1
    return (time.perf_counter() - started) / calls * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=50, help="candidates per search")
    parser.add_argument("--seconds", type=float, default=1.0, help="per measurement")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "gil_contention.json")
    args = parser.parse_args(argv)

    rng = np.random.default_rng(0)
    shared = rng.normal(size=384)
    scope = (rng.normal(size=(300, 384)) + shared).astype(np.float32)
    centroid = mean_of_unit_rows(scope)
    assert centroid is not None and centroid.background is not None
    query = (rng.normal(size=384) + shared).astype(np.float32)
    rows = [scope[i] for i in range(args.rows)]
    lists = [[float(x) for x in row] for row in rows]
    cases: dict[str, Callable[[], object]] = {
        "np.dot per row": lambda: [float(np.dot(row, query)) for row in rows],
        "relevance_z_each": lambda: relevance_z_each(query, rows, centroid),
        "lexical_match per row": lambda: [lexical_match(0.8, query, row, 0.5) for row in rows],
        "context dense scores": lambda: _dense_scores(query, lists),
    }
    alone = {name: per_call_us(fn, args.seconds) for name, fn in cases.items()}
    stop = threading.Event()

    def busy() -> None:
        n = 0
        while not stop.is_set():
            n += 1

    thread = threading.Thread(target=busy, daemon=True)
    thread.start()
    try:
        contended = {name: per_call_us(fn, args.seconds) for name, fn in cases.items()}
    finally:
        stop.set()
        thread.join()

    print(f"{args.rows} rows, switch interval {sys.getswitchinterval() * 1000:g} ms")
    print(f"{'':<24}{'alone µs':>12}{'busy thread µs':>16}{'ratio':>8}")
    for name in cases:
        print(f"{name:<24}{alone[name]:>12.1f}{contended[name]:>16.1f}{contended[name] / alone[name]:>8.1f}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    result = {
        "rows": args.rows,
        "alone_us": alone,
        "busy_thread_us": contended,
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
    }
    args.out.write_text(json.dumps(result, indent=2))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
