"""A distributed lock on Redis: ``SET key token NX PX ttl``, released by a Lua compare-and-delete.

Built on redis-py's :class:`redis.lock.Lock` (token handling and the Lua release/extend scripts);
this module adds what it lacks: exponential backoff with full jitter between attempts, a timeout
(default 30 s) that ends in a clear :class:`LockTimeout` (a ``MemoryError`` PROVIDER_ERROR,
retryable), and contention metrics. A holder that dies simply stops extending: the key expires
after its TTL and the next contender gets it.
"""

from __future__ import annotations

import contextlib
import random
import time
from types import TracebackType
from typing import Any

from redis import Redis
from redis.exceptions import LockError, LockNotOwnedError

from ..errors import ErrorCode, MemoryError
from . import contention, metrics


class LockTimeout(MemoryError):
    def __init__(self, name: str, timeout: float) -> None:
        super().__init__(
            ErrorCode.PROVIDER_ERROR,
            f"could not acquire the coordination lock {name!r} within {timeout:g} s (another process holds it; "
            "it is released when that process stops, or expires after its TTL if it died)",
            operation="lock",
            details={"lock": name, "timeout_s": timeout},
            retryable=True,
        )


class RedisLock:
    def __init__(
        self,
        client: Redis,
        name: str,
        *,
        ttl: float = 10.0,
        timeout: float = 30.0,
        backoff_initial: float = 0.01,
        backoff_max: float = 1.0,
    ) -> None:
        self.client, self.name = client, name
        self.ttl, self.timeout = ttl, timeout
        self.backoff_initial, self.backoff_max = backoff_initial, backoff_max
        # thread_local=False: a heartbeat thread may extend the lock its owner acquired.
        self._lock = client.lock(name, timeout=ttl, thread_local=False)

    @property
    def token(self) -> str | None:
        token: Any = self._lock.local.token
        return token.decode() if isinstance(token, bytes) else token

    def acquire(self, timeout: float | None = None) -> None:
        """Take the lock, retrying with exponential backoff + full jitter; LockTimeout after ``timeout``."""
        limit = self.timeout if timeout is None else timeout
        start = time.monotonic()
        delay = self.backoff_initial
        while True:
            if self._lock.acquire(blocking=False):
                metrics.LOCK_WAIT_SECONDS.labels(self.name).observe(time.monotonic() - start)
                return
            metrics.LOCK_CONTENTION.labels(self.name).inc()
            contention.alert.observe(self.name)
            remaining = limit - (time.monotonic() - start)
            if remaining <= 0:
                metrics.TIMEOUTS.labels("lock").inc()
                raise LockTimeout(self.name, limit)
            time.sleep(min(remaining, random.uniform(0, delay)))  # jitter, not crypto
            delay = min(self.backoff_max, delay * 2)

    def try_acquire(self) -> bool:
        """One attempt, no waiting: True when the lock is now ours, False when another holder has it."""
        if self._lock.acquire(blocking=False):
            return True
        metrics.LOCK_CONTENTION.labels(self.name).inc()
        contention.alert.observe(self.name)
        return False

    def extend(self) -> bool:
        """Reset the TTL (Lua: only if we still own it). False when the lock was lost."""
        try:
            return bool(self._lock.reacquire())
        except (LockNotOwnedError, LockError):
            return False

    def owned(self) -> bool:
        return bool(self._lock.owned())

    def release(self) -> None:
        """Lua compare-and-delete: never deletes a lock another process took after our TTL."""
        with contextlib.suppress(LockNotOwnedError, LockError):
            self._lock.release()

    def __enter__(self) -> RedisLock:
        self.acquire()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()
