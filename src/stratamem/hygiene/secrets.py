"""Secret detection: "My API key is sk-abc123" is rejected, never stored.

Secrets are never stored, whatever the tenant's PII mode: content containing one is refused with
UNSAFE_CONTENT. Detection combines well-known token shapes (OpenAI, AWS, GitHub, Slack, Google,
Stripe, JWT, PEM private keys, bearer tokens, stratamem's own ``smk_`` keys, URLs with embedded
passwords), Luhn-valid card numbers (reusing
:mod:`stratamem.hygiene.pii`) and context ("my password is …", "token: …").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .pii import find_pii


@dataclass(frozen=True)
class SecretMatch:
    kind: str
    start: int
    end: int


_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("private_key", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----", re.I)),
    ("openai_key", re.compile(r"\bsk-(?:proj-|live-|test-)?[A-Za-z0-9_-]{16,}")),
    ("aws_access_key", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b")),
    ("github_token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})\b")),
    ("slack_token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    ("stripe_key", re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}\b")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    ("bearer_token", re.compile(r"\bBearer\s+[A-Za-z0-9._~+/=-]{16,}", re.I)),
    ("stratamem_key", re.compile(r"\bsmk_[0-9a-f]{16}_[A-Za-z0-9_-]{16,}")),
    ("url_credentials", re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s/:@]+:[^\s/@]+@[^\s/]+", re.I)),
    (
        "credential",
        re.compile(
            r"\b(?:api[ _-]?key|access[ _-]?key|secret(?:[ _-]?key)?|client[ _-]?secret|auth[ _-]?token|"
            r"access[ _-]?token|refresh[ _-]?token|token|password|passwd|pwd|passphrase|passcode|pin(?:[ _-]?code)?|"
            r"private[ _-]?key|ssh[ _-]?key|credentials?)"
            r"(?:\s+(?:for|of|on|to)\s+[\w.-]+)?\s*(?:(?<!\w)(?:is|was)\b|=|:|->)\s*[\"'`]?(?=[^\s\"'`]*[A-Za-z0-9])[^\s\"'`]{3,}",
            re.I,
        ),
    ),
]

SECRET_KINDS: tuple[str, ...] = (*(kind for kind, _ in _PATTERNS), "credit_card")


#: Substrings one of which every match of a pattern contains (for ``_ANY_CASE`` kinds: in the
#: lowercased text). In ASCII text a pattern only runs where one occurs: a write is scanned for
#: twelve shapes, and most memories contain none of these, so most writes run no pattern at all.
_NEEDS: dict[str, tuple[str, ...]] = {
    "private_key": ("-----begin ",),
    "openai_key": ("sk-",),
    "aws_access_key": ("AKIA", "ASIA", "AGPA", "AIDA", "AROA"),
    "github_token": ("gh", "github_pat_"),
    "slack_token": ("xox",),
    "google_api_key": ("AIza",),
    "stripe_key": ("_live_", "_test_"),
    "jwt": ("eyJ",),
    "bearer_token": ("bearer",),
    "stratamem_key": ("smk_",),
    "url_credentials": ("://",),
    "credential": ("key", "secret", "token", "passw", "pwd", "passphrase", "passcode", "pin", "credential"),
}
_ANY_CASE = frozenset({"url_credentials", "credential", "private_key", "bearer_token"})  # case-insensitive
_SOME_NEEDLE = re.compile("|".join(re.escape(n) for k, ns in _NEEDS.items() if k not in _ANY_CASE for n in ns))
_SOME_NEEDLE_ANY_CASE = re.compile("|".join(re.escape(n) for k, ns in _NEEDS.items() if k in _ANY_CASE for n in ns))


def _patterns_for(text: str) -> list[tuple[str, re.Pattern[str]]]:
    """The patterns that can match ``text`` (all of them unless it is ASCII: the case-insensitive
    ones also match non-ASCII letters such as the Kelvin sign for "k")."""
    if not text.isascii():
        return _PATTERNS
    low = text.lower()
    if _SOME_NEEDLE.search(text) is None and _SOME_NEEDLE_ANY_CASE.search(low) is None:
        return []  # one scan each instead of a test per needle (9 of 10 memories end here)
    return [
        (kind, pattern)
        for kind, pattern in _PATTERNS
        if any(needle in (low if kind in _ANY_CASE else text) for needle in _NEEDS[kind])
    ]


def find_secrets(text: str) -> list[SecretMatch]:
    """Every secret-looking span in ``text``, in text order."""
    found = [
        SecretMatch(kind, m.start(), m.end()) for kind, pattern in _patterns_for(text) for m in pattern.finditer(text)
    ]
    found += [SecretMatch("credit_card", p.start, p.end) for p in find_pii(text, ["credit_card"])]
    return sorted(found, key=lambda s: s.start)


def contains_secret(text: str) -> bool:
    return bool(find_secrets(text))
