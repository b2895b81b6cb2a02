"""Conversation-aware re-ranking: a turn is more relevant when its neighbouring turns are.

Memories written from a conversation may carry their place in it: ``provenance.thread_id`` (a
conversation or session) and ``provenance.position`` (the turn's order in that thread). The answer
to a question often spans two turns ("Did you go?" / "Yes, last Friday"), and the turn that says
it may not share the question's words while its neighbour does. So, when a searched scope holds
positioned memories, each candidate's score becomes

    score = (s + w · n) / (1 + w)

where ``s`` is its relevance (the fused score of ``lexical.py``) and ``n`` the relevance of its most
relevant neighbour: same thread, position within :data:`WINDOW` of its own. Two turns, not one:
a question and its answer are often a turn apart ("Did you go?" / "<other speaker>" / "Yes, last
Friday"), and the answer may be given by the next turn of the same speaker. A neighbour outside the
fetched candidates, or beyond the thread's ends, counts with the lowest fetched relevance (an upper
bound of its own). A memory without a position keeps
``n = s``, i.e. its score. Like the boosts, this re-ranks relevant memories: the threshold applies to
``s``. ``w`` is ``MemoryConfig.context_weight`` (0 = off); :data:`CANDIDATES` relevance-ranked
candidates per layer are re-ranked.
"""

from __future__ import annotations

from collections.abc import Callable

from ..providers.base import ScoredEntry, SearchPage

#: Candidates re-ranked per layer when the layer holds positioned memories.
CANDIDATES = 50
#: Turns on each side of a memory that count as its neighbours (same thread).
WINDOW = 2


def _place(hit: ScoredEntry) -> tuple[str, int] | None:
    prov = hit.entry.provenance
    position = getattr(prov, "position", None)
    thread = getattr(prov, "thread_id", None)
    if isinstance(position, int) and not isinstance(position, bool):
        return (str(thread or ""), position)
    return None


def rerank(hits: list[ScoredEntry], weight: float) -> list[ScoredEntry]:
    """The hits re-scored with their neighbours' relevance (see module doc), best first."""
    if weight <= 0 or not hits:
        return hits
    by_place = {place: hit.score for hit in hits if (place := _place(hit)) is not None}
    if not by_place:
        return hits
    floor = min(hit.score for hit in hits)
    out: list[ScoredEntry] = []
    for hit in hits:
        place = _place(hit)
        if place is None:
            out.append(hit)
            continue
        thread, position = place
        neighbour = max(
            by_place.get((thread, position + step), floor) for step in range(-WINDOW, WINDOW + 1) if step != 0
        )
        out.append(ScoredEntry(entry=hit.entry, score=(hit.score + weight * neighbour) / (1.0 + weight)))
    out.sort(key=lambda h: (-h.score, h.entry.id))
    return out


def context_page(search: Callable[[int], SearchPage], limit: int, weight: float) -> SearchPage:
    """The top ``limit`` after re-ranking; ``search(n)`` returns the top ``n`` by relevance. A layer
    without positioned memories among its first hits costs one search, as without re-ranking."""
    page = search(limit)
    if weight <= 0 or not any(_place(hit) is not None for hit in page.hits):
        return page
    if page.total > len(page.hits):
        page = search(max(limit, CANDIDATES))
    return SearchPage(hits=rerank(page.hits, weight)[:limit], total=page.total)
