"""Opaque keyset cursors for ``list``.

A cursor encodes the (created_at, id) of the last entry returned plus a fingerprint of the query
it belongs to; it stays valid while rows are inserted concurrently (new rows sort after it) and
is rejected with INVALID_PARAMS when malformed or reused with a different query.
"""

from __future__ import annotations

import base64
import hashlib
import json
from datetime import datetime

from .errors import ErrorCode, MemoryError


def fingerprint(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def encode_cursor(created_at: datetime, memory_id: str, query_fp: str) -> str:
    raw = json.dumps({"v": 1, "t": created_at.isoformat(), "i": memory_id, "q": query_fp}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: str, query_fp: str, operation: str = "list") -> tuple[datetime, str]:
    def invalid(reason: str) -> MemoryError:
        return MemoryError(
            ErrorCode.INVALID_PARAMS, f"invalid cursor: {reason}", operation=operation, details={"field": "cursor"}
        )

    if not isinstance(cursor, str) or not cursor or len(cursor) > 1024:
        raise invalid("not a cursor returned by list")
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        created_at = datetime.fromisoformat(data["t"])
        memory_id = str(data["i"])
        if data.get("v") != 1:
            raise ValueError
    except (ValueError, KeyError, TypeError):
        raise invalid("not a cursor returned by list") from None
    if data.get("q") != query_fp:
        raise invalid("it belongs to a different query (layer, identifiers or filter changed)")
    return created_at, memory_id
