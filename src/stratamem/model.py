"""Core data model: layers, identifiers, tenant context, entries, inputs and outputs.

Python attributes are snake_case; every model also accepts and can emit the camelCase names
(``userId``, ``createdAt`` …) through aliases, which is what the REST and MCP surfaces use.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

from .errors import ErrorCode, MemoryError
from .scopes import IDENTIFIER_ALIASES


class Layer(StrEnum):
    """The seven hierarchical layers, most specific first, plus the lateral ``object`` layer."""

    AGENT = "agent"
    USER = "user"
    SESSION = "session"
    PROJECT = "project"
    TEAM = "team"
    ORG = "org"
    COMPANY = "company"
    OBJECT = "object"


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        validate_assignment=False,
    )

    def to_json_dict(self, **kwargs: Any) -> dict[str, Any]:
        """JSON-ready dict with camelCase names (the REST/MCP wire format)."""
        return self.model_dump(mode="json", by_alias=True, **kwargs)


class LayerIdentifiers(_Model):
    """Identifiers that scope a layer. Keys may be given as ``user_id`` or ``userId``."""

    agent_id: str | None = None
    user_id: str | None = None
    session_id: str | None = None
    project_id: str | None = None
    team_id: str | None = None
    org_id: str | None = None
    company_id: str | None = None
    object_type: str | None = None
    object_id: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _scope_aliases(cls, value: Any) -> Any:
        """Other APIs' identifier keys (``workspaceId`` → ``projectId``, see ``stratamem.scopes``)."""
        if not isinstance(value, dict) or not any(k in IDENTIFIER_ALIASES for k in value):
            return value
        out = {k: v for k, v in value.items() if k not in IDENTIFIER_ALIASES}
        for key, field in IDENTIFIER_ALIASES.items():
            if key not in value:
                continue
            given = [out[k] for k in (field, to_camel(field)) if out.get(k) is not None]
            if given and value[key] is not None and any(g != value[key] for g in given):
                raise ValueError(f"{key} and {to_camel(field)} name the same identifier and differ")
            if not given:
                out.pop(to_camel(field), None)
                out[field] = value[key]
        return out

    @field_validator("*", mode="before")
    @classmethod
    def _strip(cls, value: Any) -> Any:
        if value is None:
            return None
        if isinstance(value, int | float) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str):
            raise ValueError("identifiers must be strings")
        value = value.strip()
        if len(value) > 256:
            raise ValueError("identifiers are at most 256 characters")
        return value or None

    def present(self) -> dict[str, str]:
        return {k: v for k, v in self.model_dump().items() if v is not None}


_TENANT_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}$")

#: Grant scope kinds: ``kind:id`` (``object:type/id`` or ``object:type/*``), or ``all``.
GRANT_KINDS: tuple[str, ...] = ("user", "agent", "session", "project", "team", "org", "company", "object")
_GRANT_FIELD = {
    "user": "user_ids",
    "agent": "agent_ids",
    "session": "session_ids",
    "project": "project_ids",
    "team": "team_ids",
    "org": "org_ids",
    "company": "company_ids",
    "object": "objects",
}
_IDENTIFIER_KIND = {
    "user_id": "user",
    "agent_id": "agent",
    "session_id": "session",
    "project_id": "project",
    "team_id": "team",
    "org_id": "org",
    "company_id": "company",
}


