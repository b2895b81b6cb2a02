"""Rate limiting shared by every process pointing at one Redis, or per process without Redis.

Algorithm: GCRA (the "generic cell rate algorithm", a token bucket stored as one timestamp per
bucket). A bucket with ``per_second = r`` and ``burst = b`` admits ``b`` requests at once and then
one every ``1/r`` seconds; a refused request learns exactly how long to wait (``retry_after``). The
state of a bucket is its "theoretical arrival time" (TAT); a request of cost ``c`` is admitted when
``max(TAT, now) + c/r - now <= b/r`` and then moves TAT there.

* :class:`LocalRateLimiter`: in-process (a dict under a lock).
* :class:`RedisRateLimiter`: the same arithmetic in one Lua script (redis-py ``register_script``:
  EVALSHA, loaded on demand), so the check-and-update is atomic across processes. Keys:
  ``{prefix}:rl:{limiter}:{scope}:{sha256(id)[:32]}`` (bounded length, no raw tenant or key ids in
  Redis), each with a TTL equal to the time until its bucket is full again, so idle buckets vanish.
  The time is Redis's own clock (``TIME``) unless a clock is injected (tests), so processes with
  skewed clocks share one timeline.

One :meth:`RateLimiter.acquire` checks several buckets (e.g. the credential's and the tenant's)
all-or-nothing: a refused request consumes nothing from any of them.

**Redis unreachable** (connection refused, timeout, any Redis error): the request is decided by an
in-process limiter with the same limits (fail-open to *per-process* limits, never to "unlimited"),
``stratamem_ratelimit_backend_errors_total`` is incremented, one warning is logged per outage, and
Redis is not asked again for ``cooldown`` seconds (see :class:`~.redisconn.Breaker`). Rationale:
a limiter outage must not take the memory API down, and each process still enforces the budget
alone, so the worst case is N processes times the limit while Redis is down.
"""

from __future__ import annotations

import hashlib
import math
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import metrics
from .redisconn import Breaker, connect, redis_errors

if TYPE_CHECKING:
    from redis import Redis


@dataclass(frozen=True)
class RateLimit:
    """``per_second`` sustained requests (0 disables) with bursts of up to ``burst``."""

    per_second: float
    burst: int = 1

    @property
    def enabled(self) -> bool:
        return self.per_second > 0

    @property
    def interval(self) -> float:
        """Seconds per request at the sustained rate."""
        return 1.0 / self.per_second

    @property
    def capacity(self) -> float:
        """Seconds of credit a full bucket holds."""
        return self.burst / self.per_second


@dataclass(frozen=True)
class Bucket:
    """One budget: ``scope`` names its kind (``credential``, ``tenant``, ``principal``), ``id`` its owner."""

    scope: str
    id: str
    limit: RateLimit


@dataclass(frozen=True)
class Decision:
    allowed: bool
    #: Seconds until the request would be admitted (0 when allowed).
    retry_after: float = 0.0
    #: Scope of the bucket that refused the request.
    scope: str | None = None
    #: Requests left in the tightest bucket after this one (None when nothing was limited).
    remaining: int | None = None
    #: ``local``, ``redis``, ``fallback`` (Redis unreachable) or ``off`` (no bucket enabled).
    backend: str = "local"

    @property
    def retry_after_ms(self) -> int:
        return math.ceil(self.retry_after * 1000.0)


class RateLimiter(ABC):
    """Admit or refuse requests against one or more buckets."""

    def __init__(self, name: str) -> None:
        #: Metric label: which surface uses this limiter (``http``, ``crud``).
        self.name = name

    def acquire(self, buckets: Sequence[Bucket], cost: int = 1) -> Decision:
        """Take ``cost`` from every enabled bucket, or from none of them."""
        active = [b for b in buckets if b.limit.enabled]
        if not active:
            return Decision(True, backend="off")
        decision = self._acquire(active, cost)
        metrics.RATELIMIT_DECISIONS.labels(
            self.name, decision.backend, "allowed" if decision.allowed else "limited"
        ).inc()
        return decision

    @abstractmethod
    def _acquire(self, buckets: Sequence[Bucket], cost: int) -> Decision: ...

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources."""


class LocalRateLimiter(RateLimiter):
    """GCRA buckets in this process. ``clock``: seconds, monotonic (injectable for tests)."""

    def __init__(
        self,
        name: str = "local",
        *,
        clock: Callable[[], float] = time.monotonic,
        max_keys: int = 100_000,
        backend: str = "local",
    ) -> None:
        super().__init__(name)
        self.clock = clock
        self.max_keys = max_keys
        self._backend = backend
        self._tat: dict[tuple[str, str], float] = {}
        self._lock = threading.Lock()

    def _acquire(self, buckets: Sequence[Bucket], cost: int) -> Decision:
        now = self.clock()
        with self._lock:
            new: list[float] = []
            wait, refused, remaining = 0.0, None, None
            for b in buckets:
                tat = max(self._tat.get((b.scope, b.id), now), now)
                after = tat + cost * b.limit.interval
                over = after - now - b.limit.capacity
                if over > 1e-9:
                    if over > wait or refused is None:
                        wait, refused = max(wait, over), b.scope
                else:
                    left = int((b.limit.capacity - (after - now)) / b.limit.interval + 1e-9)
                    remaining = left if remaining is None else min(remaining, left)
                new.append(after)
            if refused is not None:
                return Decision(False, wait, refused, 0, self._backend)
            if len(self._tat) >= self.max_keys:
                self._prune(now)
            for b, after in zip(buckets, new, strict=True):
                self._tat[(b.scope, b.id)] = after
            return Decision(True, 0.0, None, remaining, self._backend)

    def _prune(self, now: float) -> None:
        for key in [k for k, tat in self._tat.items() if tat <= now]:  # full again: same as absent
            del self._tat[key]
        if len(self._tat) >= self.max_keys:
            self._tat.clear()


# KEYS: one per bucket. ARGV[1]: now in µs ("" = Redis TIME), ARGV[2]: cost, then per bucket its
# interval and capacity in µs. Returns {allowed, wait_us (string), refused index (1-based, 0), remaining}.
_GCRA_LUA = """
local now
if ARGV[1] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
else
  now = tonumber(ARGV[1])
