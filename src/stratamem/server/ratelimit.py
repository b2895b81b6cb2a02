"""Per-credential token bucket (in process). Hand-written: ~20 lines, and the exact ``Retry-After``
(time until one token is back) is what RATE_LIMITED must carry; Redis-backed limits across processes
belong to the coordination feature."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class TokenBucketLimiter:
    def __init__(self, rate_per_second: float, burst: int, *, clock: Callable[[], float] = time.monotonic,
                 max_keys: int = 100_000) -> None:
        self.rate = rate_per_second
        self.burst = float(burst)
        self.clock = clock
        self.max_keys = max_keys
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def acquire(self, key: str) -> float:
        """Take one token for ``key``: 0.0 when allowed, else seconds until a token is available."""
        if self.rate <= 0:
            return 0.0
        now = self.clock()
        with self._lock:
            tokens, last = self._buckets.get(key, (self.burst, now))
            tokens = min(self.burst, tokens + (now - last) * self.rate)
            if tokens >= 1.0:
                if len(self._buckets) >= self.max_keys and key not in self._buckets:
                    self._buckets.clear()
                self._buckets[key] = (tokens - 1.0, now)
                return 0.0
            self._buckets[key] = (tokens, now)
            return (1.0 - tokens) / self.rate