class Grant(_Model):
    """What a credential may read and change inside its tenant (its role decides whether it may write).

    * ``all``: every scope of the tenant (tenant admins, trusted services);
    * ``user_ids``: the users it acts for: their user layer, and their agent and session layers
      (restricted to ``agent_ids`` / ``session_ids`` when those are given);
    * ``project_ids`` … ``company_ids``: shared scopes; ``objects``: ``type/id`` or ``type/*``.

    Build one with :meth:`parse` from ``["user:alice", "team:t1"]`` and/or a credential's identifiers.
    """

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)

    all: bool = False
    user_ids: frozenset[str] = frozenset()
    agent_ids: frozenset[str] = frozenset()
    session_ids: frozenset[str] = frozenset()
    project_ids: frozenset[str] = frozenset()
    team_ids: frozenset[str] = frozenset()
    org_ids: frozenset[str] = frozenset()
    company_ids: frozenset[str] = frozenset()
    objects: frozenset[str] = frozenset()

    @classmethod
    def parse(cls, scopes: Any = (), identifiers: Any = None) -> Grant:
        """A grant from scope strings (``user:alice``, ``team:t1``, ``object:ticket/*``, ``all``) plus
        the identifiers a credential is bound to (each one is granted). INVALID_PARAMS on a bad scope."""
        sets: dict[str, set[str]] = {f: set() for f in _GRANT_FIELD.values()}
        everything = False
        for raw in scopes or ():
            text = str(raw).strip()
            if text in ("all", "*"):
                everything = True
                continue
            kind, sep, value = text.partition(":")
            value = value.strip()
            if (
                not sep
                or kind not in _GRANT_FIELD
                or not value
                or len(value) > 256
                or (kind == "object" and "/" not in value)
            ):
                raise MemoryError(
                    ErrorCode.INVALID_PARAMS,
                    f"invalid grant {text!r}: expected all, or kind:id with kind one of "
                    f"{', '.join(GRANT_KINDS)} (object:type/id or object:type/*)",
                    operation="grant",
                    details={"field": "grants"},
                )
            sets[_GRANT_FIELD[kind]].add(value)
        ids = identifiers.present() if isinstance(identifiers, LayerIdentifiers) else dict(identifiers or {})
        for name, value in ids.items():
            snake = {
                "userId": "user_id",
                "agentId": "agent_id",
                "sessionId": "session_id",
                "projectId": "project_id",
                "teamId": "team_id",
                "orgId": "org_id",
                "companyId": "company_id",
            }.get(name, name)
            if snake in _IDENTIFIER_KIND and value:
                sets[_GRANT_FIELD[_IDENTIFIER_KIND[snake]]].add(str(value))
        obj_type, obj_id = ids.get("object_type") or ids.get("objectType"), ids.get("object_id") or ids.get("objectId")
        if obj_type and obj_id:
            sets["objects"].add(f"{obj_type}/{obj_id}")
        return cls(all=everything, **{k: frozenset(v) for k, v in sets.items()})

    def scopes(self) -> list[str]:
        """The grant as scope strings (the inverse of :meth:`parse`)."""
        out = ["all"] if self.all else []
        for kind, name in _GRANT_FIELD.items():
            out += [f"{kind}:{v}" for v in sorted(getattr(self, name))]
        return out

    def allows(self, layer: Layer, identifiers: LayerIdentifiers) -> bool:
        """May this grant touch the scope (``layer``, ``identifiers``)?"""
        if self.all:
            return True
        ids = identifiers
        if layer in (Layer.AGENT, Layer.USER, Layer.SESSION):
            if ids.user_id is None or ids.user_id not in self.user_ids:
                return False
            if layer is Layer.AGENT:
                return not self.agent_ids or ids.agent_id in self.agent_ids
            if layer is Layer.SESSION:
                return not self.session_ids or ids.session_id in self.session_ids
            return True
        if layer is Layer.OBJECT:
            return f"{ids.object_type}/{ids.object_id}" in self.objects or f"{ids.object_type}/*" in self.objects
        value = {
            Layer.PROJECT: ids.project_id,
            Layer.TEAM: ids.team_id,
            Layer.ORG: ids.org_id,
            Layer.COMPANY: ids.company_id,
        }[layer]
        return value is not None and value in getattr(self, f"{layer.value}_ids")


