"""The memory_events log: create, update, delete, search, access, ignore, reject, dedupe.

The health report is built from it.

Engine operations are logged by an observer; ``process()`` adds ``ignore`` and ``dedupe`` events.
Reads are logged per memory too: every memory a ``search`` or ``get`` returned gets an ``access``
row (who read it, by which operation, and for a search the search event's id and the rank), so a
memory's access history is its ``access`` events. Rows carry no memory content (nor query text).
A provider without event support simply disables the log.
"""

from __future__ import annotations

import logging
import os
import threading
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..errors import ErrorCode, MemoryError

if TYPE_CHECKING:
    from ..engine import MemoryEngine
    from ..hooks import OperationEvent
    from ..model import MemoryEntry, TenantContext

log = logging.getLogger("stratamem.hygiene")

#: Error codes that count as a write refused by a gate (write-rejection rate).
REJECTION_CODES = frozenset(
    {ErrorCode.UNSAFE_CONTENT.value, ErrorCode.POLICY_VIOLATION.value, ErrorCode.QUOTA_EXCEEDED.value}
)


def event_ids(n: int) -> list[str]:
    """``n`` random (version 4) UUIDs from one ``os.urandom`` call.

    ``uuid.uuid4()`` reads 16 bytes with a system call of its own, and CPython releases the GIL
    around it: in a busy server each call waits for the GIL again (up to the 5-ms switch interval).
    A search logs one row per memory it returned, so the ids of its rows are drawn together."""
    if n <= 0:
        return []
    data = os.urandom(16 * n)
    return [str(uuid.UUID(bytes=data[i : i + 16], version=4)) for i in range(0, 16 * n, 16)]


