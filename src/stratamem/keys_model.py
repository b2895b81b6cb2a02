"""The stored form of an API key, shared by the providers that keep keys and the server that checks them.

Keys are looked up by their public ``key_id`` (the credential itself names the tenant, so this is the
one lookup that cannot be tenant-scoped); only a salted SHA-256 hash of the secret part is stored.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


@dataclass(frozen=True)
class ApiKeyRecord:
    key_id: str
    tenant_id: str
    name: str
    roles: tuple[str, ...]
    salt: str
    key_hash: str
    created_at: datetime
    identifiers: dict[str, str] = field(default_factory=dict)
    revoked_at: datetime | None = None
