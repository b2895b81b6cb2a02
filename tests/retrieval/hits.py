"""Search hits built by hand for the re-ranking steps of ``retrieval/context.py``."""

from __future__ import annotations

from datetime import UTC, datetime

from stratamem.model import Layer, LayerIdentifiers, MemoryEntry, Provenance
from stratamem.providers.base import ScoredEntry, ThreadTurn
from stratamem.retrieval import context

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def scored(
    memory_id: str, content: str, score: float, *, created: datetime = NOW, provenance: Provenance | None = None
) -> ScoredEntry:
    """A candidate: a whole memory of the user layer with its score."""
    entry = MemoryEntry(
        id=memory_id,
        tenant_id="t",
        content=content,
        layer=Layer.USER,
        identifiers=LayerIdentifiers(user_id="u"),
        created_at=created,
        updated_at=created,
        etag="e",
        content_hash="h",
        provenance=provenance or Provenance(),
    )
    return ScoredEntry(entry, score)


def joined(
    memory_id: str,
    place: tuple[str, int],
    content: str,
    score: float,
    *,
    created: datetime = NOW,
    occurred_at: datetime | None = None,
) -> context.JoinedTurn:
    """A turn read after the candidates (``context.JoinedTurn``) with its score."""
    turn = ThreadTurn(
        id=memory_id,
        thread=place[0],
        position=place[1],
        content=content,
        score=score,
        created_at=created,
        updated_at=created,
        valid_to=None,
        occurred_at=occurred_at,
    )
    return context.JoinedTurn(turn=turn, score=score)