end
local cost = tonumber(ARGV[2])
local wait, refused, remaining = 0, 0, -1
local after = {}
for i, key in ipairs(KEYS) do
  local interval = tonumber(ARGV[1 + 2 * i])
  local capacity = tonumber(ARGV[2 + 2 * i])
  local tat = tonumber(redis.call('GET', key) or '0')
  if tat < now then tat = now end
  after[i] = tat + cost * interval
  local over = after[i] - now - capacity
  if over > 0.5 then
    if refused == 0 or over > wait then wait = over; refused = i end
  else
    local left = math.floor((capacity - (after[i] - now)) / interval + 1e-9)
    if remaining < 0 or left < remaining then remaining = left end
  end
end
if refused > 0 then
  return {0, string.format('%.0f', wait), refused, 0}
end
for i, key in ipairs(KEYS) do
  local ttl_ms = math.max(1, math.ceil((after[i] - now) / 1000))
  redis.call('SET', key, string.format('%.0f', after[i]), 'PX', ttl_ms)
end
return {1, '0', 0, remaining}
"""


class RedisRateLimiter(RateLimiter):
    """GCRA buckets in Redis, shared by every process using the same Redis and ``prefix``.

    ``clock``: seconds (wall clock) to use instead of Redis ``TIME`` (tests inject one). Redis errors
    fall back to an in-process limiter (module docstring); ``cooldown``: seconds before retrying Redis.
    """

    def __init__(
        self,
        client: Redis,
        prefix: str = "stratamem",
        name: str = "redis",
        *,
        clock: Callable[[], float] | None = None,
        cooldown: float = 5.0,
    ) -> None:
        super().__init__(name)
        self.client = client
        self.prefix = prefix
        self.clock = clock
        self._script = client.register_script(_GCRA_LUA)
        self.fallback = LocalRateLimiter(name, clock=clock or time.monotonic, backend="fallback")
        self.breaker = Breaker(f"{name} rate limiter", cooldown=cooldown)
        self._errors = redis_errors()

    def key(self, bucket: Bucket) -> str:
        digest = hashlib.sha256(bucket.id.encode("utf-8")).hexdigest()[:32]
        return f"{self.prefix}:rl:{self.name}:{bucket.scope}:{digest}"

    def _acquire(self, buckets: Sequence[Bucket], cost: int) -> Decision:
        if not self.breaker.available():
            return self.fallback._acquire(buckets, cost)
        now = "" if self.clock is None else str(round(self.clock() * 1_000_000))
        args: list[Any] = [now, cost]
        for b in buckets:
            args += [b.limit.interval * 1_000_000, b.limit.capacity * 1_000_000]
        try:
            raw: Any = self._script(keys=[self.key(b) for b in buckets], args=args)
        except self._errors as exc:
            metrics.RATELIMIT_BACKEND_ERRORS.labels(self.name).inc()
            self.breaker.failed(exc)
            return self.fallback._acquire(buckets, cost)
        self.breaker.succeeded()
        allowed, wait_us, refused, remaining = int(raw[0]), float(raw[1]), int(raw[2]), int(raw[3])
        return Decision(
            allowed=bool(allowed),
            retry_after=wait_us / 1_000_000,
            scope=buckets[refused - 1].scope if refused > 0 else None,
            remaining=remaining if remaining >= 0 else None,
            backend="redis",
        )


def make_rate_limiter(
    name: str, redis_url: str | None = None, *, prefix: str = "stratamem", clock: Callable[[], float] | None = None
) -> RateLimiter:
    """A :class:`RedisRateLimiter` when ``redis_url`` is given, else a :class:`LocalRateLimiter`.

    ``clock`` (seconds) replaces Redis ``TIME`` / ``time.monotonic``.
    """
    if redis_url:
        return RedisRateLimiter(connect(redis_url), prefix, name, clock=clock)
    return LocalRateLimiter(name, clock=clock or time.monotonic)
