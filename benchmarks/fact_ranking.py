"""Does the agent get the right, current fact first? Hand-written scenarios (``fact_data.py``).

    python benchmarks/fact_ranking.py [--embedder onnx] [--split dev … fresh17] [--dump]
                                      [--out PATH] [--hybrid-weight W] [--threshold T]

Every scenario's memories are written through the public SDK (``Memory.add``, the default write
path), one day apart on the engine's clock, into a fresh DuckDB file; every question is then asked
with ``Memory.search`` and the default settings (or the overrides given). Reported per split
(``dev`` is what the ranking constants were chosen on, ``holdout`` was only measured, ``fresh``,
``fresh6`` to ``fresh17`` were written after every constant had been chosen, the last
twelve by authors who had not seen the ranking) and overall:

* ``p@1``: the first result answers the question (answerable questions; no result counts as wrong);
* ``MRR``: mean reciprocal rank of the first answering memory (0 when it is not returned);
* ``pair@3``: for two-fact questions, both facts in the first three results;
* ``stale>cur``: for questions whose answer made an older memory out of date, the older one is
  returned above the current one (or returned while the current one is not);
* ``miss``: answerable questions that return nothing at the threshold;
* ``unans FP``: unanswerable questions that return anything at the threshold;
* ``top1 ans / unans``: the mean top-1 score (threshold 0) of answerable and unanswerable questions,
  the measurement the default threshold is chosen from.

A table of supersession at write time follows: ``found``, the labelled changes (``supersedes``)
whose add superseded the older memory; ``wrong``, the adds that superseded a memory they do not
replace (a true fact hidden from default search).

A second table asks the questions in the user's own voice (``fact_data.VOICED``: "where do I live
now?") of each user scenario's memories as written (``name``), about "User" (``user``), and as
written under a user id that is not a name (``name, id u-…``), with the default search
(``retrieval/voice.py``). A third asks each user scenario's own questions of its memories written
without their subject, as facts extracted from a conversation often are ("Lives in Osaka";
``fact_data.without_subject``).

Prints the tables and writes ``benchmarks/results/fact_ranking.json``; ``--dump`` prints every question
with its first three results.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from fact_data import SCENARIOS, VOICED, Scenario, about_user, opaque_id, voiced, without_subject
from stratamem import Memory, MemoryConfig, TenantContext

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
T0 = datetime(2026, 1, 1, tzinfo=UTC)
#: The row of a default search (``MemoryConfig`` threshold and relevance floor), not a cut at a threshold.
DEFAULT = -1.0


class Clock:
    def __init__(self) -> None:
        self.at = T0

    def __call__(self) -> datetime:
        return self.at


@dataclass
class Tally:
    p1: list[float] = field(default_factory=list)
    rr: list[float] = field(default_factory=list)
    pair: list[float] = field(default_factory=list)
    stale: list[float] = field(default_factory=list)
    miss: list[float] = field(default_factory=list)
    unans_fp: list[float] = field(default_factory=list)
    top_ans: list[float] = field(default_factory=list)
    top_unans: list[float] = field(default_factory=list)

    def summary(self) -> dict[str, float]:
        def mean(v: list[float]) -> float:
            return statistics.fmean(v) if v else 0.0

        return {
            "p@1": mean(self.p1),
            "MRR": mean(self.rr),
            "pair@3": mean(self.pair),
            "stale>cur": mean(self.stale),
            "miss": mean(self.miss),
            "unans FP": mean(self.unans_fp),
            "top1 ans": mean(self.top_ans),
            "top1 unans": mean(self.top_unans),
            "questions": len(self.p1) + len(self.unans_fp),
        }


@dataclass
class Changes:
    """What the adds of a split reported as superseded, against the scenarios' labels."""

    found: list[float] = field(default_factory=list)  # per labelled change: the older memory superseded
    wrong: list[float] = field(default_factory=list)  # per add: it superseded a memory it does not replace

    def summary(self) -> dict[str, float]:
        return {
            "changes": len(self.found),
            "found": statistics.fmean(self.found) if self.found else 0.0,
            "adds": len(self.wrong),
            "wrong": statistics.fmean(self.wrong) if self.wrong else 0.0,
        }


def ingest(mem: Memory, clock: Clock, scenario: Scenario, changes: Changes | None = None) -> dict[str, str]:
    """Write the scenario's memories in order, one day apart; returns key -> memory id. ``changes``
    collects which older memories each add superseded, against the labels."""
    ctx = TenantContext(tenant_id=f"facts-{scenario.name}", principal="bench")
    ids: dict[str, str] = {}
    for day, m in enumerate(scenario.memories):
        clock.at = T0 + timedelta(days=day)
        out = mem.add(
            ctx, content=m.content, layer=scenario.layer, identifiers=scenario.identifiers, metadata={"key": m.key}
        )
        ids[m.key] = out.memory.id
        if changes is not None:
            label = {ids[m.supersedes]} if m.supersedes else set()
            if label:
                changes.found.append(1.0 if label <= set(out.superseded) else 0.0)
            changes.wrong.append(1.0 if set(out.superseded) - label else 0.0)
    clock.at = T0 + timedelta(days=len(scenario.memories) + 1)
    return ids


