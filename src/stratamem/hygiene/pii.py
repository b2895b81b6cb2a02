"""PII detection and redaction (emails, phone numbers … replaced by ``[REDACTED_…]`` markers).

``redact_pii("mail user@example.com or 123-456-7890")`` →
``"mail [REDACTED_EMAIL] or [REDACTED_PHONE]"``. Patterns are applied most specific first so a card
number is not half-eaten by the phone pattern. ``find_pii`` reports what was found without changing
the text (for reject-mode policies).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class PiiMatch:
    kind: str
    start: int
    end: int
    text: str


def _luhn_ok(digits: str) -> bool:
    total, alt = 0, False
    for ch in reversed(digits):
        d = ord(ch) - 48
        if alt:
            d *= 2
            if d > 9:
                d -= 9
        total += d
        alt = not alt
    return total % 10 == 0


def _card_ok(text: str) -> bool:
    digits = re.sub(r"\D", "", text)
    return 13 <= len(digits) <= 19 and _luhn_ok(digits)


def _iban_ok(text: str) -> bool:
    s = re.sub(r"\s", "", text).upper()
    if not 15 <= len(s) <= 34:
        return False
    rearranged = s[4:] + s[:4]
    num = "".join(str(int(c, 36)) for c in rearranged)
    return int(num) % 97 == 1


def _ipv4_ok(text: str) -> bool:
    return all(0 <= int(p) <= 255 for p in text.split("."))


# (kind, replacement token, pattern, optional validator) in application order.
_PATTERNS: list[tuple[str, str, re.Pattern[str], object]] = [
    (
        "email",
        "[REDACTED_EMAIL]",
        re.compile(r"(?<![\w.+-])[\w.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b"),
        None,
    ),
    ("iban", "[REDACTED_IBAN]", re.compile(r"\b[A-Z]{2}\d{2}(?:\s?[A-Z0-9]{4}){2,7}(?:\s?[A-Z0-9]{1,4})?\b"), _iban_ok),
    # a card number is a token of its own: digits inside a word (a hex digest, an id) are not one
    ("credit_card", "[REDACTED_CARD]", re.compile(r"(?<!\w)(?:\d[ -]?){12,18}\d(?!\w)"), _card_ok),
    ("ssn", "[REDACTED_SSN]", re.compile(r"(?<!\d)\d{3}-\d{2}-\d{4}(?!\d)"), None),
    ("ip_address", "[REDACTED_IP]", re.compile(r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?![\d.])"), _ipv4_ok),
    (
        "phone",
        "[REDACTED_PHONE]",
        re.compile(r"(?<![\w+])(?:\+\d{1,3}[\s.-]?)?(?:\(\d{2,4}\)[\s.-]?|\d{2,4}[\s.-])\d{3,4}[\s.-]?\d{3,4}(?![\w])"),
        None,
    ),
]

PII_KINDS: tuple[str, ...] = tuple(kind for kind, *_ in _PATTERNS)


def find_pii(text: str, kinds: Iterable[str] | None = None) -> list[PiiMatch]:
    """Every PII span in ``text`` (non-overlapping, in text order)."""
    wanted = set(kinds) if kinds is not None else None
    taken: list[tuple[int, int]] = []
    found: list[PiiMatch] = []
    for kind, _token, pattern, validator in _PATTERNS:
        if wanted is not None and kind not in wanted:
            continue
        for m in pattern.finditer(text):
            if any(m.start() < e and s < m.end() for s, e in taken):
                continue
            if validator is not None and not validator(m.group(0)):  # type: ignore[operator]
                continue
            taken.append((m.start(), m.end()))
            found.append(PiiMatch(kind, m.start(), m.end(), m.group(0)))
    return sorted(found, key=lambda p: p.start)


def redact_pii(text: str, kinds: Iterable[str] | None = None) -> str:
    """Replace each PII span with its token (``[REDACTED_EMAIL]``, ``[REDACTED_PHONE]`` …)."""
    tokens = {kind: token for kind, token, *_ in _PATTERNS}
    out, pos = [], 0
    for match in find_pii(text, kinds):
        out.append(text[pos : match.start])
        out.append(tokens[match.kind])
        pos = match.end
    out.append(text[pos:])
    return "".join(out)
