"""Query-time boosts (recency, importance) measured before anyone turns them on.

    python benchmarks/boosts.py [--embedder onnx] [--recency 0.1 0.3 0.5 1.0] [--importance 0.3]
                                [--half-life 30] [--data PATH]

The boosts are off by default (``MemoryConfig.recency_boost`` / ``importance_boost`` = 0; formula in
``retrieval/boosts.py``). Two workloads, each through the public SDK with the engine's clock set to
when each memory was written:

* **LoCoMo history** (``../shared/bench/locomo-dev.json``, protocol of ``locomo_recall.py``): every
  session's turns are written at the session's date, the questions are asked one day after the last
  session. Most questions are about something said weeks or months earlier, so this measures what
  a boost costs when old memories are the answer. Skipped when the data file is absent.
* **Superseded facts**: 200 facts that changed (``"Maya said her home city is Lisbon"``, weeks later
  ``"Maya mentioned that her home city is Osaka"``) among 2000 unrelated sentences of
  ``sentences.py`` written over the same 120 days; each is asked ("What is Maya's home city?") at
  day 120. Measured: how often the newer fact ranks above the older one, and is the first result.
  The two phrasings are swapped at random between old and new, so wording favours neither.

Each configuration searches the same two stores (no re-ingestion). Access tracking stays on, as in
production: the importance boost sees the importance earlier searches gave. Prints a table and
writes benchmarks/results/boosts.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import shlex
import statistics
import sys
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from locomo_recall import DEFAULT_DATA, turns
from sentences import SentenceGenerator
from stratamem import Memory, MemoryConfig, TenantContext

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
T0 = datetime(2026, 1, 1, tzinfo=UTC)
NAMES = [
    "Maya",
    "Liam",
    "Noor",
    "Kenji",
    "Amara",
    "Tomas",
    "Ingrid",
    "Ravi",
    "Sofia",
    "Mateo",
    "Hana",
    "Oskar",
    "Priya",
    "Diego",
    "Yara",
    "Felix",
    "Leila",
    "Arjun",
    "Elena",
    "Kofi",
    "Mila",
    "Jonas",
    "Aisha",
    "Bruno",
    "Chloe",
    "Darius",
    "Esme",
    "Farid",
    "Greta",
    "Hugo",
    "Isla",
    "Jae",
    "Kira",
    "Lorenzo",
    "Malia",
    "Nils",
    "Olga",
    "Pablo",
    "Quinn",
    "Rosa",
]
ATTRIBUTES = {
    "favourite colour": ["blue", "green", "red", "yellow", "purple", "orange"],
    "home city": ["Lisbon", "Berlin", "Toronto", "Osaka", "Denver", "Nairobi"],
    "employer": ["Acme", "Globex", "Initech", "Umbrella", "Hooli", "Stark Industries"],
    "preferred editor": ["Vim", "Emacs", "VS Code", "IntelliJ", "Sublime Text", "Helix"],
    "diet": ["vegetarian", "vegan", "pescatarian", "keto", "gluten-free", "omnivore"],
}
PHRASINGS = ("{name} said their {attr} is {value}", "{name} mentioned that their {attr} is {value}")


class Clock:
    def __init__(self) -> None:
        self.at = T0

    def __call__(self) -> datetime:
        return self.at


def locomo_date(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' -> an aware datetime."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def ingest_locomo(mem: Memory, clock: Clock, data: list[dict[str, Any]]) -> datetime:
    """Every session's turns written at the session's date; returns one day after the last session."""
    last = datetime.min.replace(tzinfo=UTC)
    for conv in data:
        ctx = TenantContext(tenant_id=conv["sample_id"], principal="bench")
        sessions: dict[int, list[dict[str, Any]]] = {}
        for t in turns(conv):
            sessions.setdefault(t["session"], []).append(t)
        for _, ts in sorted(sessions.items()):
            clock.at = locomo_date(ts[0]["date"])
            last = max(last, clock.at)
            mem.bulk_add(
                ctx,
                [
                    {
                        "content": f"{t['speaker']}: {t['text']}",
                        "layer": "user",
                        "identifiers": {"user_id": conv["sample_id"]},
                        "metadata": {"dia_id": t["dia_id"], "session": t["session"]},
                    }
                    for t in ts
                ],
            )
    return last + timedelta(days=1)


def superseded_facts(seed: int = 11) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    facts = []
    for name in NAMES:
        for attr, values in ATTRIBUTES.items():
            old, new = rng.sample(values, 2)
            old_form, new_form = rng.sample(PHRASINGS, 2)
            facts.append(
                {
                    "question": f"What is {name}'s {attr}?",
                    "old": old_form.format(name=name, attr=attr, value=old),
                    "old_day": rng.uniform(0, 40),
                    "new": new_form.format(name=name, attr=attr, value=new),
                    "new_day": rng.uniform(60, 110),
                }
            )
    return facts


def ingest_superseded(mem: Memory, clock: Clock, facts: list[dict[str, Any]], distractors: int) -> None:
    ctx = TenantContext(tenant_id="facts", principal="bench")
    writes: list[tuple[float, str]] = [(f["old_day"], f["old"]) for f in facts]
    writes += [(f["new_day"], f["new"]) for f in facts]
    rng = random.Random(5)
    writes += [(rng.uniform(0, 120), text) for text in SentenceGenerator(seed=3).texts(distractors)]
    writes.sort()
    for day in range(121):  # one bulk_add per day, at that day's clock
        batch = [text for d, text in writes if day <= d < day + 1]
        if batch:
            clock.at = T0 + timedelta(days=day)
            mem.bulk_add(ctx, [{"content": text, "layer": "user", "identifiers": {"user_id": "u1"}} for text in batch])


def eval_superseded(mem: Memory, facts: list[dict[str, Any]], **kw: Any) -> dict[str, float]:
    ctx = TenantContext(tenant_id="facts", principal="bench")
    newer_above, newer_first = [], []
    for f in facts:
        res = mem.search(
            ctx, f["question"], identifiers={"user_id": "u1"}, layers=["user"], limit=20, threshold=0.0, **kw
        )
        ranked = [r.memory.content for r in res.results]
        pos_new = ranked.index(f["new"]) if f["new"] in ranked else len(ranked) + 1
        pos_old = ranked.index(f["old"]) if f["old"] in ranked else len(ranked) + 2
        newer_above.append(1.0 if pos_new < pos_old else 0.0)
        newer_first.append(1.0 if pos_new == 0 else 0.0)
    return {"newer_above_older": statistics.fmean(newer_above), "newer_first": statistics.fmean(newer_first)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--embedder", default="onnx")
    parser.add_argument("--recency", type=float, nargs="*", default=[0.1, 0.3, 0.5, 1.0])
    parser.add_argument("--importance", type=float, nargs="*", default=[0.3])
    parser.add_argument("--half-life", type=float, default=30.0, help="recency_half_life_days")
    parser.add_argument("--distractors", type=int, default=2000)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--out", type=Path, default=RESULTS / "boosts.json")
    args = parser.parse_args(argv)

    configs: list[tuple[str, dict[str, float]]] = [("off (default)", {})]
    configs += [(f"recency {w:g}", {"recency_boost": w}) for w in args.recency]
    configs += [(f"importance {w:g}", {"importance_boost": w}) for w in args.importance]
    facts = superseded_facts()
    data = json.loads(args.data.read_text()) if args.data.exists() else None
    if data is None:
        print(f"LoCoMo skipped: {args.data} not found (expected ../shared/bench/locomo-dev.json)", file=sys.stderr)

    rows: dict[str, dict[str, Any]] = {name: {"overrides": kw} for name, kw in configs}
    with tempfile.TemporaryDirectory(prefix="stratamem-boosts-") as tmp:
        clock = Clock()
        config = MemoryConfig(recency_half_life_days=args.half_life)
        with Memory.open(Path(tmp) / "facts.duckdb", embedder=args.embedder, config=config, clock=clock) as mem:
            ingest_superseded(mem, clock, facts, args.distractors)
            clock.at = T0 + timedelta(days=120)
            for name, kw in configs:
                rows[name].update(eval_superseded(mem, facts, **kw))
        if data is not None:
            from locomo_recall import evaluate

            with Memory.open(Path(tmp) / "locomo.duckdb", embedder=args.embedder, config=config, clock=clock) as mem:
                clock.at = ingest_locomo(mem, clock, data)
                for name, kw in configs:
                    overall = evaluate(mem, data, **kw)["metrics"]["overall"]
                    rows[name].update(
                        {"locomo_recall@10": overall["recall@10"], "locomo_recall@5": overall["recall@5"]}
                    )

    cols: list[tuple[str, str, Callable[[Any], str]]] = [
        ("superseded: newer above older", "newer_above_older", lambda v: f"{v:.3f}"),
        ("newer first", "newer_first", lambda v: f"{v:.3f}"),
        ("LoCoMo R@5", "locomo_recall@5", lambda v: f"{v:.3f}"),
        ("LoCoMo R@10", "locomo_recall@10", lambda v: f"{v:.3f}"),
    ]
    header = f"{'config':<16} | " + " | ".join(f"{c:>29}" if i == 0 else f"{c:>11}" for i, (c, _, _) in enumerate(cols))
    print(header)
    print("-" * len(header))
    for name, row in rows.items():
        cells = [(fmt(row[key]) if key in row else "skipped") for _, key, fmt in cols]
        print(f"{name:<16} | " + " | ".join(f"{c:>29}" if i == 0 else f"{c:>11}" for i, c in enumerate(cells)))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "benchmark": "boosts",
                "command": "python benchmarks/boosts.py " + shlex.join(argv or sys.argv[1:]),
                "embedder": args.embedder,
                "half_life_days": args.half_life,
                "facts": len(facts),
                "distractors": args.distractors,
                "machine": platform.platform(),
                "rows": rows,
            },
            indent=2,
        )
    )
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
