"""Conversation-aware ranking: a turn is read with the turn before it, scored with its neighbours and
its speaker; and every memory with the time a question names.

Memories written from a conversation may carry their place in it: ``provenance.thread_id`` (a
conversation or session) and ``provenance.position`` (the turn's order in that thread). The answer
to a question often spans turns ("Did you go?" / "Yes, last Friday"), and the turn that says it may
not share the question's words while the turn before it does. When a searched layer's candidates
include positioned memories, search does the first three steps below with the :data:`CANDIDATES`
best candidates; the fourth applies to every search whose query names a date:

1. **Lexical context.** A positioned turn's words are read together with those of the previous
   turn of its thread (position - 1): its lexical match ``lex`` becomes the larger of its own and
   that of the two turns' words taken as one document. The turns read are the candidates, the turns
   before them, and the :data:`WINDOW` turns after each candidate (a turn whose predecessor matches
   the question becomes a candidate itself; the store gives its dense score with it). BM25
   (``lexical.py``: k1, b, the idf and the normalisation by the query's term mass) is computed over
   this pool of single turns, read from the store at search time (``Provider.thread_turns``):
   nothing of a neighbour is copied into a memory's index, so an updated, deleted or erased turn
   stops counting for its neighbours at once. The relevance becomes
   ``max(s, fuse(dense, lex_context))`` (the fusion of ``lexical.py``). The turns are read light
   (``ThreadTurn``: id, place, text, dense score and what the search's filters need); a turn read
   after a candidate that reaches the page is read whole (``Provider.scope_entries``) once the page
   is known, the others never are.
2. **Neighbouring turns.** Each turn's score becomes

       score = (s + w · n) / (1 + w)

   where ``s`` is its relevance and ``n`` the relevance of its most relevant neighbour: same
   thread, position within :data:`WINDOW` of its own. Two turns, not one: a question and its answer
   are often a turn apart ("Did you go?" / "<other speaker>" / "Yes, last Friday"), and the answer
   may be given by the next turn of the same speaker. A neighbour outside the candidates, or beyond
   the thread's ends, counts with the lowest candidate relevance (an upper bound of its own).

3. **Whose turn.** A turn written in the transcript form ``"Speaker: text"`` is spoken by
   ``Speaker`` (:func:`speaker`). When the page's turns have at least two speakers and the query
   names exactly one of them ("What did Caroline research?"; a label of single letters or stop
   words, "Q" or "A", is never taken as named), the turns of the other speakers lose
   :data:`SPEAKER_PENALTY`: a question about what one participant did or said is answered by that
   participant's own turns far more often than by the other's (in LoCoMo, 96% of the evidence turns
   of questions naming one speaker), while the other's turns on the same topic score alike.

4. **When.** When the query names a date with a year ("in January 2022", "on 1 May, 2022";
   ``dates.named_window``), the memories whose time (``provenance.occurred_at``, else
   ``created_at``) is outside that window, and whose text names no date in it, lose
   :data:`DATE_PENALTY`: the question asks what happened or was said then. This step applies to
   every memory, positioned or not, and on a page without positioned memories it re-orders that
   page.

A memory without a position keeps its score and its own words in steps 1 to 3. Like the boosts, this
re-ranks relevant memories: the threshold applies to the relevance ``s``. ``w`` is
``MemoryConfig.context_weight`` (0 = steps 1 to 3 off); the lexical context also needs a lexical weight
(``hybrid_weight`` > 0); ``MemoryConfig.speaker_penalty`` and ``date_penalty`` set steps 3 and 4
(0 = off). Chosen on the dev LoCoMo conversations (docs/ranking.md).
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from ..embeddings.base import Vector
from ..model import MemoryEntry
from ..providers.base import ScoredEntry, SearchPage, ThreadTurn, aware_utc, hit_vector, thread_place
from . import dates, lexical

#: Candidates re-ranked per layer when the layer holds positioned memories.
CANDIDATES = 50
#: Turns on each side of a memory that count as its neighbours (same thread).
WINDOW = 2
#: Turn texts whose term counts are kept between searches (``_term_counts``).
TOKENISED_TURNS = 16384

Place = tuple[str, int]
#: Subtracted from the score of a turn spoken by another participant than the one the query names
#: (step 3 of the module doc; ``MemoryConfig.speaker_penalty``). On the dev LoCoMo conversations
#: recall@10 was flat from 0.03 to 0.08.
SPEAKER_PENALTY = 0.05

#: Subtracted from the score of a memory outside the time a query names (step 4;
#: ``MemoryConfig.date_penalty``).
DATE_PENALTY = 0.1

#: The transcript form ``"Speaker: text"``: one to three words, each starting with a letter, then a
#: colon and white space (``"Caroline: …"``, ``"Dr. Chen: …"``, ``"user: …"``; not ``"https://…"``).
_SPEAKER = re.compile(r"([^\W\d_][\w'.-]*(?: [^\W\d_][\w'.-]*){0,2}):\s")

#: Reads the turns of the searched scope at these places, each with its dense score to the query
#: (``Provider.thread_turns``).
TurnReader = Callable[[Sequence[Place]], list[ThreadTurn]]
#: Reads whole memories of the searched scope by id, in the order of the ids, absent ones left out
#: (``Provider.scope_entries``).
EntryReader = Callable[[Sequence[str]], list[MemoryEntry]]


@dataclass(frozen=True, slots=True)
class JoinedTurn:
    """A turn read after a candidate that its lexical context lifted to the threshold, with its
    score: its whole entry is read only if it reaches the page (:func:`context_page`)."""

    turn: ThreadTurn
    score: float


#: A candidate (its entry read by the search) or a turn joined by the lexical context.
Hit = ScoredEntry | JoinedTurn


def _place(hit: Hit) -> Place | None:
    return hit.turn.place if isinstance(hit, JoinedTurn) else thread_place(hit.entry)


def hit_id(hit: Hit) -> str:
    """The memory id of a hit."""
    return hit.turn.id if isinstance(hit, JoinedTurn) else hit.entry.id


def _rescored(hit: Hit, score: float) -> Hit:
    if isinstance(hit, JoinedTurn):
        return JoinedTurn(turn=hit.turn, score=score)
    return ScoredEntry(hit.entry, score, hit.vector)


def _best_first(hits: list[Hit]) -> list[Hit]:
    """The hits by score, highest first, ties by id (the order of every re-ranking step)."""
    hits.sort(key=lambda h: (-h.score, hit_id(h)))
    return hits


def rerank(hits: Sequence[Hit], weight: float, *, neighbours: int = 1) -> list[Hit]:
    """The hits re-scored with their neighbours' relevance (see module doc, step 2), best first.

    ``neighbours`` is how many of the most relevant turns within ``WINDOW`` places count, each at
    ``weight``: one by default; ``benchmarks/locomo_offline.py`` measures two.
    """
    if not 1 <= neighbours <= 2 * WINDOW:
        raise ValueError(f"neighbours must be between 1 and {2 * WINDOW}, got {neighbours}")
    if weight <= 0 or not hits:
        return list(hits)
    by_place = {place: hit.score for hit in hits if (place := _place(hit)) is not None}
    if not by_place:
        return list(hits)
    floor = min(hit.score for hit in hits)
    out: list[Hit] = []
    for hit in hits:
        place = _place(hit)
        if place is None:
            out.append(hit)
            continue
        thread, position = place
        near = [by_place.get((thread, position + step), floor) for step in range(-WINDOW, WINDOW + 1) if step != 0]
        best = max(near) if neighbours == 1 else sum(sorted(near)[-neighbours:])
        out.append(_rescored(hit, (hit.score + weight * best) / (1.0 + neighbours * weight)))
    return _best_first(out)


def speaker(content: str) -> str | None:
    """Who speaks a turn written in the transcript form ``"Speaker: text"``, else None."""
    match = _SPEAKER.match(content.lstrip())
    return match.group(1) if match else None


def _nameable(who: str) -> bool:
    """Whether a query can name this speaker: a label of single letters or stop words ("Q", "A",
    "me") would be found in almost any query ("what is a …")."""
    return any(len(word) > 1 and word not in lexical.STOPWORDS for word in who.split())


def _content(hit: Hit) -> str:
    return hit.turn.content if isinstance(hit, JoinedTurn) else hit.entry.content


def prefer_speaker(hits: Sequence[Hit], query: str, penalty: float = SPEAKER_PENALTY) -> list[Hit]:
    """The hits with step 3 of the module doc applied, best first: when the positioned turns among
    them have at least two speakers and ``query`` names exactly one, every positioned turn of another
    speaker loses ``penalty``. Otherwise (and for memories without a position, or without a speaker)
    the scores are unchanged."""
    spoken = {  # a name in any case is one speaker ("User", "user")
        i: who.casefold() for i, hit in enumerate(hits) if _place(hit) is not None and (who := speaker(_content(hit)))
    }
    speakers = set(spoken.values())
    if penalty <= 0 or len(speakers) < 2:
        return list(hits)
    folded = query.casefold()  # a name counts as whole words ("Caroline's")
    named = [who for who in speakers if _nameable(who) and re.search(rf"(?<!\w){re.escape(who)}(?!\w)", folded)]
    if len(named) != 1:
        return list(hits)
    out = [
        _rescored(hit, max(0.0, hit.score - penalty)) if spoken.get(i, named[0]) != named[0] else hit
        for i, hit in enumerate(hits)
    ]
    return _best_first(out)


def _when(hit: Hit) -> datetime:
    """The time of a hit's memory: when it was said or happened, else when it was written."""
    if isinstance(hit, JoinedTurn):
        return hit.turn.occurred_at or hit.turn.created_at
    occurred = hit.entry.provenance.occurred_at if hit.entry.provenance else None
    return aware_utc(occurred or hit.entry.created_at)


