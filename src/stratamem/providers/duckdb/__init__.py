"""Embedded default provider: one DuckDB file, no server.

* One database instance per file per process, shared by every ``Memory`` opened on it (so two
  objects on one file work), with a single writer lock: writes are serialised, reads run in
  parallel on per-thread cursors.
* A second *process* opening the same file gets PROVIDER_ERROR naming the lock, never corruption.
* Every statement binds ``tenant_id`` as a parameter; the only values formatted into SQL are the
  integer embedding dimension and fixed column lists.
* An acknowledged write is committed to DuckDB's write-ahead log before the call returns.

The provider is one class assembled from parts, one module per concern:

* ``database``: the shared per-file database and SQL helpers;
* ``connection``: cursors, reads, write transactions, bookkeeping appends;
* ``schema``: versioned migrations (features append theirs);
* ``store``: initialise, migrate, shut down, capabilities;
* ``rows``: memory <-> row encoding;
* ``index``: the in-process search index's partitions and staged changes;
* ``memories``: add, get, update, delete, list, search;
* ``cache``: the embedding cache;
* ``lifecycle``: access statistics, status, expiry, feedback;
* ``keys``: API key records;
* ``governance``: tenant policies, memory events, quotas.
"""

from __future__ import annotations

from . import schema
from .database import CHECKPOINT_THRESHOLD
from .index import PREBUILD_MIN_ROWS
from .provider import MAX_CONTENT_LENGTH, DuckDBProvider

__all__ = ["CHECKPOINT_THRESHOLD", "MAX_CONTENT_LENGTH", "PREBUILD_MIN_ROWS", "DuckDBProvider", "schema"]
