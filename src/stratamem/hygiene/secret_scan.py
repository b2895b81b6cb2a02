"""Secret detection over every string a write stores, on normalised text.

:func:`~stratamem.hygiene.secrets.find_secrets` matches token shapes in the text as given. Here the
same scan also runs on the forms a secret takes when someone hides it or pastes it carelessly:

* Unicode NFKC with format characters (zero-width spaces …) removed: full-width letters and digits;
* case-folded: an AWS access key id in lower case;
* separators removed: an access key id split by spaces, dashes, dots or a newline, a card number
  with any separator (Luhn-checked);
* ``snake_case`` keys read as words (``aws_secret_access_key = …``, ``my_password = …``);
* base64 (standard and URL-safe) of any of those, decoded once.

:func:`scan_fields` applies it to named strings (metadata keys and values at any depth, the tier,
the identifiers); the guard refuses the write when anything is found.
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata
from collections.abc import Iterator, Mapping
from typing import Any

from .pii import _luhn_ok
from .secrets import find_secrets

_AWS_PREFIXES = ("akia", "asia", "agpa", "aida", "aroa")
_SEP = r"[\s\-._|,/\\:]"
#: An access key id in upper-cased text, each of its 16 characters optionally followed by separators.
_AWS_SPLIT = re.compile(
    rf"(?<![A-Z0-9])(?:AKIA|ASIA|AGPA|AIDA|AROA){_SEP}{{0,3}}((?:[A-Z0-9]{_SEP}{{0,3}}){{15}}[A-Z0-9])"
    r"(?![A-Z0-9])"
)
#: A card number: 13-19 digits in one run, or grouped as printed (4-4-4-4[-1..4], 4-6-4/5) with any
#: separator; not part of a longer alphanumeric or grouped run (UUIDs, hashes, version numbers).
_SEP1 = r"[\s\-./_\\:|,]"
_CARD_SEP = _SEP1 + "{1,2}"
_CARD = re.compile(
    rf"(?<![0-9A-Za-z])(?<!\d{_SEP1})(?<![0-9A-Fa-f]-)"
    rf"(?:\d{{13,19}}|\d{{4}}(?:{_CARD_SEP}\d{{4}}){{2,3}}(?:{_CARD_SEP}\d{{1,4}})?"
    rf"|\d{{4}}{_CARD_SEP}\d{{6}}{_CARD_SEP}\d{{4,5}})"
    rf"(?![0-9A-Za-z])(?!{_SEP1}\d)(?!-[0-9A-Fa-f])"
)
#: Identifiers (UUIDs) are never secrets: metadata such as ``compactedFromIds`` holds them.
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
#: An AWS secret access key: 40 characters of base64 alphabet, on its own.
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
#: A run that may be base64 of something (decoded and scanned once).
_BASE64 = re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{16,}={0,2}")


_DROP_DIGITS = str.maketrans("", "", "0123456789")


def _digit_count(text: str) -> int:
    return len(text) - len(text.translate(_DROP_DIGITS))  # in C: no per-character Python loop


def _has_long_token(text: str) -> bool:
    """A whitespace-free run of 16+ characters (what base64 and 40-character keys need); prose has few."""
    return any(len(word) >= 16 for word in text.split())


def _normalise(text: str) -> str:
    """NFKC, format characters (category Cf: zero-width spaces, joiners …) removed."""
    nfkc = unicodedata.normalize("NFKC", text)
    if nfkc.isascii():
        return nfkc
    return "".join(ch for ch in nfkc if unicodedata.category(ch) != "Cf")


def _mixed_case_piece(span: str) -> bool:
    """True when a separated piece looks like a word ("Asia", "Tokyo"), not part of a key."""
    return any(p[:1].isupper() and p[1:] != p[1:].upper() for p in re.split(_SEP, span) if p)


def _aws_access_keys(norm: str) -> bool:
    low = norm.lower()
    if not any(p in low for p in _AWS_PREFIXES):
        return False
    upper = norm.upper()
    for m in _AWS_SPLIT.finditer(upper):
        body = re.sub(_SEP, "", m.group(1))
        original = norm[m.start() : m.end()]
        if any(ch.isdigit() for ch in body) and not _mixed_case_piece(original):
            return True
    return False


def _cards(norm: str) -> bool:
    for m in _CARD.finditer(norm):
        digits = re.sub(r"\D", "", m.group(0))
        if 13 <= len(digits) <= 19 and _luhn_ok(digits):
            return True
    return False


def _aws_secret_keys(norm: str) -> bool:
    for m in _AWS_SECRET.finditer(norm):
        token = m.group(0)
        if any(c.isupper() for c in token) and any(c.islower() for c in token) and any(c.isdigit() for c in token):
            return True
    return False


def _decoded_runs(text: str) -> Iterator[str]:
    for m in _BASE64.finditer(text):
        run = m.group(0)
        for decode in (base64.b64decode, base64.urlsafe_b64decode):
            try:
                raw = decode(run + "=" * (-len(run) % 4))
                decoded = raw.decode("utf-8")
            except (binascii.Error, ValueError, UnicodeDecodeError):
                continue
            if decoded.isprintable() or all(ch.isprintable() or ch in "\n\r\t" for ch in decoded):
                yield decoded
                break


def _kinds(text: str) -> set[str]:
    kinds = {s.kind for s in find_secrets(text)}
    norm = _normalise(text)
    if norm != text:
        kinds |= {s.kind for s in find_secrets(norm)}
    if "_" in norm:  # snake_case names read as words: aws_secret_access_key = …, my_password = …
        kinds |= {s.kind for s in find_secrets(norm.replace("_", " "))}
    if _aws_access_keys(norm):
        kinds.add("aws_access_key")
    if _digit_count(norm) >= 13 and _cards(norm):
        kinds.add("credit_card")
    if len(norm) >= 40 and _has_long_token(norm) and _aws_secret_keys(norm):
        kinds.add("aws_secret_key")
    return kinds


def secret_kinds(text: str) -> set[str]:
    """The kinds of secret found in ``text``, its normalised forms and base64 runs in it (empty: none)."""
    kinds = _kinds(text)
    if len(text) >= 16 and not kinds and _has_long_token(text):
        for decoded in _decoded_runs(_normalise(text)):
            kinds |= _kinds(decoded)
            if kinds:
                break
    return kinds


def iter_strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """``(path, text)`` for every key and scalar of a JSON-like value (numbers as text: a card number)."""
    stack: list[tuple[str, Any]] = [(path, value)]
    while stack:
        where, node = stack.pop()
        if isinstance(node, Mapping):
            for key, child in node.items():
                yield f"{where} key", str(key)
                stack.append((f"{where}.{key}", child))
        elif isinstance(node, list | tuple):
            stack.extend((f"{where}[{i}]", child) for i, child in enumerate(node))
        elif isinstance(node, str):
            if not _UUID.fullmatch(node):
                yield where, node
        elif isinstance(node, int | float) and not isinstance(node, bool):
            yield where, str(node)


def scan_fields(fields: Mapping[str, Any]) -> dict[str, list[str]]:
    """``{field path: sorted kinds}`` for every string under ``fields`` that carries a secret."""
    found: dict[str, list[str]] = {}
    for name, value in fields.items():
        for where, text in iter_strings(value, name):
            kinds = secret_kinds(text)
            if kinds:
                found[where] = sorted(kinds)
    return found