def prefer_dates(hits: Sequence[Hit], query: str, penalty: float = DATE_PENALTY) -> list[Hit]:
    """The hits with step 4 of the module doc applied, best first: when ``query`` names a date, every
    hit whose time is outside its window loses ``penalty`` (never below 0). Otherwise unchanged."""
    window = dates.named_window(query) if penalty > 0 and hits else None
    if window is None:
        return list(hits)
    start, end = window
    out = [
        hit
        if start <= _when(hit) < end or dates.mentions(_content(hit), window)
        else _rescored(hit, max(0.0, hit.score - penalty))
        for hit in hits
    ]
    return _best_first(out)


@functools.lru_cache(maxsize=TOKENISED_TURNS)
def _term_counts(content: str) -> tuple[int, Mapping[str, int]]:
    """A turn's length in terms and its term counts (``lexical.tokenize``), kept for the next
    searches: the same turns are read around the candidates of many queries. Keyed by the text, so
    an edited turn is tokenised anew."""
    counts = Counter(lexical.tokenize(content))
    return sum(counts.values()), counts


def _dense_scores(vector: Vector, embeddings: Sequence[Vector | Sequence[float]]) -> list[float]:
    """``dense_score(vector, e)`` of each embedding, the query converted and its norm taken once
    (the same float32 products as ``dense_score``, one vector at a time)."""
    q = np.asarray(vector, dtype=np.float32)
    q_norm = np.sqrt(q @ q)  # np.linalg.norm of a float32 vector, without releasing the GIL (centering._row_dots)
    out: list[float] = []
    for embedding in embeddings:
        m = np.asarray(embedding, dtype=np.float32)
        cosine = float(q @ m) / max(float(q_norm * np.sqrt(m @ m)), 1e-12)
        out.append(min(1.0, max(0.0, (1.0 + cosine) / 2.0)))
    return out


