"""LoCoMo ranking experiments offline: the engine's scoring replayed on cached vectors.

    python benchmarks/locomo_offline.py [--embedder onnx] [--cache DIR] [--data PATH]

Embeds every turn, every turn with its previous turn ("previous + this", same session) and every
question once, caches the vectors in ``--cache`` (default: a directory under the system temp dir),
then replays the score of ``docs/ranking.md`` over whole conversations (dense ``(1 + cos) / 2``,
BM25 normalised by the query's whole term mass, the gate and the fusion in numpy; then, on the best
50, the lexical context and the neighbouring-turn re-ranking with the engine's own functions of
``retrieval/context.py``) for a set of variants. The row ``engine default`` matches
``benchmarks/locomo_recall.py --config default`` within a few thousandths, so a variant's gain here
is what the engine would get. Rows marked "(index)" score every turn of the conversation with a
document or vector the engine does not index (e.g. "previous + this" in the BM25 index); see
docs/ranking.md "LoCoMo: what was tried".

Recall@10 is reported for the dev conversations and, apart, for those held out (``HOLDOUT`` of
``locomo_recall.py``); choose on dev only. Writes benchmarks/results/locomo_offline.json.
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from locomo_recall import CATEGORIES, DEFAULT_DATA, HOLDOUT, RESULTS, session_time, turns
from stratamem import MemoryConfig
from stratamem.embeddings import make_embedder
from stratamem.model import MemoryEntry, Provenance
from stratamem.providers.base import ScoredEntry, ThreadTurn, dense_score
from stratamem.retrieval import context, lexical
from stratamem.retrieval.centering import mean_of_unit_rows, relevance

#: The turns' times (the offline replay applies no time filter).
_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)


@dataclass
class Conversation:
    sample_id: str
    dia: list[str]
    session: np.ndarray
    questions: list[tuple[int, set[str], int]]  # (question index, evidence dia_ids, category)
    dense: np.ndarray  # (questions, turns): (1 + cos) / 2 of the turn alone
    dense_context: np.ndarray  # the same for "previous turn + this turn"
    texts: list[str]
    texts_context: list[str]
    queries: list[str]
    query_vectors: np.ndarray
    entries: list[MemoryEntry]  # each turn as the engine sees it: content, place, vector


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


Rerank = Callable[[Sequence[context.Hit], float], list[context.Hit]]


def engine_ranked(
    conv: Conversation,
    qi: int,
    scores: np.ndarray,
    weight: float,
    after: int,
    rerank: Rerank = context.rerank,
    speaker_penalty: float = context.SPEAKER_PENALTY,
    date_penalty: float = context.DATE_PENALTY,
) -> list[int]:
    """The engine's page: the best ``CANDIDATES`` by relevance, then ``context.lexical_context``
    (the turns read by place from the conversation), ``rerank`` (the engine's ``context.rerank``
    unless a variant gives another), ``context.prefer_speaker`` and ``context.prefer_dates``, as
    ``context_page``."""
    order = [int(i) for i in np.argsort(-scores, kind="stable")[: context.CANDIDATES]]
    if weight <= 0:
        return order
    by_place = {(str(e.provenance.thread_id), int(e.provenance.position or 0)): e for e in conv.entries}
    vector = conv.query_vectors[qi].tolist()

    def read(places: Sequence[tuple[str, int]]) -> list[ThreadTurn]:
        # the turns as ``Provider.thread_turns`` gives them (the times are not used here)
        return [
            ThreadTurn(
                id=e.id,
                thread=place[0],
                position=place[1],
                content=e.content,
                score=dense_score(vector, e.embedding or []),
                created_at=_EPOCH,
                updated_at=_EPOCH,
                valid_to=None,
                occurred_at=e.provenance.occurred_at,
            )
            for place in places
            if (e := by_place.get(place)) is not None
        ]

    candidates = [ScoredEntry(entry=conv.entries[i], score=float(scores[i])) for i in order]
    hits = context.lexical_context(candidates, read, conv.queries[qi], vector, 1.0, 0.0, after=after)
    index = {e.id: i for i, e in enumerate(conv.entries)}
    query = conv.queries[qi]
    ranked = context.prefer_dates(
        context.prefer_speaker(rerank(hits, weight), query, speaker_penalty), query, date_penalty
    )
    return [index[context.hit_id(h)] for h in ranked]


def rerank_two_neighbours(hits: Sequence[context.Hit], weight: float) -> list[context.Hit]:
    """``context.rerank`` with the sum of the two most relevant neighbours (each at ``weight``)
    instead of the most relevant one: a turn inside a relevant exchange gains from both sides."""
    return context.rerank(hits, weight, neighbours=2)


def feedback(conv: Conversation, base: np.ndarray, lex: np.ndarray, best: int, beta: float) -> np.ndarray:
    """Pseudo-relevance feedback: each question's vector moved towards the mean vector of its ``best``
    turns by ``base`` (by ``beta`` of a unit vector), every turn's dense score taken again and fused."""
    vectors = np.array([e.embedding for e in conv.entries], dtype=np.float32)
    out = np.empty_like(base)
    for qi in range(base.shape[0]):
        centroid = vectors[np.argsort(-base[qi], kind="stable")[:best]].mean(axis=0)
        query = conv.query_vectors[qi] + beta * centroid / max(1e-9, float(np.linalg.norm(centroid)))
        query /= float(np.linalg.norm(query))
        out[qi] = fuse((1.0 + vectors @ query) / 2.0, lex[qi])
    return out


