"""REST routes of the knowledge graph (SPEC R-API): ``/v1/graph/…``, ``/health/graph``, ``/ready/graph``.

The server app includes ``graph_router(get_memory, get_tenant)``; both arguments are FastAPI
dependency callables (``Depends(get_memory)`` → :class:`~stratamem.Memory`,
``Depends(get_tenant)`` → :class:`~stratamem.TenantContext`). A ``MemoryError`` propagates to the
server's one error mapping (:mod:`stratamem.server.http_errors`), like every other route.
"""
# No `from __future__ import annotations`: FastAPI resolves the local Annotated aliases at definition time.

from collections.abc import Callable
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query
from fastapi.responses import JSONResponse

from ..model import TenantContext
from ..sdk import Memory
from .http_errors import COMMON, responses


def graph_router(get_memory: Callable[..., Any], get_tenant: Callable[..., Any]) -> APIRouter:
    router = APIRouter(tags=["graph"], responses=responses(*COMMON, 404))
    MemoryDep = Annotated[Memory, Depends(get_memory)]
    TenantDep = Annotated[TenantContext, Depends(get_tenant)]

    @router.get("/v1/graph/related")
    def related(mem: MemoryDep, t: TenantDep,
                node: Annotated[str, Query(min_length=1, max_length=512)],
                hops: Annotated[int, Query(ge=1, le=6)] = 2,
                limit: Annotated[int, Query(ge=1, le=500)] = 50,
                include_entities: bool = False) -> Any:
        """Memories (and optionally entities) within ``hops`` of a memory id or entity name."""
        return mem.graph.related(t, node, hops, limit=limit, include_entities=include_entities).model_dump(
            mode="json", by_alias=False)

    @router.get("/v1/graph/path")
    def path(mem: MemoryDep, t: TenantDep,
             a: Annotated[str, Query(min_length=1, max_length=512)],
             b: Annotated[str, Query(min_length=1, max_length=512)],
             max_hops: Annotated[int, Query(ge=1, le=6)] = 6) -> Any:
        """Shortest path between two memories or entities, with its reasoning text."""
        return mem.graph.path(t, a, b, max_hops=max_hops).model_dump(mode="json")

    @router.get("/v1/graph/neighbors")
    def neighbors(mem: MemoryDep, t: TenantDep,
                  node: Annotated[str, Query(min_length=1, max_length=512)],
                  rel_type: str | None = None,
                  direction: Literal["out", "in", "both"] = "both",
                  limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> Any:
        found = mem.graph.neighbors(t, node, rel_type=rel_type, direction=direction, limit=limit)
        return {"neighbors": [n.model_dump(mode="json") for n in found]}

    @router.get("/health/graph")
    def health(mem: MemoryDep) -> Any:
        result = mem.graph.health()
        code = 200 if result.status == "healthy" else 503
        return JSONResponse(result.to_json_dict(), status_code=code)

    @router.get("/ready/graph")
    def ready(mem: MemoryDep) -> Any:
        ok = mem.graph.ready()
        return JSONResponse({"ready": ok}, status_code=200 if ok else 503)

    return router
