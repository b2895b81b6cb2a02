"""Input sanitisation: control characters and prompt-injection markers are removed.

Kept: newlines and tabs. Removed: other C0/C1 controls, zero-width and bidirectional override
characters, chat-template tokens (``<|im_start|>``, ``[INST]``, ``<<SYS>>`` …), role prefixes at
the start of a line (``system:``) and "ignore previous instructions"-style phrases.
"""

from __future__ import annotations

import re
import unicodedata

_CONTROL = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\ufff9-\ufffb]"
)
_MARKERS = re.compile(
    r"<\|[a-z_]{2,30}\|>|</?\s*(?:system|assistant|user|im_start|im_end)\s*>|\[/?INST\]|<</?SYS>>|"
    r"^\s*(?:#{1,3}\s*)?(?:system|assistant)\s*:\s*",
    re.I | re.M,
)
_INJECTION = re.compile(
    r"\b(?:please\s+)?(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+)?(?:the\s+|your\s+)?"
    r"(?:previous|prior|above|earlier|preceding|system)\s+(?:instructions?|prompts?|rules?|messages?|context)[.!,;:]?"
    r"|\byou\s+are\s+now\s+(?:in\s+)?(?:developer|dan|jailbreak|god)\s*mode[.!,;:]?",
    re.I,
)


#: Every marker match contains one of these characters, every injection phrase one of these words.
_MARKER_CHARS = ("<", "[", ":")
_INJECTION_WORDS = ("ignore", "disregard", "forget", "override", "you")


def _plain(text: str) -> bool:
    """True when ``sanitize`` can only trim ``text``: printable ASCII on one line (no control
    character, nothing for NFC to change), no double space, and none of the characters or words
    every marker or injection phrase contains. Most memories are; they skip the five passes."""
    if not (text.isascii() and text.isprintable()) or "  " in text or any(c in text for c in _MARKER_CHARS):
        return False
    low = text.lower()
    return not any(word in low for word in _INJECTION_WORDS)


def sanitize(text: str) -> str:
    """``text`` without control characters or injection markers, whitespace tidied."""
    return text.strip() if _plain(text) else _sanitize(text)


def _sanitize(text: str) -> str:
    text = unicodedata.normalize("NFC", text).replace("\r\n", "\n").replace("\r", "\n")
    text = _CONTROL.sub("", text)
    for _ in range(3):  # removing one marker can expose another ("<|im_start|>system: …")
        before = text
        text = _INJECTION.sub(" ", _MARKERS.sub(" ", text))
        if text == before:
            break
    text = re.sub(r"[ \t]{2,}", " ", text)
    return "\n".join(line.strip() for line in text.split("\n")).strip()


def has_injection(text: str) -> bool:
    return bool(_MARKERS.search(text) or _INJECTION.search(text))
