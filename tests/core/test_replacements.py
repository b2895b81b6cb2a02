"""``replacements.plan``: what a batch replaces, decided before it is stored, as if stored in order.

The store's side is given as two functions (a lookup by id and the most similar stored memories);
here they answer from a dict, so each rule of the plan is checked on its own. The same rules are
checked end to end, on every provider, by ``tests/conformance/test_add_groups_contract.py`` and
``tests/conformance/test_validity_contract.py``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from stratamem.embeddings import content_hash
from stratamem.errors import MemoryError
from stratamem.model import Layer, LayerIdentifiers, MemoryEntry
from stratamem.replacements import plan

NOW = datetime(2026, 11, 27, tzinfo=UTC)


def _entry(key: str, content: str, vector: list[float], user: str = "dana") -> MemoryEntry:
    return MemoryEntry(
        id=key,
        tenant_id="t",
        content=content,
        layer=Layer.USER,
        identifiers=LayerIdentifiers(user_id=user),
        created_at=NOW,
        updated_at=NOW,
        etag="e",
        content_hash=content_hash(content),
        embedding=vector,
    )


STORED = _entry("old", "Dana lives in Hamburg", [1.0, 0.0, 0.0])


def _plan(entries: list[MemoryEntry], explicit: dict[str, list[str]] | None = None) -> list[list[str] | str]:
    stored = {STORED.id: STORED}

    def nearest(entry: MemoryEntry, n: int) -> list[tuple[float, MemoryEntry]]:
        return [(0.95, STORED)][:n]  # the store as it is before the batch: the old fact is current

    out = plan(
        entries,
        explicit or {},
        lookup=stored.get,
        nearest=nearest,
        now=NOW,
        operation="add",
    )
    return [o.code.value if isinstance(o, MemoryError) else [m.id for m in o] for o in out]


def test_a_memory_replaced_by_an_earlier_entry_is_not_found_again() -> None:
    # The second change is compared with the first (an earlier entry of the batch), not with the
    # stored fact the first one already replaced.
    first = _entry("berlin", "Dana moved to Berlin last month", [0.9, 0.1, 0.0])
    second = _entry("paris", "Dana moved to Paris", [0.85, 0.15, 0.0])
    assert _plan([first, second]) == [["old"], ["berlin"]]


def test_a_later_entry_is_never_replaced_by_an_earlier_one() -> None:
    change = _entry("berlin", "Dana moved to Berlin last month", [0.9, 0.1, 0.0])
    fact = _entry("munich", "Dana lives in Munich", [0.9, 0.1, 0.0])  # states no change
    assert _plan([change, fact]) == [["old"], []]


def test_an_entry_of_another_scope_or_an_expired_one_is_no_candidate() -> None:
    other = _entry("kit", "Kit lives in Rome", [0.9, 0.1, 0.0], user="kit")
    expired = _entry("lyon", "Dana lives in Lyon", [0.9, 0.1, 0.0]).model_copy(
        update={"expires_at": NOW - timedelta(days=1)}
    )
    change = _entry("berlin", "Dana moved to Berlin last month", [0.9, 0.1, 0.0])
    out = plan(
        [other, expired, change],
        {},
        lookup=lambda _: None,
        nearest=lambda entry, n: [],
        now=NOW,
        operation="add",
    )
    assert [[m.id for m in o] for o in out if not isinstance(o, MemoryError)] == [[], [], []]


def test_an_explicit_id_fails_its_entry_alone_when_it_names_no_current_memory() -> None:
    first = _entry("berlin", "Dana lives in Berlin", [0.0, 1.0, 0.0])
    second = _entry("paris", "Dana lives in Paris", [0.0, 0.0, 1.0])
    third = _entry("rome", "Dana lives in Rome", [0.0, 0.0, 1.0])
    out = _plan([first, second, third], {"berlin": ["old"], "paris": ["old"], "rome": ["berlin"]})
    # "old" is replaced by the first entry, so the second cannot name it; an earlier entry can be named
    assert out == [["old"], "MEMORY_NOT_FOUND", ["berlin"]]


def test_without_detection_only_explicit_ids_replace() -> None:
    change = _entry("berlin", "Dana moved to Berlin last month", [0.9, 0.1, 0.0])
    out = plan([change], {}, lookup=lambda _: STORED, nearest=None, now=NOW, operation="add")
    assert out == [[]]


@pytest.mark.parametrize("position", [0, 7])
def test_a_conversation_turn_replaces_only_what_it_names(position: int) -> None:
    turn = _entry("turn", "Dana moved to Berlin last month", [0.9, 0.1, 0.0])
    turn = turn.model_copy(update={"provenance": turn.provenance.model_copy(update={"position": position})})
    assert _plan([turn]) == [[]]