class EventLog:
    """Appends memory_events rows: inline (``sync``, the default: handed to the store before the call
    returns, so every later count sees them; see ``providers/append_queue.py`` for the embedded store) or,
    with ``background = True`` (``HygieneConfig.events_write = "background"``), queued and written in
    batches by one worker thread, off the request path (``flush()`` waits; ``Memory.close`` flushes)."""

    def __init__(self, engine: MemoryEngine) -> None:
        self.engine = engine
        self.enabled = True
        #: Log an ``access`` row per memory a search or get returned (``HygieneConfig.access_history``).
        self.access_history = True
        #: per thread: (memory id, layer) read by the operation running on it, until it is observed
        self._local = threading.local()
        self.background = False
        self._queue: list[dict[str, Any]] = []
        self._cond = threading.Condition()
        self._worker: threading.Thread | None = None
        self._busy = False
        self._closed = False

    def record(
        self,
        tenant_id: str | None,
        event: str,
        *,
        memory_id: str | None = None,
        layer: str | None = None,
        principal: str | None = None,
        code: str | None = None,
        outcome: str = "ok",
        details: dict[str, Any] | None = None,
        count: int = 1,
    ) -> None:
        if not self.enabled or tenant_id is None or count < 1:
            return
        now = self.engine.now()
        rows = [
            {
                "tenant_id": tenant_id,
                "id": row_id,
                "ts": now,
                "event": event,
                "memory_id": memory_id,
                "layer": layer,
                "principal": principal,
                "code": code,
                "outcome": outcome,
                "details": details or {},
            }
            for row_id in event_ids(count)
        ]
        self._emit(rows)

    def _emit(self, rows: list[dict[str, Any]]) -> None:
        if not rows:
            return
        if self.background:
            with self._cond:
                if not self._closed:
                    self._queue.extend(rows)
                    if self._worker is None:
                        self._worker = threading.Thread(target=self._run, name="stratamem-events", daemon=True)
                        self._worker.start()
                    self._cond.notify_all()
                    return
        self._append(rows)

    def _append(self, rows: list[dict[str, Any]]) -> None:
        try:
            self.engine.provider.append_memory_events(rows)
        except MemoryError as exc:
            if exc.code == ErrorCode.CONFIGURATION_ERROR:
                self.enabled = False  # the provider has no event log
                return
            raise

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    self._cond.wait()
                if not self._queue and self._closed:
                    return
                batch, self._queue = self._queue, []
                self._busy = True
            try:
                self._append(batch)
            except Exception:  # the log must never take the worker down; the batch is reported
                log.warning("memory_events: %d queued events could not be written", len(batch), exc_info=True)
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()

    def flush(self) -> None:
        """Wait until every queued event is written."""
        with self._cond:
            while self._worker is not None and (self._queue or self._busy):
                self._cond.wait(0.1)

    def close(self) -> None:
        """Write what is queued and stop the worker (called by ``Memory.close``)."""
        with self._cond:
            self._closed = True
            worker = self._worker
            self._cond.notify_all()
        if worker is not None:
            worker.join()

    def accessed(self, ctx: TenantContext, entries: Sequence[MemoryEntry]) -> None:
        """Engine access hook: remember which memories this thread's operation read; ``observe`` logs
        them as ``access`` rows when that operation (a search or a get) has finished."""
        if not self.enabled or not self.access_history or not entries:
            return
        pending: list[tuple[str, str]] | None = getattr(self._local, "accessed", None)
        if pending is None:
            pending = self._local.accessed = []
        pending.extend((e.id, e.layer.value) for e in entries)

    def _take_accessed(self) -> list[tuple[str, str]]:
        pending: list[tuple[str, str]] = getattr(self._local, "accessed", None) or []
        self._local.accessed = []
        return pending

    def _access_rows(
        self, ev: OperationEvent, accessed: list[tuple[str, str]], details: dict[str, Any], ids: Sequence[str]
    ) -> list[dict[str, Any]]:
        now = self.engine.now()
        return [
            {
                "tenant_id": ev.tenant_id,
                "id": row_id,
                "ts": now,
                "event": "access",
                "memory_id": memory_id,
                "layer": layer,
                "principal": ev.principal,
                "code": None,
                "outcome": "ok",
                "details": {**details, **({"rank": rank} if ev.operation == "search" else {})},
            }
            for rank, ((memory_id, layer), row_id) in enumerate(zip(accessed, ids, strict=True), start=1)
        ]

    def observe(self, ev: OperationEvent) -> None:
        """Engine observer: maps finished operations to events."""
        x = ev.extra
        # reads of a finished search or get become access rows (an update also counts as an access
        # for importance, but its own ``update`` row already records it)
        accessed = self._take_accessed()
        if ev.error_code is None and ev.tenant_id is not None and self.enabled and accessed:
            if ev.operation == "get":
                self._emit(self._access_rows(ev, accessed, {"operation": "get"}, event_ids(len(accessed))))
            elif ev.operation == "search":
                hits = int(x.get("result_count", 0))
                search_id, *row_ids = event_ids(1 + len(accessed))
                search = {
                    "tenant_id": ev.tenant_id,
                    "id": search_id,
                    "ts": self.engine.now(),
                    "event": "search",
                    "memory_id": None,
                    "layer": None,
                    "principal": None,
                    "code": None,
                    "outcome": "hit" if hits else "miss",
                    "details": {"results": hits},
                }
                self._emit(
                    [search, *self._access_rows(ev, accessed, {"operation": "search", "search_id": search_id}, row_ids)]
                )
                return
        if ev.error_code is not None:
            if ev.operation in ("add", "bulk_add", "update") and ev.error_code in REJECTION_CODES:
                self.record(
                    ev.tenant_id, "reject", code=ev.error_code, outcome="denied", details={"operation": ev.operation}
                )
            return
        if ev.operation == "add":
            self.record(
                ev.tenant_id, "create", memory_id=x.get("memory_id"), layer=x.get("layer"), principal=ev.principal
            )
        elif ev.operation == "bulk_add":
            self.record(ev.tenant_id, "create", count=int(x.get("count", 0)))
        elif ev.operation == "update":
            self.record(ev.tenant_id, "update", memory_id=x.get("memory_id"), principal=ev.principal)
        elif ev.operation in ("delete", "bulk_delete"):
            n = int(x.get("deleted", 0))
            self.record(
                ev.tenant_id,
                "delete",
                memory_id=x.get("memory_id") if n == 1 else None,
                count=n,
                principal=ev.principal,
            )
        elif ev.operation == "search":
            hits = int(x.get("result_count", 0))
            self.record(ev.tenant_id, "search", outcome="hit" if hits else "miss", details={"results": hits})
