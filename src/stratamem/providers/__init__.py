"""Storage providers and the URL that selects one.

``open_provider`` maps a store location to a provider:

* ``path/to/file.duckdb`` (or any path) → :class:`DuckDBProvider` on that file (the default);
* ``duckdb://path`` / ``duckdb:///:memory:`` → DuckDB explicitly;
* ``memory://`` → :class:`InMemoryProvider`;
* ``postgresql://…`` → the PostgreSQL provider (``stratamem[postgres]``), when installed.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any

from ..encryption import EncryptionKey, previous_keys_from_env
from ..errors import ErrorCode, MemoryError
from .base import MemoryProvider, Scope, WriteHook

if TYPE_CHECKING:
    from .duckdb import DuckDBProvider
    from .inmemory import InMemoryProvider

log = logging.getLogger("stratamem.providers")

__all__ = ["DuckDBProvider", "InMemoryProvider", "MemoryProvider", "Scope", "WriteHook", "open_provider"]


def __getattr__(name: str) -> Any:
    """The concrete providers are imported on first use, not with this package: the search index and
    the lexical indexes (``stratamem.retrieval``) import ``providers.base``, which runs this file,
    and the DuckDB provider imports them in turn; importing it here made a retrieval module that a
    program imports first fail on the cycle."""
    if name == "DuckDBProvider":
        from .duckdb import DuckDBProvider  # noqa: PLC0415  see above

        return DuckDBProvider
    if name == "InMemoryProvider":
        from .inmemory import InMemoryProvider  # noqa: PLC0415  see above

        return InMemoryProvider
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def open_provider(
    location: str | os.PathLike[str] | MemoryProvider | None, *, encryption_key: EncryptionKey | None = None
) -> MemoryProvider:
    """The provider of ``location``. ``encryption_key``: a DuckDB file is opened encrypted with it; a
    PostgreSQL store encrypts its memories' metadata with it (the rest relies on the server's disk
    encryption, see docs/security.md); in-memory stores keep nothing on disk."""
    if isinstance(location, MemoryProvider):
        return location
    from .duckdb import DuckDBProvider  # noqa: PLC0415  see __getattr__
    from .inmemory import InMemoryProvider  # noqa: PLC0415  see __getattr__

    loc = os.fspath(location) if location is not None else "stratamem.duckdb"
    if loc.startswith("memory://"):
        return InMemoryProvider()
    if loc.startswith("duckdb://"):
        rest = loc.removeprefix("duckdb://")
        if rest in ("", "/:memory:", ":memory:"):
            return DuckDBProvider(":memory:")
        return DuckDBProvider(rest, encryption_key=encryption_key)
    if loc.startswith(("postgresql://", "postgres://")):
        try:
            from .postgres import PostgresProvider  # type: ignore[import-not-found,unused-ignore]  # noqa: PLC0415  postgres extra (psycopg)
        except ImportError as exc:
            raise MemoryError(
                ErrorCode.CONFIGURATION_ERROR,
                "PostgreSQL stores need the postgres extra: pip install 'stratamem[postgres]'",
                operation="open",
            ) from exc
        provider: MemoryProvider = PostgresProvider(
            loc, encryption_key=encryption_key, previous_keys=previous_keys_from_env() if encryption_key else ()
        )
        if encryption_key is not None:
            log.info(
                "PostgreSQL store: metadata encrypted with key %s; content, identifiers and vectors rely on "
                "the server's disk encryption (docs/security.md)",
                encryption_key.key_id,
            )
        return provider
    if "://" in loc:
        raise MemoryError(
            ErrorCode.CONFIGURATION_ERROR,
            f"unsupported store URL scheme in {loc.split('://', 1)[0]!r}; use a file path, duckdb://, "
            "memory:// or postgresql://",
            operation="open",
        )
    return DuckDBProvider(loc, encryption_key=encryption_key)
