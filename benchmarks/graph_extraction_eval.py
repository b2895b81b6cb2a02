"""Precision/recall of the offline graph extractor on benchmarks/data/graph_extraction_labelled.jsonl.

Usage: ``python benchmarks/graph_extraction_eval.py`` (prints a table, writes
benchmarks/results/graph_extraction.json). Names are compared after ``normalize_name``.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from stratamem.graph.extract import RuleBasedExtractor, normalize_name

DATA = Path(__file__).resolve().parent / "data" / "graph_extraction_labelled.jsonl"
RESULTS = Path(__file__).resolve().parent / "results"


def evaluate(path: Path = DATA) -> dict[str, Any]:
    extractor = RuleBasedExtractor()
    items = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    tp_e = fp_e = fn_e = tp_r = fp_r = fn_r = 0
    errors: list[dict[str, Any]] = []
    start = time.perf_counter()
    for item in items:
        out = extractor.extract(item["text"])
        pred_e = {e.norm for e in out.entities}
        gold_e = {normalize_name(n) for n in item["entities"]}
        pred_r = {(normalize_name(r.source), r.type, normalize_name(r.target)) for r in out.relations}
        gold_r = {(normalize_name(s), t, normalize_name(o)) for s, t, o in item["relations"]}
        tp_e += len(pred_e & gold_e)
        fp_e += len(pred_e - gold_e)
        fn_e += len(gold_e - pred_e)
        tp_r += len(pred_r & gold_r)
        fp_r += len(pred_r - gold_r)
        fn_r += len(gold_r - pred_r)
        if pred_e != gold_e or pred_r != gold_r:
            errors.append(
                {
                    "text": item["text"],
                    "extra_entities": sorted(pred_e - gold_e),
                    "missed_entities": sorted(gold_e - pred_e),
                    "extra_relations": sorted(pred_r - gold_r),
                    "missed_relations": sorted(gold_r - pred_r),
                }
            )
    elapsed = time.perf_counter() - start

    def ratio(a: int, b: int) -> float:
        return round(a / b, 4) if b else 1.0

    return {
        "items": len(items),
        "entity_precision": ratio(tp_e, tp_e + fp_e),
        "entity_recall": ratio(tp_e, tp_e + fn_e),
        "relation_precision": ratio(tp_r, tp_r + fp_r),
        "relation_recall": ratio(tp_r, tp_r + fn_r),
        "ms_per_memory": round(elapsed * 1000 / max(1, len(items)), 4),
        "errors": errors,
    }


def main() -> int:
    result = evaluate()
    print(f"{'metric':<22}{'value':>10}")
    for key in ("items", "entity_precision", "entity_recall", "relation_precision", "relation_recall", "ms_per_memory"):
        print(f"{key:<22}{result[key]:>10}")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "graph_extraction.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    if "-v" in sys.argv:
        for err in result["errors"]:
            print(err)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
