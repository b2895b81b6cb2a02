"""LoCoMo evidence recall through the public SDK (protocol: ../shared/bench/README.md).

    python benchmarks/locomo_recall.py [--config dense hybrid ...] [--embedder local|onnx|hashing]
                                       [--db PATH [--reuse]] [--data PATH] [--weight W]
                                       [--default-search]

One tenant per conversation; every turn is one memory in the ``user`` layer (user_id = the
conversation id), content ``"{speaker}: {text}"``, session date, session number and ``dia_id`` in
metadata; ingestion with ``bulk_add``. Every question of categories 1-4 is searched with threshold 0
and limit 20; recall@k (fraction of evidence turns in the top k) and hit@k (≥ 1 evidence turn in
the top k) are reported per category and overall for k = 5, 10, 20, with ingestion time and search
latency p50/p95 (end to end, query embedding included), plus hit@1 (an evidence turn first) and MRR;
recall@10, hit@1 and MRR are also reported apart for the dev conversations and the two held out
(``HOLDOUT``).
Each turn carries its place in its session (``provenance.thread_id`` / ``position``) and its
session's date (``provenance.occurred_at``).

Configurations (``--config``, several allowed; they share one ingested store):
  dense    dense similarity only (hybrid_weight = 0, no conversation steps, no date step)
  hybrid   dense fused with BM25 (hybrid_weight = 1.0), no conversation steps (context_weight = 0),
           no date step (date_penalty = 0)
  default  the default MemoryConfig: hybrid plus the conversation steps (neighbouring turns, lexical
           context, speaker) and the date step
  half     hybrid with hybrid_weight = 0.5
``--weight W`` adds a ``hybrid@W`` configuration. ``--default-search`` also asks every question of
categories 1-5 as a caller would, with no threshold (the default threshold and relevance floor), and
reports per category and split how many return nothing, hit@1 and the mean best score. Category 5,
adversarial, has no answer: it asks about one speaker what the other one said, and its evidence is
that turn. ``--reuse`` searches an existing ``--db`` store without ingesting again (the lexical
index is written with the rows, whatever the configuration).
Prints a table and writes benchmarks/results/locomo_recall[_<embedder>].json. Skips with a message
when the data file (../shared/bench/locomo-dev.json) is absent.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from stratamem import Memory, MemoryConfig, TenantContext

ROOT = Path(__file__).resolve().parent.parent
# ../shared beside the repository (a git worktree one level deeper also finds it).
_CANDIDATES = [base / "shared" / "bench" / "locomo-dev.json" for base in (ROOT.parent, ROOT.parent.parent)]
DEFAULT_DATA = next((p for p in _CANDIDATES if p.exists()), _CANDIDATES[0])
RESULTS = ROOT / "benchmarks" / "results"
KS = (5, 10, 20)
#: Conversations held out while the ranking constants were chosen (reported apart as "holdout").
HOLDOUT = frozenset({"conv-42", "conv-43"})
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
CONFIGS: dict[str, dict[str, Any]] = {
    "dense": {"hybrid_weight": 0.0, "context_weight": 0.0, "date_penalty": 0.0},
    "hybrid": {"context_weight": 0.0, "date_penalty": 0.0},
    "default": {},
    "half": {"hybrid_weight": 0.5},
}


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


def turns(conv: dict[str, Any]) -> list[dict[str, Any]]:
    c = conv["conversation"]
    out: list[dict[str, Any]] = []
    n = 1
    while f"session_{n}" in c:
        date = c.get(f"session_{n}_date_time", "")
        for turn in c[f"session_{n}"]:
            out.append(
                {"speaker": turn["speaker"], "text": turn["text"], "dia_id": turn["dia_id"], "session": n, "date": date}
            )
        n += 1
    return out


def session_time(date: str) -> datetime | None:
    """A session's date as LoCoMo writes it ("1:56 pm on 8 May, 2023"), UTC; None if it reads otherwise."""
    try:
        return datetime.strptime(date, "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
    except ValueError:
        return None


def ingest(mem: Memory, data: list[dict[str, Any]], batch: int = 500) -> tuple[float, int]:
    start = time.perf_counter()
    count = 0
    for conv in data:
        ctx = TenantContext(tenant_id=conv["sample_id"], principal="bench")
        items = [
            {
                "content": f"{t['speaker']}: {t['text']}",
                "layer": "user",
                "identifiers": {"user_id": conv["sample_id"]},
                "metadata": {
                    "dia_id": t["dia_id"],
                    "session": t["session"],
                    "session_date": t["date"],
                    "speaker": t["speaker"],
                },
                # the turn's place in its session: search weighs neighbouring turns (retrieval/context.py)
                "provenance": {
                    "thread_id": f"session_{t['session']}",
                    "position": i,
                    # when the turn was said: search prefers the turns of a date a question names
                    "occurred_at": session_time(t["date"]),
                },
            }
            for i, t in enumerate(turns(conv))
        ]
        for i in range(0, len(items), batch):
            mem.bulk_add(ctx, items[i : i + batch])
        count += len(items)
    return time.perf_counter() - start, count


def evaluate(mem: Memory, data: list[dict[str, Any]], **search_kwargs: Any) -> dict[str, Any]:
    per_cat: dict[int, dict[str, list[float]]] = {
        c: {f"{m}@{k}": [] for m in ("recall", "hit") for k in KS} for c in CATEGORIES
    }
    for metrics in per_cat.values():
        metrics["hit@1"], metrics["MRR"] = [], []
    split_recall: dict[str, list[float]] = {"dev": [], "holdout": []}
    split_hit1: dict[str, list[float]] = {"dev": [], "holdout": []}
    split_rr: dict[str, list[float]] = {"dev": [], "holdout": []}
    latencies: list[float] = []
    for conv in data:
        ctx = TenantContext(tenant_id=conv["sample_id"], principal="bench")
        ids = {"user_id": conv["sample_id"]}
        for qa in conv["qa"]:
            cat = int(qa.get("category", 0))
            evidence = set(qa.get("evidence") or [])
            if cat not in CATEGORIES or not evidence:
                continue
            t0 = time.perf_counter()
            res = mem.search(
                ctx, qa["question"], identifiers=ids, layers=["user"], limit=max(KS), threshold=0.0, **search_kwargs
            )
            latencies.append((time.perf_counter() - t0) * 1000)
            ranked = [r.memory.metadata.get("dia_id") for r in res.results]
            for k in KS:
                found = evidence & set(ranked[:k])
                per_cat[cat][f"recall@{k}"].append(len(found) / len(evidence))
                per_cat[cat][f"hit@{k}"].append(1.0 if found else 0.0)
            first = next((i for i, d in enumerate(ranked) if d in evidence), None)
            per_cat[cat]["hit@1"].append(1.0 if first == 0 else 0.0)
            per_cat[cat]["MRR"].append(0.0 if first is None else 1.0 / (first + 1))
            split = "holdout" if conv["sample_id"] in HOLDOUT else "dev"
            split_recall[split].append(len(evidence & set(ranked[:10])) / len(evidence))
            split_hit1[split].append(1.0 if first == 0 else 0.0)
            split_rr[split].append(0.0 if first is None else 1.0 / (first + 1))
    rows: dict[str, dict[str, float]] = {}
    everything: dict[str, list[float]] = {key: [] for key in per_cat[1]}
    for cat, metrics in per_cat.items():
        rows[f"{cat} {CATEGORIES[cat]}"] = {key: statistics.fmean(v) if v else 0.0 for key, v in metrics.items()}
        rows[f"{cat} {CATEGORIES[cat]}"]["n"] = len(metrics["recall@5"])
        for key, v in metrics.items():
            everything[key] += v
    rows["overall"] = {key: statistics.fmean(v) if v else 0.0 for key, v in everything.items()}
    rows["overall"]["n"] = len(everything["recall@5"])

    def by_split(values: dict[str, list[float]]) -> dict[str, float]:
        return {name: statistics.fmean(v) if v else 0.0 for name, v in values.items()}

    return {
        "metrics": rows,
        "recall@10_by_split": by_split(split_recall),
        "hit@1_by_split": by_split(split_hit1),
        "MRR_by_split": by_split(split_rr),
        "search_ms_p50": pct(latencies, 0.5),
        "search_ms_p95": pct(latencies, 0.95),
        "queries": len(latencies),
    }


def default_search(mem: Memory, data: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Every question of categories 1-5 with the default search (no threshold given), limit 10: the
    share returning nothing, hit@1, and the mean best score (asked again at threshold 0)."""
    cells: dict[str, dict[str, list[float]]] = {}
    names = {**CATEGORIES, 5: "adversarial"}
    for conv in data:
        ctx = TenantContext(tenant_id=conv["sample_id"], principal="bench")
        ids = {"user_id": conv["sample_id"]}
        split = "holdout" if conv["sample_id"] in HOLDOUT else "dev"
        for qa in conv["qa"]:
            cat = int(qa.get("category", 0))
            if cat not in names:
                continue
            evidence = set(qa.get("evidence") or [])
            res = mem.search(ctx, qa["question"], identifiers=ids, layers=["user"], limit=10)
            best = mem.search(ctx, qa["question"], identifiers=ids, layers=["user"], limit=1, threshold=0.0)
            ranked = [r.memory.metadata.get("dia_id") for r in res.results]
            cell = cells.setdefault(f"{cat} {names[cat]}, {split}", {"empty": [], "hit@1": [], "best": []})
            cell["empty"].append(0.0 if ranked else 1.0)
            cell["hit@1"].append(1.0 if ranked and ranked[0] in evidence else 0.0)
            cell["best"].append(best.results[0].score if best.results else 0.0)
    return {
        key: {"n": len(v["empty"]), **{m: statistics.fmean(vals) for m, vals in v.items()}}
        for key, v in sorted(cells.items())
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", nargs="+", default=["dense", "hybrid", "default"], choices=sorted(CONFIGS))
    parser.add_argument("--weight", type=float, nargs="*", default=[], help="extra hybrid weights to measure")
    parser.add_argument("--embedder", default="onnx")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--db", type=Path, default=None, help="store path (default: a temporary file)")
    parser.add_argument("--reuse", action="store_true", help="search an existing --db without ingesting")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--default-search", action="store_true", help="also ask every question (categories 1-5) with no threshold"
    )
    args = parser.parse_args(argv)
    if not args.data.exists():
        print(
            f"skipped: LoCoMo data not found at {args.data} (expected ../shared/bench/locomo-dev.json "
            "beside the repository)"
        )
        return 0
    data: list[dict[str, Any]] = json.loads(args.data.read_text())
    tmp = tempfile.TemporaryDirectory(prefix="stratamem-locomo-")
    db = args.db or Path(tmp.name) / "locomo.duckdb"
    if args.reuse and not db.exists():
        parser.error(f"--reuse needs an existing store at {db}")
    configs = [(name, CONFIGS[name]) for name in args.config]
    configs += [(f"hybrid@{w:g}", {"hybrid_weight": w}) for w in args.weight]

    ingest_s, n_memories = None, None
    if not args.reuse:
        with Memory.open(db, embedder=args.embedder) as mem:
            mem.engine.embeddings.embed_query("warm-up")
            ingest_s, n_memories = ingest(mem, data)
        print(
            f"ingested {n_memories} turns of {len(data)} conversations in {ingest_s:.1f} s "
            f"({n_memories / ingest_s:.0f} memories/s, embedder {args.embedder})",
            file=sys.stderr,
        )
    results: dict[str, Any] = {}
    for name, overrides in configs:
        with Memory.open(db, embedder=args.embedder, config=MemoryConfig(**overrides)) as mem:
            mem.engine.embeddings.embed_query("warm-up")
            results[name] = {
                "config": {
                    **MemoryConfig(**overrides).model_dump(
                        include={"hybrid_weight", "context_weight", "speaker_penalty", "date_penalty"}
                    )
                },
                **evaluate(mem, data),
            }
    calibration: dict[str, dict[str, float]] | None = None
    if args.default_search:
        with Memory.open(db, embedder=args.embedder) as mem:
            calibration = default_search(mem, data)
    tmp.cleanup()

    header = (
        f"{'config':<12} {'category':<16} {'n':>4} "
        + " ".join(f"{m}@{k:<2}" for m in ("R", "H") for k in KS)
        + "  H@1   MRR    p50 ms  p95 ms"
    )
    print(header)
    print("-" * len(header))
    for name, res in results.items():
        for cat, m in res["metrics"].items():
            vals = " ".join(f"{m[f'{metric}@{k}']:.3f}" for metric in ("recall", "hit") for k in KS)
            vals += f" {m['hit@1']:.3f} {m['MRR']:.3f}"
            lat = f"  {res['search_ms_p50']:7.1f} {res['search_ms_p95']:7.1f}" if cat == "overall" else ""
            print(f"{name:<12} {cat:<16} {int(m['n']):>4} {vals}{lat}")
        for split, label in (("dev", "dev conversations"), ("holdout", f"held-out {sorted(HOLDOUT)}")):
            print(
                f"{name:<12} {label}: recall@10 {res['recall@10_by_split'][split]:.3f}, "
                f"hit@1 {res['hit@1_by_split'][split]:.3f}, MRR {res['MRR_by_split'][split]:.3f}"
            )
    if calibration is not None:
        print(f"\n{'default search (no threshold), limit 10':<40} {'n':>4} {'nothing':>8} {'H@1':>6} {'best':>6}")
        for key, m in calibration.items():
            print(f"{key:<40} {int(m['n']):>4} {m['empty']:8.3f} {m['hit@1']:6.3f} {m['best']:6.3f}")
    if ingest_s is not None:
        print(
            f"ingest: {n_memories} memories in {ingest_s:.1f} s ({n_memories / ingest_s:.0f}/s), "
            f"embedder {args.embedder}"
        )
    out = args.out or RESULTS / f"locomo_recall_{args.embedder.replace(':', '_')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "benchmark": "locomo_recall",
        "data": str(args.data.name),
        "embedder": args.embedder,
        "ingest_s": ingest_s,
        "memories": n_memories,
        "machine": platform.platform(),
        "python": platform.python_version(),
        "configs": results,
        **({"default_search": calibration} if calibration is not None else {}),
    }
    if args.reuse and out.exists():  # keep the ingestion figures of the run that built the store
        previous = json.loads(out.read_text())
        payload["ingest_s"], payload["memories"] = previous.get("ingest_s"), previous.get("memories")
        payload["configs"] = {**previous.get("configs", {}), **results}
    out.write_text(json.dumps(payload, indent=2))
    print(f"wrote {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
