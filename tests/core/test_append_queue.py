"""AppendQueue: the worker that writes an operation's bookkeeping right after it (providers/append_queue.py)."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

import pytest

from stratamem.providers.append_queue import AppendQueue


class Sink:
    """A runner that records its batches (one list per transaction it would open)."""

    def __init__(self, delay: float = 0.0, fail_on: object = None) -> None:
        self.batches: list[list[object]] = []
        self.delay = delay
        self.fail_on = fail_on
        self.started = threading.Event()

    def __call__(self, writes: Sequence[Any]) -> None:
        self.started.set()
        time.sleep(self.delay)
        values = [w(None) for w in writes]
        if self.fail_on in values:
            raise RuntimeError("boom")
        self.batches.append(values)


def value(v: object) -> Any:
    return lambda _cursor: v


def test_the_worker_writes_queued_appends_in_order() -> None:
    queue, sink = AppendQueue(), Sink()
    for i in range(5):
        assert queue.put(sink, [value(i)])
    queue.drain()
    assert [v for batch in sink.batches for v in batch] == [0, 1, 2, 3, 4]
    queue.close()


def test_drain_waits_for_the_batch_in_flight() -> None:
    queue, sink = AppendQueue(), Sink(delay=0.3)
    queue.put(sink, [value("a")])
    assert sink.started.wait(5)  # the worker took the batch and is writing it
    assert queue.pending == 0
    queue.drain()  # nothing queued, but a batch in flight: wait for it
    assert sink.batches == [["a"]]
    queue.close()


def test_consecutive_appends_of_one_runner_share_a_transaction() -> None:
    queue, first, second = AppendQueue(), Sink(), Sink()
    with queue._writing:  # hold the writer so that everything below is queued together
        queue.put(first, [value(1)])
        queue.put(first, [value(2), value(3)])
        queue.put(second, [value(4)])
        queue.put(first, [value(5)])
        assert queue.pending == 5
    queue.drain()
    assert first.batches == [[1, 2, 3], [5]] and second.batches == [[4]]
    queue.close()


def test_close_writes_what_is_queued_and_later_puts_are_refused() -> None:
    queue, sink = AppendQueue(), Sink()
    with queue._writing:
        queue.put(sink, [value(1)])
        closer = threading.Thread(target=queue.close)
        closer.start()
        time.sleep(0.05)
    closer.join(5)
    assert not closer.is_alive() and sink.batches == [[1]]
    assert queue.put(sink, [value(2)]) is False  # the caller writes it itself
    assert sink.batches == [[1]]


def test_a_failing_runner_does_not_stop_the_worker(caplog: pytest.LogCaptureFixture) -> None:
    queue, sink = AppendQueue(), Sink(fail_on="bad")
    with caplog.at_level("WARNING", logger="stratamem.appends"):
        queue.put(sink, [value("bad")])
        deadline = time.monotonic() + 5
        while not any("failed" in r.getMessage() for r in caplog.records) and time.monotonic() < deadline:
            time.sleep(0.01)
    assert any("failed" in r.getMessage() for r in caplog.records)
    queue.put(sink, [value("good")])
    queue.drain()
    assert sink.batches == [["good"]]
    queue.close()


def test_a_thread_holding_the_outer_lock_drains_without_waiting_for_the_worker() -> None:
    """The store's write lock is taken before the queue's own: a thread that holds it (a partition
    load) can drain while the worker waits for the lock, instead of both waiting forever."""
    outer = threading.RLock()
    queue = AppendQueue(outer=outer)

    class Locking(Sink):
        def __call__(self, writes: Sequence[Any]) -> None:
            with outer:  # as a runner that opens a transaction does
                super().__call__(writes)

    sink = Locking()
    with outer:
        queue.put(sink, [value(1)])
        time.sleep(0.05)  # the worker is now waiting for ``outer``
        done = threading.Event()
        drainer = threading.Thread(target=lambda: (queue.drain(), done.set()))
        drainer.start()
        drainer.join(0.2)
        queue.drain()  # this thread holds ``outer``: it writes the batch itself
        assert sink.batches == [[1]]
    drainer.join(5)
    assert done.is_set()
    queue.close()


def test_appends_queued_within_the_linger_share_one_batch() -> None:
    queue, sink = AppendQueue(linger=0.5), Sink()
    for i in range(3):  # three operations in a row, each leaving one append
        assert queue.put(sink, [value(i)])
        time.sleep(0.02)
    deadline = time.monotonic() + 10
    while not sink.batches and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sink.batches == [[0, 1, 2]]
    queue.close()


def test_a_reader_does_not_wait_for_the_linger() -> None:
    queue, sink = AppendQueue(linger=30.0), Sink()
    assert queue.put(sink, [value("a")])
    started = time.monotonic()
    queue.drain()  # a read of the store: what is queued is written now, on this thread
    assert sink.batches == [["a"]]
    assert time.monotonic() - started < 10
    started = time.monotonic()
    assert queue.put(sink, [value("b")])
    queue.close()  # closing writes at once too
    assert sink.batches == [["a"], ["b"]]
    assert time.monotonic() - started < 10
