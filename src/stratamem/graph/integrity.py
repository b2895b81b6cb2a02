"""Referential integrity of the graph, checked and repaired by the application.

DuckDB does not enforce foreign keys, so the application does:

* :func:`validate_memory_edge` / :func:`validate_entity_edge` check both ends before an edge is
  written and name the missing one (``details.missing`` = ``"source"`` or ``"target"``);
* :func:`scan` finds orphans (edges whose node or entity is gone, nodes whose memory row is gone,
  entities nothing mentions) and, with ``repair=True``, deletes them in one transaction;
* :func:`purge` removes soft-deleted graph rows older than a retention period.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..errors import ErrorCode, MemoryError

# (kind, SELECT of offending keys) — every query is tenant-scoped through $tenant.
_CHECKS: dict[str, str] = {
    "memory_edges_missing_source": """
        SELECT edge_id FROM memory_edges x WHERE tenant_id = $tenant AND NOT EXISTS (
            SELECT 1 FROM memory_nodes n WHERE n.tenant_id = x.tenant_id AND n.node_id = x.source_id)""",
    "memory_edges_missing_target": """
        SELECT edge_id FROM memory_edges x WHERE tenant_id = $tenant AND NOT EXISTS (
            SELECT 1 FROM memory_nodes n WHERE n.tenant_id = x.tenant_id AND n.node_id = x.target_id
            UNION ALL
            SELECT 1 FROM entities e WHERE e.tenant_id = x.tenant_id AND e.entity_id = x.target_id)""",
    "entity_edges_missing_entity": """
        SELECT edge_id FROM entity_edges x WHERE tenant_id = $tenant AND (
            NOT EXISTS (SELECT 1 FROM entities e WHERE e.tenant_id = x.tenant_id AND e.entity_id = x.source_id)
            OR NOT EXISTS (SELECT 1 FROM entities e WHERE e.tenant_id = x.tenant_id AND e.entity_id = x.target_id))""",
    "nodes_missing_memory": """
        SELECT node_id FROM memory_nodes n WHERE tenant_id = $tenant AND NOT EXISTS (
            SELECT 1 FROM memories m WHERE m.tenant_id = n.tenant_id AND m.id = n.memory_id)""",
    "entities_unreferenced": """
        SELECT entity_id FROM entities e WHERE tenant_id = $tenant AND deleted_at IS NULL AND NOT EXISTS (
            SELECT 1 FROM memory_edges x WHERE x.tenant_id = e.tenant_id AND x.target_id = e.entity_id
               AND x.deleted_at IS NULL)""",
}

_REPAIRS: dict[str, tuple[str, ...]] = {
    "memory_edges_missing_source": (
        "DELETE FROM memory_edges WHERE tenant_id = $tenant AND list_contains($ids::JSON::VARCHAR[], edge_id)",
    ),
    "memory_edges_missing_target": (
        "DELETE FROM memory_edges WHERE tenant_id = $tenant AND list_contains($ids::JSON::VARCHAR[], edge_id)",
    ),
    "entity_edges_missing_entity": (
        "DELETE FROM entity_edges WHERE tenant_id = $tenant AND list_contains($ids::JSON::VARCHAR[], edge_id)",
    ),
    "nodes_missing_memory": (
        "DELETE FROM memory_edges WHERE tenant_id = $tenant AND (list_contains($ids::JSON::VARCHAR[], source_id) "
        "OR list_contains($ids::JSON::VARCHAR[], target_id) OR list_contains($ids::JSON::VARCHAR[], memory_id))",
        "DELETE FROM entity_edges WHERE tenant_id = $tenant AND list_contains($ids::JSON::VARCHAR[], memory_id)",
        "DELETE FROM memory_nodes WHERE tenant_id = $tenant AND list_contains($ids::JSON::VARCHAR[], node_id)",
    ),
    "entities_unreferenced": (
        "DELETE FROM entity_edges WHERE tenant_id = $tenant AND (list_contains($ids::JSON::VARCHAR[], source_id) "
        "OR list_contains($ids::JSON::VARCHAR[], target_id))",
        "DELETE FROM entities WHERE tenant_id = $tenant AND list_contains($ids::JSON::VARCHAR[], entity_id)",
    ),
}

#: Order matters: dropping dangling nodes/entities first creates dangling edges, removed after.
_ORDER = (
    "nodes_missing_memory",
    "entities_unreferenced",
    "memory_edges_missing_source",
    "memory_edges_missing_target",
    "entity_edges_missing_entity",
)


class TenantIntegrity(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tenant_id: str
    orphans: dict[str, int] = Field(default_factory=dict)
    sample_ids: dict[str, list[str]] = Field(default_factory=dict)
    repaired: int = 0

    @property
    def total(self) -> int:
        return sum(self.orphans.values())


class IntegrityReport(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tenants: list[TenantIntegrity] = Field(default_factory=list)
    repaired: bool = False

    @property
    def total_orphans(self) -> int:
        return sum(t.total for t in self.tenants)

    @property
    def ok(self) -> bool:
        return self.total_orphans == 0


def _ids(ids: list[str]) -> str:
    return json.dumps(ids)


def scan_tenant(cur: Any, tenant_id: str, *, repair: bool) -> TenantIntegrity:
    """Find (and optionally delete) one tenant's orphans; runs inside the caller's transaction."""
    report = TenantIntegrity(tenant_id=tenant_id)
    for kind in _ORDER:
        ids = [r[0] for r in cur.execute(_CHECKS[kind], {"tenant": tenant_id}).fetchall()]
        if not ids:
            continue
        report.orphans[kind] = report.orphans.get(kind, 0) + len(ids)
        report.sample_ids[kind] = sorted(ids)[:10]
        if repair:
            for statement in _REPAIRS[kind]:
                params: dict[str, Any] = {"tenant": tenant_id}
                if "$ids" in statement:
                    params["ids"] = _ids(ids)
                cur.execute(statement, params)
            report.repaired += len(ids)
    return report


def graph_tenants(cur: Any) -> list[str]:
    rows = cur.execute(
        "SELECT tenant_id FROM memory_nodes UNION SELECT tenant_id FROM memory_edges UNION "
        "SELECT tenant_id FROM entities UNION SELECT tenant_id FROM entity_edges ORDER BY 1"
    ).fetchall()
    return [r[0] for r in rows]


def validate_memory_edge(
    cur: Any, tenant_id: str, source_id: str, target_id: str, target_kind: Literal["memory", "entity"]
) -> None:
    src = cur.execute(
        "SELECT 1 FROM memory_nodes WHERE tenant_id = ? AND node_id = ? AND deleted_at IS NULL", [tenant_id, source_id]
    ).fetchone()
    if src is None:
        raise MemoryError(
            ErrorCode.INVALID_PARAMS,
            f"edge source memory node {source_id!r} does not exist",
            details={"missing": "source", "id": source_id},
            retryable=False,
        )
    if target_kind == "memory":
        sql = "SELECT 1 FROM memory_nodes WHERE tenant_id = ? AND node_id = ? AND deleted_at IS NULL"
    else:
        sql = "SELECT 1 FROM entities WHERE tenant_id = ? AND entity_id = ? AND deleted_at IS NULL"
    if cur.execute(sql, [tenant_id, target_id]).fetchone() is None:
        raise MemoryError(
            ErrorCode.INVALID_PARAMS,
            f"edge target {target_kind} {target_id!r} does not exist",
            details={"missing": "target", "id": target_id},
            retryable=False,
        )


def validate_entity_edge(cur: Any, tenant_id: str, source_id: str, target_id: str) -> None:
    sql = "SELECT 1 FROM entities WHERE tenant_id = ? AND entity_id = ? AND deleted_at IS NULL"
    for end, ref in (("source", source_id), ("target", target_id)):
        if cur.execute(sql, [tenant_id, ref]).fetchone() is None:
            raise MemoryError(
                ErrorCode.INVALID_PARAMS,
                f"entity edge {end} entity {ref!r} does not exist",
                details={"missing": end, "id": ref},
                retryable=False,
            )


def purge(cur: Any, tenant_id: str, older_than: datetime) -> int:
    """Permanently delete this tenant's graph rows soft-deleted before ``older_than``."""
    removed = 0
    for table in ("entity_edges", "memory_edges", "memory_nodes", "entities"):
        sql = {
            "entity_edges": "DELETE FROM entity_edges WHERE tenant_id = ? AND deleted_at < ?",
            "memory_edges": "DELETE FROM memory_edges WHERE tenant_id = ? AND deleted_at < ?",
            "memory_nodes": "DELETE FROM memory_nodes WHERE tenant_id = ? AND deleted_at < ?",
            "entities": "DELETE FROM entities WHERE tenant_id = ? AND deleted_at < ?",
        }[table]
        row = cur.execute(sql, [tenant_id, older_than]).fetchone()
        removed += int(row[0]) if row else 0
    return removed
