"""One DuckDB database per file per process, shared by every provider opened on it, and the
small SQL helpers the provider's parts share.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...retrieval.search_index import (
    SearchIndex,
)
from ..append_queue import AppendQueue
from . import schema as duckdb_schema

#: WAL size that makes a commit checkpoint the file (DuckDB's default is 16 MB). A checkpoint
#: rewrites every changed table's indexes, which takes seconds at 100k memories, and with 16 MB one
#: ran every third batch of 1000 memories. 128 MB: about one per 25 batches; a crash leaves at most
#: that much WAL to replay at the next open (replay is far quicker than a checkpoint).
CHECKPOINT_THRESHOLD = "128MB"


log = logging.getLogger("stratamem.duckdb")


class KnownHashes:
    """The content hashes a tenant's rows of a table may hold, so that ``cache_get`` asks the
    database only for hashes it can find.

    DuckDB answers "which of these hashes does the tenant store" by scanning the tenant's hash
    column (its index is not used for the lookup), which at 100k memories was most of a small add's
    time, although a new text is by definition not stored. A set is loaded at the first lookup of a
    (table, tenant, model); every write of this process that stores a hash adds it (``add``,
    ``update``, ``cache_put``). A hash deleted stays in the set: a stale entry costs only the query it
    would have saved. Writes that bring rows in another way (a snapshot pulled, rows copied,
    replaced partitions) forget the tenant's sets; the next lookup loads them again. Missing a hash
    costs an embedding, never a wrong vector: the text is embedded again.
    """

    def __init__(self) -> None:
        self._sets: dict[tuple[str, str, str], set[str]] = {}
        self._lock = threading.Lock()

    def maybe_present(
        self, key: tuple[str, str, str], wanted: Sequence[str], load: Callable[[], Iterable[str]]
    ) -> list[str]:
        """The hashes of ``wanted`` that the rows of ``key`` (table, tenant, model) may hold."""
        with self._lock:
            known = self._sets.get(key)
        if known is None:
            known = set(load())
            with self._lock:
                known |= self._sets.get(key, set())  # hashes added while it loaded
                self._sets[key] = known
        return [h for h in wanted if h in known]

    def add(self, table: str, tenant_id: str, model: str | None, hashes: Iterable[str]) -> None:
        """Hashes stored by a write (only sets already loaded need them)."""
        with self._lock:
            known = self._sets.get((table, tenant_id, model or ""))
            if known is not None:
                known.update(hashes)

    def forget(self, tenant_id: str | None = None) -> None:
        """Drop the sets of ``tenant_id`` (every tenant's when None): rows came in another way."""
        with self._lock:
            if tenant_id is None:
                self._sets.clear()
            else:
                for key in [k for k in self._sets if k[1] == tenant_id]:
                    del self._sets[key]


@dataclass
class _Database:
    path: str
    conn: Any
    write_lock: threading.RLock = field(default_factory=threading.RLock)
    refcount: int = 0
    dims: int | None = None
    #: The embedding model of every vector in ``memories`` (``store_meta``): ``cache_get`` for this
    #: model finds stored memories' vectors there, so ``add`` does not copy them to ``embedding_cache``.
    model: str | None = None
    local: threading.local = field(default_factory=threading.local)
    cursors: list[Any] = field(default_factory=list)
    #: In-process search index over this database (shared by every provider opened on the file).
    search_index: SearchIndex | None = None
    #: ``memory_access_log`` may hold rows not yet folded into ``memories`` (changed under write_lock).
    access_pending: bool = False
    #: bulk imports running (``DuckDBProvider.bulk_import``) and the ``threads`` setting they replaced
    imports: int = 0
    threads_before: int | None = None
    imports_lock: threading.Lock = field(default_factory=threading.Lock)
    #: Bookkeeping appends of finished operations, written by a worker right after them.
    appends: AppendQueue = field(init=False)
    #: Committed write transactions other than bookkeeping appends (changed under write_lock, after
    #: the commit): equal before a read and at a later write means nothing that read saw has changed.
    #: The file has one writing process (DuckDB locks it), so this counter sees every such commit.
    generation: int = 0
    #: Content hashes each tenant's rows may hold (``cache_get`` skips lookups that cannot succeed).
    known_hashes: KnownHashes = field(default_factory=KnownHashes)
    #: Encrypted file: the catalog it is attached as (every cursor ``USE``s it) and the key's id
    #: (a second provider on the file must bring the same key). None: the file is the main database.
    catalog: str | None = None
    key_id: str | None = None

    def __post_init__(self) -> None:
        self.appends = AppendQueue("stratamem-duckdb-appends", outer=self.write_lock)

    def cursor(self) -> Any:
        """A new cursor on the database, with the store's catalog selected."""
        cur = self.conn.cursor()
        if self.catalog is not None:
            cur.execute(f"USE {self.catalog}")
        return cur


_REGISTRY: dict[str, _Database] = {}
_REGISTRY_LOCK = threading.Lock()


def _vector_literal(vector: Any) -> str:
    """A vector as one ``'[…]'`` string parameter, cast in SQL (``?::FLOAT[n]``).

    DuckDB's Python binding converts list parameters element by element (and probes for pandas on
    each one); a single string parsed by DuckDB itself is an order of magnitude cheaper.
    """
    return "[" + ",".join(map(repr, np.asarray(vector, dtype=np.float32).tolist())) + "]"


def _text_list(values: Sequence[str]) -> str:
    """A list of strings as one JSON parameter, cast in SQL (``?::JSON::VARCHAR[]``)."""
    return json.dumps(list(values))


def _scope_sql(query_scope: Any) -> tuple[str, list[Any]]:
    if query_scope is None:
        return "", []
    return " AND layer = ? AND scope = ?", [query_scope.layer.value, query_scope.key]


def _fold_access_log(cur: Any) -> dict[str, list[str]]:
    """Apply every logged access to ``memories`` (counts summed; the latest time and importance win,
    as the UPDATEs they stand for would have left them) and empty the log, in the caller's transaction.
    Returns the memory ids it touched per tenant."""
    table = duckdb_schema.ACCESS_LOG_TABLE
    touched: dict[str, list[str]] = {}
    for tenant_id, memory_id in cur.execute(f"SELECT DISTINCT tenant_id, memory_id FROM {table}").fetchall():
        touched.setdefault(str(tenant_id), []).append(str(memory_id))
    cur.execute(
        "UPDATE memories SET access_count = memories.access_count + a.n, last_accessed_at = a.ts, "
        "importance = a.imp FROM (SELECT tenant_id, memory_id, sum(n) AS n, arg_max(accessed_at, seq) AS ts, "
        f"arg_max(importance, seq) AS imp FROM {table} GROUP BY tenant_id, memory_id) AS a "
        "WHERE memories.tenant_id = a.tenant_id AND memories.id = a.memory_id"
    )
    cur.execute(f"DELETE FROM {table}")
    return touched
