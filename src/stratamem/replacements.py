"""Which older memories a batch of new memories replaces, decided before the batch is stored.

The new memories of one write (a bulk add, or the group of concurrent adds of ``add_groups.py``)
and the older memories they make out of date are then written in one transaction
(``Provider.add_replacing``): one commit for both, and a new memory is never stored without its
replacements (nor the other way round). The plan gives what storing the batch first and
checking each memory in order afterwards would give:

* an entry may replace an *earlier* entry of the batch (compared with the same dense similarity the
  store's search would give it), never a later one;
* a memory an earlier entry replaces is no longer current: no later entry of the batch finds it, by
  search or by id;
* an explicit id (``supersedes=[...]``) that names no current memory of the tenant fails that entry
  alone, before anything is stored.

Detection itself is ``supersession/`` (rules on the most similar memories of the same scope).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

import numpy as np

from . import supersession
from .errors import ErrorCode, MemoryError
from .layers import scope_key
from .model import MemoryEntry

#: The dense score ``(1 + cosine) / 2`` a candidate needs (the weakest rule's cosine).
MIN_SCORE = (1.0 + supersession.MIN_COSINE_FROM_TO) / 2.0


def plan(
    entries: Sequence[MemoryEntry],
    explicit: Mapping[str, Sequence[str]],
    *,
    lookup: Callable[[str], MemoryEntry | None],
    nearest: Callable[[MemoryEntry, int], list[tuple[float, MemoryEntry]]] | None,
    now: datetime,
    operation: str,
    owner: Callable[[MemoryEntry], str | None] | None = None,
) -> list[list[MemoryEntry] | MemoryError]:
    """For each entry, in order, the current memories it replaces, or the error that fails it.

    Args:
        entries: the new memories (embedded, not yet stored), in the order they are written.
        explicit: per entry id, the ids its caller named to supersede.
        lookup: a current stored memory of the tenant by id, or None.
        nearest: ``(entry, n)`` -> the ``n`` most similar current stored memories of the entry's
            scope that pass the detection's minimum similarity, as ``(score, memory)`` best first
            (the store's dense score in [0, 1]); None when detection is off.
        now: the time of the write (expiry of batch entries).
        operation: the operation named in errors.
        owner: the name of the person an entry's scope is kept for, or None (the detection asks it
            only of a change that opens with a name: someone else's change is not the owner's).

    Returns:
        One list of replaced memories (possibly empty) or one ``MemoryError`` per entry.
    """
    gone: set[str] = set()  # replaced by an earlier entry of the batch
    earlier: list[MemoryEntry] = []  # the entries before the current one that will be stored
    out: list[list[MemoryEntry] | MemoryError] = []
    for entry in entries:
        try:
            olds = _replaced_by(
                entry, explicit.get(entry.id, ()), earlier, gone, lookup, nearest, now, operation, owner
            )
        except MemoryError as exc:
            out.append(exc)
            continue
        gone.update(old.id for old in olds)
        earlier.append(entry)
        out.append(olds)
    return out


def _replaced_by(
    entry: MemoryEntry,
    explicit: Sequence[str],
    earlier: Sequence[MemoryEntry],
    gone: set[str],
    lookup: Callable[[str], MemoryEntry | None],
    nearest: Callable[[MemoryEntry, int], list[tuple[float, MemoryEntry]]] | None,
    now: datetime,
    operation: str,
    owner: Callable[[MemoryEntry], str | None] | None,
) -> list[MemoryEntry]:
    olds: dict[str, MemoryEntry] = {}
    batch = {e.id: e for e in earlier}
    for old_id in explicit:
        old = batch.get(old_id) or lookup(old_id)
        if old is None or old.id in gone:
            raise MemoryError(
                ErrorCode.MEMORY_NOT_FOUND,
                f"no memory with id {old_id!r} to supersede",
                operation=operation,
                details={"id": old_id, "field": "supersedes"},
            )
        olds[old.id] = old
    # A conversation turn (it has a position in a thread) records what was said, not the current
    # state of a fact, and a conflict entry (a stale update kept for review) is not the current fact
    # either: only explicit ids supersede through them.
    if (
        nearest is not None
        and entry.provenance.position is None
        and not entry.provenance.conflict
        and entry.embedding
        and (read := supersession.cues(entry.content)).any
    ):
        # the store's best, past the ones an earlier entry replaced, and the earlier entries of the scope
        scored = [(s, m) for s, m in nearest(entry, supersession.CANDIDATES + len(gone)) if m.id not in gone]
        scored += _similar_in_batch(entry, [e for e in earlier if e.id not in gone], now)
        scored.sort(key=lambda pair: -pair[0])  # stable: a stored memory first on a tie
        candidates = [
            supersession.Candidate(m, 2.0 * s - 1.0) for s, m in scored[: supersession.CANDIDATES] if m.id != entry.id
        ]
        named = None if owner is None else (lambda: owner(entry))
        for old in supersession.superseded(entry.content, candidates, read, named):
            olds.setdefault(old.id, old)
    return [old for old in olds.values() if old.id != entry.id and old.status == "active"]


def _similar_in_batch(
    entry: MemoryEntry, earlier: Sequence[MemoryEntry], now: datetime
) -> list[tuple[float, MemoryEntry]]:
    """Earlier entries of the batch in the entry's scope, scored as the store's dense search would
    score them once stored, that pass ``MIN_SCORE``."""
    key = scope_key(entry.layer, entry.identifiers)
    same = [
        e
        for e in earlier
        if e.layer == entry.layer
        and e.embedding
        and scope_key(e.layer, e.identifiers) == key
        and (e.expires_at is None or e.expires_at > now)
    ]
    if not same or not entry.embedding:
        return []
    q = np.asarray(entry.embedding, dtype=np.float32)
    rows = np.asarray([e.embedding for e in same], dtype=np.float32)
    cosines = (rows @ q) / np.maximum(np.linalg.norm(rows, axis=1) * np.linalg.norm(q), 1e-12)
    return [(s, e) for e, c in zip(same, cosines.tolist(), strict=True) if (s := (1.0 + c) / 2.0) >= MIN_SCORE]
