"""A test helper: the store's write lock held by another thread for a block."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from stratamem.providers.duckdb import DuckDBProvider


@contextmanager
def writer_held(provider: DuckDBProvider) -> Iterator[None]:
    """Another thread holds the store's write lock for the block (a long write transaction in
    progress): the append worker cannot write, so the appends of the block's operations queue up."""
    release, holding = threading.Event(), threading.Event()

    def hold() -> None:
        with provider.writer_lock():
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
