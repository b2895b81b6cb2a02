"""LoCoMo ranking experiments offline: the engine's scoring replayed on cached vectors.

    python benchmarks/locomo_offline.py [--embedder onnx] [--cache DIR] [--data PATH]

Embeds every turn, every turn with its previous turn ("previous + this", same session) and every
question once, caches the vectors in ``--cache`` (default: a directory under the system temp dir),
then replays the score of ``docs/ranking.md`` in numpy over whole conversations (dense
``(1 + cos) / 2``, BM25 normalised by the query's whole term mass, the gate, the fusion, and the
neighbouring-turn re-ranking of the best 50 of ``retrieval/context.py``) for a set of variants. The
row ``engine default`` matches ``benchmarks/locomo_recall.py --config default`` within a few
thousandths (it reuses ``stratamem.retrieval.lexical``), so a variant's gain here is what the engine
would get. Variants that change what is indexed (``lexical context``, ``contextual dense``) are not
in the engine; see docs/ranking.md "Limits and what is left".

Recall@10 is reported for the dev conversations and, apart, for those held out (``HOLDOUT`` of
``locomo_recall.py``); choose on dev only. Writes benchmarks/results/locomo_offline.json.
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from locomo_recall import CATEGORIES, DEFAULT_DATA, HOLDOUT, RESULTS, turns
from stratamem import MemoryConfig
from stratamem.embeddings import make_embedder
from stratamem.retrieval import context, lexical


@dataclass
class Conversation:
    sample_id: str
    dia: list[str]
    session: np.ndarray
    questions: list[tuple[int, set[str]]]  # (question index, evidence dia_ids)
    dense: np.ndarray  # (questions, turns): (1 + cos) / 2 of the turn alone
    dense_context: np.ndarray  # the same for "previous turn + this turn"
    texts: list[str]
    texts_context: list[str]
    queries: list[str]


def bm25(
    docs_text: list[str], queries: list[str], k1: float = lexical.BM25_K1, b: float = lexical.BM25_B
) -> np.ndarray:
    """``lex`` of ``retrieval/lexical.py`` for every (query, document), with these BM25 parameters."""
    docs = [lexical.term_counts(t) for t in docs_text]
    lengths = np.array([sum(c.values()) for c in docs], dtype=float)
    n, avgdl = len(docs), max(1e-9, float(lengths.mean()))
    df: dict[str, int] = {}
    for counts in docs:
        for term in counts:
            df[term] = df.get(term, 0) + 1
    out = np.zeros((len(queries), n))
    for qi, query in enumerate(queries):
        terms = lexical.query_terms(query)
        weights = {t: lexical.idf(n, df[t]) for t in terms if t in df}
        best = (sum(weights.values()) + (len(terms) - len(weights)) * lexical.idf(n, 0.0)) * (k1 + 1.0)
        if not terms or best <= 0:
            continue
        for di, counts in enumerate(docs):
            total = sum(
                w * counts[t] * (k1 + 1.0) / (counts[t] + k1 * (1.0 - b + b * lengths[di] / avgdl))
                for t, w in weights.items()
                if t in counts
            )
            out[qi, di] = math.sqrt(min(1.0, total / best))
    return out


def fuse(dense: np.ndarray, lex: np.ndarray, weight: float = 1.0) -> np.ndarray:
    cosine = 2.0 * dense - 1.0
    gate = np.clip((cosine - lexical.GATE_LOW) / (lexical.GATE_HIGH - lexical.GATE_LOW), 0.0, 1.0)
    return np.clip(dense + weight * lex * (1.0 - dense) * gate, 0.0, 1.0)


def ranked(scores: np.ndarray, session: np.ndarray, weight: float, window: int) -> list[int]:
    """The neighbouring-turn re-ranking of ``retrieval/context.py`` over the best ``CANDIDATES``."""
    order = [int(i) for i in np.argsort(-scores, kind="stable")[: context.CANDIDATES]]
    if weight <= 0:
        return order
    floor = float(scores[order].min())
    known = {i: float(scores[i]) for i in order}
    new = {}
    for i in order:
        near = [
            known.get(j, floor) if 0 <= j < len(scores) and session[j] == session[i] else floor
            for j in range(i - window, i + window + 1)
            if j != i
        ]
        new[i] = (known[i] + weight * max(near)) / (1.0 + weight)
    return sorted(order, key=lambda i: (-new[i], i))


def load(data: list[dict[str, Any]], embedder: str, cache: Path) -> list[Conversation]:
    cache.mkdir(parents=True, exist_ok=True)
    model = None
    convs = []
    for conv in data:
        ts = turns(conv)
        texts = [f"{t['speaker']}: {t['text']}" for t in ts]
        texts_context = [
            (texts[i - 1] + "\n" if i > 0 and ts[i - 1]["session"] == ts[i]["session"] else "") + texts[i]
            for i in range(len(ts))
        ]
        queries = [qa["question"] for qa in conv["qa"]]
        vectors = {}
        for name, items in (("q", queries), ("turn", texts), ("prev", texts_context)):
            path = cache / f"{embedder.replace(':', '_')}_{conv['sample_id']}_{name}.npy"
            if not path.exists():
                model = model or make_embedder(embedder)
                np.save(path, np.asarray(model.embed(items), dtype=np.float32))
            vectors[name] = np.load(path)
        questions = [
            (i, set(qa["evidence"]))
            for i, qa in enumerate(conv["qa"])
            if int(qa.get("category", 0)) in CATEGORIES and qa.get("evidence")
        ]
        convs.append(
            Conversation(
                sample_id=conv["sample_id"],
                dia=[t["dia_id"] for t in ts],
                session=np.array([t["session"] for t in ts]),
                questions=questions,
                dense=(1.0 + vectors["q"] @ vectors["turn"].T) / 2.0,
                dense_context=(1.0 + vectors["q"] @ vectors["prev"].T) / 2.0,
                texts=texts,
                texts_context=texts_context,
                queries=queries,
            )
        )
    return convs


Variant = Callable[[Conversation], np.ndarray]


def evaluate(convs: list[Conversation], score: Variant, weight: float, window: int) -> dict[str, float]:
    recall: dict[str, list[float]] = {"dev": [], "holdout": []}
    hit1, rr = [], []
    for conv in convs:
        scores = score(conv)
        for qi, evidence in conv.questions:
            ids = [conv.dia[i] for i in ranked(scores[qi], conv.session, weight, window)[:20]]
            recall["holdout" if conv.sample_id in HOLDOUT else "dev"].append(
                len(evidence & set(ids[:10])) / len(evidence)
            )
            first = next((k for k, d in enumerate(ids) if d in evidence), None)
            hit1.append(1.0 if first == 0 else 0.0)
            rr.append(0.0 if first is None else 1.0 / (first + 1))
    every = recall["dev"] + recall["holdout"]
    return {
        "recall@10": float(np.mean(every)),
        "dev": float(np.mean(recall["dev"])),
        "holdout": float(np.mean(recall["holdout"])),
        "hit@1": float(np.mean(hit1)),
        "MRR": float(np.mean(rr)),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--embedder", default="onnx")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "stratamem-locomo-vectors")
    parser.add_argument("--out", type=Path, default=RESULTS / "locomo_offline.json")
    args = parser.parse_args(argv)
    if not args.data.exists():
        print(f"skipped: LoCoMo data not found at {args.data}")
        return 0
    convs = load(json.loads(args.data.read_text()), args.embedder, args.cache)
    lex: dict[str, dict[str, np.ndarray]] = {}
    for conv in convs:
        lex[conv.sample_id] = {
            "turn": bm25(conv.texts, conv.queries),
            "context": bm25(conv.texts_context, conv.queries),
            "before": bm25(conv.texts, conv.queries, k1=1.2, b=0.75),
        }
    hybrid: Variant = lambda c: fuse(c.dense, lex[c.sample_id]["turn"])  # noqa: E731
    variants: list[tuple[str, Variant, float, int]] = [
        ("dense only", lambda c: c.dense, 0.0, 1),
        ("hybrid, no neighbouring turns", hybrid, 0.0, 1),
        (
            "before: neighbours +-1, weight 0.2, BM25 k1 1.2, b 0.75",
            lambda c: fuse(c.dense, lex[c.sample_id]["before"]),
            0.2,
            1,
        ),
        ("engine default (MemoryConfig, retrieval/context.py)", hybrid, MemoryConfig().context_weight, context.WINDOW),
        ("BM25 k1 1.2, b 0.75 (before)", lambda c: fuse(c.dense, lex[c.sample_id]["before"]), 0.3, 2),
        (
            "contextual dense: mean of turn and previous+turn",
            lambda c: fuse((c.dense + c.dense_context) / 2.0, lex[c.sample_id]["turn"]),
            0.3,
            2,
        ),
        ("lexical context: BM25 of previous+turn", lambda c: fuse(c.dense, lex[c.sample_id]["context"]), 0.3, 2),
        (
            "lexical context + contextual dense",
            lambda c: fuse((c.dense + c.dense_context) / 2.0, lex[c.sample_id]["context"]),
            0.3,
            2,
        ),
    ]
    results = {}
    print(f"{'variant':<58} {'R@10':>6} {'dev':>6} {'held':>6} {'H@1':>6} {'MRR':>6}")
    for name, score, weight, window in variants:
        row = evaluate(convs, score, weight, window)
        results[name] = {**row, "context_weight": weight, "window": window}
        print(
            f"{name:<58} {row['recall@10']:6.3f} {row['dev']:6.3f} {row['holdout']:6.3f} "
            f"{row['hit@1']:6.3f} {row['MRR']:6.3f}"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps({"benchmark": "locomo_offline", "embedder": args.embedder, "variants": results}, indent=2)
    )
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
