"""Failed authentication per client address: a rate limit (429) and aggregated audit lines.

Each failed attempt takes one token from the address's ``auth_failure`` bucket (shared through Redis
when the server's limiter is); once the bucket is empty the address is refused with 429
RATE_LIMITED, without checking the credential, until it has refilled. Audit: the first failure of an
address in a window is written at once; further ones in the same window only count, and the next
line written for that address carries ``details.repeated`` (how many were folded into it).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from ..coordination.ratelimit import Bucket, RateLimit, RateLimiter
from ..errors import ErrorCode, MemoryError
from .settings import ServerSettings


@dataclass
class _Window:
    started: float
    folded: int = 0


class AuthFailures:
    """Per-process state: addresses blocked until a time, and the audit windows."""

    def __init__(self, limiter: RateLimiter, settings: ServerSettings) -> None:
        self.limiter = limiter
        self.limit = RateLimit(settings.auth_failure_rate_per_second, settings.auth_failure_burst)
        self.window_s = settings.auth_failure_audit_window_s
        self._blocked: dict[str, float] = {}
        self._windows: dict[str, _Window] = {}
        self._lock = threading.Lock()

    def _refused(self, retry_after: float) -> MemoryError:
        return MemoryError(
            ErrorCode.RATE_LIMITED,
            "too many failed authentication attempts from this address",
            operation="auth",
            details={
                "retry_after": round(retry_after, 3),
                "retry_after_ms": int(retry_after * 1000),
                "scope": "auth_failure",
            },
        )

    def check(self, address: str) -> None:
        """RATE_LIMITED while ``address`` is blocked (before its credential is looked at)."""
        if not self.limit.enabled:
            return
        with self._lock:
            until = self._blocked.get(address)
            if until is None:
                return
            left = until - time.monotonic()
            if left <= 0:
                del self._blocked[address]
                return
        raise self._refused(left)

    def failed(self, address: str) -> MemoryError | None:
        """Count one failure; the RATE_LIMITED error to answer instead when the budget is spent."""
        if not self.limit.enabled:
            return None
        decision = self.limiter.acquire([Bucket("auth_failure", address, self.limit)])
        if decision.allowed:
            return None
        with self._lock:
            self._blocked[address] = time.monotonic() + decision.retry_after
            if len(self._blocked) > 10_000:  # bounded: forget the oldest entries
                for key in sorted(self._blocked, key=self._blocked.__getitem__)[:1000]:
                    del self._blocked[key]
        return self._refused(decision.retry_after)

    def audit_due(self, address: str) -> int | None:
        """None: fold this failure into the address's open window; else write a line now, which
        carries the returned number of failures folded since the previous line."""
        now = time.monotonic()
        with self._lock:
            window = self._windows.get(address)
            if window is None or now - window.started >= self.window_s:
                folded = window.folded if window is not None else 0
                self._windows[address] = _Window(started=now)
                if len(self._windows) > 10_000:
                    for key in sorted(self._windows, key=lambda k: self._windows[k].started)[:1000]:
                        del self._windows[key]
                return folded
            window.folded += 1
            return None
