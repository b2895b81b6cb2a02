"""Structural limits of caller-supplied JSON (metadata): nesting depth, checked without recursion.

A deeply nested object is refused before anything tries to encode, store or serialise it: the JSON
encoder, pydantic's serialiser and the stores' JSON functions all recurse and fail somewhere between
a few hundred and a thousand levels, which would make a stored memory unreadable (and with it every
search of its scope).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def json_depth_exceeds(value: Any, limit: int) -> bool:
    """True when ``value`` nests objects/arrays more than ``limit`` levels deep (the top-level
    object counts as one level; scalars as none)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, Mapping):
            children: Any = node.values()
        elif isinstance(node, list | tuple):
            children = node
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, Mapping | list | tuple))
    return False
