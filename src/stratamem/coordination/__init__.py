"""Redis write coordination (SPEC R-COORD; seed 000 "Write Coordination for Single-Writer Constraint").

One process owns an embedded DuckDB store (:class:`WriteCoordinator`, guarded by a
:class:`RedisLock`); any number of processes send writes through a Redis FIFO queue
(:class:`QueuedWriter`) and block until the writer has committed them. Metrics: queue depth, wait
time, timeouts, lock contention (prometheus-client).
"""

from __future__ import annotations

from .lock import LockTimeout, RedisLock
from .queue import QueuedWriter, WriteCoordinator

__all__ = ["LockTimeout", "QueuedWriter", "RedisLock", "WriteCoordinator"]
