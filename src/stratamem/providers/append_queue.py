"""Bookkeeping appends written right after the operation that made them, off its request path.

A search on the embedded store leaves two append-only rows behind: its access statistics and its
``memory_events`` row. Written inside the search, their commit syncs the DuckDB WAL, and the sync
can slow the compute that follows it (a query embedding right after a one-row commit was measured
markedly slower; see ``benchmarks/RESULTS.md``), so the commit is moved off the request path.

:class:`AppendQueue` takes those writes when the operation ends and one worker thread writes them,
everything queued so far in one transaction. Every read of stored rows and every write transaction
of the store first calls :meth:`AppendQueue.drain`, which writes what is queued (or waits for the
batch being written), so access counts and events are exact for those readers as soon as the
operation has returned. The worker lets the appends of operations that follow within
:data:`LINGER` join the batch. A search served from the in-process index does not wait: its hits carry the
statistics written so far (waiting for the queue would cost a search most of what moving the
write saved). Only a crash of the process before the worker's commit loses queued appends, and they
are statistics, never memory content.
"""

from __future__ import annotations

import atexit
import itertools
import logging
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from typing import Any

log = logging.getLogger("stratamem.appends")

#: One append-only write, run with the cursor of an open transaction.
Write = Callable[[Any], None]
#: Writes a batch of appends in one transaction (and logs, never raises, a failure).
Runner = Callable[[Sequence[Write]], None]


#: How long the worker lets appends gather before it writes them. A batch costs about the same to
#: write whatever its size (one transaction, one insert per table, one WAL sync), and writing it
#: takes the cores the next operations need (the query embedding of the next search above all):
#: searches that follow one another within this time share one batch. A reader or a write
#: transaction never waits for it (``drain`` writes at once), so only a crash within this time
#: loses more statistics than before.
LINGER = 0.05
#: The worker writes at once when this many appends are queued.
MAX_BATCH = 256

#: Queues with a worker, closed at interpreter exit (a worker stopped inside DuckDB aborts the process).
_OPEN: weakref.WeakSet[AppendQueue] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    """A process that exits without closing its store: write what is queued, stop the workers."""
    for queue in list(_OPEN):
        queue.close()


class AppendQueue:
    """Queued appends, written in order by one lazily started worker thread or by a reader that drains.

    ``outer`` is the store's write lock when the runner takes it: a writer takes ``outer`` before the
    queue's own lock, so a thread that holds ``outer`` can drain without waiting for a worker that
    waits for ``outer``."""

    def __init__(self, name: str = "stratamem-appends", outer: Any = None, linger: float = LINGER) -> None:
        self.name = name
        #: Seconds the worker waits after the first queued append before writing the batch (see LINGER).
        self.linger = linger
        self._outer = outer if outer is not None else threading.RLock()
        self._cond = threading.Condition()
        self._items: list[tuple[Runner, list[Write]]] = []
        self._writing = threading.Lock()  # one batch in flight, written by the worker or a draining reader
        self._in_flight = False
        self._worker: threading.Thread | None = None
        self._closed = False

    def put(self, runner: Runner, writes: Sequence[Write]) -> bool:
        """Queue ``writes`` for ``runner``; False when the queue is closed (the caller writes them)."""
        if not writes:
            return True
        with self._cond:
            if self._closed:
                return False
            self._items.append((runner, list(writes)))
            if self._worker is None:
                self._worker = threading.Thread(target=self._loop, name=self.name, daemon=True)
                self._worker.start()
                _OPEN.add(self)
            self._cond.notify_all()
        return True

    @property
    def pending(self) -> int:
        """Writes queued and not yet taken by a writer."""
        with self._cond:
            return sum(len(writes) for _, writes in self._items)

    def drain(self) -> None:
        """Write everything queued now, on this thread; returns once no batch is in flight."""
        if not self._items and not self._in_flight:  # the common case: nothing to wait for, no lock
            return
        with self._outer, self._writing:
            with self._cond:
                items, self._items = self._items, []
                self._in_flight = bool(items)
            try:
                for runner, group in itertools.groupby(items, key=lambda item: item[0]):
                    runner([w for _, writes in group for w in writes])  # one runner's run: one transaction
            finally:
                self._in_flight = False

    def take(self) -> list[Write]:
        """Everything queued, handed to a writer that holds ``outer`` and writes it in its own
        transaction (one commit instead of two), then calls :meth:`taken_done`.

        Until then the batch counts as in flight: a reader's :meth:`drain` waits for ``outer``, so
        it sees the appends once that transaction has committed (or, after a rollback, written them
        on their own)."""
        with self._cond:
            items, self._items = self._items, []
            if items:
                self._in_flight = True
        return [w for _, writes in items for w in writes]

    def taken_done(self) -> None:
        """The appends of :meth:`take` are written: no batch is in flight any more."""
        self._in_flight = False

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._items and not self._closed:
                    self._cond.wait()
                if not self._items:  # closed and drained
                    return
                # let the appends of the operations that follow join this batch (LINGER)
                deadline = time.monotonic() + self.linger
                while not self._closed and self._items and sum(len(w) for _, w in self._items) < MAX_BATCH:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self._cond.wait(left)
            try:
                self.drain()
            except Exception:  # runners log their own failures; the worker must outlive any other
                log.warning("%s: a batch of appends failed", self.name, exc_info=True)

    def close(self) -> None:
        """Write what is queued and stop the worker; later ``put`` calls return False."""
        with self._cond:
            self._closed = True
            worker, self._worker = self._worker, None
            self._cond.notify_all()
        if worker is not None and worker is not threading.current_thread():
            worker.join()
        self.drain()
        _OPEN.discard(self)
