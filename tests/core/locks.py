"""Test helpers: a lock (the store's write lock) held by another thread for a block."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from stratamem.providers.duckdb import DuckDBProvider


@contextmanager
def held_elsewhere(lock: Any) -> Iterator[None]:
    """Another thread holds ``lock`` for the block (a search, an add or a long write in progress)."""
    release, holding = threading.Event(), threading.Event()

    def hold() -> None:
        with lock:
            holding.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    assert holding.wait(10)
    try:
        yield
    finally:
        release.set()
        holder.join()


@contextmanager
def writer_held(provider: DuckDBProvider) -> Iterator[None]:
    """Another thread holds the store's write lock for the block (a long write transaction in
    progress): the append worker cannot write, so the appends of the block's operations queue up."""
    with held_elsewhere(provider.writer_lock()):
        yield