def evaluate(mem: Memory, scenario: Scenario, tallies: dict[float, Tally], dump: bool, **search: Any) -> None:
    """Ask every question once (threshold 0) and score it at each threshold of ``tallies``: a result
    set at threshold t is the threshold-0 ranking cut at score t."""
    ctx = TenantContext(tenant_id=f"facts-{scenario.name}", principal="bench")
    older = {m.key: m.supersedes for m in scenario.memories if m.supersedes}
    for question in scenario.questions:
        res = mem.search(ctx, question.text, identifiers=scenario.identifiers, limit=10, threshold=0.0, **search)
        scored = [(str(r.memory.metadata.get("key")), r.score) for r in res.results]
        default = mem.search(ctx, question.text, identifiers=scenario.identifiers, limit=10, **search)
        kept = [str(r.memory.metadata.get("key")) for r in default.results]
        top = scored[0][1] if scored else 0.0
        if dump:
            shown = ", ".join(f"{key} {score:.3f}" for key, score in scored[:3])
            print(f"  [{scenario.name}] {question.text!r} -> {list(question.answers)}: {shown}; default: {kept[:3]}")
        for threshold, tally in tallies.items():
            # DEFAULT: what a default search returns (the threshold and the relevance floor)
            ranked = kept if threshold == DEFAULT else [key for key, score in scored if score >= threshold]
            if not question.answers:
                tally.unans_fp.append(1.0 if ranked else 0.0)
                tally.top_unans.append(top)
                continue
            tally.top_ans.append(top)
            answers = set(question.answers)
            tally.p1.append(1.0 if ranked and ranked[0] in answers else 0.0)
            first = next((i for i, key in enumerate(ranked) if key in answers), None)
            tally.rr.append(0.0 if first is None else 1.0 / (first + 1))
            tally.miss.append(0.0 if ranked else 1.0)
            if len(answers) > 1:
                tally.pair.append(1.0 if answers <= set(ranked[:3]) else 0.0)
            for key in question.answers:
                old = older.get(key)
                if old is None:
                    continue
                pos_new = ranked.index(key) if key in ranked else None
                pos_old = ranked.index(old) if old in ranked else None
                stale = pos_old is not None and (pos_new is None or pos_old < pos_new)
                tally.stale.append(1.0 if stale else 0.0)


def run(
    embedder: str | None,
    splits: list[str],
    dump: bool,
    thresholds: list[float],
    config: MemoryConfig,
    changes: dict[str, Changes],
    **search: Any,
) -> dict[float, dict[str, dict[str, float]]]:
    """Metrics per threshold, per split (and ``all``); ``changes`` gets the supersessions per split."""
    tallies = {t: {split: Tally() for split in splits} for t in thresholds}
    with tempfile.TemporaryDirectory(prefix="stratamem-facts-") as tmp:
        clock = Clock()
        with Memory.open(Path(tmp) / "facts.duckdb", embedder=embedder, clock=clock, config=config) as mem:
            for scenario in SCENARIOS:
                if scenario.split not in splits:
                    continue
                ingest(mem, clock, scenario, changes.setdefault(scenario.split, Changes()))
                evaluate(
                    mem, scenario, {t: by_split[scenario.split] for t, by_split in tallies.items()}, dump, **search
                )
    out: dict[float, dict[str, dict[str, float]]] = {}
    for t, by_split in tallies.items():
        everything = Tally()
        for tally in by_split.values():
            for name in vars(everything):
                getattr(everything, name).extend(getattr(tally, name))
        out[t] = {split: tally.summary() for split, tally in by_split.items()}
        out[t]["all"] = everything.summary()
    return out


def run_voiced(
    embedder: str | None, splits: list[str], dump: bool, config: MemoryConfig, **search: Any
) -> dict[str, dict[str, float]]:
    """The default search of the questions in the user's voice, per memory form and split."""
    tallies: dict[str, Tally] = {}
    with tempfile.TemporaryDirectory(prefix="stratamem-voice-") as tmp:
        clock = Clock()
        with Memory.open(Path(tmp) / "voice.duckdb", embedder=embedder, clock=clock, config=config) as mem:
            for scenario in SCENARIOS:
                if scenario.split not in splits or scenario.name not in VOICED:
                    continue
                forms = (
                    ("name", voiced(scenario)),
                    ("user", about_user(scenario)),
                    ("name, id u-…", opaque_id(scenario)),
                )
                for form, variant in forms:
                    ingest(mem, clock, variant)
                    evaluate(
                        mem, variant, {DEFAULT: tallies.setdefault(f"{form} {scenario.split}", Tally())}, dump, **search
                    )
    return {key: tally.summary() for key, tally in sorted(tallies.items())}


