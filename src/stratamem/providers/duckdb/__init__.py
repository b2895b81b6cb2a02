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

from typing import TYPE_CHECKING, Any

from . import schema

if TYPE_CHECKING:
    from .database import CHECKPOINT_THRESHOLD
    from .index import PREBUILD_MIN_ROWS
    from .provider import MAX_CONTENT_LENGTH, DuckDBProvider

__all__ = ["CHECKPOINT_THRESHOLD", "MAX_CONTENT_LENGTH", "PREBUILD_MIN_ROWS", "DuckDBProvider", "schema"]


def __getattr__(name: str) -> Any:
    """The provider and its constants are imported on first use: ``schema`` is what features and the
    lexical index need from this package (``providers.duckdb_schema``), and the provider imports the
    lexical index in turn, so importing it here made ``stratamem.retrieval.duckdb_lexical`` fail when
    a program imported it first."""
    if name in ("DuckDBProvider", "MAX_CONTENT_LENGTH"):
        from . import provider  # noqa: PLC0415  see above

        return getattr(provider, name)
    if name == "CHECKPOINT_THRESHOLD":
        from .database import CHECKPOINT_THRESHOLD  # noqa: PLC0415  see above

        return CHECKPOINT_THRESHOLD
    if name == "PREBUILD_MIN_ROWS":
        from .index import PREBUILD_MIN_ROWS  # noqa: PLC0415  see above

        return PREBUILD_MIN_ROWS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
