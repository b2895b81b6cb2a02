"""Write-contention alert: lock attempts that found a coordination lock held, counted over a sliding
window; above a threshold a warning is logged once and ``stratamem_coord_contention_alert{lock}``
is 1 until the rate falls back under it.

Threshold: ``STRATAMEM_CONTENTION_ALERT_THRESHOLD`` contended attempts per
``STRATAMEM_CONTENTION_ALERT_WINDOW_S`` seconds (defaults 50 per 60 s; 0 turns the alert off), or
:func:`configure`. The Prometheus rule to page on it is in docs/coordination-alerts.md.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque

from prometheus_client import Gauge

from ..settings import Settings

log = logging.getLogger("stratamem.coordination")

ALERT = Gauge(
    "stratamem_coord_contention_alert",
    "1 while lock contention is above the configured threshold, else 0",
    ["lock"],
)


class ContentionAlert:
    """Sliding-window count of contended lock attempts per lock name."""

    def __init__(self, threshold: int, window_s: float) -> None:
        self.threshold = threshold
        self.window_s = window_s
        self._events: dict[str, deque[float]] = {}
        self._alerting: set[str] = set()
        self._lock = threading.Lock()

    def observe(self, name: str, now: float | None = None) -> bool:
        """Count one contended attempt on ``name``; True while the alert is on."""
        if self.threshold <= 0:
            return False
        now = time.monotonic() if now is None else now
        with self._lock:
            events = self._events.setdefault(name, deque())
            events.append(now)
            while events and events[0] <= now - self.window_s:
                events.popleft()
            over = len(events) > self.threshold
            if over and name not in self._alerting:
                self._alerting.add(name)
                log.warning(
                    "write contention on lock %s: %d contended attempts in %.0f s (threshold %d)",
                    name,
                    len(events),
                    self.window_s,
                    self.threshold,
                )
            elif not over and name in self._alerting:
                self._alerting.discard(name)
                log.info("write contention on lock %s is back under its threshold", name)
        ALERT.labels(name).set(1 if over else 0)
        return over


def _from_env(settings: Settings | None = None) -> ContentionAlert:
    settings = settings or Settings()
    return ContentionAlert(settings.contention_alert_threshold, settings.contention_alert_window_s)


#: The process-wide alert every :class:`~stratamem.coordination.lock.RedisLock` reports to.
alert = _from_env()


def configure(threshold: int, window_s: float = 60.0) -> ContentionAlert:
    """Replace the process-wide threshold (0 turns the alert off)."""
    global alert
    alert = ContentionAlert(threshold, window_s)
    return alert
