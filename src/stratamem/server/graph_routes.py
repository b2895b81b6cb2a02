"""REST routes of the knowledge graph: ``/v1/graph/…``, ``/health/graph``, ``/ready/graph``.

The server app includes ``graph_router(get_memory, get_tenant)``; both arguments are FastAPI
dependency callables (``Depends(get_memory)`` → :class:`~stratamem.Memory`,
``Depends(get_tenant)`` → :class:`~stratamem.TenantContext`). A ``MemoryError`` propagates to the
server's one error mapping (:mod:`stratamem.server.http_errors`), like every other route.

JSON is camelCase like the rest of the API (``relType``, ``includeEntities``, ``maxHops``); query
parameters are also accepted in snake_case.
"""
# No `from __future__ import annotations`: FastAPI resolves the local Annotated aliases at definition time.

from collections.abc import Callable
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from ..graph.traverse import MAX_HOPS
from ..model import TenantContext
from ..persistence.health import snapshot_bucket_health
from ..sdk import Memory
from .http_errors import COMMON, responses

NodeRef = Annotated[str, Field(min_length=1, max_length=512)]


class _Params(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class RelatedParams(_Params):
    node: NodeRef
    hops: int = Field(2, ge=1, le=MAX_HOPS)
    limit: int = Field(50, ge=1, le=500)
    include_entities: bool = False


class PathParams(_Params):
    a: NodeRef
    b: NodeRef
    max_hops: int = Field(MAX_HOPS, ge=1, le=MAX_HOPS)


class NeighborParams(_Params):
    node: NodeRef
    rel_type: str | None = Field(None, max_length=40)
    direction: Literal["out", "in", "both"] = "both"
    limit: int = Field(100, ge=1, le=1000)


def graph_router(get_memory: Callable[..., Any], get_tenant: Callable[..., Any]) -> APIRouter:
    router = APIRouter(tags=["graph"], responses=responses(*COMMON, 404))
    MemoryDep = Annotated[Memory, Depends(get_memory)]
    TenantDep = Annotated[TenantContext, Depends(get_tenant)]

    @router.get("/v1/graph/related", operation_id="graphRelated")
    def related(mem: MemoryDep, t: TenantDep, q: Annotated[RelatedParams, Query()]) -> Any:
        """Memories (and optionally entities) within ``hops`` of a memory id or entity name."""
        return mem.graph.related(t, q.node, q.hops, limit=q.limit, include_entities=q.include_entities).model_dump(
            mode="json", by_alias=True
        )

    @router.get("/v1/graph/path", operation_id="graphPath")
    def path(mem: MemoryDep, t: TenantDep, q: Annotated[PathParams, Query()]) -> Any:
        """Shortest path between two memories or entities, with its reasoning text."""
        return mem.graph.path(t, q.a, q.b, max_hops=q.max_hops).model_dump(mode="json", by_alias=True)

    @router.get("/v1/graph/neighbors", operation_id="graphNeighbors")
    def neighbors(mem: MemoryDep, t: TenantDep, q: Annotated[NeighborParams, Query()]) -> Any:
        """Direct neighbours of a memory or entity, optionally of one relation type and direction."""
        found = mem.graph.neighbors(t, q.node, rel_type=q.rel_type, direction=q.direction, limit=q.limit)
        return {"neighbors": [n.model_dump(mode="json", by_alias=True) for n in found]}

    @router.get("/health/graph", operation_id="getGraphHealth")
    def health(mem: MemoryDep) -> Any:
        """Health of the knowledge graph and, when snapshots are configured, of their S3 bucket
        (503 when unhealthy)."""
        result = mem.graph.health()
        bucket = snapshot_bucket_health(mem)
        if bucket is not None:
            result.components["snapshots_s3"] = bucket
            if bucket.status == "unhealthy":
                result.status = "unhealthy"
        code = 200 if result.status == "healthy" else 503
        return JSONResponse(result.to_json_dict(), status_code=code)

    @router.get("/ready/graph", operation_id="getGraphReadiness")
    def ready(mem: MemoryDep) -> Any:
        """Whether the knowledge graph is ready (503 when not)."""
        ok = mem.graph.ready()
        return JSONResponse({"ready": ok}, status_code=200 if ok else 503)

    return router
