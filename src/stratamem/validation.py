"""Argument checks shared by the engine and its features: pure functions that return the checked
value or raise INVALID_PARAMS naming the field."""

from __future__ import annotations

from typing import Any

from .errors import ErrorCode, MemoryError


def check_limit(limit: Any, default: int, maximum: int, operation: str) -> int:
    """``limit`` as an int from 1 to ``maximum``; ``default`` when None."""
    if limit is None:
        return default
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= maximum:
        raise MemoryError(
            ErrorCode.INVALID_PARAMS,
            f"limit must be an integer from 1 to {maximum}",
            operation=operation,
            details={"field": "limit", "max": maximum},
        )
    return limit


def check_id(memory_id: Any, operation: str) -> str:
    """A memory id: a non-empty string of at most 256 characters."""
    if not isinstance(memory_id, str) or not memory_id.strip() or len(memory_id) > 256:
        raise MemoryError(
            ErrorCode.INVALID_PARAMS,
            "id must be a non-empty string of at most 256 characters",
            operation=operation,
            details={"field": "id"},
        )
    return memory_id
