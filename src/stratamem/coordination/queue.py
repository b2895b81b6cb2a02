"""A Redis FIFO write queue in front of one writer process.

Protocol (all keys under one ``prefix``):

* ``{prefix}:queue`` — a Redis list. Callers ``LPUSH`` a JSON request ``{id, op, args, deadline}``;
  the writer moves the oldest one (``BLMOVE … RIGHT LEFT``: FIFO) to ``{prefix}:processing``.
* ``{prefix}:reply:{id}`` — the writer pushes the JSON result (or the ``MemoryError``) there after
  the provider committed; the caller waits on it with ``BLPOP`` and gets the result or the error.
* ``{prefix}:writer`` — the :class:`RedisLock` held by the writer (guards writer start-up: one
  writer per store); a heartbeat extends it every TTL/3, so a dead writer loses it after its TTL.

Semantics: requests are executed at most once. A request whose deadline has passed when the writer
reaches it is dropped (its caller already got a timeout), so a timed-out write never lands later.
Requests left in ``processing`` by a writer that died are answered with a retryable
PROVIDER_ERROR ("outcome unknown") by the next writer instead of being replayed. The tenant
context travels without its credential: callers authenticate before they enqueue.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from pydantic import BaseModel
from redis import Redis

from ..errors import ErrorCode, MemoryError
from ..model import (
    AddMemoryOutput,
    BulkAddOutput,
    BulkDeleteOutput,
    DeleteMemoryOutput,
    TenantContext,
    UpdateMemoryOutput,
)
from ..sdk import Memory
from . import metrics
from .lock import RedisLock

log = logging.getLogger("stratamem.coordination")

_OUTPUTS: dict[str, type[BaseModel]] = {
    "add": AddMemoryOutput,
    "bulk_add": BulkAddOutput,
    "update": UpdateMemoryOutput,
    "delete": DeleteMemoryOutput,
    "bulk_delete": BulkDeleteOutput,
}
REPLY_TTL_S = 120


def _keys(prefix: str) -> tuple[str, str, str]:
    return f"{prefix}:queue", f"{prefix}:processing", f"{prefix}:writer"


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=True)
    return value


class QueuedWriter:
    """Client side: the write half of ``Memory``, executed by the writer process.

    Each call blocks until the write is committed (or ``timeout`` seconds pass: PROVIDER_ERROR,
    retryable, and the write is guaranteed not to happen later).
    """

    def __init__(self, client: Redis, prefix: str = "stratamem", *, timeout: float = 30.0) -> None:
        self.client, self.prefix, self.timeout = client, prefix, timeout
        self.queue_key, _, _ = _keys(prefix)

    def _call(self, op: str, ctx: TenantContext | Mapping[str, Any] | None, args: dict[str, Any]) -> Any:
        if ctx is None:
            raise MemoryError(
                ErrorCode.MISSING_TENANT_CONTEXT, "a TenantContext is required for every memory operation", operation=op
            )
        tctx = ctx if isinstance(ctx, TenantContext) else TenantContext.model_validate(dict(ctx))
        req_id = uuid.uuid4().hex
        start = time.time()
        request = {
            "id": req_id,
            "op": op,
            "ctx": tctx.model_dump(mode="json", exclude={"credential"}),
            "args": {k: _jsonable(v) for k, v in args.items()},
            "deadline": start + self.timeout,
        }
        reply_key = f"{self.prefix}:reply:{req_id}"
        depth = self.client.lpush(self.queue_key, json.dumps(request, default=str))
        metrics.QUEUE_DEPTH.labels(self.prefix).set(float(depth))
        got: Any = self.client.blpop([reply_key], timeout=max(0.01, self.timeout))
        metrics.WAIT_SECONDS.labels(self.prefix, op).observe(time.time() - start)
        if got is None:
            metrics.TIMEOUTS.labels("write").inc()
            raise MemoryError(
                ErrorCode.PROVIDER_ERROR,
                f"no writer committed this {op} within {self.timeout:g} s (is a writer process running for "
                f"queue {self.prefix!r}?); it was not applied",
                operation=op,
                details={"queue": self.prefix, "timeout_s": self.timeout},
                retryable=True,
            )
        reply = json.loads(got[1])
        if "error" in reply:
            err = reply["error"]
            raise MemoryError(
                err["code"],
                err["message"],
                operation=err.get("operation") or op,
                details=err.get("details"),
                retryable=err.get("retryable"),
            )
        return _OUTPUTS[op].model_validate(reply["result"])

    def add(
        self,
        ctx: TenantContext | None,
        content: str | None = None,
        *,
        layer: str | None = None,
        identifiers: Any = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> AddMemoryOutput:
        out: AddMemoryOutput = self._call(
            "add", ctx, {"content": content, "layer": layer, "identifiers": identifiers, "metadata": metadata, **kwargs}
        )
        return out

    def bulk_add(self, ctx: TenantContext | None, items: list[Any]) -> BulkAddOutput:
        out: BulkAddOutput = self._call("bulk_add", ctx, {"items": items})
        return out

    def update(
        self,
        ctx: TenantContext | None,
        memory_id: str,
        *,
        content: str | None = None,
        metadata: dict[str, Any] | None = None,
        if_match: str | None = None,
        **kwargs: Any,
    ) -> UpdateMemoryOutput:
        out: UpdateMemoryOutput = self._call(
            "update",
            ctx,
            {"memory_id": memory_id, "content": content, "metadata": metadata, "if_match": if_match, **kwargs},
        )
        return out

    def delete(self, ctx: TenantContext | None, memory_id: str, *, if_match: str | None = None) -> DeleteMemoryOutput:
        out: DeleteMemoryOutput = self._call("delete", ctx, {"memory_id": memory_id, "if_match": if_match})
        return out

    def bulk_delete(self, ctx: TenantContext | None, ids: list[str]) -> BulkDeleteOutput:
        out: BulkDeleteOutput = self._call("bulk_delete", ctx, {"ids": ids})
        return out

    def depth(self) -> int:
        return int(self.client.llen(self.queue_key))


class WriteCoordinator:
    """Writer side: owns one ``Memory`` and executes queued writes one at a time, in FIFO order."""

    def __init__(
        self,
        memory: Memory | Callable[[], Memory],
        client: Redis,
        prefix: str = "stratamem",
        *,
        lock_ttl: float = 10.0,
        lock_timeout: float = 30.0,
        poll: float = 0.5,
    ) -> None:
        """``memory``: an open ``Memory``, or a factory called only once the lock is held (so the
        embedded store file is opened by the lock owner alone)."""
        self._memory_source = memory
        self.memory: Memory | None = memory if isinstance(memory, Memory) else None
        self.client, self.prefix, self.poll = client, prefix, poll
        self.queue_key, self.processing_key, lock_key = _keys(prefix)
        self.lock = RedisLock(client, lock_key, ttl=lock_ttl, timeout=lock_timeout)
        self._stop = threading.Event()
        self._lost = threading.Event()
        self._heartbeat: threading.Thread | None = None
        self.processed = 0
        self._ops: dict[str, Callable[..., Any]] = {}

    def _bind(self, memory: Memory) -> None:
        self.memory = memory
        self._ops = {
            "add": memory.add,
            "bulk_add": memory.bulk_add,
            "update": memory.update,
            "delete": memory.delete,
            "bulk_delete": memory.bulk_delete,
        }

    # ------------------------------------------------------------------------------- lifecycle
    def start(self, timeout: float | None = None) -> None:
        """Become the writer: take the lock (backoff, LockTimeout), answer orphans, start the heartbeat."""
        self.lock.acquire(timeout)
        try:
            source = self._memory_source
            self._bind(source if isinstance(source, Memory) else source())
        except BaseException:
            self.lock.release()
            raise
        self._lost.clear()
        self._heartbeat = threading.Thread(target=self._beat, name="stratamem-writer-heartbeat", daemon=True)
        self._heartbeat.start()
        self._answer_orphans()

    def _beat(self) -> None:
        interval = max(0.05, self.lock.ttl / 3)
        while not self._stop.wait(interval):
            if not self.lock.extend():
                log.error("writer lock %s lost; this process stops writing", self.lock.name)
                self._lost.set()
                return

    def _answer_orphans(self) -> None:
        while (raw := self.client.rpop(self.processing_key)) is not None:
            req = json.loads(raw)  # type: ignore[arg-type]
            self._reply(
                req,
                error=MemoryError(
                    ErrorCode.PROVIDER_ERROR,
                    "the previous writer stopped while executing this write; its outcome is unknown",
                    operation=str(req.get("op", "")),
                    retryable=True,
                ),
            )

    def stop(self) -> None:
        self._stop.set()

    def close(self) -> None:
        self._stop.set()
        if self._heartbeat is not None:
            self._heartbeat.join(timeout=5)
        if self.memory is not None and not isinstance(self._memory_source, Memory):
            self.memory.close()  # opened by our factory: the store is ours to close
            self.memory = None
        self.lock.release()

    # ------------------------------------------------------------------------------------ loop
    def run(self, *, max_writes: int | None = None) -> None:
        """Serve the queue until :meth:`stop` (or ``max_writes``); call :meth:`start` first."""
        try:
            while not self._stop.is_set() and not self._lost.is_set():
                if max_writes is not None and self.processed >= max_writes:
                    return
                self.step(self.poll)
        finally:
            self.close()

    def step(self, wait: float = 0.0) -> bool:
        """Execute at most one queued write; False when the queue stayed empty for ``wait`` seconds."""
        raw: Any
        if wait > 0:  # BLMOVE takes fractional seconds (Redis >= 6); redis-py's stub says int. 0 = forever.
            raw = self.client.blmove(
                self.queue_key,
                self.processing_key,
                timeout=wait,  # type: ignore[arg-type]
                src="RIGHT",
                dest="LEFT",
            )
        else:
            raw = self.client.lmove(self.queue_key, self.processing_key, "RIGHT", "LEFT")
        depth = self.client.llen(self.queue_key)
        metrics.QUEUE_DEPTH.labels(self.prefix).set(float(depth))
        if raw is None:
            return False
        try:
            req = json.loads(raw)
            op = str(req.get("op", ""))
        except (ValueError, AttributeError):  # not one of ours: drop it, never crash the writer
            log.error("dropping a malformed queue entry (%d bytes)", len(raw))
            self.client.lrem(self.processing_key, 1, raw)
            return True
        try:
            if self._lost.is_set():  # never write without the lock: leave it for the new writer
                self.client.lmove(self.processing_key, self.queue_key, "LEFT", "RIGHT")
                return False
            if time.time() > float(req.get("deadline", 0)):
                metrics.PROCESSED.labels(self.prefix, op, "expired").inc()
                return True
            fn = self._ops.get(op)
            if fn is None:
                self._reply(req, error=MemoryError(ErrorCode.INVALID_PARAMS, f"unknown queued operation {op!r}"))
                return True
            try:
                ctx = TenantContext.model_validate(req["ctx"])
                result = fn(ctx, **req.get("args", {}))
            except MemoryError as exc:
                metrics.PROCESSED.labels(self.prefix, op, "error").inc()
                self._reply(req, error=exc)
            except Exception as exc:  # malformed request: answer, never crash the writer
                log.exception("queued %s failed", op)
                metrics.PROCESSED.labels(self.prefix, op, "error").inc()
                self._reply(
                    req,
                    error=MemoryError(
                        ErrorCode.INVALID_PARAMS, f"invalid queued {op}: {type(exc).__name__}", operation=op
                    ),
                )
            else:
                metrics.PROCESSED.labels(self.prefix, op, "ok").inc()
                self._reply(req, result=result.model_dump(mode="json", by_alias=True))
            self.processed += 1
            return True
        finally:
            if not self._lost.is_set():
                self.client.lrem(self.processing_key, 1, raw)

    def _reply(self, req: Mapping[str, Any], *, result: Any = None, error: MemoryError | None = None) -> None:
        key = f"{self.prefix}:reply:{req.get('id')}"
        body = {"error": error.to_dict()} if error is not None else {"result": result}
        pipe = self.client.pipeline(transaction=True)
        pipe.lpush(key, json.dumps(body, default=str))
        pipe.expire(key, REPLY_TTL_S)
        pipe.execute()
