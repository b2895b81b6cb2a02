"""Redis coordination: many processes share one single-writer store through one writer process.

One process owns an embedded DuckDB store (:class:`WriteCoordinator`, guarded by a
:class:`RedisLock`); any number of processes send writes through a Redis FIFO queue
(:class:`QueuedWriter`) and block until the writer has committed them. Metrics: queue depth, wait
time, timeouts, lock contention (prometheus-client).

Redis also backs the rate limiter shared by every process (:mod:`.ratelimit`; an in-process
limiter with the same semantics when no Redis is configured) and the shared embedding cache
(:mod:`stratamem.embeddings.redis_cache`).

Names are imported lazily (PEP 562): ``redis`` is an optional extra, and the in-process rate
limiter is used by the engine and the server without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .lock import LockTimeout, RedisLock
    from .queue import QueuedWriter, WriteCoordinator

__all__ = ["LockTimeout", "QueuedWriter", "RedisLock", "WriteCoordinator"]


def __getattr__(name: str) -> Any:
    if name in ("LockTimeout", "RedisLock"):
        from . import lock  # noqa: PLC0415  redis extra

        return getattr(lock, name)
    if name in ("QueuedWriter", "WriteCoordinator"):
        from . import queue  # noqa: PLC0415  redis extra

        return getattr(queue, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
