"""Would ranking by the relevance floor's measure put the right fact first more often?

    python benchmarks/centered_ranking.py [--embedder onnx] [--out PATH]

Every scenario of ``fact_data.py`` (dev, holdout and fresh) is written as ``fact_ranking.py``
writes it (``floor_options.collect``); each answerable question is asked with ``threshold=0`` (no
threshold, no floor: the order alone), and its candidates are ranked again, offline, by other
measures of the same vectors:

* ``fused``: the default search's own score (the order it returns);
* ``relevance``: ``unit(q - c) · (m - c)`` against the centroid ``c`` of the scope's current
  memories (``retrieval/centering.py``, the measure of the relevance floor), which discounts what
  every memory of the scope shares: the user's or the project's name;
* ``centered cos``: the cosine of the two centered vectors;
* ``fused + β·relevance``: the fused score with the relevance added at weight β.

Each variant is also replayed with the default threshold and relevance floor (``floored``: a
candidate is kept when its fused score passes the threshold and its relevance is at least
``MemoryConfig.relevance_floor`` standard deviations above its scope's background; the floor's
exception for a strong lexical match and the questions in the user's voice are not replayed), which
shows how much of a variant's gain the floor already gives.

Prints precision@1 per split and writes ``benchmarks/results/centered_ranking.json``. The question
as asked is embedded (no phrasing in the user's voice: its questions are in the third person).
``locomo_offline.py`` measures the same relevance on conversations (rows "relevance to the
conversation's centroid"), where it loses.
"""

from __future__ import annotations

import argparse
import json
import platform
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from fact_ranking import RESULTS
from floor_options import collect
from stratamem.config import MemoryConfig

SPLITS = ("dev", "holdout", "fresh")
WEIGHTS = (0.1, 0.25, 0.5, 1.0)

Row = dict[str, Any]


def precision_at_1(
    rows: list[Row], score: Callable[[Row], npt.NDArray[np.float64]], floor: float | None = None
) -> dict[str, float]:
    """Share of the answerable questions of each split (and all) whose best candidate by ``score``
    answers; with ``floor``, the best of the candidates the default threshold and that relevance
    floor keep (none kept: a miss)."""
    out: dict[str, float] = {}
    for split in (*SPLITS, "all"):
        chosen = [r for r in rows if split == "all" or r["split"] == split]
        if chosen:
            out[split] = float(np.mean([_first_answers(r, score(r), floor) for r in chosen]))
    return out


def _first_answers(row: Row, scores: npt.NDArray[np.float64], floor: float | None) -> bool:
    kept = np.ones(len(scores), dtype=bool) if floor is None else row["passes"] & (row["relevance z"] >= floor)
    if not kept.any():
        return False
    best = int(np.argmax(np.where(kept, scores, -np.inf)))
    return bool(row["keys"][best] in row["answers"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--embedder", default=None, help="embedder name (default: the store's default)")
    parser.add_argument("--out", type=Path, default=RESULTS / "centered_ranking.json")
    args = parser.parse_args(argv)
    rows = [r for r in collect(args.embedder, SPLITS) if r["answers"]]
    variants: dict[str, Callable[[Row], npt.NDArray[np.float64]]] = {
        "fused": lambda r: r["fused"],
        "relevance": lambda r: r["relevance"],
        "centered cos": lambda r: r["centered cos"],
    }
    for beta in WEIGHTS:
        variants[f"fused + {beta} relevance"] = lambda r, b=beta: r["fused"] + b * r["relevance"]  # type: ignore[misc]
    results = {name: precision_at_1(rows, fn) for name, fn in variants.items()}
    floor = MemoryConfig().relevance_floor
    floored = {name: precision_at_1(rows, fn, floor) for name, fn in variants.items()}
    for title, table in (("p@1 at threshold 0", results), ("p@1, threshold and floor", floored)):
        columns = list(next(iter(table.values())))
        print(f"{title:<26}" + "".join(f"{c:>10}" for c in columns))
        for name, row in table.items():
            print(f"{name:<26}" + "".join(f"{row[c]:>10.3f}" for c in columns))
    counts = {split: sum(r["split"] == split for r in rows) for split in SPLITS}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "embedder": args.embedder,
                "machine": platform.machine(),
                "questions": counts,
                "p@1": results,
                "floored p@1": floored,
            },
            indent=2,
        )
    )
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
