"""Memory lifecycle storage: access statistics, status, expiry, purge candidates and feedback."""

from __future__ import annotations

import builtins
import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from ...retrieval.search_index import (
    Change,
)
from ..base import (
    to_naive_utc,
    to_utc,
)
from . import schema as duckdb_schema
from .connection import RowAppend
from .database import _text_list
from .index import SearchIndexMixin


class LifecycleMixin(SearchIndexMixin):
    """Importance, status, TTL and feedback of memories."""

    # ---------------------------------------------------------------------------- lifecycle
    def record_access(
        self, tenant_id: str, importance: Mapping[str, float], now: datetime, *, counts: Mapping[str, int] | None = None
    ) -> int:
        if not importance:
            return 0
        accessed = to_naive_utc(now)
        rows: builtins.list[Sequence[Any]] = [
            (tenant_id, memory_id, 1 if counts is None else int(counts.get(memory_id, 1)), accessed, float(value))
            for memory_id, value in importance.items()
        ]
        # Appended to the access log (no scan of ``memories``), folded by the next read or transaction
        # that changes stored rows; the access rows of one append batch (concurrent searches) share
        # one insert.
        self._append(RowAppend(duckdb_schema.ACCESS_LOG_TABLE, rows, self._insert_access))
        return len(rows)

    def _insert_access(self, cur: Any, rows: Sequence[Sequence[Any]]) -> None:
        """Insert access-log rows ``(tenant_id, memory_id, n, accessed_at, importance)`` with one
        statement, then show the accesses to the search index's rows (counts summed per memory; the
        latest time and importance win, as the fold of the log leaves them)."""
        columns = list(zip(*rows, strict=True))
        cur.execute(
            f"INSERT INTO {duckdb_schema.ACCESS_LOG_TABLE} (tenant_id, memory_id, n, accessed_at, importance) "
            "SELECT unnest($1::JSON::VARCHAR[]), unnest($2::JSON::VARCHAR[]), unnest($3::JSON::INTEGER[]), "
            "unnest($4::JSON::TIMESTAMP[]), unnest($5::JSON::DOUBLE[])",
            [
                _text_list(columns[0]),
                _text_list(columns[1]),
                json.dumps(columns[2]),
                json.dumps([t.isoformat() for t in columns[3]]),
                json.dumps(columns[4]),
            ],
        )
        self.db.access_pending = True
        by_tenant: dict[str, dict[str, tuple[int, datetime, float]]] = {}
        for tenant_id, memory_id, n, accessed, value in rows:
            seen = by_tenant.setdefault(tenant_id, {})
            before = seen.get(memory_id)
            seen[memory_id] = (n + (before[0] if before else 0), accessed.replace(tzinfo=UTC), value)
        for tenant_id, seen in by_tenant.items():
            self._rows_changed(tenant_id, list(seen))
            self._stage(
                Change(
                    "patch",
                    tenant_id,
                    ids=list(seen),
                    patch=lambda e, seen=seen: e.model_copy(  # type: ignore[misc]
                        update={
                            "access_count": e.access_count + seen[e.id][0],
                            "last_accessed_at": seen[e.id][1],
                            "importance": seen[e.id][2],
                        }
                    ),
                )
            )

    def set_status(self, tenant_id: str, ids: Sequence[str], status: str, now: datetime) -> builtins.list[str]:
        if not ids:
            return []
        with self.transaction() as cur:
            found = [
                r[0]
                for r in cur.execute(
                    "SELECT id FROM memories WHERE tenant_id = ? AND list_contains(?::JSON::VARCHAR[], id)",
                    [tenant_id, _text_list(ids)],
                ).fetchall()
            ]
            if found:
                cur.execute(
                    "UPDATE memories SET status = ?, deleted_at = ? "
                    "WHERE tenant_id = ? AND list_contains(?::JSON::VARCHAR[], id)",
                    [status, to_naive_utc(now) if status == "deleted" else None, tenant_id, _text_list(found)],
                )
                self._rows_changed(tenant_id, found)
                deleted_at = to_utc(now) if status == "deleted" else None
                self._stage(
                    Change(
                        "patch",
                        tenant_id,
                        ids=found,
                        patch=lambda e: e.model_copy(update={"status": status, "deleted_at": deleted_at}),
                    )
                )
        return found

    def set_expiry(self, tenant_id: str, ids: Sequence[str], expires_at: datetime | None) -> int:
        if not ids:
            return 0
        with self.transaction() as cur:
            row = cur.execute(
                "UPDATE memories SET expires_at = ? WHERE tenant_id = ? AND list_contains(?::JSON::VARCHAR[], id)",
                [to_naive_utc(expires_at), tenant_id, _text_list(ids)],
            ).fetchone()
            self._rows_changed(tenant_id, ids)
            expiry = to_utc(expires_at)
            self._stage(
                Change("patch", tenant_id, ids=list(ids), patch=lambda e: e.model_copy(update={"expires_at": expiry}))
            )
        return int(row[0]) if row else 0

    def purge_candidates(
        self, tenant_id: str, *, expired_before: datetime, deleted_before: datetime, limit: int = 10_000
    ) -> builtins.list[str]:
        with self._read() as cur:
            rows = cur.execute(
                "SELECT id FROM memories WHERE tenant_id = ? AND ((expires_at IS NOT NULL AND expires_at <= ?) "
                "OR (status = 'deleted' AND deleted_at IS NOT NULL AND deleted_at <= ?)) ORDER BY id LIMIT ?",
                [tenant_id, to_naive_utc(expired_before), to_naive_utc(deleted_before), limit],
            ).fetchall()
        return [r[0] for r in rows]

    def add_feedback(
        self, tenant_id: str, ids: Sequence[str], reward: float, now: datetime
    ) -> dict[str, tuple[int, float]]:
        unique = list(dict.fromkeys(ids))
        if not unique:
            return {}
        with self.transaction() as cur:
            cur.execute(
                "INSERT INTO memory_feedback AS f SELECT $1, uid, 1, $2, $3, $4 "
                "FROM (SELECT unnest($5::JSON::VARCHAR[]) AS uid) "
                "ON CONFLICT (tenant_id, memory_id) DO UPDATE SET signals = f.signals + 1, "
                "reward_sum = f.reward_sum + excluded.reward_sum, last_reward = excluded.last_reward, "
                "updated_at = excluded.updated_at",
                [tenant_id, float(reward), float(reward), to_naive_utc(now), _text_list(unique)],
            )
            rows = cur.execute(
                "SELECT memory_id, signals, reward_sum FROM memory_feedback WHERE tenant_id = ? "
                "AND list_contains(?::JSON::VARCHAR[], memory_id)",
                [tenant_id, _text_list(unique)],
            ).fetchall()
        return {r[0]: (int(r[1]), float(r[2])) for r in rows}

    def feedback_stats(self, tenant_id: str) -> dict[str, tuple[int, float]]:
        with self._read() as cur:
            rows = cur.execute(
                "SELECT memory_id, signals, reward_sum FROM memory_feedback WHERE tenant_id = ? ORDER BY memory_id",
                [tenant_id],
            ).fetchall()
        return {r[0]: (int(r[1]), float(r[2])) for r in rows}

    def clear_feedback(self, tenant_id: str, ids: Sequence[str]) -> None:
        if not ids:
            return
        with self.transaction() as cur:
            cur.execute(
                "DELETE FROM memory_feedback WHERE tenant_id = ? AND list_contains(?::JSON::VARCHAR[], memory_id)",
                [tenant_id, _text_list(ids)],
            )
