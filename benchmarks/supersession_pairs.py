"""How often a changed fact replaces the right older memory, and how often one replaces a true fact.

    python benchmarks/supersession_pairs.py [--embedder onnx] [--sweep] [--shared N] [--out PATH]

Data: ``supersession_data.py`` (hand-written personas and labelled changes, dev and holdout splits).
For each case a fresh scope gets the persona's facts (day 0), then the case's new memory (day 30),
through the public SDK with the default configuration; the memories the add reports as superseded
are compared with the label. Reported per split:

* **found**: changes whose labelled older fact was superseded, over the changes;
* **wrong**: cases where a memory that stays true was superseded (any fact other than the label),
  over all cases; a wrong supersession hides a true fact from default search, a missed one leaves
  both facts current.

``--shared N`` also writes N generated facts about many people and projects (``sentences.py``: "Our
client Emeka Jung switched from Grafana to Sentry", "The beta release for Urban Marten moved to
February 17") into one scope, the way a team's scope collects them, and counts the memories
superseded: unlabelled, but almost every one of them hides a fact about someone or something else.

``--sweep`` replays the detection rules (``supersession.superseded`` on the most similar facts, as
``replacements.py`` chooses them) on the same embeddings for other cosine floors; its row for the
default floors must equal the SDK's (checked). Prints tables and writes JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

from fact_ranking import T0, Clock
from sentences import SentenceGenerator
from stratamem import Memory, TenantContext, supersession
from supersession_data import PERSONAS, Case, Persona

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
#: Personas about a project or a team are written to the project layer, people to the user layer.
PROJECTS = frozenset({"helix", "quill", "kestrel", "beacon", "harbor", "orbit", "kestrel5", "heron6", "platform6"})
SWEEP = (0.15, 0.2, 0.25, 0.3, 0.35, 0.4)


@dataclass
class Outcome:
    persona: str
    split: str
    new: str
    label: str | None
    superseded: set[str]

    @property
    def found(self) -> bool:
        return self.label is not None and self.label in self.superseded

    @property
    def wrong(self) -> set[str]:
        return self.superseded - {self.label} if self.label else set(self.superseded)


def cases() -> Iterator[tuple[Persona, int, Case]]:
    for persona in PERSONAS:
        for i, case in enumerate(persona.cases):
            yield persona, i, case


def run_sdk(embedder: str | None) -> list[Outcome]:
    """Every case through ``Memory.add`` on a fresh scope of one DuckDB store."""
    clock = Clock()
    ctx = TenantContext(tenant_id="supersession-bench", principal="bench")
    out: list[Outcome] = []
    with (
        tempfile.TemporaryDirectory() as tmp,
        Memory.open(Path(tmp) / "s.duckdb", embedder=embedder, clock=clock) as mem,
    ):
        for persona, i, case in cases():
            layer = "project" if persona.name in PROJECTS else "user"
            ids = {f"{layer}_id": f"{persona.name}-{i}"}
            clock.at = T0
            labels: dict[str, str] = {}
            for label, fact in persona.facts.items():
                clock.at += timedelta(minutes=1)
                labels[mem.add(ctx, content=fact, layer=layer, identifiers=ids).memory.id] = label
            clock.at = T0 + timedelta(days=30)
            added = mem.add(ctx, content=case.new, layer=layer, identifiers=ids)
            out.append(
                Outcome(persona.name, persona.split, case.new, case.replaces, {labels[s] for s in added.superseded})
            )
    return out


def run_replay(embedder: str | None, floors: list[tuple[float, float]]) -> dict[tuple[float, float], list[Outcome]]:
    """The rules replayed on the facts' and new memories' embeddings, for each (from-to, attribute)
    floor pair: candidates are the facts with a cosine at or above the smaller floor, best first,
    at most ``supersession.CANDIDATES`` (as ``replacements.plan``)."""
    with tempfile.TemporaryDirectory() as tmp, Memory.open(Path(tmp) / "r.duckdb", embedder=embedder) as mem:
        model = mem.engine.embeddings.embedder
        texts = sorted({f for p in PERSONAS for f in p.facts.values()} | {c.new for p in PERSONAS for c in p.cases})
        matrix = np.asarray(model.embed(texts), dtype=np.float64)
    matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    vec = dict(zip(texts, matrix, strict=True))
    saved = supersession.MIN_COSINE_FROM_TO, supersession.MIN_COSINE_ATTRIBUTE
    results: dict[tuple[float, float], list[Outcome]] = {}
    try:
        for floor in floors:
            supersession.MIN_COSINE_FROM_TO, supersession.MIN_COSINE_ATTRIBUTE = floor
            outcomes = []
            for persona, i, case in cases():
                entries = {label: _entry(f"{persona.name}-{i}-{label}", fact) for label, fact in persona.facts.items()}
                scored = sorted(
                    ((float(vec[case.new] @ vec[e.content]), label) for label, e in entries.items()),
                    key=lambda pair: -pair[0],
                )
                kept = [(c, label) for c, label in scored if c >= min(floor) - 1e-9][: supersession.CANDIDATES]
                chosen = supersession.superseded(
                    case.new, [supersession.Candidate(entries[label], c) for c, label in kept]
                )
                by_id = {e.id: label for label, e in entries.items()}
                outcomes.append(
                    Outcome(persona.name, persona.split, case.new, case.replaces, {by_id[e.id] for e in chosen})
                )
            results[floor] = outcomes
    finally:
        supersession.MIN_COSINE_FROM_TO, supersession.MIN_COSINE_ATTRIBUTE = saved
    return results


def _entry(memory_id: str, content: str) -> Any:
    from stratamem import MemoryEntry

    # the rules read only the id and the content
    return MemoryEntry.model_construct(id=memory_id, content=content)


def summary(outcomes: list[Outcome]) -> dict[str, dict[str, float]]:
    table: dict[str, dict[str, float]] = {}
    for split in (*dict.fromkeys(p.split for p in PERSONAS), "all"):
        rows = [o for o in outcomes if split in ("all", o.split)]
        changes = [o for o in rows if o.label is not None]
        table[split] = {
            "cases": len(rows),
            "changes": len(changes),
            "found": sum(o.found for o in changes) / max(1, len(changes)),
            "wrong": sum(bool(o.wrong) for o in rows) / max(1, len(rows)),
        }
    return table


def run_shared(embedder: str | None, n: int) -> list[tuple[str, str]]:
    """``n`` generated facts (seed 7) written in batches of 100 into one user scope; every (older,
    newer) pair where the newer memory superseded the older one."""
    ctx = TenantContext(tenant_id="supersession-shared", principal="bench")
    texts = SentenceGenerator(7).texts(n)
    pairs: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory() as tmp, Memory.open(Path(tmp) / "s.duckdb", embedder=embedder) as mem:
        content: dict[str, str] = {}
        for start in range(0, n, 100):
            batch = [
                {"content": t, "layer": "user", "identifiers": {"user_id": "team"}} for t in texts[start : start + 100]
            ]
            for added in mem.bulk_add(ctx, batch).results:
                content[added.memory.id] = added.memory.content
                pairs += [(content[old], added.memory.content) for old in added.superseded]
    return pairs


def print_table(title: str, table: dict[str, dict[str, float]]) -> None:
    print(title)
    print(f"{'split':<10}{'cases':>7}{'changes':>9}{'found':>9}{'wrong':>9}")
    for split, row in table.items():
        print(f"{split:<10}{row['cases']:>7.0f}{row['changes']:>9.0f}{row['found']:>9.3f}{row['wrong']:>9.3f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--embedder", default=None, help="embedder name (default: the store's default)")
    parser.add_argument("--sweep", action="store_true", help="replay the rules for other cosine floors")
    parser.add_argument("--dump", action="store_true", help="print every case's outcome")
    parser.add_argument(
        "--shared", type=int, default=0, metavar="N", help="also count supersessions among N facts of one scope"
    )
    parser.add_argument("--out", type=Path, default=RESULTS / "supersession_pairs.json")
    args = parser.parse_args(argv)

    outcomes = run_sdk(args.embedder)
    default = summary(outcomes)
    print_table("default settings (SDK adds)", default)
    if args.dump:
        for o in outcomes:
            mark = "ok " if (o.found or o.label is None) and not o.wrong else "MISS" if not o.wrong else "WRONG"
            print(f"  {mark:<5} [{o.persona}] {o.new!r}: label {o.label}, superseded {sorted(o.superseded)}")
    report: dict[str, Any] = {
        "default": default,
        "cases": [o.__dict__ | {"superseded": sorted(o.superseded)} for o in outcomes],
    }
    if args.shared:
        pairs = run_shared(args.embedder, args.shared)
        print(f"\nshared scope: {len(pairs)} of {args.shared} generated facts superseded")
        if args.dump:
            for old, new in pairs:
                print(f"  {old!r} -> {new!r}")
        report["shared"] = {"facts": args.shared, "superseded": len(pairs), "pairs": pairs}
    if args.sweep:
        base = (supersession.MIN_COSINE_FROM_TO, supersession.MIN_COSINE_ATTRIBUTE)
        floors = [base] + [(min(base[0], a), a) for a in SWEEP if (min(base[0], a), a) != base]
        replays = run_replay(args.embedder, floors)
        replayed = [(o.persona, o.new, sorted(o.superseded)) for o in replays[base]]
        if replayed != [(o.persona, o.new, sorted(o.superseded)) for o in outcomes]:
            print("the replay of the default floors differs from the SDK's adds", file=sys.stderr)
            return 1
        print("\nreplay: the attribute rule's cosine floor (the from-to floor the smaller of its own and it)")
        print(f"{'floor':<8}{'split':<10}{'found':>9}{'wrong':>9}")
        report["sweep"] = {}
        for (ft, attr), rows in replays.items():
            table = summary(rows)
            report["sweep"][f"{ft:.2f}/{attr:.2f}"] = table
            for split, row in table.items():
                print(f"{attr:<8.2f}{split:<10}{row['found']:>9.3f}{row['wrong']:>9.3f}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
