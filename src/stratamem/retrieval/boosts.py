"""Optional query-time boosts: recency and importance (both off by default).

A search ranks by relevance, the fused score of ``lexical.py`` (``s`` ∈ [0, 1]). With boosts on,
each hit's score becomes

    score = s · (1 - wr · (1 - r)) · (1 - wi · (1 - i))

* ``r = 0.5 ** (age_days / half_life_days)``, the age counted from the memory's ``updated_at``
  (the last time its content or metadata changed), so a memory written now has ``r = 1``;
* ``i`` is the memory's importance (``lifecycle/importance.py``: access frequency and recency, or
  the value given at add time), in [0, 1];
* ``wr`` / ``wi`` (``MemoryConfig.recency_boost`` / ``importance_boost``, or per search) in [0, 1].

So a boost only ever discounts: the score stays in [0, s], a fresh or fully important memory keeps
its relevance, and weight ``w`` takes at most the share ``w`` off a stale or unimportant one. The
search threshold applies to the relevance ``s`` (boosts re-rank what is relevant; they never turn
a relevant memory into a miss), and ``total_count`` counts the same matches as without boosts.

Because a boosted score is at most the relevance, the top ``limit`` by boosted score can be found
exactly from the top candidates by relevance: :func:`boosted_page` fetches ``4 · limit`` (at least
40), and fetches four times more while the last candidate's relevance still exceeds the
``limit``-th boosted score (an unfetched memory could still beat it), up to
:data:`MAX_CANDIDATES`; past that cap the ranking is the best of those candidates.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from ..model import MemoryEntry
from ..providers.base import ScoredEntry, SearchPage

#: Most relevance-ranked candidates a boosted search re-ranks in one layer.
MAX_CANDIDATES = 2000
_SECONDS_PER_DAY = 86_400.0


@dataclass(frozen=True)
class Boosts:
    """Weights of the query-time boosts (0 = off) and the recency half-life in days."""

    recency: float = 0.0
    importance: float = 0.0
    half_life_days: float = 30.0

    @property
    def active(self) -> bool:
        return self.recency > 0.0 or self.importance > 0.0

    def factor(self, entry: MemoryEntry, now: datetime) -> float:
        """The multiplier in (0, 1] this memory's relevance gets."""
        factor = 1.0
        if self.recency > 0.0:
            age_days = max(0.0, (now - entry.updated_at).total_seconds() / _SECONDS_PER_DAY)
            recency = 0.5 ** (age_days / self.half_life_days)
            factor *= 1.0 - self.recency * (1.0 - recency)
        if self.importance > 0.0:
            importance = min(1.0, max(0.0, entry.importance))
            factor *= 1.0 - self.importance * (1.0 - importance)
        return factor

    def rerank(self, hits: list[ScoredEntry], now: datetime) -> list[ScoredEntry]:
        """The hits with boosted scores, best first (ties by id, as the providers order them)."""
        boosted = [
            ScoredEntry(
                entry=h.entry,
                score=h.score * self.factor(h.entry, now),
                vector=h.vector,
                relevance=h.score if h.relevance is None else h.relevance,
            )
            for h in hits
        ]
        boosted.sort(key=lambda h: (-h.score, h.entry.id))
        return boosted


def boosted_page(
    search: Callable[[int], SearchPage], limit: int, boosts: Boosts, now: datetime, max_candidates: int = MAX_CANDIDATES
) -> SearchPage:
    """The top ``limit`` hits by boosted score; ``search(n)`` returns the top ``n`` by relevance."""
    n = min(max_candidates, max(4 * limit, 40))
    while True:
        page = search(n)
        ranked = boosts.rerank(page.hits, now)
        exhausted = len(page.hits) < n or n >= max_candidates
        # Every memory not fetched has relevance <= the last fetched one's, so a boosted score no
        # higher than that: once it cannot beat the limit-th boosted score, the ranking is final.
        if exhausted or (len(ranked) >= limit and page.hits[-1].score <= ranked[limit - 1].score):
            return SearchPage(hits=ranked[:limit], total=page.total)
        n = min(max_candidates, 4 * n)