def _bm25(
    terms: list[str], tf: np.ndarray, lengths: np.ndarray, pool_tf: np.ndarray, pool_lengths: Sequence[int]
) -> np.ndarray:
    """``lex`` of ``lexical.py`` for each document (``tf``: its count of each of ``terms``, one row
    a document; ``lengths``: its length in terms), with N, df and the average length of the pool
    (``pool_tf``, ``pool_lengths``). The sum over the terms is taken in the order of ``terms``, as
    ``lexical.py`` does, so the scores are the same floats."""
    n = len(pool_lengths)
    if not terms or n == 0:
        return np.zeros(len(lengths))
    avgdl = max(1e-9, sum(pool_lengths) / n)
    df = np.count_nonzero(pool_tf, axis=0)
    weights = [(j, lexical.idf(n, int(df[j]))) for j in range(len(terms)) if df[j] > 0]
    best = lexical.best_bm25((w for _, w in weights), len(terms), n)
    if best <= 0:
        return np.zeros(len(lengths))
    k1, b = lexical.BM25_K1, lexical.BM25_B
    norm = k1 * (1.0 - b + b * lengths / avgdl)
    total = np.zeros(len(lengths))
    for j, w in weights:
        counts = tf[:, j]
        total = total + w * counts * (k1 + 1.0) / (counts + norm)
    return np.sqrt(np.minimum(1.0, total / best))


