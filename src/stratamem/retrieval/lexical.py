"""Lexical half of hybrid search: tokenisation, BM25 and the score fusion (see providers/base.py).

The contract every provider follows (documented in ``providers.base``):

* text → terms: lower-cased word/number tokens (``[^\\W_]+``), English stop words dropped, Snowball
  (Porter 2) stems; numbers are kept as written;
* ``lex = sqrt(BM25 / BM25_max)``: BM25 (k1 = 0.6, b = 0.5, Lucene idf
  ``ln(1 + (N - df + 0.5) / (df + 0.5))``) of a memory for the distinct query terms, divided by the
  best BM25 a document could reach for *all* the query's terms (``Σ idf · (k1 + 1)``). A query term
  that no memory of the scope contains counts with the idf of a term of document frequency 0 (the
  rarest possible), so the ratio is "how much of the query's word mass this memory contains": when
  the informative words of a question are missing from the scope, a shared common word (a name that
  appears in most memories, "user", "project") no longer gets the whole lexical weight. The square
  root lets partial matches of rare words (a name, a number) count. ``lex`` ∈ [0, 1). N, df and the
  average length are taken over the searched scope (tenant + layer + scope key) in the lexical index;
* ``score = dense + w · lex · (1 - dense) · gate(dense)``: never below the dense score, never above 1,
  and 1 only for a perfect dense match. ``gate`` is 0 while the cosine similarity (``2·dense - 1``) is
  at most ``GATE_LOW`` and grows linearly to 1 at ``GATE_HIGH``: shared words cannot lift a memory
  whose meaning the embedding finds unrelated to the question.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache

import snowballstemmer

from ..layers import scope_key
from ..model import MemoryEntry

#: Memories are short: a repeated word adds little evidence (a low k1 saturates term frequency
#: early) and a length difference of a few words says little about relevance (b below Lucene's 0.75).
#: Chosen on the dev LoCoMo conversations and the dev fact scenarios (docs/ranking.md).
BM25_K1 = 0.6
BM25_B = 0.5
#: Cosine similarity below which lexical matches add nothing, and above which they count fully.
GATE_LOW = 0.1
GATE_HIGH = 0.3

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)

#: English stop words (the classic Lucene/NLTK core list plus question words, which carry no
#: lexical evidence in a query such as "When did Caroline go to the support group?").
STOPWORDS = frozenset(
    (
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "aren't",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "let",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "s",
        "t",
        "d",
        "ll",
        "m",
        "o",
        "re",
        "ve",
        "y",
        "don",
        "didn",
        "doesn",
        "isn",
        "wasn",
        "weren",
        "won",
        "wouldn",
        "shouldn",
        "couldn",
        "hasn",
        "haven",
        "hadn",
        "ain",
        "ma",
        "also",
        "yes",
        "ok",
        "oh",
        "hey",
        "hi",
        "yeah",
    )
)

_stemmer = snowballstemmer.stemmer("english")


@lru_cache(maxsize=65_536)
def _stem(word: str) -> str:
    if word.isdigit():
        return word
    stem: str = _stemmer.stemWord(word)
    return stem


def words(text: str) -> list[str]:
    """The word and number tokens of ``text`` as written, in order (what :func:`tokenize` stems)."""
    return _TOKEN.findall(text)


def tokenize(text: str) -> list[str]:
    """Index terms of ``text`` in order (stop words removed, stemmed)."""
    return [_stem(tok) for tok in words(text.lower()) if tok not in STOPWORDS]


#: A document of the postings tables: (tenant_id, memory_id, layer, scope, content).
PostingDoc = tuple[str, str, str, str, str]


def posting_docs(entries: Sequence[MemoryEntry]) -> list[PostingDoc]:
    """The documents the postings tables (DuckDB and PostgreSQL) index for these memories."""
    return [(e.tenant_id, e.id, e.layer.value, scope_key(e.layer, e.identifiers), e.content) for e in entries]


def term_counts(text: str) -> Counter[str]:
    """Term frequencies of a document."""
    return Counter(tokenize(text))


def query_terms(text: str) -> list[str]:
    """Distinct terms of a query, in first-seen order."""
    return list(dict.fromkeys(tokenize(text)))


def idf(n_docs: float, df: float) -> float:
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def best_bm25(present_idfs: Iterable[float], n_terms: int, n_docs: float) -> float:
    """The normaliser of ``lex``: ``Σ idf · (k1 + 1)`` over all ``n_terms`` distinct query terms, the
    terms absent from the scope counted with the idf of document frequency 0."""
    weights = list(present_idfs)
    absent = max(0, n_terms - len(weights))
    return (sum(weights) + absent * idf(n_docs, 0.0)) * (BM25_K1 + 1.0)


def lexical_gate(dense: float) -> float:
    """The share of the lexical score a memory of this dense score may receive (see module doc)."""
    cosine = 2.0 * dense - 1.0
    return min(1.0, max(0.0, (cosine - GATE_LOW) / (GATE_HIGH - GATE_LOW)))


def bm25_normalized(
    terms: Iterable[str],
    docs: Mapping[str, tuple[Mapping[str, int], int]],
) -> dict[str, float]:
    """Normalised BM25 (``lex`` above) of every document that contains a query term.

    ``docs`` maps a document id to (term counts, length) for the whole searched scope.
    """
    terms = list(dict.fromkeys(terms))
    n = len(docs)
    if not terms or n == 0:
        return {}
    avgdl = max(1e-9, sum(length for _, length in docs.values()) / n)
    df = {t: sum(1 for counts, _ in docs.values() if t in counts) for t in terms}
    weights = {t: idf(n, d) for t, d in df.items() if d > 0}
    best = best_bm25(weights.values(), len(terms), n)
    if best <= 0:
        return {}
    out: dict[str, float] = {}
    for doc_id, (counts, length) in docs.items():
        total = 0.0
        for t, w in weights.items():
            tf = counts.get(t, 0)
            if tf:
                total += w * tf * (BM25_K1 + 1.0) / (tf + BM25_K1 * (1.0 - BM25_B + BM25_B * length / avgdl))
        if total > 0:
            out[doc_id] = math.sqrt(min(1.0, total / best))
    return out


def fuse_scores(dense: float, lexical: float, weight: float) -> float:
    """``dense + weight · lexical · (1 - dense) · gate(dense)``, clamped to [0, 1]."""
    dense = min(1.0, max(0.0, dense))
    lexical = min(1.0, max(0.0, lexical))
    return min(1.0, max(0.0, dense + weight * lexical * (1.0 - dense) * lexical_gate(dense)))


def gate_sql(dense: str) -> str:
    """SQL of :func:`lexical_gate` for a dense-score expression (module constants only)."""
    low, span = float(GATE_LOW), float(GATE_HIGH - GATE_LOW)
    return f"least(1.0, greatest(0.0, (2.0 * ({dense}) - 1.0 - {low}) / {span}))"
