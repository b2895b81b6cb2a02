from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from stratamem import Memory, TenantContext


@pytest.fixture()
def add(mem: Memory) -> Callable[..., str]:
    def _add(ctx: TenantContext, content: str, user: str = "u1", **kwargs: Any) -> str:
        return mem.add(ctx, content, "user", {"user_id": user}, **kwargs).memory.id

    return _add


def rows(mem: Memory, sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
    with mem.engine.provider._read() as cur:  # type: ignore[attr-defined]
        return list(cur.execute(sql, params).fetchall())


def graph_counts(mem: Memory, tenant_id: str) -> dict[str, int]:
    out = {}
    for table in ("memory_nodes", "memory_edges", "entities", "entity_edges"):
        out[table] = rows(mem, f"SELECT count(*) FROM {table} WHERE tenant_id = ?", [tenant_id])[0][0]
    return out
