"""A card number is a token of its own: a run of digits inside a hex digest or an id is not one
(a content hash in metadata was refused as a secret when its digits happened to pass Luhn)."""

from __future__ import annotations

import hashlib

from stratamem.hygiene.secrets import contains_secret, find_secrets

CARD = "4111111111111111"  # passes Luhn


def test_a_card_inside_a_word_is_not_a_card() -> None:
    digest = "ab" + CARD + "cd" + hashlib.sha256(b"x").hexdigest()[:44]
    assert len(digest) == 64
    assert not contains_secret(digest)
    assert not contains_secret(f"id_{CARD}x")


def test_a_card_as_a_token_is_still_found() -> None:
    for text in (CARD, f"card: {CARD}.", "pay with 4111 1111 1111 1111 today", f"({CARD})", f"cc={CARD}"):
        assert [s.kind for s in find_secrets(text)] == ["credit_card"], text