def lexical_context(
    hits: list[ScoredEntry],
    read: TurnReader,
    query: str,
    vector: Vector,
    lexical_weight: float,
    min_score: float,
    *,
    after: int = WINDOW,
) -> list[Hit]:
    """The candidates with the lexical context of step 1 (module doc), plus the ``after`` turns
    after each that it lifts to at least ``min_score`` (as :class:`JoinedTurn`); in no particular
    order.

    Args:
        hits: The layer's candidates, by relevance.
        read: Reader of the scope's turns by place.
        query: The query text.
        vector: The query embedding.
        lexical_weight: Weight of the lexical half of the fused score (0: the hits unchanged).
        min_score: The search's threshold, for the turns read after the candidates.
        after: Turns read after each candidate as candidates of their own.

    Returns:
        The re-scored candidates and the turns joined.
    """
    placed = {place: hit for hit in hits if (place := _place(hit)) is not None}
    terms = lexical.query_terms(query)
    if not placed or not terms or lexical_weight <= 0:
        return list(hits)
    wanted = {
        (thread, position + step)
        for thread, position in placed
        for step in (-1, *range(1, after + 1))
        if (thread, position + step) not in placed
    }
    read_turns = {turn.place: turn for turn in read(sorted(wanted))}
    texts: dict[Place, str] = {
        **{p: t.content for p, t in read_turns.items()},
        **{p: h.entry.content for p, h in placed.items()},
    }
    # each turn tokenised once; only its length and its counts of the query terms are kept
    places = list(texts)
    row = {place: i for i, place in enumerate(places)}
    tf = np.zeros((len(places), len(terms)))
    lengths = np.zeros(len(places), dtype=np.int64)
    column = {term: j for j, term in enumerate(terms)}
    for i, place in enumerate(places):
        length, counts = _term_counts(texts[place])
        lengths[i] = length
        for term, j in column.items():
            tf[i, j] = counts.get(term, 0)
    # the candidates, and the turns after them (read above), scored with the turn before them
    scored = [p for p in places if any((p[0], p[1] - step) in placed for step in range(after + 1))]
    rows = np.array([row[p] for p in scored], dtype=np.int64)
    before = np.array([row.get((p[0], p[1] - 1), -1) for p in scored], dtype=np.int64)
    has_before = before >= 0
    before_tf = np.where(has_before[:, None], tf[before], 0.0)
    before_lengths = np.where(has_before, lengths[before], 0)
    pool_lengths = lengths.tolist()
    with_context = _bm25(terms, tf[rows] + before_tf, lengths[rows] + before_lengths, tf, pool_lengths).tolist()
    own = _bm25(terms, tf[rows], lengths[rows], tf, pool_lengths).tolist()
    lex = {place: max(o, c) for place, o, c in zip(scored, own, with_context, strict=True)}
    vectors = {p: v for p in scored if p in placed and (v := hit_vector(placed[p])) is not None and len(v)}
    dense_of = dict(zip(vectors, _dense_scores(vector, list(vectors.values())), strict=True))
    out: list[Hit] = [hit for hit in hits if _place(hit) is None]
    for place in scored:
        hit = placed.get(place)
        if hit is None:  # a turn read after a candidate: its dense score came with it
            dense = read_turns[place].score
        elif place in dense_of:
            dense = dense_of[place]
        else:
            out.append(hit)
            continue
        lifted = lexical.fuse_scores(dense, lex[place], lexical_weight)
        if hit is not None:
            out.append(ScoredEntry(entry=hit.entry, score=max(hit.score, lifted), vector=hit.vector))
        elif lifted >= min_score:
            out.append(JoinedTurn(turn=read_turns[place], score=lifted))
    return out


