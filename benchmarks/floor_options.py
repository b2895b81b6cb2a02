"""Which measure should the relevance floor use? Offline comparison on the fact benchmark.

    python benchmarks/floor_options.py [--embedder onnx]

Writes the scenarios of ``fact_data.py`` through ``Memory.add`` as ``fact_ranking.py`` does, keeps
every question's fused scores (threshold 0) and the vectors, then replays the default search (the
default threshold, then a floor on one measure) for several measures of how much a memory stands out
from its scope. For each measure the floor is chosen on the ``dev`` scenarios (the highest
precision@1 whose unanswerable questions return something at most 20% of the time; the middle
of the floors that reach it) and then measured on ``holdout``. Also reported: the AUC of the best
result's measure between answerable and unanswerable questions (how well one number per question
tells them apart, across scopes). Measures (``retrieval/centering.py``; ``c`` the scope's shrunk centroid):

* ``fused``: the search score itself;
* ``centered cos``: cosine of ``q - c`` and ``m - c`` (the floor before the per-scope calibration, 0.2);
* ``relevance``: ``unit(q - c) · (m - c)``;
* ``... z``: the same in standard deviations above the scope's background (its memories' measure
  to one another), the per-scope calibration; ``relevance z`` is the default floor.

``--sizes``: the default floor replayed in small scopes (memories drawn from each scenario), where a
question whose answer was not drawn counts as one with no answer.

The replay leaves out the floor's lexical exception (``search.LEXICAL_KEEP``), which changes no
number of ``fact_ranking.py``. Prints a table and writes ``benchmarks/results/floor_options.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from fact_data import SCENARIOS
from fact_ranking import RESULTS, ROOT, Clock, ingest
from stratamem import Memory, MemoryConfig, TenantContext
from stratamem.retrieval.centering import (
    centered_cosines,
    mean_of_unit_rows,
    measure_background,
    relevance,
    relevance_z,
)

Arr = npt.NDArray[np.float64]
MAX_UNANSWERABLE = 0.2


def collect(embedder: str | None, splits: tuple[str, ...] = ("dev", "holdout")) -> list[dict[str, Any]]:
    """One row per question of ``splits``: split, answers, keys, fused scores and every measure per
    memory. The default leaves out "fresh", which is only ever measured, never tuned on."""
    rows: list[dict[str, Any]] = []
    threshold = MemoryConfig().default_threshold
    with tempfile.TemporaryDirectory(prefix="stratamem-floor-") as tmp:
        clock = Clock()
        with Memory.open(Path(tmp) / "f.duckdb", embedder=embedder, clock=clock) as mem:
            for scenario in SCENARIOS:
                if scenario.split not in splits:
                    continue
                ingest(mem, clock, scenario)
                ctx = TenantContext(tenant_id=f"facts-{scenario.name}", principal="bench")
                embed = mem.engine.embeddings.embed_query
                for question in scenario.questions:
                    res = mem.search(ctx, question.text, identifiers=scenario.identifiers, limit=100, threshold=0.0)
                    keys = [str(r.memory.metadata.get("key")) for r in res.results]
                    vectors = np.vstack([embed(r.memory.content) for r in res.results])
                    centroid = mean_of_unit_rows(vectors)  # every current memory of the scope
                    assert centroid is not None
                    q = embed(question.text)
                    cos = centered_cosines(q, vectors, centroid)
                    rel = relevance(q, vectors, centroid)
                    rows.append(
                        {
                            "scenario": scenario.name,
                            "query": q,
                            "vectors": vectors,
                            "split": scenario.split,
                            "answers": set(question.answers),
                            "keys": keys,
                            "passes": np.array([r.score >= threshold for r in res.results]),
                            "fused": np.array([r.score for r in res.results]),
                            "centered cos": cos,
                            "centered cos z": _z(cos, vectors, centroid, centered=True),
                            "relevance": rel,
                            "relevance z": _z(rel, vectors, centroid, centered=False),
                        }
                    )
    return rows


def _z(values: Arr, vectors: npt.NDArray[np.float32], centroid: Any, *, centered: bool) -> Arr:
    if centered:  # the background of the centered cosine: every pair's centered cosine
        pairs = np.vstack([centered_cosines(v, vectors, centroid) for v in vectors])
        off = pairs[~np.eye(len(vectors), dtype=bool)]
        return np.asarray((values - off.mean()) / off.std(), dtype=np.float64)
    bg = measure_background(vectors, centroid.mean, centroid.rows)
    assert bg is not None
    return np.asarray((values - bg.mean) / bg.std, dtype=np.float64)


def replay(rows: list[dict[str, Any]], measure: str, floor: float, split: str) -> dict[str, float]:
    """Default search (threshold, then the floor on ``measure``) for the questions of ``split``."""
    p1: list[float] = []
    fp: list[float] = []
    for row in rows:
        if split != "all" and row["split"] != split:
            continue
        kept = [k for k, ok, v in zip(row["keys"], row["passes"], row[measure], strict=True) if ok and v >= floor]
        if not row["answers"]:
            fp.append(1.0 if kept else 0.0)
        else:
            p1.append(1.0 if kept and kept[0] in row["answers"] else 0.0)
    return {"p@1": float(np.mean(p1)), "unans FP": float(np.mean(fp))}


def auc(rows: list[dict[str, Any]], measure: str, split: str) -> float:
    top: Callable[[dict[str, Any]], float] = lambda row: float(np.max(row[measure]))  # noqa: E731
    chosen = [r for r in rows if split == "all" or r["split"] == split]
    pos = [top(r) for r in chosen if r["answers"]]
    neg = [top(r) for r in chosen if not r["answers"]]
    return float(np.mean([(a > b) + 0.5 * (a == b) for a in pos for b in neg]))


def small_scopes(rows: list[dict[str, Any]], size: int, trials: int, floor: float | None) -> dict[str, Any]:
    """Default search in scopes of ``size`` memories drawn from each scenario (``trials`` draws per
    scenario, fixed seed): p@1 of the questions whose answers were drawn, and how often a question
    returns something when the scope holds no answer (unanswerable, or its answer not drawn)."""
    rng = np.random.default_rng(0)
    threshold = MemoryConfig().default_threshold
    out: dict[str, Any] = {}
    for split in ("dev", "holdout"):
        p1: list[float] = []
        fp: list[float] = []
        names = dict.fromkeys(r["scenario"] for r in rows if r["split"] == split)
        for name in names:
            questions = [r for r in rows if r["scenario"] == name]
            n = len(questions[0]["keys"])
            for _ in range(trials):
                drawn = rng.choice(n, size=min(size, n), replace=False)
                for row in questions:
                    order = [row["keys"].index(k) for k in questions[0]["keys"]]  # this question's rows, in scope order
                    vectors = row["vectors"][order][drawn]
                    keys = [questions[0]["keys"][i] for i in drawn]
                    fused = row["fused"][order][drawn]
                    centroid = mean_of_unit_rows(vectors)
                    assert centroid is not None
                    z = relevance_z(row["query"], vectors, centroid) if floor is not None else None
                    kept = [
                        keys[i]
                        for i in np.argsort(-fused, kind="stable")
                        if fused[i] >= threshold and (z is None or floor is None or z[i] >= floor)
                    ]
                    if row["answers"] and row["answers"] <= set(keys):
                        p1.append(1.0 if kept and kept[0] in row["answers"] else 0.0)
                    elif not row["answers"] & set(keys):
                        fp.append(1.0 if kept else 0.0)
        out[split] = {"p@1": float(np.mean(p1)), "no answer FP": float(np.mean(fp))}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--embedder", default=None)
    parser.add_argument("--sizes", type=int, nargs="*", default=[5, 6, 7, 8, 9], help="small scope sizes")
    parser.add_argument("--trials", type=int, default=80, help="draws per scenario and size")
    parser.add_argument("--out", type=Path, default=RESULTS / "floor_options.json")
    args = parser.parse_args(argv)
    rows = collect(args.embedder)
    out: dict[str, Any] = {}
    print(f"{'measure':<16}{'floor':>7} {'dev p@1':>8} {'dev FP':>7} {'hold p@1':>9} {'hold FP':>8}   AUC dev/holdout")
    for measure in ["fused", "centered cos", "centered cos z", "relevance", "relevance z"]:
        candidates = np.unique(np.round(np.concatenate([r[measure] for r in rows]), 2))
        scored = [(float(f), replay(rows, measure, float(f), "dev")) for f in candidates]
        allowed = [(f, dev["p@1"]) for f, dev in scored if dev["unans FP"] <= MAX_UNANSWERABLE]
        if not allowed:
            continue
        top = max(p for _, p in allowed)
        floor = float(np.median([f for f, p in allowed if p == top]))  # the middle of the best floors
        dev, hold = replay(rows, measure, floor, "dev"), replay(rows, measure, floor, "holdout")
        aucs = (auc(rows, measure, "dev"), auc(rows, measure, "holdout"))
        print(
            f"{measure:<16}{floor:>7.2f} {dev['p@1']:>8.3f} {dev['unans FP']:>7.3f} {hold['p@1']:>9.3f}"
            f" {hold['unans FP']:>8.3f}   {aucs[0]:.3f} / {aucs[1]:.3f}"
        )
        out[measure] = {"floor": floor, "dev": dev, "holdout": hold, "auc": {"dev": aucs[0], "holdout": aucs[1]}}
    floor = MemoryConfig().relevance_floor
    print(f"\nsmall scopes (default floor {floor} sd vs none): p@1 / no-answer questions returning anything")
    small: dict[str, Any] = {}
    for size in args.sizes:
        on, off = small_scopes(rows, size, args.trials, floor), small_scopes(rows, size, args.trials, None)
        small[str(size)] = {"floor": on, "off": off}
        print(
            f"  {size:>2} memories: "
            + " | ".join(
                f"{sp} {off[sp]['p@1']:.3f} / {off[sp]['no answer FP']:.3f} -> "
                f"{on[sp]['p@1']:.3f} / {on[sp]['no answer FP']:.3f}"
                for sp in ("dev", "holdout")
            )
        )
    out["small scopes"] = small
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {"benchmark": "floor_options", "embedder": args.embedder, "machine": platform.platform(), **out}, indent=2
        )
    )
    print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
