"""Audit log: structured JSON lines, one per security-relevant event.

Records who did what to which memory ids, in which tenant, and with what outcome — never memory
content. Sinks: an optional JSON-lines file (``STRATAMEM_AUDIT_LOG`` or ``AuditLog(path=…)``), the
``stratamem.audit`` logger, and a bounded in-process ring buffer (``recent()``) for health pages
and tests. Writing is thread-safe; a failing sink never fails the operation being audited.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections import deque
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..settings import Settings

log = logging.getLogger("stratamem.audit")

Outcome = Literal["ok", "denied", "error"]


class AuditRecord(BaseModel):
    """One audit event. ``details`` must never carry memory content or secrets."""

    model_config = ConfigDict(extra="forbid")

    ts: datetime = Field(default_factory=lambda: datetime.now(UTC))
    tenant_id: str | None
    principal: str | None = None
    action: str
    outcome: Outcome = "ok"
    code: str | None = None
    memory_ids: list[str] = Field(default_factory=list)
    layer: str | None = None
    #: True when the caller named data that belongs to (or claims) another tenant.
    cross_tenant: bool = False
    details: dict[str, Any] = Field(default_factory=dict)


class AuditLog:
    def __init__(
        self, path: str | os.PathLike[str] | None = None, *, keep: int = 1000, settings: Settings | None = None
    ) -> None:
        env = (settings or Settings()).audit_log
        self.path = Path(path) if path is not None else (Path(env) if env else None)
        self._recent: deque[AuditRecord] = deque(maxlen=keep)
        self._lock = threading.Lock()

    def record(self, rec: AuditRecord | None = None, /, **fields: Any) -> AuditRecord:
        """Append a record (given, or built from keyword fields) to every sink."""
        entry = rec if rec is not None else AuditRecord(**fields)
        line = entry.model_dump_json()
        with self._lock:
            self._recent.append(entry)
            if self.path is not None:
                try:
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                    with self.path.open("a", encoding="utf-8") as fh:
                        fh.write(line + "\n")
                except OSError:
                    log.exception("cannot write audit log %s", self.path)
        log.info(line)
        return entry

    def recent(
        self, n: int | None = None, *, tenant_id: str | None = None, action: str | None = None
    ) -> list[AuditRecord]:
        """Newest last; optionally only one tenant's or one action's records."""
        with self._lock:
            items = [
                r
                for r in self._recent
                if (tenant_id is None or r.tenant_id == tenant_id) and (action is None or r.action == action)
            ]
        return items if n is None else items[-n:]

    @staticmethod
    def read_file(path: str | os.PathLike[str]) -> list[AuditRecord]:
        with Path(path).open(encoding="utf-8") as fh:
            return [AuditRecord.model_validate(json.loads(line)) for line in fh if line.strip()]