def context_page(
    search: Callable[[int], SearchPage],
    limit: int,
    weight: float,
    *,
    read: TurnReader | None = None,
    entries: EntryReader | None = None,
    query: str = "",
    vector: Vector | None = None,
    lexical_weight: float = 0.0,
    min_score: float = 0.0,
    speaker_penalty: float = SPEAKER_PENALTY,
    date_penalty: float = DATE_PENALTY,
) -> SearchPage:
    """The top ``limit`` after the lexical context and re-ranking of the module doc; ``search(n)``
    returns the top ``n`` by relevance, ``read`` the scope's turns at given places and ``entries``
    its memories by id (without both, or without ``vector``, only the neighbouring-turn re-ranking
    applies). A layer without positioned memories among its first hits costs one search, as
    without re-ranking.

    Args:
        search: The layer's relevance search, top ``n``.
        limit: Results wanted.
        weight: ``MemoryConfig.context_weight`` (0: the page of ``search(limit)`` unchanged).
        read: Reader of the scope's turns by place (``Provider.thread_turns``).
        entries: Reader of the scope's memories by id (``Provider.scope_entries``), for the turns
            read by place that reach the page.
        query: The query text (its terms for the lexical context).
        vector: The query embedding.
        lexical_weight: Weight of the lexical half of the fused score.
        min_score: The search's threshold; a turn read around the candidates joins only above it.
        speaker_penalty: ``MemoryConfig.speaker_penalty``, step 3 (0: off).
        date_penalty: ``MemoryConfig.date_penalty``, step 4 (0: off).

    Returns:
        The re-ranked page.
    """
    page = search(limit)
    if weight <= 0 or not any(_place(hit) is not None for hit in page.hits):
        if date_penalty <= 0:
            return page
        # step 4 alone re-orders the page (its hits are whole entries: ScoredEntry)
        dated = [h for h in prefer_dates(page.hits, query, date_penalty) if isinstance(h, ScoredEntry)]
        return SearchPage(hits=dated, total=page.total)
    if page.total > len(page.hits):
        page = search(max(limit, CANDIDATES))
    hits: list[Hit] = list(page.hits)
    if read is not None and entries is not None and vector is not None:
        hits = lexical_context(page.hits, read, query, vector, lexical_weight, min_score)
    ranked = prefer_dates(prefer_speaker(rerank(hits, weight), query, speaker_penalty), query, date_penalty)
    # the joined turns of the page are read whole, in one read; one gone since it was read by place
    # (deleted, erased, expired in between) leaves the page and the next hit takes its place
    out: list[ScoredEntry] = []
    start = 0
    while len(out) < limit and start < len(ranked):
        window = ranked[start : start + limit - len(out)]
        start += len(window)
        joined = [hit.turn.id for hit in window if isinstance(hit, JoinedTurn)]
        found = {e.id: e for e in entries(joined)} if joined and entries is not None else {}
        for hit in window:
            if isinstance(hit, ScoredEntry):
                out.append(hit)
            elif (entry := found.get(hit.turn.id)) is not None:
                out.append(ScoredEntry(entry=entry, score=hit.score))
    # a turn read after the candidates is a memory of the scope, mostly counted in ``page.total``
    # already (its own relevance above the threshold): the count is not raised past what is seen
    return SearchPage(hits=out, total=max(page.total, len(hits)))
