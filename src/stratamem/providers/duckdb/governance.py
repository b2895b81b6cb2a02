"""Hygiene and governance storage: tenant policies, the ``memory_events`` audit log and quotas."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, date, datetime
from typing import Any

from arro3.core import Table

from ...arrow_columns import arrow_column
from ..base import (
    dump_json,
    to_naive_utc,
)
from .connection import DuckDBConnection, RowAppend
from .database import _text_list

_EVENT_COLUMNS = ["tenant_id", "id", "ts", "event", "memory_id", "layer", "principal", "code", "outcome", "details"]


def _insert_events(cur: Any, rows: Sequence[Sequence[Any]]) -> None:
    """Insert ``memory_events`` rows (one statement for one row, one Arrow table for several)."""
    if len(rows) == 1:
        cur.execute("INSERT INTO memory_events VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", list(rows[0]))
        return
    # Many rows (a bulk_add's create events, the searches of one append batch): one Arrow table,
    # no per-value conversion (executemany converts value by value, far too slow for a thousand rows).
    table = Table.from_arrays(
        [arrow_column([r[i] for r in rows], "ts" if i == 2 else "s") for i in range(len(_EVENT_COLUMNS))],
        names=_EVENT_COLUMNS,
    )
    cur.register("stratamem_events", table)
    try:
        cur.execute("INSERT INTO memory_events SELECT * FROM stratamem_events")
    finally:
        cur.unregister("stratamem_events")


class GovernanceMixin(DuckDBConnection):
    """Tenant policies, memory events and per-user counts."""

    # -------------------------------------------------------------------- hygiene and governance
    def get_tenant_policy(self, tenant_id: str) -> dict[str, Any] | None:
        # No bookkeeping append touches tenant_policies: the read need not wait for the append queue
        # (whose writer may be waiting for a long write transaction).
        with self._read(appends=False) as cur:
            row = cur.execute("SELECT policy FROM tenant_policies WHERE tenant_id = ?", [tenant_id]).fetchone()
        return dict(json.loads(row[0])) if row else None

    def put_tenant_policy(self, tenant_id: str, policy: Any, updated_at: datetime) -> None:
        with self.transaction() as cur:
            cur.execute(
                "INSERT INTO tenant_policies VALUES (?, ?, ?) ON CONFLICT (tenant_id) DO UPDATE SET "
                "policy = excluded.policy, updated_at = excluded.updated_at",
                [tenant_id, dump_json(dict(policy)), to_naive_utc(updated_at)],
            )

    def append_memory_events(self, events: Sequence[Any]) -> None:
        if not events:
            return
        rows: list[Sequence[Any]] = [
            [
                e["tenant_id"],
                e["id"],
                to_naive_utc(e["ts"]),
                e["event"],
                e.get("memory_id"),
                e.get("layer"),
                e.get("principal"),
                e.get("code"),
                e.get("outcome") or "ok",
                dump_json(e.get("details") or {}),
            ]
            for e in events
        ]

        # its own table: no fold on the search path; merged with other searches' rows by the worker
        self._append(RowAppend("memory_events", rows, _insert_events))

    def delete_memory_events(self, tenant_id: str, memory_ids: Sequence[str]) -> int:
        with self.transaction() as cur:
            row = cur.execute(
                "DELETE FROM memory_events WHERE tenant_id = ? AND list_contains(?::JSON::VARCHAR[], memory_id)",
                [tenant_id, json.dumps(list(memory_ids))],
            ).fetchone()
        return int(row[0]) if row else 0

    def prune_memory_events(self, tenant_id: str, events: Sequence[str], before: datetime) -> int:
        with self.transaction() as cur:
            row = cur.execute(
                "DELETE FROM memory_events WHERE tenant_id = ? AND list_contains(?::JSON::VARCHAR[], event) AND ts < ?",
                [tenant_id, _text_list(events), to_naive_utc(before)],
            ).fetchone()
        return int(row[0]) if row else 0

    def count_memory_events(self, tenant_id: str, since: datetime | None = None) -> dict[str, int]:
        with self._read() as cur:
            rows = cur.execute(
                "SELECT event, outcome, count(*) FROM memory_events WHERE tenant_id = ? "
                "AND (?::TIMESTAMP IS NULL OR ts >= ?) GROUP BY event, outcome",
                [tenant_id, to_naive_utc(since), to_naive_utc(since)],
            ).fetchall()
        counts: dict[str, int] = {}
        for event, outcome, n in rows:
            counts[str(event)] = counts.get(str(event), 0) + int(n)
            counts[f"{event}.{outcome}"] = counts.get(f"{event}.{outcome}", 0) + int(n)
        return counts

    def list_memory_events(
        self, tenant_id: str, *, memory_id: str | None = None, events: Sequence[str] | None = None, limit: int = 50
    ) -> list[dict[str, Any]]:
        with self._read() as cur:
            rows = cur.execute(
                "SELECT id, ts, event, memory_id, layer, principal, code, outcome, details FROM memory_events "
                "WHERE tenant_id = ? AND (?::VARCHAR IS NULL OR memory_id = ?) "
                "AND (?::BOOLEAN OR list_contains(?::JSON::VARCHAR[], event)) "
                "ORDER BY ts DESC, id DESC LIMIT ?",
                [tenant_id, memory_id, memory_id, events is None, _text_list(events or ()), int(limit)],
            ).fetchall()
        return [
            {
                "tenant_id": tenant_id,
                "id": r[0],
                "ts": r[1].replace(tzinfo=UTC),
                "event": r[2],
                "memory_id": r[3],
                "layer": r[4],
                "principal": r[5],
                "code": r[6],
                "outcome": r[7],
                "details": json.loads(r[8] or "{}"),
            }
            for r in rows
        ]

    def daily_memory_events(self, tenant_id: str, since: datetime) -> list[tuple[date, str, int]]:
        with self._read() as cur:
            rows = cur.execute(
                "SELECT CAST(ts AS DATE) AS day, event, count(*) FROM memory_events WHERE tenant_id = ? AND ts >= ? "
                "GROUP BY day, event ORDER BY day, event",
                [tenant_id, to_naive_utc(since)],
            ).fetchall()
        return [(r[0], str(r[1]), int(r[2])) for r in rows]

    def count_user_memories(
        self, tenant_id: str, user_id: str, now: datetime, *, exclude_ids: Sequence[str] = (), tx: Any = None
    ) -> int:
        sql = (
            "SELECT count(*) FROM memories WHERE tenant_id = ? AND status = 'active' "
            "AND json_extract_string(identifiers, '$.user_id') = ? AND (expires_at IS NULL OR expires_at > ?) "
            "AND NOT list_contains(?::JSON::VARCHAR[], id)"
        )
        params = [tenant_id, user_id, to_naive_utc(now), _text_list(exclude_ids)]
        if tx is not None:
            row = tx.execute(sql, params).fetchone()
        else:
            with self._read() as cur:
                row = cur.execute(sql, params).fetchone()
        return int(row[0]) if row else 0
