"""Type checks for plain SDK arguments (flags, texts, id lists).

A wrong type given by a caller must come back as INVALID_PARAMS naming the argument, never as a
``TypeError`` deep inside an operation (which the engine would report as an internal error).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .errors import ErrorCode, MemoryError
from .model import BulkDeleteFailure


def _invalid(field: str, expected: str, value: Any, operation: str) -> MemoryError:
    return MemoryError(
        ErrorCode.INVALID_PARAMS,
        f"{field} must be {expected}, got {type(value).__name__}",
        operation=operation,
        details={"field": field},
        retryable=False,
    )


def check_bool(value: Any, field: str, operation: str) -> bool:
    if not isinstance(value, bool):
        raise _invalid(field, "true or false", value, operation)
    return value


def check_text(value: Any, field: str, operation: str) -> str:
    if not isinstance(value, str):
        raise _invalid(field, "a string", value, operation)
    return value


def check_str_list(value: Any, field: str, operation: str) -> list[str]:
    """A list (or tuple) of strings; a bare string is refused, not split into characters."""
    if not isinstance(value, Sequence) or isinstance(value, str | bytes | bytearray):
        raise _invalid(field, "a list of strings", value, operation)
    if not all(isinstance(v, str) for v in value):
        raise _invalid(field, "a list of strings", next(v for v in value if not isinstance(v, str)), operation)
    return list(value)


#: Longest memory id accepted anywhere.
MAX_ID_LENGTH = 256


def split_ids(ids: Sequence[Any], operation: str) -> tuple[list[str], list[BulkDeleteFailure]]:
    """Well-formed ids, and a refusal for each string that cannot be an id (empty or too long).

    A value that is not a string at all makes the whole request invalid: it is a caller's type
    error, not a per-item outcome."""
    good: list[str] = []
    refused: list[BulkDeleteFailure] = []
    for i in ids:
        if not isinstance(i, str):
            raise _invalid("ids", "a list of strings", i, operation)
        if not i.strip() or len(i) > MAX_ID_LENGTH:
            reason = f"an id must be 1-{MAX_ID_LENGTH} characters, not blank"
            refused.append(BulkDeleteFailure(id=i[:MAX_ID_LENGTH], code=ErrorCode.INVALID_PARAMS.value, reason=reason))
        else:
            good.append(i)
    return good, refused