class TenantContext(_Model):
    """Who is calling and for which tenant. Required by every operation.

    ``credential`` is never printed; ``expires_at`` in the past makes the context invalid.
    """

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)

    tenant_id: str
    principal: str | None = None
    roles: tuple[str, ...] = ()
    credential: str | None = Field(default=None, repr=False)
    expires_at: datetime | None = None
    #: The scopes this caller may touch; None = a trusted in-process caller (every scope).
    grant: Grant | None = None

    def validate_at(self, now: datetime, operation: str) -> None:
        if not isinstance(self.tenant_id, str) or not _TENANT_RE.match(self.tenant_id):
            raise MemoryError(
                ErrorCode.INVALID_TENANT_CONTEXT,
                "tenant_id must be 1-128 characters of letters, digits and _.:@- and start with a letter or digit",
                operation=operation,
            )
        if self.expires_at is not None:
            exp = self.expires_at if self.expires_at.tzinfo else self.expires_at.replace(tzinfo=UTC)
            if exp <= now:
                raise MemoryError(
                    ErrorCode.INVALID_TENANT_CONTEXT,
                    "the tenant context's credentials have expired",
                    operation=operation,
                )

    def has_role(self, role: str) -> bool:
        return role in self.roles


#: ``superseded``: a newer memory of the same scope replaced this one (kept as history; see
#: ``Provenance.superseded_by`` / ``valid_to``); it leaves default search and list like ``archived``.
MemoryStatus = Literal["active", "archived", "deleted", "superseded"]


class Provenance(_Model):
    """Where an entry came from; kept through promotion, compaction and conflicts."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")

    agent_id: str | None = None
    source: str | None = None
    confidence: float | None = None
    promoted_from_id: str | None = None
    compacted_from_ids: list[str] | None = None
    created_in_session_id: str | None = None
    conflict_of: str | None = None
    conflict: bool = False
    #: The memory's place in a conversation: the thread (conversation, session) and the turn's order in
    #: it. Search ranks a turn higher when its neighbours are relevant too (``retrieval/context.py``).
    thread_id: str | None = None
    position: int | None = None
    #: When what the memory records was said or happened (a conversation turn's time, an imported
    #: event), if not when it was written: search ranks the memories of a date a question names
    #: higher (``retrieval/dates.py``), by this time, else by ``created_at``.
    occurred_at: datetime | None = None
    #: The newer memory that replaced this one, and when this one stopped being current.
    superseded_by: str | None = None
    valid_to: datetime | None = None


class MemoryEntry(_Model):
    """One stored memory. ``embedding`` is only filled when asked for (it is large)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    id: str
    tenant_id: str
    content: str
    layer: Layer
    identifiers: LayerIdentifiers
    metadata: dict[str, Any] = Field(default_factory=dict)
    tier: str | None = None
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None = None
    version: int = 1
    etag: str
    importance: float = 0.0
    access_count: int = 0
    last_accessed_at: datetime | None = None
    status: MemoryStatus = "active"
    deleted_at: datetime | None = None
    provenance: Provenance = Field(default_factory=Provenance)
    content_hash: str
    embedding: list[float] | None = Field(default=None, repr=False)

    @property
    def tags(self) -> list[str]:
        tags = self.metadata.get("tags")
        return [str(t) for t in tags] if isinstance(tags, list) else []


class MetadataFilter(_Model):
    """Search/list filter on entry metadata: tags, source type, knowledge pointer, custom fields.

    * ``tags``: match entries having ANY of these tags (OR), or ALL of them with ``tags_match="all"``.
    * ``source_type``: ``metadata.source.type`` equals this.
    * ``has_knowledge_pointer``: entry has (or lacks) ``metadata.knowledgePointer``.
    * ``custom``: ``{field: value}`` for equality, or ``{field: {op: value}}`` with ops
      ``eq, ne, contains, in, gt, gte, lt, lte, exists``. Dotted fields reach into nested metadata.
    """

    tags: list[str] | None = None
    tags_match: Literal["any", "all"] | None = None
    source_type: str | None = None
    has_knowledge_pointer: bool | None = None
    custom: dict[str, Any] | None = None


