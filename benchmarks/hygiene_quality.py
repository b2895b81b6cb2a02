"""Hygiene quality benchmark: write decisions, duplicate prevention, noise rejection, remember/forget.

    python benchmarks/hygiene_quality.py [--embedder local|hashing] [--llm rules] [--verbose]

Runs every labelled scenario of benchmarks/data/hygiene_cases.jsonl (written for this project:
stable preferences, facts, instructions, project context, transient states, questions, emotions,
guesses, small talk, the same fact said three ways, paraphrased updates, remember, forget,
secrets, and the user's name: a step may also pin the stored wording, "Dana prefers dark mode" once
"My name is Dana" was said) through ``Memory.process`` on a fresh DuckDB file, each scenario under its own user.

Metrics (seed 003 §1.4 targets): decision accuracy; duplicate rate = memories stored beyond each
scenario's expected count / memories stored (< 5%); noise rejected = noise inputs ignored / noise
inputs (> 60%); remember/forget success (> 90%; a forget succeeds when it deletes the expected
number of memories and the forgotten fact is no longer found by search). Prints a table and writes
benchmarks/results/hygiene_quality.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from stratamem import Memory, MemoryError, TenantContext

DATA = Path(__file__).resolve().parent / "data" / "hygiene_cases.jsonl"
RESULTS = Path(__file__).resolve().parent / "results" / "hygiene_quality.json"
NOISE = {"transient", "question", "emotion", "guess", "smalltalk"}
TARGETS = {"duplicate_rate": ("<", 0.05), "noise_rejected": (">", 0.60), "remember_forget_success": (">", 0.90)}


def load() -> list[dict[str, Any]]:
    return [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line.strip()]


def run(embedder: str, llm: str | None, verbose: bool) -> dict[str, Any]:
    scenarios = load()
    tenant = TenantContext(tenant_id="bench", principal="bench")
    per_kind: dict[str, Counter[str]] = defaultdict(Counter)
    stored = excess = 0
    noise_total = noise_ignored = rf_total = rf_ok = steps = correct = 0
    failures: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        mem = Memory.open(Path(tmp) / "bench.duckdb", embedder=embedder)
        if llm:
            mem.hygiene.configure(llm=llm)
        start = time.perf_counter()
        for n, sc in enumerate(scenarios):
            ids = {"user_id": f"user-{n}"}
            for step in sc["steps"]:
                steps += 1
                try:
                    res = mem.process(tenant, step["text"], intent=step["intent"], identifiers=ids)
                    action, count, content = res.action, res.count, res.content
                except MemoryError as exc:
                    action, count, content = f"error:{exc.code.value}", None, None
                # a step may pin the stored wording too (name resolution: "Dana prefers dark mode")
                ok = action == step["expect"] and content == step.get("content", content)
                if step["intent"] == "forget":
                    gone = step.get("gone")
                    found = mem.search(tenant, gone, identifiers=ids, threshold=0.8).results if gone else []
                    ok = ok and count == step.get("count", count) and not any(r.score >= 0.95 for r in found)
                if step["intent"] in ("remember", "forget") and not step["expect"].startswith("error"):
                    rf_total += 1
                    rf_ok += int(ok)
                if sc["kind"] in NOISE:
                    noise_total += 1
                    noise_ignored += int(action == "ignored")
                correct += int(ok)
                per_kind[sc["kind"]]["ok" if ok else "fail"] += 1
                if not ok:
                    failures.append(
                        {
                            "id": sc["id"],
                            "text": step["text"],
                            "expected": step["expect"],
                            "got": action,
                            "expected_content": step.get("content"),
                            "content": content,
                        }
                    )
            live = mem.list(tenant, "user", identifiers=ids).total_count
            stored += live
            excess += max(0, live - int(sc["final_count"]))
        elapsed = time.perf_counter() - start
        health = mem.health(tenant)
        mem.close()
    metrics = {
        "scenarios": len(scenarios),
        "cases": steps,
        "decision_accuracy": round(correct / steps, 4),
        "duplicate_rate": round(excess / stored, 4) if stored else 0.0,
        "noise_rejected": round(noise_ignored / noise_total, 4) if noise_total else 0.0,
        "remember_forget_success": round(rf_ok / rf_total, 4) if rf_total else 0.0,
        "memories_stored": stored,
        "health_write_rejection_rate": health.write_rejection_rate,
        "health_duplicate_rate": health.duplicate_rate,
        "ms_per_case": round(elapsed * 1000 / steps, 2),
    }
    out = {
        "benchmark": "hygiene_quality",
        "embedder": embedder,
        "llm": llm or "rules",
        "python": platform.python_version(),
        "metrics": metrics,
        "per_kind": {k: dict(v) for k, v in sorted(per_kind.items())},
        "targets_met": {k: (metrics[k] < v if op == "<" else metrics[k] > v) for k, (op, v) in TARGETS.items()},
        "failures": failures,
    }
    if verbose:
        for f in failures:
            wording = f" ({f['content']!r}, expected {f['expected_content']!r})" if f["expected_content"] else ""
            print(f"FAIL {f['id']}: {f['text']!r} expected {f['expected']} got {f['got']}{wording}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--embedder", default="onnx", help="onnx (all-MiniLM-L6-v2, default), local (torch) or hashing")
    parser.add_argument("--llm", default=None, help="rules (default when STRATAMEM_LLM_URL is unset)")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    out = run(args.embedder, args.llm, args.verbose)
    from rich.console import Console
    from rich.table import Table

    table = Table(
        title=f"hygiene quality ({out['metrics']['cases']} cases, embedder {args.embedder}, llm {out['llm']})"
    )
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_column("target")
    for key, value in out["metrics"].items():
        target = TARGETS.get(key)
        mark = (
            ""
            if target is None
            else (f"{target[0]} {target[1]:.0%} " + ("ok" if out["targets_met"][key] else "MISSED"))
        )
        table.add_row(key, f"{value:.1%}" if isinstance(value, float) and key != "ms_per_case" else str(value), mark)
    for kind, counts in out["per_kind"].items():
        table.add_row(f"  {kind}", f"{counts.get('ok', 0)}/{counts.get('ok', 0) + counts.get('fail', 0)}", "")
    Console().print(table)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
