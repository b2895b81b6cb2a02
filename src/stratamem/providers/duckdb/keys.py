"""API keys of the server, stored beside the memories."""

from __future__ import annotations

import builtins
import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from ...keys_model import ApiKeyRecord
from ..base import to_naive_utc
from .connection import DuckDBConnection


class KeysMixin(DuckDBConnection):
    """API key records and the cross-tenant id check."""

    # ------------------------------------------------------------------------- server: API keys
    def api_key_put(self, record: ApiKeyRecord) -> None:
        with self.transaction() as cur:
            cur.execute(
                "INSERT INTO api_keys (key_id, tenant_id, name, roles, salt, key_hash, identifiers, created_at, "
                "revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    record.key_id,
                    record.tenant_id,
                    record.name,
                    json.dumps(list(record.roles)),
                    record.salt,
                    record.key_hash,
                    json.dumps(record.identifiers),
                    to_naive_utc(record.created_at),
                    to_naive_utc(record.revoked_at),
                ],
            )

    @staticmethod
    def _api_key(row: Sequence[Any]) -> ApiKeyRecord:
        return ApiKeyRecord(
            key_id=row[0],
            tenant_id=row[1],
            name=row[2],
            roles=tuple(json.loads(row[3])),
            salt=row[4],
            key_hash=row[5],
            identifiers=dict(json.loads(row[6])),
            created_at=row[7].replace(tzinfo=UTC),
            revoked_at=row[8].replace(tzinfo=UTC) if row[8] is not None else None,
        )

    _KEY_COLUMNS = "key_id, tenant_id, name, roles, salt, key_hash, identifiers, created_at, revoked_at"

    def api_key_get(self, key_id: str) -> ApiKeyRecord | None:
        # api_keys is never touched by bookkeeping appends: no wait for the append queue (see _read).
        with self._read(appends=False) as cur:
            row = cur.execute(f"SELECT {self._KEY_COLUMNS} FROM api_keys WHERE key_id = ?", [key_id]).fetchone()
        return self._api_key(row) if row else None

    def api_key_list(self, tenant_id: str) -> builtins.list[ApiKeyRecord]:
        with self._read() as cur:
            rows = cur.execute(
                f"SELECT {self._KEY_COLUMNS} FROM api_keys WHERE tenant_id = ? ORDER BY created_at", [tenant_id]
            ).fetchall()
        return [self._api_key(r) for r in rows]

    def api_key_revoke(self, tenant_id: str, key_id: str, at: datetime) -> bool:
        with self.transaction() as cur:
            row = cur.execute(
                "SELECT 1 FROM api_keys WHERE tenant_id = ? AND key_id = ? AND revoked_at IS NULL", [tenant_id, key_id]
            ).fetchone()
            if row is None:
                return False
            cur.execute(
                "UPDATE api_keys SET revoked_at = ? WHERE tenant_id = ? AND key_id = ?",
                [to_naive_utc(at), tenant_id, key_id],
            )
        return True

    def id_exists_in_other_tenant(self, tenant_id: str, memory_id: str) -> bool:
        with self._read() as cur:
            row = cur.execute(
                "SELECT 1 FROM memories WHERE id = ? AND tenant_id <> ? LIMIT 1", [memory_id, tenant_id]
            ).fetchone()
        return row is not None
