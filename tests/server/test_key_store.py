"""The server's provider-trait methods (API keys, cross-tenant audit check) on every provider."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest

from stratamem import Memory, TenantContext
from stratamem.errors import ErrorCode, MemoryError
from stratamem.server.keys import create_key, verify_key

from ..conformance.conftest import PROVIDER_FACTORIES


@pytest.mark.parametrize("name", sorted(PROVIDER_FACTORIES))
def test_key_store_contract(name: str, tmp_path: Path) -> None:
    with Memory.open(PROVIDER_FACTORIES[name](tmp_path), embedder="hashing") as mem:
        provider = mem.engine.provider
        # unique tenants: a server-backed store (PostgreSQL) is shared across tests and runs
        acme, globex = f"acme-{uuid.uuid4().hex[:8]}", f"globex-{uuid.uuid4().hex[:8]}"
        a = create_key(provider, acme, "writer", identifiers={"user_id": "alice"})
        b = create_key(provider, globex, "reader")
        rec = verify_key(provider, a.key)
        assert (rec.tenant_id, rec.roles, rec.identifiers) == (acme, ("writer",), {"userId": "alice"})
        assert [r.key_id for r in provider.api_key_list(acme)] == [a.record.key_id]
        with pytest.raises(MemoryError) as err:
            verify_key(provider, a.key.replace(a.record.key_id, b.record.key_id))
        assert err.value.code is ErrorCode.INVALID_TENANT_CONTEXT
        assert provider.api_key_revoke(globex, a.record.key_id, datetime.now(UTC)) is False
        assert provider.api_key_revoke(acme, a.record.key_id, datetime.now(UTC)) is True
        assert provider.api_key_revoke(acme, a.record.key_id, datetime.now(UTC)) is False
        with pytest.raises(MemoryError):
            verify_key(provider, a.key)
        assert verify_key(provider, b.key).tenant_id == globex

        mid = mem.add(TenantContext(tenant_id=acme), "x", layer="user", identifiers={"user_id": "u"}).memory.id
        assert provider.id_exists_in_other_tenant(globex, mid) is True
        assert provider.id_exists_in_other_tenant(acme, mid) is False
        assert provider.id_exists_in_other_tenant(globex, "missing") is False