def run_bare(
    embedder: str | None, splits: list[str], dump: bool, config: MemoryConfig, **search: Any
) -> dict[str, dict[str, float]]:
    """The default search of each user scenario's own questions, its memories written without their
    subject (``fact_data.without_subject``), per split."""
    tallies: dict[str, Tally] = {}
    with tempfile.TemporaryDirectory(prefix="stratamem-bare-") as tmp:
        clock = Clock()
        with Memory.open(Path(tmp) / "bare.duckdb", embedder=embedder, clock=clock, config=config) as mem:
            for scenario in SCENARIOS:
                bare = without_subject(scenario) if scenario.split in splits else None
                if bare is None:
                    continue
                ingest(mem, clock, bare)
                evaluate(mem, bare, {DEFAULT: tallies.setdefault(scenario.split, Tally())}, dump, **search)
                evaluate(mem, bare, {DEFAULT: tallies.setdefault("all", Tally())}, False, **search)
    return {key: tally.summary() for key, tally in sorted(tallies.items())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--embedder", default=None, help="embedder name (default: the store's default)")
    parser.add_argument(
        "--split", nargs="+", default=list(dict.fromkeys(s.split for s in SCENARIOS)), help="default: every split"
    )
    parser.add_argument("--dump", action="store_true")
    parser.add_argument("--hybrid-weight", type=float, default=None)
    parser.add_argument(
        "--threshold",
        type=float,
        default=None,
        help="the threshold of the main table (default: MemoryConfig.default_threshold)",
    )
    parser.add_argument(
        "--sweep", type=float, nargs="*", default=[], help="more thresholds to report (e.g. --sweep 0.7 0.75 0.8)"
    )
    parser.add_argument(
        "--floor",
        default=None,
        help="MemoryConfig.relevance_floor: standard deviations above the scope's background, or 'off' "
        "(default: its default)",
    )
    parser.add_argument("--out", type=Path, default=RESULTS / "fact_ranking.json")
    args = parser.parse_args(argv)
    config = MemoryConfig()
    if args.floor is not None:
        config = MemoryConfig(relevance_floor=None if args.floor == "off" else float(args.floor))
    search: dict[str, Any] = {}
    if args.hybrid_weight is not None:
        search["hybrid_weight"] = args.hybrid_weight
    default = MemoryConfig().default_threshold if args.threshold is None else args.threshold
    thresholds = list(dict.fromkeys([DEFAULT, default, *args.sweep]))
    if args.threshold is not None:  # the main table is the cut at that threshold, without the floor
        thresholds.remove(DEFAULT)
    by_split: dict[str, Changes] = {}
    results = run(args.embedder, args.split, args.dump, thresholds, config, by_split, **search)
    cols = ["p@1", "MRR", "pair@3", "stale>cur", "miss", "unans FP", "top1 ans", "top1 unans"]
    print(f"{'threshold':<10}{'split':<8} {'n':>4} " + " ".join(f"{c:>10}" for c in cols))
    for t, rows in results.items():
        for split, row in rows.items():
            label = "default" if t == DEFAULT else f"{t:.3f}"
            print(f"{label:<10}{split:<8} {int(row['questions']):>4} " + " ".join(f"{row[c]:>10.3f}" for c in cols))
    every = Changes()
    for tally in by_split.values():
        every.found += tally.found
        every.wrong += tally.wrong
    supersession = {split: tally.summary() for split, tally in [*by_split.items(), ("all", every)]}
    print(f"\nsupersession at write time\n{'split':<10}{'changes':>8}{'found':>8}{'adds':>6}{'wrong':>8}")
    for split, row in supersession.items():
        print(f"{split:<10}{row['changes']:>8.0f}{row['found']:>8.3f}{row['adds']:>6.0f}{row['wrong']:>8.3f}")
    voice = run_voiced(args.embedder, args.split, args.dump, config, **search)
    cols = ["p@1", "MRR", "miss", "unans FP", "stale>cur"]
    print(
        f"\nquestions in the user's voice, default search\n{'memories':<22} {'n':>4} "
        + " ".join(f"{c:>10}" for c in cols)
    )
    for key, row in voice.items():
        print(f"{key:<22} {int(row['questions']):>4} " + " ".join(f"{row[c]:>10.3f}" for c in cols))
    bare = run_bare(args.embedder, args.split, args.dump, config, **search)
    print(
        '\nuser memories without their subject ("Lives in Osaka"), the same questions, default search\n'
        f"{'split':<22} {'n':>4} " + " ".join(f"{c:>10}" for c in cols)
    )
    for key, row in bare.items():
        print(f"{key:<22} {int(row['questions']):>4} " + " ".join(f"{row[c]:>10.3f}" for c in cols))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "benchmark": "fact_ranking",
                "embedder": args.embedder,
                "search": search,
                "default_threshold": default,
                "relevance_floor": config.relevance_floor,
                "machine": platform.platform(),
                "results": {"default" if t == DEFAULT else f"{t:g}": rows for t, rows in results.items()},
                "supersession": supersession,
                "voiced": voice,
                "without_subject": bare,
            },
            indent=2,
        )
    )
    print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
