"""API-key storage: the record type and DuckDB migration 2 (reserved for the server feature).

Keys are looked up by their public ``key_id`` (the credential itself names the tenant, so this is the
one lookup that cannot be tenant-scoped); only a salted SHA-256 hash of the secret part is stored.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..providers.duckdb import schema as duckdb_schema


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


def _v2_server(cur: Any, dims: int) -> None:
    cur.execute(
        """
        CREATE TABLE api_keys (
            key_id      VARCHAR   PRIMARY KEY,
            tenant_id   VARCHAR   NOT NULL,
            name        VARCHAR   NOT NULL,
            roles       VARCHAR   NOT NULL,
            salt        VARCHAR   NOT NULL,
            key_hash    VARCHAR   NOT NULL,
            identifiers VARCHAR   NOT NULL,
            created_at  TIMESTAMP NOT NULL,
            revoked_at  TIMESTAMP
        )
        """
    )
    cur.execute("CREATE INDEX idx_api_keys_tenant ON api_keys (tenant_id)")


MIGRATION = duckdb_schema.Migration(2, "server: api keys", _v2_server)
if all(m.version != 2 for m in duckdb_schema.MIGRATIONS):
    duckdb_schema.MIGRATIONS.append(MIGRATION)