def ranked(scores: np.ndarray, session: np.ndarray, weight: float, window: int) -> list[int]:
    """The neighbouring-turn re-ranking alone (no lexical context) over the best ``CANDIDATES``."""
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
            (i, set(qa["evidence"]), int(qa["category"]))
            for i, qa in enumerate(conv["qa"])
            if int(qa.get("category", 0)) in CATEGORIES and qa.get("evidence")
        ]
        entries = [
            MemoryEntry.model_construct(
                id=f"{i:05d}",
                content=texts[i],
                provenance=Provenance(
                    thread_id=f"session_{t['session']}", position=i, occurred_at=session_time(t["date"])
                ),
                embedding=vectors["turn"][i].tolist(),
            )
            for i, t in enumerate(ts)
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
                query_vectors=vectors["q"],
                entries=entries,
            )
        )
    return convs


Variant = Callable[[Conversation], np.ndarray]


def evaluate(
    convs: list[Conversation],
    score: Variant,
    weight: float,
    window: int,
    after: int | None = None,
    rerank: Rerank = context.rerank,
    speaker_penalty: float = context.SPEAKER_PENALTY,
    date_penalty: float = context.DATE_PENALTY,
) -> dict[str, Any]:
    """Recall@10 (all, dev, held out, and per category on each split), hit@1 and MRR of a variant;
    ``after`` not None: the engine's lexical context, reading ``after`` turns after each candidate,
    then its re-ranking (``rerank``) and the speaker step at ``speaker_penalty``."""
    recall: dict[str, list[float]] = {"dev": [], "holdout": []}
    by_category: dict[str, dict[str, list[float]]] = {split: {} for split in recall}
    hit1, rr = [], []
    for conv in convs:
        scores = score(conv)
        split = "holdout" if conv.sample_id in HOLDOUT else "dev"
        for qi, evidence, category in conv.questions:
            if after is None:
                order = ranked(scores[qi], conv.session, weight, window)
            else:
                order = engine_ranked(conv, qi, scores[qi], weight, after, rerank, speaker_penalty, date_penalty)
            ids = [conv.dia[i] for i in order[:20]]
            found = len(evidence & set(ids[:10])) / len(evidence)
            recall[split].append(found)
            by_category[split].setdefault(CATEGORIES[category], []).append(found)
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
        "recall@10_by_category": {
            split: {name: float(np.mean(v)) for name, v in sorted(cats.items())} for split, cats in by_category.items()
        },
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
        around = [
            conv.texts_context[i] + (f"\n{conv.texts[i + 1]}" if i + 1 < len(conv.texts) and same else "")
            for i, same in enumerate([*(conv.session[1:] == conv.session[:-1]), False])
        ]
        lex[conv.sample_id] = {
            "turn": bm25(conv.texts, conv.queries),
            "context": bm25(conv.texts_context, conv.queries),
            "around": bm25(around, conv.queries),
            "before": bm25(conv.texts, conv.queries, k1=1.2, b=0.75),
        }

    def lexical_with(mix: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Variant:
        return lambda c: fuse(c.dense, mix(lex[c.sample_id]["turn"], lex[c.sample_id]["context"]))

    def rrf(c: Conversation) -> np.ndarray:
        """Reciprocal rank fusion (k = 60) of the dense and the BM25 ranking, instead of the score fusion."""
        ranks = [np.argsort(np.argsort(-m, axis=1, kind="stable"), axis=1) for m in (c.dense, lex[c.sample_id]["turn"])]
        return sum(1.0 / (60.0 + r + 1.0) for r in ranks)

    hybrid: Variant = lambda c: fuse(c.dense, lex[c.sample_id]["turn"])  # noqa: E731
    centered: dict[str, np.ndarray] = {}

    def relevance_to_centroid(c: Conversation) -> np.ndarray:
        """(questions, turns): each turn's relevance to each question measured from the centroid of
        the conversation's turns (``retrieval/centering.py``, the relevance floor's measure)."""
        if c.sample_id not in centered:
            vectors = np.asarray([e.embedding for e in c.entries], dtype=np.float32)
            centroid = mean_of_unit_rows(vectors)
            assert centroid is not None
            centered[c.sample_id] = np.vstack([relevance(q, vectors, centroid) for q in c.query_vectors])
        return centered[c.sample_id]

    weight, window = MemoryConfig().context_weight, context.WINDOW
    # the rows measured before the speaker and date steps existed
    before_speaker: dict[str, Any] = {"speaker_penalty": 0.0, "date_penalty": 0.0}
    # (name, score, context weight, window, turns read after each candidate: None = no lexical
    # context, options of ``evaluate``)
    variants: list[tuple[str, Variant, float, int, int | None, dict[str, Any]]] = [
        ("dense only", lambda c: c.dense, 0.0, 1, None, {}),
        ("hybrid, no neighbouring turns", hybrid, 0.0, 1, None, {}),
        (
            "before: neighbours +-1, weight 0.2, BM25 k1 1.2, b 0.75",
            lambda c: fuse(c.dense, lex[c.sample_id]["before"]),
            0.2,
            1,
            None,
            {},
        ),
        ("previous default: neighbours +-2, weight 0.3, no lexical context", hybrid, weight, window, None, {}),
        ("engine default (MemoryConfig, retrieval/context.py)", hybrid, weight, window, window, {}),
        ("previous default: lexical context, no speaker step", hybrid, weight, window, window, before_speaker),
    ]
    variants += [
        ("previous default: the speaker step, no date step", hybrid, weight, window, window, {"date_penalty": 0.0})
    ]
    variants += [
        (
            f"speaker step at {penalty}",
            hybrid,
            weight,
            window,
            window,
            {"speaker_penalty": penalty, "date_penalty": 0.0},
        )
        for penalty in (0.02, 0.03, 0.08, 0.12)
    ]
    variants += [
        (f"date step at {penalty}", hybrid, weight, window, window, {"date_penalty": penalty})
        for penalty in (0.02, 0.05, 0.15, 0.2, 0.3)
    ]
    variants += [
        ("lexical context, no turn read after the candidates", hybrid, weight, window, 0, before_speaker),
        ("lexical context, one turn read after each candidate", hybrid, weight, window, 1, before_speaker),
        ("reciprocal rank fusion (k 60) instead of score fusion", rrf, weight, window, None, {}),
        (
            "pseudo-relevance feedback: query + 0.3 x mean of its best 3 turns",
            lambda c: feedback(c, hybrid(c), lex[c.sample_id]["turn"], 3, 0.3),
            weight,
            window,
            window,
            before_speaker,
        ),
        (
            "hybrid + 0.25 x relevance to the conversation's centroid",
            lambda c: hybrid(c) + 0.25 * relevance_to_centroid(c),
            weight,
            window,
            window,
            before_speaker,
        ),
        (
            "hybrid + 0.5 x relevance to the conversation's centroid",
            lambda c: hybrid(c) + 0.5 * relevance_to_centroid(c),
            weight,
            window,
            window,
            before_speaker,
        ),
        (
            "relevance to the conversation's centroid alone",
            relevance_to_centroid,
            weight,
            window,
            window,
            before_speaker,
        ),
        (
            "neighbours: the two most relevant, 0.15 each",
            hybrid,
            0.15,
            window,
            window,
            {**before_speaker, "rerank": rerank_two_neighbours},
        ),
        (
            "neighbours: the two most relevant, 0.2 each",
            hybrid,
            0.2,
            window,
            window,
            {**before_speaker, "rerank": rerank_two_neighbours},
        ),
        (
            "(index) contextual dense: mean of turn and previous+turn",
            lambda c: fuse((c.dense + c.dense_context) / 2.0, lex[c.sample_id]["turn"]),
            weight,
            window,
            None,
            {},
        ),
        ("(index) BM25 document previous+turn", lexical_with(lambda t, p: p), weight, window, None, {}),
        ("(index) max of BM25 turn, previous+turn", lexical_with(np.maximum), weight, window, None, {}),
        (
            "(index) mean of BM25 turn, previous+turn",
            lexical_with(lambda t, p: (t + p) / 2.0),
            weight,
            window,
            None,
            {},
        ),
        (
            "(index) BM25 document previous+turn+next",
            lambda c: fuse(c.dense, lex[c.sample_id]["around"]),
            weight,
            window,
            None,
            {},
        ),
        (
            "(index) BM25 previous+turn + contextual dense",
            lambda c: fuse((c.dense + c.dense_context) / 2.0, lex[c.sample_id]["context"]),
            weight,
            window,
            None,
            {},
        ),
    ]
    results = {}
    print(f"{'variant':<66} {'R@10':>6} {'dev':>6} {'held':>6} {'H@1':>6} {'MRR':>6}")
    for name, score, w, win, after, options in variants:
        row = evaluate(convs, score, w, win, after, **options)
        penalty = options.get("speaker_penalty", context.SPEAKER_PENALTY) if after is not None else None
        results[name] = {
            **row,
            "context_weight": w,
            "window": win,
            "lexical_context_after": after,
            "speaker_penalty": penalty,
        }
        print(
            f"{name:<66} {row['recall@10']:6.3f} {row['dev']:6.3f} {row['holdout']:6.3f} "
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
