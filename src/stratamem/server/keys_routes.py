"""Admin routes for API keys of the caller's own tenant (usable while the server owns the store)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Request
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from ..errors import ErrorCode, MemoryError
from ..model import LayerIdentifiers, TenantContext
from .auth import require_role
from .deps import MemoryDep, get_tenant
from .http_errors import COMMON, responses
from .keys import create_key, key_grants, key_identifiers


class _M(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class CreateKeyRequest(_M):
    role: str = Field(
        "writer",
        max_length=16,
        description="reader, writer or admin",
        json_schema_extra={"enum": ["reader", "writer", "admin"]},
    )
    name: str | None = Field(None, max_length=128)
    identifiers: LayerIdentifiers = Field(default_factory=LayerIdentifiers)
    #: Scopes granted beyond the identifiers: ``team:t1``, ``project:p1``, ``object:ticket/*``, ``all``.
    grants: list[Annotated[str, Field(max_length=300)]] = Field(default_factory=list, max_length=100)


class KeyInfo(_M):
    key_id: str
    tenant_id: str
    name: str
    roles: list[str]
    identifiers: dict[str, str]
    grants: list[str] = Field(default_factory=list)
    created_at: datetime
    revoked_at: datetime | None = None


class CreatedKeyResponse(KeyInfo):
    #: The API key itself: returned once, stored only as a hash.
    key: str


async def _admin(request: Request, ctx: Annotated[TenantContext, Depends(get_tenant)]) -> TenantContext:
    try:
        require_role(ctx, frozenset({"admin"}), "manage API keys")
    except MemoryError as exc:
        request.app.state.memory.engine.audit.record(
            tenant_id=ctx.tenant_id, principal=ctx.principal, action="keys", outcome="denied", code=exc.code.value
        )
        raise
    return ctx


AdminDep = Annotated[TenantContext, Depends(_admin)]


def _info(rec: Any) -> dict[str, Any]:
    return {
        "key_id": rec.key_id,
        "tenant_id": rec.tenant_id,
        "name": rec.name,
        "roles": list(rec.roles),
        "identifiers": key_identifiers(rec),
        "grants": key_grants(rec),
        "created_at": rec.created_at,
        "revoked_at": rec.revoked_at,
    }


def build_keys_router() -> APIRouter:
    r = APIRouter(prefix="/v1/keys", tags=["keys"])

    @r.post(
        "",
        status_code=201,
        response_model=CreatedKeyResponse,
        responses=responses(*COMMON),
        operation_id="createApiKey",
    )
    def create(body: CreateKeyRequest, memory: MemoryDep, ctx: AdminDep) -> CreatedKeyResponse:
        """Create an API key of the caller's tenant (admin keys only); the key is in the answer once."""
        ids = body.identifiers.model_dump(exclude_none=True)
        created = create_key(
            memory.engine.provider, ctx.tenant_id, body.role, name=body.name, identifiers=ids, grants=body.grants
        )
        memory.engine.audit.record(
            tenant_id=ctx.tenant_id,
            principal=ctx.principal,
            action="keys.create",
            details={"key_id": created.record.key_id, "role": body.role},
        )
        return CreatedKeyResponse.model_validate({**_info(created.record), "key": created.key})

    @r.get("", response_model=list[KeyInfo], responses=responses(*COMMON), operation_id="listApiKeys")
    def list_keys(memory: MemoryDep, ctx: AdminDep) -> list[KeyInfo]:
        """The tenant's keys, active and revoked (ids and labels, never the keys)."""
        return [KeyInfo.model_validate(_info(k)) for k in memory.engine.provider.api_key_list(ctx.tenant_id)]

    @r.delete("/{key_id}", response_model=KeyInfo, responses=responses(*COMMON, 404), operation_id="revokeApiKey")
    def revoke(
        key_id: Annotated[str, Path(max_length=64)], request: Request, memory: MemoryDep, ctx: AdminDep
    ) -> KeyInfo:
        """Revoke a key of the tenant; requests with it get 401 from then on."""
        revoked = memory.engine.provider.api_key_revoke(ctx.tenant_id, key_id, datetime.now(UTC))
        request.app.state.key_cache.invalidate(key_id)  # refused from the next request on
        if not revoked:
            raise MemoryError(
                ErrorCode.MEMORY_NOT_FOUND,
                f"no active key {key_id!r}",
                operation="keys.revoke",
                details={"keyId": key_id},
            )
        memory.engine.audit.record(
            tenant_id=ctx.tenant_id, principal=ctx.principal, action="keys.revoke", details={"key_id": key_id}
        )
        rec = memory.engine.provider.api_key_get(key_id)
        return KeyInfo.model_validate(_info(rec))

    return r
