"""The DuckDB provider's connection layer: opening the shared database, per-thread cursors,
serialised write transactions, reads, and the queue of bookkeeping appends.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from ...encryption import EncryptionKey
from ...errors import ErrorCode, MemoryError, TransientProviderError
from ..base import (
    MemoryProvider,
    StoreInfo,
)
from . import encrypted
from .absent_modules import mark_absent
from .database import _REGISTRY, _REGISTRY_LOCK, _Database, _fold_access_log, log


def release_result(cur: Any) -> None:
    """End the read transaction of the cursor's last statement.

    DuckDB keeps a statement's transaction open until its result is read to the end: a
    ``fetchone()`` of a one-row result leaves it open. On a thread's cursor that is not used again
    for a while (a server's idle worker thread), that open transaction keeps every newer row
    version of the whole database in memory (DuckDB's ``TRANSACTION`` memory grew by gigabytes
    under a server's load). Reading the rest ends it; a result read to the end costs nothing more."""
    with suppress(duckdb.Error):  # no statement ran on this cursor yet
        cur.fetchall()


@dataclass
class RowAppend:
    """An append of ``rows`` to ``table``, written by ``insert(cursor, rows)``.

    The append worker writes the appends of one batch together, and those to the same table with one
    ``insert`` (:func:`merge_row_appends`): an insert's fixed cost, not its rows, is most of what a
    search's ``memory_events`` rows cost, and under concurrent searches a batch holds several."""

    table: str
    rows: list[Sequence[Any]]
    insert: Callable[[Any, Sequence[Sequence[Any]]], None]

    def __call__(self, cur: Any) -> None:
        self.insert(cur, self.rows)


def merge_row_appends(writes: Sequence[Callable[[Any], None]]) -> list[Callable[[Any], None]]:
    """``writes`` with the :class:`RowAppend` of each table folded into the first one (rows in order);
    other writes keep their place."""
    out: list[Callable[[Any], None]] = []
    merged: dict[str, RowAppend] = {}
    for write in writes:
        if isinstance(write, RowAppend):
            first = merged.get(write.table)
            if first is None:
                merged[write.table] = first = RowAppend(write.table, list(write.rows), write.insert)
                out.append(first)
            else:
                first.rows.extend(write.rows)
        else:
            out.append(write)
    return out


class DuckDBConnection(MemoryProvider):
    """Connection, transactions and appends; the base of every part of :class:`DuckDBProvider`."""

    # Set by ``DuckDBProvider.__init__``.
    path: str
    defer_appends: bool
    checkpoint_threshold: str
    max_content_length: int
    use_search_index: bool
    _read_batch: int
    _db: _Database | None
    _info: StoreInfo | None
    _index_settings: dict[str, int]
    _groups: threading.local
    #: Key of an encrypted store file (``providers/duckdb/encrypted.py``); None: a plain file.
    encryption_key: EncryptionKey | None

    # ------------------------------------------------------------------------------- connection
    def _open_database(self) -> _Database:
        key = self.path if self.path == ":memory:" else str(Path(self.path).resolve())
        with _REGISTRY_LOCK:
            db = _REGISTRY.get(key) if key != ":memory:" else None
            if db is None:
                if key != ":memory:":
                    Path(key).parent.mkdir(parents=True, exist_ok=True)
                mark_absent()  # DuckDB's binding of parameters looks for pandas and pyarrow on every call
                config: dict[str, Any] = {"checkpoint_threshold": self.checkpoint_threshold}
                enc = self.encryption_key if key != ":memory:" else None
                try:
                    conn = encrypted.connect(key, enc, config) if enc else duckdb.connect(key, config=config)
                except duckdb.Error as exc:
                    raise self._open_failure(exc, key, enc) from exc
                db = _Database(path=key, conn=conn)
                if enc is not None:
                    db.catalog, db.key_id = encrypted.CATALOG, enc.key_id
                if key != ":memory:":
                    _REGISTRY[key] = db
            elif db.key_id != (self.encryption_key.key_id if self.encryption_key else None):
                # open in this process already: the key must be the one it was opened with
                reason = (
                    "without a key"
                    if self.encryption_key is None
                    else "is not encrypted"
                    if db.key_id is None
                    else "wrong encryption key"
                )
                raise self._open_failure(duckdb.Error(reason), key, self.encryption_key)
            db.refcount += 1
            return db

    def _open_failure(self, exc: duckdb.Error, key: str, enc: EncryptionKey | None) -> MemoryError:
        """The coded error for a failure to open the file ``key``."""
        coded = encrypted.open_error(exc, key, enc)
        if coded is not None:
            return coded
        if isinstance(exc, duckdb.ParserException | duckdb.InvalidInputException):
            return MemoryError(
                ErrorCode.CONFIGURATION_ERROR,
                f"invalid DuckDB checkpoint_threshold {self.checkpoint_threshold!r} (a size such as '128MB'): {exc}",
                operation="open",
                details={"checkpoint_threshold": self.checkpoint_threshold},
            )
        msg = str(exc)
        locked = isinstance(exc, duckdb.IOException) and "lock" in msg.lower()
        return MemoryError(
            ErrorCode.PROVIDER_ERROR,
            (
                f"DuckDB file {key} is in use by another process; one process owns an embedded "
                "store at a time (run `stratamem serve` and share it, or use Redis write "
                "coordination)"
            )
            if locked
            else f"cannot open DuckDB file {key}: {msg}",
            operation="open",
            details={"path": key, "reason": "locked" if locked else "io"},
            retryable=locked,
        )

    @property
    def db(self) -> _Database:
        if self._db is None:
            raise MemoryError(ErrorCode.PROVIDER_ERROR, "the store is closed", operation="provider", retryable=False)
        return self._db

    def _cursor(self) -> Any:
        db = self.db
        cur = getattr(db.local, "cursor", None)
        if cur is None:
            cur = db.cursor()
            db.local.cursor = cur
            with _REGISTRY_LOCK:
                db.cursors.append(cur)
        return cur

    # ----------------------------------------------------------------------- grouped appends
    @contextmanager
    def grouped_appends(self) -> Iterator[None]:
        """One transaction (one commit, one WAL sync) for an operation's access and event appends,
        written after the operation (``providers/append_queue.py`` says why).

        A search writes two append-only rows (its access statistics and its ``memory_events`` row).
        Inside this block the appends of this thread are queued. When it ends they go to the store's
        :class:`AppendQueue`, whose worker writes them together right away (``defer_appends=False``:
        this thread writes them before leaving the block). Every read of stored rows and every write
        transaction writes the queue first, so the appends are visible to all of them; a search from
        the in-process index does not wait for them.
        """
        state = self._groups
        depth = getattr(state, "depth", 0)
        if depth == 0:
            state.pending = []
        state.depth = depth + 1
        try:
            yield
        finally:
            state.depth = depth
            if depth == 0:
                pending, state.pending = state.pending, []
                if self.defer_appends:
                    self._queue_appends(pending)
                else:
                    self._write_appends(pending)

    def _append(self, write: Callable[[Any], None]) -> None:
        """Run an append-only write (no fold of the access log) now, or queue it in the thread's group."""
        state = self._groups
        if getattr(state, "depth", 0) > 0:
            state.pending.append(write)
            return
        with self.transaction(settle=False, bookkeeping=True) as cur:
            write(cur)

    def _write_appends(self, writes: Sequence[Callable[[Any], None]]) -> None:
        """Write appends in one transaction; a failure is logged (bookkeeping never fails the
        operation it belongs to, as when each append ran on its own)."""
        if not writes:
            return
        try:
            with self.transaction(settle=False, flush=False, bookkeeping=True) as cur:
                for write in merge_row_appends(writes):
                    write(cur)
        except Exception:
            log.warning(
                "%d bookkeeping appends (access statistics, memory_events) could not be written",
                len(writes),
                exc_info=True,
            )

    def _flush_appends(self) -> None:
        """Before a read: write this thread's queued appends and the store's queue (a write
        transaction writes them itself, see :meth:`transaction`).

        Skipped inside a transaction of this thread: the queue is written in a transaction of its own."""
        db = self._db
        if db is None:
            return
        if int(getattr(db.local, "tx_depth", 0)) > 0:
            return
        self._queue_own_group()
        db.appends.drain()

    def _queue_own_group(self) -> None:
        """Hand this thread's grouped appends (a group still open on it) to the store's queue."""
        pending = getattr(self._groups, "pending", None)
        if pending:
            self._groups.pending = []
            self._queue_appends(pending)

    def _queue_appends(self, writes: Sequence[Callable[[Any], None]]) -> None:
        """Hand appends to the store's worker; written here when the store is closed or closing."""
        if self._db is None or not self._db.appends.put(self._write_appends, writes):
            self._write_appends(writes)

    def flush_appends(self) -> None:
        """Write every queued bookkeeping append now (reads and transactions do this themselves)."""
        self._flush_appends()

    @contextmanager
    def _read(self, *, appends: bool = True) -> Iterator[Any]:
        """A cursor for reads. It first writes the queued bookkeeping appends and folds the access
        log into ``memories``, so the read sees them; ``appends=False`` skips that for reads of
        tables those never touch (``embedding_cache``, the graph's ``entities``), which then need
        not wait for the append worker's commit."""
        if appends:
            self._flush_appends()
            self.settle_access()
        cur = self._cursor()
        try:
            yield cur
        except duckdb.Error as exc:
            raise self._translate(exc, "read") from exc
        finally:
            release_result(cur)

    # ------------------------------------------------ SQL access (contracts.SqlStore and its users)
    def read(self, *, appends: bool = True) -> AbstractContextManager[Any]:
        """A cursor for reads (``contracts.SqlStore.read``); see :meth:`_read`."""
        return self._read(appends=appends)

    def new_cursor(self) -> Any:
        """A cursor of its own on the database, outside the provider's locks; the caller closes it."""
        return self.db.cursor()

    # knowledge graph (contracts.GraphBackend): the graph's SQL is written in DuckDB's dialect
    graph_dialect = "duckdb"

    def graph_read(self) -> AbstractContextManager[Any]:
        return self._read()

    def graph_transaction(self) -> AbstractContextManager[Any]:
        return self.transaction()

    def graph_cursor(self, tx: Any) -> Any:
        return tx

    def graph_generation(self, tenant_id: str, cur: Any = None) -> int | None:
        """None: every writer of the file is in this process, the in-process counters suffice."""
        del tenant_id, cur
        return None

    def writer_lock(self) -> threading.RLock:
        """The lock every write transaction of the database holds (shared by every provider on the file)."""
        return self.db.write_lock

    def database_key(self) -> Hashable:
        """The database's resolved path; the database object's id for an in-memory store."""
        db = self.db
        return db.path if db.path != ":memory:" else id(db)

    @contextmanager
    def consistent_read(self) -> Iterator[Any]:
        """A cursor inside one read transaction: every table is read at the same point in time.

        Queued bookkeeping appends are written and logged accesses folded in first, and the
        transaction starts before the next write can begin. The transaction is rolled back and the
        cursor closed at the end."""
        db = self.db
        self._flush_appends()  # queued bookkeeping appends first: the read sees every finished operation
        cur = db.cursor()
        try:
            with db.write_lock:  # logged accesses folded in, then the read starts before the next one
                self.settle_access()
                cur.execute("BEGIN TRANSACTION")
            yield cur
        finally:
            with suppress(duckdb.Error):
                cur.execute("ROLLBACK")
            cur.close()

    @contextmanager
    def transaction(self, *, settle: bool = True, flush: bool = True, bookkeeping: bool = False) -> Iterator[Any]:
        """Serialised write transaction; commit on success, roll back on any error.

        It first folds pending access-log rows into ``memories``, so every write and every read sees
        the access statistics complete. ``settle=False`` for the append itself, for appends to
        tables that are not ``memories``, and for inserts of new rows (an add): the fold updates only
        rows the log names, which a new row is not, and it scans ``memories``. ``bookkeeping``: the
        transaction only appends access statistics and ``memory_events`` rows, so its commit leaves
        ``generation`` as it is."""
        db = self.db
        # The queued bookkeeping appends are written first, so that every transaction sees them:
        # by this transaction itself, ahead of its own statements (one commit instead of two).
        carry = flush and int(getattr(db.local, "tx_depth", 0)) == 0
        if carry:
            self._queue_own_group()
        with db.write_lock:
            taken = db.appends.take() if carry else []
            committed = False
            try:
                cur = self._cursor()
                index = db.search_index
                cur.execute("BEGIN TRANSACTION")
                if taken and not self._carry_appends(cur, taken):
                    taken = []  # they failed in this transaction and were written on their own
                    cur.execute("BEGIN TRANSACTION")
                folded = False
                db.local.tx_depth = getattr(db.local, "tx_depth", 0) + 1
                try:
                    if settle and db.access_pending:
                        for tenant_id, ids in _fold_access_log(cur).items():
                            self._rows_changed(tenant_id, ids)  # caches of rows read before the fold
                        folded = True
                    yield cur
                    cur.execute("COMMIT")
                    committed = True
                    if not bookkeeping:
                        db.generation += 1
                    if folded:
                        db.access_pending = False
                except BaseException as exc:
                    if index is not None:
                        index.rollback()
                    with suppress(duckdb.Error):
                        cur.execute("ROLLBACK")
                    if isinstance(exc, duckdb.Error):
                        raise self._translate(exc, "write") from exc
                    raise
                finally:
                    db.local.tx_depth -= 1
                if index is not None:  # the committed write's effect on the in-process index
                    index.commit()
            finally:
                if taken:
                    if not committed:  # rolled back with the write (or it never began): on their own
                        self._write_appends(taken)
                    db.appends.taken_done()

    def _carry_appends(self, cur: Any, writes: Sequence[Callable[[Any], None]]) -> bool:
        """Write queued appends in the transaction just begun on ``cur``. On a failure the
        transaction is rolled back and the appends are written in one of their own, whose failure
        is logged: a bookkeeping append never fails the write that carries it. False then."""
        try:
            for write in merge_row_appends(writes):
                write(cur)
        except Exception:
            index = self.db.search_index
            if index is not None:
                index.rollback()
            with suppress(duckdb.Error):
                cur.execute("ROLLBACK")
            self._write_appends(writes)
            return False
        return True

    @contextmanager
    def bulk_import(self) -> Iterator[None]:
        """Run a bulk import of Parquet files (a snapshot being pulled) with DuckDB on one thread.

        On a small machine one thread inserts the rows no slower than two (measured: a little
        faster), and it leaves the other cores to the search index being built from the same files
        beside it, so the cold start reaches its first answer sooner. ``threads`` is a database-wide setting:
        queries running meanwhile use one thread too. The last import to end restores the value."""
        db = self.db
        with db.imports_lock:
            if db.imports == 0:
                db.threads_before = int(db.conn.execute("SELECT current_setting('threads')").fetchall()[0][0])
                db.conn.execute("SET threads = 1")
            db.imports += 1
        try:
            yield
        finally:
            db.known_hashes.forget()  # rows came from files, not through add
            with db.imports_lock:
                db.imports -= 1
                if db.imports == 0 and db.threads_before is not None:
                    with suppress(duckdb.Error):  # closed meanwhile: nothing to restore
                        db.conn.execute(f"SET threads = {int(db.threads_before)}")

    def settle_access(self) -> None:
        """Fold the access log into ``memories`` now if it holds rows (cheap check otherwise).

        Not inside a transaction of this thread: it folded the log when it began (the flag is
        cleared only at its commit), and a second transaction on the thread's cursor cannot start."""
        db = self.db
        if db.access_pending and int(getattr(db.local, "tx_depth", 0)) == 0:
            with self.transaction():
                pass

    @staticmethod
    def _translate(exc: Exception, operation: str) -> Exception:
        if isinstance(exc, duckdb.TransactionException | duckdb.IOException):
            return TransientProviderError(f"{type(exc).__name__}: {exc}")
        return MemoryError(
            ErrorCode.PROVIDER_ERROR,
            f"storage error: {type(exc).__name__}",
            operation=operation,
            details={"error": str(exc)[:500]},
            retryable=False,
        )
