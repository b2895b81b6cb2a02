"""Search latency of the conversation steps (``retrieval/context.py``) on a LoCoMo store.

    python benchmarks/context_latency.py --db PATH [--embedder onnx] [--questions 90] [--rounds 3]

``--db`` is a store written by ``benchmarks/locomo_recall.py --db PATH`` (one tenant per
conversation, the turns in the ``user`` layer). The first ``--questions`` questions (spread over
the conversations) are searched once to fill the query-embedding cache, then ``--rounds`` times
each with the lexical context off (``context_weight`` = 0) and on (the default), alternating
question by question so both see the same load. Prints ``mem.search`` p50/p95 in ms for each.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from stratamem import Memory, MemoryConfig, TenantContext

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from locomo_recall import CATEGORIES, DEFAULT_DATA, pct  # noqa: E402


def questions(data: list[dict[str, Any]], n: int) -> list[tuple[str, str]]:
    """Up to ``n`` (conversation, question) pairs, taken round robin over the conversations."""
    per_conv = [
        [(conv["sample_id"], qa["question"]) for qa in conv["qa"] if int(qa.get("category", 0)) in CATEGORIES]
        for conv in data
    ]
    out: list[tuple[str, str]] = []
    for i in range(max((len(q) for q in per_conv), default=0)):
        out += [q[i] for q in per_conv if i < len(q)]
    return out[:n]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--embedder", default="onnx")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--questions", type=int, default=90)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    if not args.data.exists():
        print(f"skipped: LoCoMo data not found at {args.data}")
        return 0
    data: list[dict[str, Any]] = json.loads(args.data.read_text())
    asked = questions(data, args.questions)
    configs = {"no context": MemoryConfig(context_weight=0.0), "default": MemoryConfig()}
    times: dict[str, list[float]] = {name: [] for name in configs}
    with Memory.open(args.db, embedder=args.embedder) as mem:

        def search(conv: str, question: str) -> float:
            ctx = TenantContext(tenant_id=conv, principal="bench")
            t0 = time.perf_counter()
            mem.search(ctx, question, identifiers={"user_id": conv}, layers=["user"], limit=20, threshold=0.0)
            return (time.perf_counter() - t0) * 1000

        for conv, question in asked:  # query vectors cached, partitions loaded
            for config in configs.values():
                mem.engine.config = config
                search(conv, question)
        for _ in range(args.rounds):
            for conv, question in asked:
                for name, config in configs.items():
                    mem.engine.config = config
                    times[name].append(search(conv, question))
    for name, values in times.items():
        print(f"{name:<12} p50 {pct(values, 0.5):6.1f} ms  p95 {pct(values, 0.95):6.1f} ms  ({len(values)} searches)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