# ----------------------------------------------------------------------------------- inputs/outputs


class AddMemoryInput(_Model):
    content: str
    layer: str
    identifiers: LayerIdentifiers = Field(default_factory=LayerIdentifiers)
    metadata: dict[str, Any] = Field(default_factory=dict)
    tier: str | None = None
    expires_at: datetime | None = None
    importance: float | None = None
    provenance: Provenance | None = None
    #: Ids of older memories of the same tenant that this one replaces (marked ``superseded`` in the
    #: add's own transaction); one that names no current memory fails the add before it is stored.
    supersedes: list[str] | None = None


class AddMemoryOutput(_Model):
    memory: MemoryEntry
    embedding_generated: bool
    #: Ids of the older memories this one made out of date (now ``status == "superseded"``).
    superseded: list[str] = Field(default_factory=list)


class SearchResult(_Model):
    memory: MemoryEntry
    score: float
    layer: Layer
    #: Knowledge graph (``expand_graph=True``): the hit this result was reached from, and the path.
    expanded_from: str | None = None
    graph_path: str | None = None


class SearchMemoryOutput(_Model):
    results: list[SearchResult]
    total_count: int
    searched_layers: list[Layer]


class UpdateMemoryOutput(_Model):
    memory: MemoryEntry
    embedding_regenerated: bool


class DeleteMemoryOutput(_Model):
    success: bool


class ListMemoriesOutput(_Model):
    memories: list[MemoryEntry]
    next_cursor: str | None
    total_count: int


class BulkAddOutput(_Model):
    results: list[AddMemoryOutput]


class BulkDeleteFailure(_Model):
    """One id a bulk delete refused, and why."""

    id: str
    code: str
    reason: str


class BulkDeleteOutput(_Model):
    deleted: int
    #: Ids refused (malformed), in request order; ``failures`` gives the code and reason of each.
    failed: list[str] = Field(default_factory=list)
    failures: list[BulkDeleteFailure] = Field(default_factory=list)
    #: Well-formed ids with nothing to delete (unknown, already deleted, or another tenant's): delete
    #: is idempotent, so these are not failures.
    not_found: list[str] = Field(default_factory=list)

    @classmethod
    def of(
        cls, requested: Sequence[str], deleted: Sequence[str], rejected: Sequence[BulkDeleteFailure] = ()
    ) -> BulkDeleteOutput:
        """The answer for ``requested`` well-formed ids of which the store deleted ``deleted``."""
        done = set(deleted)
        return cls(
            deleted=len(done),
            failed=[f.id for f in rejected],
            failures=list(rejected),
            not_found=[i for i in dict.fromkeys(requested) if i not in done],
        )


HealthStatus = Literal["healthy", "degraded", "unhealthy"]


class ComponentHealth(_Model):
    status: HealthStatus
    message: str | None = None


class HealthCheckResult(_Model):
    status: HealthStatus
    latency_ms: float
    components: dict[str, ComponentHealth] = Field(default_factory=dict)


class ProviderCapabilities(_Model):
    vector_search: bool
    keyword_search: bool
    embedding_dimensions: int
    distance_metrics: list[str]
    bulk_operations: bool
    transactions: bool
    max_content_length: int
    persistent: bool
    #: Optional concerns the provider implements, derived from its written contracts
    #: (``providers/contracts.py``: ``GraphBackend``, ``LifecycleStore``, ``KeyStore``,
    #: ``GovernanceStore``, ``SnapshotSource``).
    graph: bool = False
    lifecycle: bool = False
    keys: bool = False
    governance: bool = False
    snapshots: bool = False


class StoreStats(_Model):
    tenant_id: str
    total: int
    by_layer: dict[str, int]
    embedding_model: str
    embedding_dimensions: int
    provider: str
