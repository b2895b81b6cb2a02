"""Scheduled snapshots (default every 6 h) for the server's maintenance runner.

``SnapshotScheduler(mem.snapshots).start()`` pushes every tenant on a daemon thread; a failed run
is logged and counted (``stratamem_snapshot_failures_total``) and retried at the next tick.
"""

from __future__ import annotations

import logging
import threading
from datetime import timedelta

from ..errors import MemoryError
from .manifest import PushReport
from .snapshots import SnapshotManager

log = logging.getLogger("stratamem.snapshots")

DEFAULT_INTERVAL = timedelta(hours=6)


class SnapshotScheduler:
    def __init__(self, manager: SnapshotManager, interval: timedelta = DEFAULT_INTERVAL) -> None:
        if interval.total_seconds() <= 0:
            raise ValueError("the snapshot interval must be positive")
        self.manager = manager
        self.interval = interval
        self.runs = 0
        self.failures = 0
        self.last_reports: list[PushReport] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def run_once(self) -> list[PushReport]:
        """Push every tenant now; errors are logged, never raised (the next tick retries)."""
        try:
            self.last_reports = self.manager.push()
        except MemoryError as exc:
            self.failures += 1
            log.error("scheduled snapshot failed: %s", exc)
        finally:
            self.runs += 1
        return self.last_reports

    def _loop(self) -> None:
        while not self._stop.wait(self.interval.total_seconds()):
            self.run_once()

    def start(self) -> None:
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._loop, name="stratamem-snapshots", daemon=True)
            self._thread.start()

    def stop(self, timeout: float | None = 30.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
