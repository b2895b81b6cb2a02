"""Redis connections of the shared features (rate limiter, embedding cache) and their circuit breaker.

:func:`connect` returns one client per URL and process (redis-py clients are thread-safe and pool
their connections), with short socket timeouts: these features sit on the request path, and an
unreachable Redis must cost milliseconds, not the default blocking connect.

:class:`Breaker`: after a Redis error the feature stops asking Redis for ``cooldown`` seconds (it
degrades to its local behaviour), logs one warning per outage, then tries again.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from redis import Redis

log = logging.getLogger("stratamem.coordination")

#: Connect/read timeout of the shared-feature clients, seconds.
DEFAULT_TIMEOUT_S = 0.5


@functools.lru_cache(maxsize=32)
def connect(url: str, timeout: float = DEFAULT_TIMEOUT_S) -> Redis:
    """The process-wide client of ``url`` (``redis://``, ``rediss://``, ``unix://``)."""
    from redis import Redis  # noqa: PLC0415  redis extra

    client: Redis = Redis.from_url(url, socket_connect_timeout=timeout, socket_timeout=timeout)
    return client


def redis_errors() -> tuple[type[Exception], ...]:
    """Exceptions meaning "Redis is not usable right now" (imported lazily: redis is optional)."""
    from redis.exceptions import RedisError  # noqa: PLC0415  redis extra

    return (RedisError, OSError)


class Breaker:
    """Skip a failing Redis for ``cooldown`` seconds after an error."""

    def __init__(self, what: str, *, cooldown: float = 5.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.what = what
        self.cooldown = cooldown
        self.clock = clock
        self._open_until: float | None = None
        self._lock = threading.Lock()

    def available(self) -> bool:
        with self._lock:
            return self._open_until is None or self.clock() >= self._open_until

    @property
    def is_open(self) -> bool:
        return not self.available()

    def failed(self, exc: BaseException) -> None:
        with self._lock:
            first = self._open_until is None
            self._open_until = self.clock() + self.cooldown
        if first:
            log.warning(
                "Redis unavailable for the %s (%s: %s); degrading to local behaviour, retrying every %g s",
                self.what,
                type(exc).__name__,
                exc,
                self.cooldown,
            )

    def succeeded(self) -> None:
        if self._open_until is None:
            return
        with self._lock:
            recovered = self._open_until is not None
            self._open_until = None
        if recovered:
            log.warning("Redis is reachable again for the %s", self.what)
