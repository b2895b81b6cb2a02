"""Scale-out provider: PostgreSQL + pgvector, for many processes writing one store.

* psycopg 3 with a :class:`psycopg_pool.ConnectionPool` (connections checked on checkout), and the
  ``pgvector`` package's adapters, so vectors travel as binary ``vector`` values.
* Same contract as :class:`DuckDBProvider`: scores ``(1 + cos) / 2``, the metadata filter applied
  before the top-k cut, keyset list pagination, expiry and statuses, the per-tenant embedding
  cache, optimistic update by version, write hooks run inside the transaction with the psycopg
  connection as ``tx``.
* Search is exact by default (a scan of one tenant scope through its B-tree index, like DuckDB);
  ``search_mode="ann"`` orders by the HNSW index instead (approximate, ``total`` then counts only
  the candidates examined). :meth:`lexical_search` ranks the generated ``tsvector`` column (GIN).
* Hybrid search (``SearchQuery.lexical_weight`` > 0) fuses BM25 exactly as DuckDB does, from the
  ``lexical_postings`` table kept by a write hook (``retrieval.postgres_lexical``); it is always exact.
* Every statement binds ``tenant_id`` (and every other value) as a parameter; the schema name is
  validated and quoted with :class:`psycopg.sql.Identifier`.
* Transient failures (connection lost, pool exhausted, serialization failure, deadlock, lock
  timeout) become :class:`TransientProviderError`, which the engine retries.

The URL may carry ``?schema=name`` to keep a store in its own PostgreSQL schema (created on open).
"""

from __future__ import annotations

import builtins
import re
import threading
from collections.abc import Hashable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import date, datetime
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg import errors as pg_errors
from psycopg import sql
from psycopg.types.json import Json
from psycopg_pool import ConnectionPool, PoolTimeout

from ..embeddings.base import Vector
from ..encryption import EncryptionKey, FieldSealer
from ..errors import ErrorCode, MemoryError, TransientProviderError
from ..filters import Predicate
from ..keys_model import ApiKeyRecord
from ..layers import scope_key
from ..model import MemoryEntry, ProviderCapabilities
from ..retrieval.centering import Centroid, measure_background, sample_rows
from ..retrieval.lexical import query_terms
from ..retrieval.postgres_lexical import PostgresLexicalIndex, fused_scope_sql
from . import postgres_schema
from .base import (
    ACTIVE,
    ListPage,
    ListQuery,
    MemoryProvider,
    PreparedAdd,
    Scope,
    ScoredEntry,
    SearchPage,
    SearchQuery,
    StoreInfo,
    ThreadTurn,
    aware_utc,
    dump_json,
    entry_from_parts,
    place_keys,
    provenance_time,
    to_utc,
)
from .contracts import concern_flags
from .graph_sql import PgSqlCursor
from .postgres_rowcopy import PostgresRowCopyMixin

MAX_CONTENT_LENGTH = 32_000

#: ``store_meta`` key: id of the key ``memories.metadata`` is encrypted with (absent: plain metadata).
_KEY_META = "metadata_encryption_key_id"
_COLUMNS = (
    "tenant_id, id, layer, content, content_hash, identifiers, metadata, provenance, tier, status, "
    "version, etag, importance, access_count, created_at, updated_at, expires_at, last_accessed_at, "
    "deleted_at"
)
_N_COLS = 19
_INSERT_COLUMNS = (
    "tenant_id, id, layer, scope, content, content_hash, identifiers, metadata, provenance, tier, status, "
    "version, etag, importance, access_count, created_at, updated_at, expires_at, last_accessed_at, "
    "deleted_at, embedding"
)
_COPY_TYPES = [
    "text",
    "text",
    "text",
    "text",
    "text",
    "text",
    "json",
    "json",
    "json",
    "text",
    "text",
    "int4",
    "text",
    "float8",
    "int8",
    "timestamptz",
    "timestamptz",
    "timestamptz",
    "timestamptz",
    "timestamptz",
    "vector",
]
#: Seed of the advisory-lock key hashed from (tenant, user) while the per-user quota is counted.
_QUOTA_LOCK_SEED = 0x71756F7461
_SCHEMA_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")

#: Failures worth retrying (transient connection and serialization errors): the engine backs off and
#: tries again.
_TRANSIENT: tuple[type[BaseException], ...] = (
    pg_errors.SerializationFailure,
    pg_errors.DeadlockDetected,
    pg_errors.LockNotAvailable,
    pg_errors.QueryCanceled,
    pg_errors.AdminShutdown,
    pg_errors.CannotConnectNow,
    pg_errors.TooManyConnections,
    psycopg.OperationalError,
    psycopg.InterfaceError,
    PoolTimeout,
)


def split_url(url: str) -> tuple[str, str | None]:
    """Remove stratamem's own ``schema`` query parameter from a libpq URL: ``(conninfo, schema)``."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    schema = next((v for k, v in query if k == "schema"), None)
    rest = [(k, v) for k, v in query if k != "schema"]
    scheme = "postgresql" if parts.scheme == "postgres" else parts.scheme
    return urlunsplit((scheme, parts.netloc, parts.path, urlencode(rest), parts.fragment)), schema


def _array(value: Any) -> Vector:
    """A loaded ``vector`` value (``pgvector.Vector`` or an array) as float32 numpy."""
    if hasattr(value, "to_numpy"):
        value = value.to_numpy()
    return np.asarray(value, dtype=np.float32)


def _redact(url: str) -> str:
    parts = urlsplit(url)
    if parts.password:
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
        return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


class PostgresProvider(PostgresRowCopyMixin, MemoryProvider):
    name = "postgres"
    version = psycopg.__version__

    def __init__(
        self,
        url: str,
        *,
        schema: str | None = None,
        min_size: int = 1,
        max_size: int = 10,
        max_content_length: int = MAX_CONTENT_LENGTH,
        search_mode: str = "exact",
        pool_timeout: float = 30.0,
        read_batch: int = 1000,
        application_name: str = "stratamem",
        encryption_key: EncryptionKey | str | None = None,
        previous_keys: Sequence[EncryptionKey] = (),
    ) -> None:
        super().__init__()
        key = EncryptionKey(encryption_key) if isinstance(encryption_key, str) else encryption_key
        #: With a key, ``memories.metadata`` is stored encrypted per tenant (``encryption.FieldSealer``);
        #: content, identifiers and vectors stay plaintext for SQL (full-text, scopes, pgvector).
        self.sealer = FieldSealer(key, previous_keys) if key is not None else None
        conninfo, url_schema = split_url(url)
        self.conninfo = conninfo
        self.schema = schema or url_schema
        if self.schema is not None and not _SCHEMA_RE.match(self.schema):
            raise MemoryError(
                ErrorCode.CONFIGURATION_ERROR, f"invalid PostgreSQL schema name {self.schema!r}", operation="open"
            )
        if search_mode not in ("exact", "ann"):
            raise MemoryError(ErrorCode.CONFIGURATION_ERROR, "search_mode must be 'exact' or 'ann'", operation="open")
        self.search_mode = search_mode
        self.application_name = application_name
        self.max_content_length = max_content_length
        self._min_size, self._max_size, self._pool_timeout = min_size, max_size, pool_timeout
        self._read_batch = read_batch
        self._pool: ConnectionPool[psycopg.Connection[Any]] | None = None
        #: scope -> (centroid, rows when computed); recomputed once the count moved by 5% (at least 8)
        self._centroids: dict[tuple[str, str, str], tuple[Centroid | None, int]] = {}
        self._dims = 0
        self.display_url = _redact(conninfo)
        self.write_hooks.append(PostgresLexicalIndex())  # hybrid search: postings in the write transaction
        self._graph_lock = threading.RLock()

    # ------------------------------------------------------------------------------- connection
    def _session_options(self) -> dict[str, Any]:
        opts = "-c TimeZone=UTC"
        if self.schema:
            opts += f" -c search_path={self.schema},public"  # validated identifier (regex above)
        return {"options": opts, "autocommit": True, "application_name": self.application_name}

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        register_vector(conn)

    @property
    def pool(self) -> ConnectionPool[psycopg.Connection[Any]]:
        if self._pool is None:
            raise MemoryError(ErrorCode.PROVIDER_ERROR, "the store is closed", operation="provider", retryable=False)
        return self._pool

    @staticmethod
    def _translate(exc: BaseException, operation: str) -> BaseException:
        if isinstance(exc, _TRANSIENT):
            return TransientProviderError(f"{type(exc).__name__}: {exc}")
        if isinstance(exc, psycopg.DataError):
            return MemoryError(
                ErrorCode.INVALID_PARAMS,
                f"PostgreSQL cannot store this value: {exc}",
                operation=operation,
                retryable=False,
            )
        return MemoryError(
            ErrorCode.PROVIDER_ERROR,
            f"storage error: {type(exc).__name__}",
            operation=operation,
            details={"error": str(exc)[:500]},
            retryable=False,
        )

    @contextmanager
    def _conn(self, operation: str) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection (autocommit: each statement is its own transaction)."""
        try:
            with self.pool.connection() as conn:
                yield conn
        except (psycopg.Error, PoolTimeout) as exc:
            raise self._translate(exc, operation) from exc

    @contextmanager
    def transaction(self, operation: str = "write") -> Iterator[psycopg.Connection[Any]]:
        """One transaction: commit on success, roll back on any error (hooks included)."""
        try:
            with self.pool.connection() as conn, conn.transaction():
                yield conn
        except (psycopg.Error, PoolTimeout) as exc:
            raise self._translate(exc, operation) from exc

    # ------------------------------------------------ knowledge graph (contracts.GraphBackend)
    #: The graph's SQL is shared with DuckDB and rewritten for PostgreSQL (``graph/sql.py``).
    graph_dialect = "postgres"

    @contextmanager
    def graph_read(self) -> Iterator[PgSqlCursor]:
        """One read-only REPEATABLE READ transaction: every graph query of a traversal sees the
        same committed state (generation counter included)."""
        try:
            with self.pool.connection() as conn, conn.transaction():
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                yield PgSqlCursor(conn)
        except (psycopg.Error, PoolTimeout) as exc:
            raise self._translate(exc, "graph") from exc

    @contextmanager
    def graph_transaction(self) -> Iterator[PgSqlCursor]:
        with self.transaction("graph") as conn:
            yield PgSqlCursor(conn)

    def graph_cursor(self, tx: Any) -> Any:
        """The write hooks' ``tx`` (a psycopg connection) as a graph SQL cursor."""
        return tx if isinstance(tx, PgSqlCursor) else PgSqlCursor(tx)

    def graph_generation(self, tenant_id: str, cur: Any = None) -> int | None:
        """The tenant's database-side graph generation (bumped by triggers in every writer's
        transaction, whichever server it runs on); read on ``cur`` (a :meth:`graph_read` cursor:
        the value its snapshot sees, without a second connection) or on a pooled connection."""
        query = "SELECT generation FROM graph_generation WHERE tenant_id = %s"
        if isinstance(cur, PgSqlCursor):
            row = cur.conn.execute(query, [tenant_id]).fetchone()
        else:
            with self._conn("graph") as conn:
                row = conn.execute(query, [tenant_id]).fetchone()
        return int(row[0]) if row else 0

    def database_key(self) -> Hashable:
        return ("postgres", self.conninfo, self.schema)

    def writer_lock(self) -> threading.RLock:
        """A process-local lock no PostgreSQL write holds: writers are other connections (maybe other
        servers); traversal caches key on :meth:`graph_generation` instead."""
        return self._graph_lock

    def flush_appends(self) -> None:
        """Appends are written synchronously on PostgreSQL: nothing is queued."""

    def select_sql(self, with_embedding: bool) -> str:
        return self._select(with_embedding)

    def entry_from_row(self, row: Sequence[Any], with_embedding: bool) -> MemoryEntry:
        return self._entry(row, with_embedding)

    def fetch_entries(
        self, cur: Any, tenant_id: str, ids: Sequence[str], with_embedding: bool
    ) -> builtins.list[MemoryEntry]:
        conn = cur.conn if isinstance(cur, PgSqlCursor) else cur
        return self._fetch_ids(conn, tenant_id, ids, with_embedding)

    # -------------------------------------------------------------------------------- lifecycle
    def initialize(self, embedding_model: str, dimensions: int) -> StoreInfo:
        if not isinstance(dimensions, int) or not 1 <= dimensions <= 16_000:
            raise MemoryError(ErrorCode.CONFIGURATION_ERROR, f"invalid embedding dimensions {dimensions!r}")
        try:
            with psycopg.connect(self.conninfo, **self._session_options(), connect_timeout=10) as conn:
                version = self._setup(conn, embedding_model, dimensions)
        except MemoryError:
            raise
        except psycopg.Error as exc:
            raise MemoryError(
                ErrorCode.CONFIGURATION_ERROR,
                f"cannot initialise PostgreSQL store {self.display_url}: {type(exc).__name__}: {exc}",
                operation="open",
                details={"url": self.display_url},
            ) from exc
        if self._pool is None:
            self._pool = ConnectionPool(
                self.conninfo,
                min_size=self._min_size,
                max_size=self._max_size,
                kwargs=self._session_options(),
                configure=self._configure,
                check=ConnectionPool.check_connection,
                timeout=self._pool_timeout,
                open=False,
                name="stratamem",
            )
            self._pool.open(wait=True, timeout=self._pool_timeout)
        self._dims = dimensions
        return StoreInfo(
            embedding_model=embedding_model,
            dimensions=dimensions,
            schema_version=version,
            extras={"url": self.display_url, "schema": self.schema or "public"},
        )

    def _setup(self, conn: psycopg.Connection[Any], embedding_model: str, dimensions: int) -> int:
        # The schema and the (database-wide) extension are created under a database-wide lock held
        # only for that; the migrations of this schema's store run under the schema's own lock.
        conn.execute("SELECT pg_advisory_lock(%s)", [postgres_schema.MIGRATION_LOCK_KEY])
        try:
            if self.schema:
                conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(self.schema)))
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", [postgres_schema.MIGRATION_LOCK_KEY])
        lock_key = postgres_schema.migration_lock_key(self.schema)
        conn.execute("SELECT pg_advisory_lock(%s)", [lock_key])
        try:
            postgres_schema.ensure_bookkeeping(conn)
            meta = dict(conn.execute("SELECT key, value FROM store_meta").fetchall())
            if meta:
                stored_dims = int(meta["embedding_dimensions"])
                stored_model = meta["embedding_model"]
                if stored_dims != dimensions:
                    raise MemoryError(
                        ErrorCode.CONFIGURATION_ERROR,
                        f"store {self.display_url} holds {stored_dims}-dimensional embeddings of "
                        f"{stored_model!r}, but the configured embedder {embedding_model!r} produces "
                        f"{dimensions} dimensions",
                        operation="open",
                        details={
                            "store_dimensions": stored_dims,
                            "embedder_dimensions": dimensions,
                            "store_model": stored_model,
                            "embedder_model": embedding_model,
                        },
                    )
                if stored_model != embedding_model:
                    raise MemoryError(
                        ErrorCode.CONFIGURATION_ERROR,
                        f"store {self.display_url} was built with embedding model {stored_model!r}; the "
                        f"configured embedder is {embedding_model!r} (vectors are not comparable). "
                        "Re-embed with `stratamem export` / `import` into a new store.",
                        operation="open",
                        details={
                            "store_model": stored_model,
                            "embedder_model": embedding_model,
                            "store_dimensions": stored_dims,
                            "embedder_dimensions": dimensions,
                        },
                    )
            done = postgres_schema.applied_versions(conn)
            for migration in postgres_schema.all_migrations():
                if migration.version in done:
                    continue
                try:
                    with conn.transaction():
                        migration.apply(conn, dimensions)
                        postgres_schema.record(conn, migration)
                except psycopg.Error as exc:
                    raise MemoryError(
                        ErrorCode.CONFIGURATION_ERROR,
                        f"schema migration {migration.version} ({migration.description}) failed and was "
                        f"rolled back; the store was not opened: {exc}",
                        operation="open",
                        details={"migration": migration.version},
                    ) from exc
            if not meta:
                conn.execute(
                    "INSERT INTO store_meta VALUES ('embedding_model', %s), ('embedding_dimensions', %s) "
                    "ON CONFLICT (key) DO NOTHING",
                    [embedding_model, str(dimensions)],
                )
            self._check_encryption_key(conn, meta.get(_KEY_META))
            return postgres_schema.current_version(conn)
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", [lock_key])

    def _check_encryption_key(self, conn: psycopg.Connection[Any], stored: str | None) -> None:
        """The store records the id of the key its metadata is encrypted with: a store opened without
        it, or with a key it does not know, is refused before anything is read or written."""
        if stored is None:
            if self.sealer is not None:
                conn.execute(
                    "INSERT INTO store_meta VALUES (%s, %s) ON CONFLICT (key) DO NOTHING",
                    [_KEY_META, self.sealer.key.key_id],
                )
            return
        if self.sealer is None:
            raise MemoryError(
                ErrorCode.CONFIGURATION_ERROR,
                f"PostgreSQL store {self.display_url} holds metadata encrypted with key id {stored} and no "
                "encryption key is configured (set STRATAMEM_ENCRYPTION_KEY or STRATAMEM_ENCRYPTION_KEY_FILE)",
                operation="open",
                details={"reason": "encryption_key_missing", "key_id": stored},
                retryable=False,
            )
        if stored not in self.sealer.key_ids:
            raise MemoryError(
                ErrorCode.CONFIGURATION_ERROR,
                f"PostgreSQL store {self.display_url} holds metadata encrypted with key id {stored}, not with "
                f"the configured key ({self.sealer.key.key_id}); give that key "
                "(STRATAMEM_ENCRYPTION_PREVIOUS_KEY_FILE holds old keys)",
                operation="open",
                details={"reason": "encryption_key_wrong", "key_id": stored},
                retryable=False,
            )
        if stored != self.sealer.key.key_id:  # rotated: new writes use the new key, old rows still open
            conn.execute("UPDATE store_meta SET value = %s WHERE key = %s", [self.sealer.key.key_id, _KEY_META])

    def _seal(self, tenant_id: str, row_id: str, metadata: Any) -> Any:
        return self.sealer.seal(tenant_id, row_id, metadata) if self.sealer is not None else metadata

    def _unseal(self, tenant_id: str, row_id: str, metadata: Any) -> Any:
        return self.sealer.open(tenant_id, row_id, metadata) if self.sealer is not None else metadata

    def shutdown(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    def ping(self) -> None:
        with self._conn("health") as conn:
            conn.execute("SELECT 1").fetchone()

    def capabilities(self) -> ProviderCapabilities:
        return ProviderCapabilities(
            vector_search=True,
            keyword_search=True,
            embedding_dimensions=self._dims,
            distance_metrics=["cosine"],
            bulk_operations=True,
            transactions=True,
            max_content_length=self.max_content_length,
            persistent=True,
            **concern_flags(self),
        )

    # ------------------------------------------------------------------------------------ rows
    def _row_values(self, e: MemoryEntry) -> list[Any]:
        return [
            e.tenant_id,
            e.id,
            e.layer.value,
            scope_key(e.layer, e.identifiers),
            e.content,
            e.content_hash,
            e.identifiers.model_dump(exclude_none=True),
            self._seal(e.tenant_id, e.id, e.metadata),
            e.provenance.model_dump(mode="json", exclude_none=True),  # valid_to: a datetime, as JSON text
            e.tier,
            e.status,
            e.version,
            e.etag,
            float(e.importance),
            int(e.access_count),
            e.created_at,
            e.updated_at,
            e.expires_at,
            e.last_accessed_at,
            e.deleted_at,
            np.asarray(e.embedding, dtype=np.float32) if e.embedding is not None else None,
        ]

    def _entry(self, row: Sequence[Any], with_embedding: bool) -> MemoryEntry:
        (
            tenant_id,
            id_,
            layer,
            content,
            chash,
            idents,
            metadata,
            prov,
            tier,
            status,
            version,
            etag,
            importance,
            access_count,
            created_at,
            updated_at,
            expires_at,
            last_accessed_at,
            deleted_at,
        ) = row[:_N_COLS]
        return entry_from_parts(
            id=id_,
            tenant_id=tenant_id,
            layer=layer,
            content=content,
            content_hash=chash,
            identifiers=idents,
            metadata=self._unseal(tenant_id, id_, metadata),
            provenance=prov,
            tier=tier,
            status=status,
            version=version,
            etag=etag,
            importance=importance,
            access_count=access_count,
            created_at=created_at,
            updated_at=updated_at,
            expires_at=expires_at,
            last_accessed_at=last_accessed_at,
            deleted_at=deleted_at,
            embedding=_array(row[_N_COLS]).tolist() if with_embedding else None,
        )

    @staticmethod
    def _select(with_embedding: bool) -> str:
        return f"SELECT {_COLUMNS}{', embedding' if with_embedding else ''} FROM memories"

    def add(
        self, entries: Sequence[MemoryEntry], *, cache_model: str | None = None, prepared: PreparedAdd | None = None
    ) -> None:
        if not entries:
            return
        with self.transaction("add") as conn:
            self._add_in(conn, entries, cache_model, prepared)

    def add_replacing(
        self,
        entries: Sequence[MemoryEntry],
        replacements: Sequence[tuple[MemoryEntry, MemoryEntry]],
        *,
        cache_model: str | None = None,
        prepared: PreparedAdd | None = None,
    ) -> builtins.list[bool]:
        with self.transaction("add") as conn:
            if entries:
                self._add_in(conn, entries, cache_model, prepared)
            return [self._update_in(conn, new, previous, validity_only=True) for new, previous in replacements]

    def _add_in(
        self,
        conn: psycopg.Connection[Any],
        entries: Sequence[MemoryEntry],
        cache_model: str | None,
        prepared: PreparedAdd | None,
    ) -> None:
        """:meth:`add` in the transaction of ``conn``."""
        rows = [self._row_values(e) for e in entries]
        with conn.cursor() as cur, cur.copy(f"COPY memories ({_INSERT_COLUMNS}) FROM STDIN (FORMAT BINARY)") as cp:
            cp.set_types(_COPY_TYPES)
            for row in rows:
                cp.write_row(row)
        if cache_model is not None:
            by_tenant: dict[str, list[str]] = {}
            for e in entries:
                by_tenant.setdefault(e.tenant_id, []).append(e.id)
            for tenant_id, ids in by_tenant.items():
                conn.execute(
                    "INSERT INTO embedding_cache (tenant_id, model, content_hash, embedding, created_at) "
                    "SELECT DISTINCT ON (content_hash) tenant_id, %s, content_hash, embedding, now() "
                    "FROM memories WHERE tenant_id = %s AND id = ANY(%s) ORDER BY content_hash "
                    "ON CONFLICT DO NOTHING",
                    [cache_model, tenant_id, ids],
                )
        self._run_add_hooks(conn, entries, prepared)

    def get(
        self,
        tenant_id: str,
        memory_id: str,
        now: datetime,
        *,
        include_embedding: bool = False,
        statuses: tuple[str, ...] = ACTIVE,
    ) -> MemoryEntry | None:
        with self._conn("get") as conn:
            row = conn.execute(
                f"{self._select(include_embedding)} WHERE tenant_id = %s AND id = %s AND status = ANY(%s) "
                "AND (expires_at IS NULL OR expires_at > %s)",
                [tenant_id, memory_id, list(statuses), now],
            ).fetchone()
        return self._entry(row, include_embedding) if row else None

    def update(self, entry: MemoryEntry, previous: MemoryEntry) -> bool:
        with self.transaction("update") as conn:
            return self._update_in(conn, entry, previous)

    def _update_in(
        self, conn: psycopg.Connection[Any], entry: MemoryEntry, previous: MemoryEntry, *, validity_only: bool = False
    ) -> bool:
        """:meth:`update` in the transaction of ``conn``. ``validity_only`` (a replacement of
        :meth:`add_replacing`): only the row's status, provenance, version, etag, update and
        deletion times become ``entry``'s, the rest stays as stored (accesses recorded since the row
        was read still count)."""
        if validity_only:
            sql = (
                "UPDATE memories SET status = %s, provenance = %s, version = %s, etag = %s, updated_at = %s, "
                "deleted_at = %s"
            )
            params: list[Any] = [
                entry.status,
                Json(entry.provenance.model_dump(mode="json", exclude_none=True), dumps=dump_json),
                entry.version,
                entry.etag,
                entry.updated_at,
                entry.deleted_at,
            ]
        else:
            values = self._row_values(entry)
            set_embedding = entry.embedding is not None
            sql = (
                "UPDATE memories SET layer = %s, scope = %s, content = %s, content_hash = %s, identifiers = %s, "
                "metadata = %s, provenance = %s, tier = %s, status = %s, version = %s, etag = %s, importance = %s, "
                "access_count = %s, created_at = %s, updated_at = %s, expires_at = %s, last_accessed_at = %s, "
                "deleted_at = %s" + (", embedding = %s" if set_embedding else "")
            )
            params = [
                *values[2:6],
                Json(values[6], dumps=dump_json),
                Json(values[7], dumps=dump_json),
                Json(values[8], dumps=dump_json),
                *values[9:20],
                *([values[20]] if set_embedding else []),
            ]
        where = " WHERE tenant_id = %s AND id = %s AND version = %s"
        cur = conn.execute(sql + where, [*params, entry.tenant_id, entry.id, previous.version])
        if cur.rowcount != 1:
            return False
        for hook in self.write_hooks:
            hook.after_update(conn, entry, previous)
        return True

    def delete(self, tenant_id: str, ids: Sequence[str]) -> builtins.list[str]:
        if not ids:
            return []
        wanted = list(dict.fromkeys(ids))
        with self.transaction("delete") as conn:
            found = conn.execute(
                "DELETE FROM memories WHERE tenant_id = %s AND id = ANY(%s) RETURNING id, content_hash",
                [tenant_id, wanted],
            ).fetchall()
            if not found:
                return []
            gone = {r[0] for r in found}
            existing = [i for i in wanted if i in gone]
            # Forget cached vectors of content no longer stored by this tenant.
            conn.execute(
                "DELETE FROM embedding_cache c WHERE c.tenant_id = %s AND c.content_hash = ANY(%s) AND NOT EXISTS "
                "(SELECT 1 FROM memories m WHERE m.tenant_id = %s AND m.content_hash = c.content_hash)",
                [tenant_id, sorted({r[1] for r in found}), tenant_id],
            )
            for hook in self.write_hooks:
                hook.after_delete(conn, tenant_id, existing)
        return existing

    @staticmethod
    def _where(query: ListQuery) -> tuple[str, list[Any]]:
        where = " WHERE tenant_id = %s AND status = ANY(%s)"
        params: builtins.list[Any] = [query.tenant_id, list(query.statuses)]
        if not query.include_expired:
            where += " AND (expires_at IS NULL OR expires_at > %s)"
            params.append(query.now)
        if query.scope is not None:
            where += " AND layer = %s AND scope = %s"
            params += [query.scope.layer.value, query.scope.key]
        # the column name comes from a fixed pair (ListQuery.time_field), the bounds are parameters
        column = "updated_at" if query.time_field == "updated_at" else "created_at"
        if query.since is not None:
            where += f" AND {column} >= %s"
            params.append(query.since)
        if query.until is not None:
            where += f" AND {column} < %s"
            params.append(query.until)
        if query.expires_before is not None:
            where += " AND expires_at IS NOT NULL AND expires_at < %s"
            params.append(query.expires_before)
        return where, params

    def list(self, query: ListQuery) -> ListPage:
        where, params = self._where(query)
        cmp, direction = ("<", " DESC") if query.descending else (">", "")
        order = f" ORDER BY created_at{direction}, id{direction}"
        with self._conn("list") as conn:
            if query.predicate is None:
                row = conn.execute(f"SELECT count(*) FROM memories{where}", params).fetchone()
                total = int(row[0]) if row else 0
                after_sql, after_params = "", []
                if query.after is not None:
                    after_sql = f" AND (created_at, id) {cmp} (%s, %s)"
                    after_params = [query.after[0], query.after[1]]
                rows = conn.execute(
                    f"{self._select(False)}{where}{after_sql}{order} LIMIT %s",
                    [*params, *after_params, query.limit + 1],
                ).fetchall()
                entries = [self._entry(r, False) for r in rows]
                return ListPage(entries=entries[: query.limit], total=total, has_more=len(entries) > query.limit)
            # Filtered: evaluate the predicate over the scope (metadata only), then fetch the page.
            matching: builtins.list[tuple[datetime, str]] = []
            with conn.transaction(), conn.cursor(name="stratamem_list") as cur:
                cur.itersize = self._read_batch
                cur.execute(f"SELECT id, created_at, metadata FROM memories{where}{order}", params)
                matching = [(r[1], r[0]) for r in cur if query.predicate(self._unseal(query.tenant_id, r[0], r[2]))]
            start = 0
            if query.after is not None:
                pos = (query.after[0], query.after[1])
                start = next(
                    (i for i, m in enumerate(matching) if (m < pos if query.descending else m > pos)), len(matching)
                )
            page_ids = [m[1] for m in matching[start : start + query.limit]]
            entries = self._fetch_ids(conn, query.tenant_id, page_ids, False)
            return ListPage(entries=entries, total=len(matching), has_more=start + query.limit < len(matching))

    def _fetch_ids(
        self, conn: psycopg.Connection[Any], tenant_id: str, ids: Sequence[str], with_embedding: bool
    ) -> builtins.list[MemoryEntry]:
        if not ids:
            return []
        rows = conn.execute(
            f"{self._select(with_embedding)} WHERE tenant_id = %s AND id = ANY(%s)", [tenant_id, list(ids)]
        ).fetchall()
        by_id = {r[1]: self._entry(r, with_embedding) for r in rows}
        return [by_id[i] for i in ids if i in by_id]

    def thread_turns(
        self,
        tenant_id: str,
        scope: Scope,
        places: Sequence[tuple[str, int]],
        vector: Vector,
        now: datetime,
        *,
        statuses: tuple[str, ...] = ACTIVE,
        predicate: Predicate | None = None,
    ) -> builtins.list[ThreadTurn]:
        """See ``Provider.thread_turns``: the scope's live rows at these places, the columns of a
        ``ThreadTurn`` only (and the metadata when filtered)."""
        wanted = set(places)
        if not wanted:
            return []
        thread_sql = "coalesce(provenance->>'thread_id', '')"
        with self._conn("thread_turns") as conn:
            rows = conn.execute(
                f"SELECT id, {thread_sql}, provenance->>'position', content, "
                "least(1::float8, greatest(0::float8, 1 - (embedding <=> %s) / 2)), created_at, updated_at, "
                "provenance->>'valid_to', provenance->>'occurred_at'"
                + (", metadata" if predicate is not None else "")
                + f" FROM memories WHERE {self._SCOPE_WHERE} "
                f"AND {thread_sql} || chr(31) || (provenance->>'position') = ANY(%s)",
                [
                    np.asarray(vector, dtype=np.float32),
                    tenant_id,
                    scope.layer.value,
                    scope.key,
                    list(statuses),
                    now,
                    place_keys(wanted),
                ],
            ).fetchall()
        turns = [
            ThreadTurn(
                id=r[0],
                thread=r[1],
                position=int(r[2]),
                content=r[3],
                score=float(r[4]),
                created_at=aware_utc(r[5]),
                updated_at=aware_utc(r[6]),
                valid_to=provenance_time(r[7]),
                occurred_at=provenance_time(r[8]),
            )
            for r in rows
            if predicate is None or predicate(self._unseal(tenant_id, r[0], r[9]))
        ]
        return [t for t in turns if t.place in wanted]

    def scope_entries(
        self,
        tenant_id: str,
        scope: Scope,
        ids: Sequence[str],
        now: datetime,
        *,
        statuses: tuple[str, ...] = ACTIVE,
    ) -> builtins.list[MemoryEntry]:
        """See ``Provider.scope_entries``: one select by ids."""
        if not ids:
            return []
        with self._conn("scope_entries") as conn:
            rows = conn.execute(
                f"{self._select(False)} WHERE {self._SCOPE_WHERE} AND id = ANY(%s)",
                [tenant_id, scope.layer.value, scope.key, list(statuses), now, list(dict.fromkeys(ids))],
            ).fetchall()
        by_id = {r[1]: self._entry(r, False) for r in rows}
        return [by_id[i] for i in dict.fromkeys(ids) if i in by_id]

    _SCOPE_WHERE = (
        "tenant_id = %s AND layer = %s AND scope = %s AND status = ANY(%s) AND (expires_at IS NULL OR expires_at > %s)"
    )

    def scope_centroid(self, tenant_id: str, scope: Scope, now: datetime) -> Centroid | None:
        key = (tenant_id, scope.layer.value, scope.key)
        where = (
            "tenant_id = %s AND layer = %s AND scope = %s AND status = 'active' "
            "AND (expires_at IS NULL OR expires_at > %s)"
        )
        params = [*key, now]
        with self._conn("search") as conn:
            counted = conn.execute(f"SELECT count(*) FROM memories WHERE {where}", params).fetchone()
            rows = int(counted[0]) if counted else 0
            cached = self._centroids.get(key)
            if cached is not None and abs(rows - cached[1]) <= max(8, rows // 20):
                return cached[0]
            averaged = conn.execute(f"SELECT avg(embedding) FROM memories WHERE {where}", params).fetchone()
            mean: Any = averaged[0] if averaged else None
            # the background is measured on evenly spaced rows (by id), as the other providers do
            sampled = conn.execute(
                f"SELECT embedding FROM (SELECT embedding, row_number() OVER (ORDER BY id) - 1 AS rn "
                f"FROM memories WHERE {where} AND embedding IS NOT NULL) s WHERE rn = ANY(%s)",
                [*params, sample_rows(rows).tolist()],
            ).fetchall()
        # stored vectors are unit length, so their average is the centroid of unit vectors
        centroid = None
        if mean is not None and rows > 0:
            center = _array(mean)
            sample = np.vstack([_array(r[0]) for r in sampled]) if sampled else np.zeros((0, len(center)))
            centroid = Centroid(center, rows, measure_background(sample, center, rows))
        if len(self._centroids) > 10_000:
            self._centroids.clear()
        self._centroids[key] = (centroid, rows)
        return centroid

    def search(self, query: SearchQuery) -> SearchPage:
        vector = np.asarray(query.vector, dtype=np.float32)
        scope = [query.tenant_id, query.scope.layer.value, query.scope.key, list(query.statuses), query.now]
        emb = ", embedding" if query.include_embedding else ""
        width = _N_COLS + (1 if query.include_embedding else 0)
        scored, scored_params = self._scored_sql(query, vector, scope)
        with self._conn("search") as conn:
            hybrid = query.lexical_weight > 0 and bool(query_terms(query.text))  # fused: always exact
            if self.search_mode == "ann" and query.predicate is None and not hybrid:
                return self._ann_search(conn, query, vector, scope)
            if query.predicate is None:
                # One pass: rank the scope, cut, and return the full rows of the top ``limit``.
                rows = conn.execute(
                    f"SELECT {_COLUMNS}{emb}, score, count(*) OVER () FROM ({scored}) s "
                    'WHERE score >= %s ORDER BY score DESC, id COLLATE "C" LIMIT %s',
                    [*scored_params, query.min_score, query.limit],
                ).fetchall()
                hits = [
                    ScoredEntry(
                        entry=self._entry(r, query.include_embedding), score=min(1.0, max(0.0, float(r[width])))
                    )
                    for r in rows
                ]
                return SearchPage(hits=hits, total=int(rows[0][width + 1]) if rows else 0)
            # Filtered: rank with metadata only, apply the predicate before the cut, then fetch the rows.
            ranked: builtins.list[tuple[str, float]] = []
            total = 0
            with conn.transaction(), conn.cursor(name="stratamem_search") as cur:
                cur.itersize = self._read_batch
                cur.execute(
                    f"SELECT id, score, metadata FROM ({scored}) s WHERE score >= %s "
                    'ORDER BY score DESC, id COLLATE "C"',
                    [*scored_params, query.min_score],
                )
                for r in cur:
                    if query.predicate(self._unseal(query.tenant_id, r[0], r[2])):
                        total += 1
                        if len(ranked) < query.limit:
                            ranked.append((r[0], float(r[1])))
            entries = self._fetch_ids(conn, query.tenant_id, [r[0] for r in ranked], query.include_embedding)
        scores = dict(ranked)
        return SearchPage(
            hits=[ScoredEntry(entry=e, score=min(1.0, max(0.0, scores[e.id]))) for e in entries], total=total
        )

    def _scored_sql(self, query: SearchQuery, vector: Any, scope: builtins.list[Any]) -> tuple[str, builtins.list[Any]]:
        """Every live row of the scope with its ``score``: dense, or fused with BM25 (see base.py).

        A hybrid query is always exact (the fused score cannot be ordered by the HNSW index).
        """
        dense = "1 - (embedding <=> %s) / 2"
        terms = query_terms(query.text) if query.lexical_weight > 0 else []
        if not terms:
            return f"SELECT *, {dense} AS score FROM memories WHERE {self._SCOPE_WHERE}", [vector, *scope]
        dense_sql = (
            f"SELECT *, least(1::float8, greatest(0::float8, {dense})) AS dense FROM memories WHERE {self._SCOPE_WHERE}"
        )
        return fused_scope_sql(dense_sql), [
            float(query.lexical_weight),
            vector,
            *scope,
            terms,
            query.tenant_id,
            query.scope.layer.value,
            query.scope.key,
        ]

    def _ann_search(
        self, conn: psycopg.Connection[Any], query: SearchQuery, vector: Any, scope: builtins.list[Any]
    ) -> SearchPage:
        """Approximate: walk the HNSW index (iterative scan keeps going past filtered-out rows)."""
        emb = ", embedding" if query.include_embedding else ""
        with conn.transaction():
            conn.execute(sql.SQL("SET LOCAL hnsw.ef_search = {}").format(sql.Literal(max(40, 2 * query.limit))))
            conn.execute("SET LOCAL hnsw.iterative_scan = strict_order")
            rows = conn.execute(
                f"SELECT {_COLUMNS}{emb}, 1 - (embedding <=> %s) / 2 AS score FROM memories "
                f"WHERE {self._SCOPE_WHERE} ORDER BY embedding <=> %s LIMIT %s",
                [vector, *scope, vector, query.limit],
            ).fetchall()
        width = _N_COLS + (1 if query.include_embedding else 0)
        hits = [
            ScoredEntry(entry=self._entry(r, query.include_embedding), score=min(1.0, max(0.0, float(r[width]))))
            for r in rows
            if float(r[width]) >= query.min_score
        ]
        hits.sort(key=lambda h: (-h.score, h.entry.id))
        return SearchPage(hits=hits, total=len(hits))

    def lexical_search(self, query: SearchQuery) -> SearchPage:
        """Full-text ranking of one scope (``websearch_to_tsquery('simple', text)`` over the GIN index).

        Scores are ``rank / (rank + 1)`` of ``ts_rank_cd`` (in [0, 1)); the vector is ignored.
        """
        emb = ", embedding" if query.include_embedding else ""
        width = _N_COLS + (1 if query.include_embedding else 0)
        with self._conn("search") as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS}{emb}, score FROM (SELECT *, ts_rank_cd(content_tsv, q) AS r, "
                "ts_rank_cd(content_tsv, q) / (ts_rank_cd(content_tsv, q) + 1) AS score "
                "FROM memories, websearch_to_tsquery('simple', %s) q "
                f'WHERE content_tsv @@ q AND {self._SCOPE_WHERE}) s ORDER BY score DESC, id COLLATE "C"',
                [
                    query.text,
                    query.tenant_id,
                    query.scope.layer.value,
                    query.scope.key,
                    list(query.statuses),
                    query.now,
                ],
            ).fetchall()
        hits: builtins.list[ScoredEntry] = []
        total = 0
        for r in rows:
            entry = self._entry(r, query.include_embedding)
            score = float(r[width])
            if score < query.min_score or (query.predicate is not None and not query.predicate(entry.metadata)):
                continue
            total += 1
            if len(hits) < query.limit:
                hits.append(ScoredEntry(entry=entry, score=score))
        return SearchPage(hits=hits, total=total)

    def count_by_layer(self, tenant_id: str, now: datetime) -> dict[str, int]:
        with self._conn("stats") as conn:
            rows = conn.execute(
                "SELECT layer, count(*) FROM memories WHERE tenant_id = %s AND status = 'active' "
                "AND (expires_at IS NULL OR expires_at > %s) GROUP BY layer ORDER BY layer",
                [tenant_id, now],
            ).fetchall()
        return {r[0]: int(r[1]) for r in rows}

    def iter_entries(self, tenant_id: str, *, batch_size: int = 500) -> Iterator[MemoryEntry]:
        after: tuple[Any, str] | None = None
        while True:
            with self._conn("export") as conn:
                if after is None:
                    rows = conn.execute(
                        f"{self._select(True)} WHERE tenant_id = %s ORDER BY created_at, id LIMIT %s",
                        [tenant_id, batch_size],
                    ).fetchall()
                else:
                    rows = conn.execute(
                        f"{self._select(True)} WHERE tenant_id = %s AND (created_at, id) > (%s, %s) "
                        "ORDER BY created_at, id LIMIT %s",
                        [tenant_id, after[0], after[1], batch_size],
                    ).fetchall()
            if not rows:
                return
            for r in rows:
                yield self._entry(r, True)
            after = (rows[-1][14], rows[-1][1])

    def tenants(self) -> builtins.list[str]:
        with self._conn("tenants") as conn:
            return [r[0] for r in conn.execute("SELECT DISTINCT tenant_id FROM memories ORDER BY 1").fetchall()]

    # ---------------------------------------------------------------------------- embedding cache
    def cache_get(self, tenant_id: str, model_id: str, hashes: Sequence[str]) -> dict[str, Vector]:
        if not hashes:
            return {}
        with self._conn("cache") as conn:
            rows = conn.execute(
                "SELECT content_hash, embedding FROM embedding_cache WHERE tenant_id = %s AND model = %s "
                "AND content_hash = ANY(%s)",
                [tenant_id, model_id, list(hashes)],
            ).fetchall()
        return {r[0]: _array(r[1]) for r in rows}

    def cache_put(self, tenant_id: str, model_id: str, items: dict[str, Vector]) -> None:
        if not items:
            return
        with self.transaction("cache") as conn, conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO embedding_cache (tenant_id, model, content_hash, embedding, created_at) "
                "VALUES (%s, %s, %s, %s, now()) ON CONFLICT DO NOTHING",
                [[tenant_id, model_id, h, np.asarray(v, dtype=np.float32)] for h, v in items.items()],
            )

    # ---------------------------------------------------------------------------- lifecycle
    # Same semantics as DuckDBProvider: no version/etag bump, one transaction per call, ids ordered
    # byte-wise (COLLATE "C", like DuckDB and Python) wherever order or a limit is observable. Rows are
    # locked in id order before multi-row updates, so concurrent calls cannot deadlock each other.
    def record_access(
        self, tenant_id: str, importance: Mapping[str, float], now: datetime, *, counts: Mapping[str, int] | None = None
    ) -> int:
        if not importance:
            return 0
        ids = list(importance)
        steps = [1 if counts is None else int(counts.get(i, 1)) for i in ids]
        with self.transaction("record_access") as conn:
            conn.execute(
                'SELECT 1 FROM memories WHERE tenant_id = %s AND id = ANY(%s) ORDER BY id COLLATE "C" FOR UPDATE',
                [tenant_id, ids],
            )
            conn.execute(
                "UPDATE memories AS m SET access_count = m.access_count + u.n, last_accessed_at = %s, "
                "importance = u.imp FROM unnest(%s::text[], %s::float8[], %s::int[]) AS u(uid, imp, n) "
                "WHERE m.tenant_id = %s AND m.id = u.uid",
                [now, ids, [float(v) for v in importance.values()], steps, tenant_id],
            )
        return len(importance)

    def set_status(self, tenant_id: str, ids: Sequence[str], status: str, now: datetime) -> builtins.list[str]:
        if not ids:
            return []
        wanted = list(dict.fromkeys(ids))
        with self.transaction("set_status") as conn:
            conn.execute(
                'SELECT 1 FROM memories WHERE tenant_id = %s AND id = ANY(%s) ORDER BY id COLLATE "C" FOR UPDATE',
                [tenant_id, wanted],
            )
            rows = conn.execute(
                "UPDATE memories SET status = %s, deleted_at = %s WHERE tenant_id = %s AND id = ANY(%s) RETURNING id",
                [status, now if status == "deleted" else None, tenant_id, wanted],
            ).fetchall()
        found = {r[0] for r in rows}
        return [i for i in wanted if i in found]

    def set_expiry(self, tenant_id: str, ids: Sequence[str], expires_at: datetime | None) -> int:
        if not ids:
            return 0
        wanted = list(dict.fromkeys(ids))
        with self.transaction("set_expiry") as conn:
            conn.execute(
                'SELECT 1 FROM memories WHERE tenant_id = %s AND id = ANY(%s) ORDER BY id COLLATE "C" FOR UPDATE',
                [tenant_id, wanted],
            )
            cur = conn.execute(
                "UPDATE memories SET expires_at = %s WHERE tenant_id = %s AND id = ANY(%s)",
                [expires_at, tenant_id, wanted],
            )
            return max(0, cur.rowcount)

    def purge_candidates(
        self, tenant_id: str, *, expired_before: datetime, deleted_before: datetime, limit: int = 10_000
    ) -> builtins.list[str]:
        with self._conn("purge_candidates") as conn:
            rows = conn.execute(
                "SELECT id FROM memories WHERE tenant_id = %s AND ((expires_at IS NOT NULL AND expires_at <= %s) "
                "OR (status = 'deleted' AND deleted_at IS NOT NULL AND deleted_at <= %s)) "
                'ORDER BY id COLLATE "C" LIMIT %s',
                [tenant_id, expired_before, deleted_before, limit],
            ).fetchall()
        return [r[0] for r in rows]

    def add_feedback(
        self, tenant_id: str, ids: Sequence[str], reward: float, now: datetime
    ) -> dict[str, tuple[int, float]]:
        unique = list(dict.fromkeys(ids))
        if not unique:
            return {}
        with self.transaction("feedback") as conn:
            rows = conn.execute(
                "INSERT INTO memory_feedback AS f (tenant_id, memory_id, signals, reward_sum, last_reward, updated_at) "
                'SELECT %s, uid, 1, %s, %s, %s FROM unnest(%s::text[]) AS u(uid) ORDER BY uid COLLATE "C" '
                "ON CONFLICT (tenant_id, memory_id) DO UPDATE SET signals = f.signals + 1, "
                "reward_sum = f.reward_sum + excluded.reward_sum, last_reward = excluded.last_reward, "
                "updated_at = excluded.updated_at RETURNING memory_id, signals, reward_sum",
                [tenant_id, float(reward), float(reward), now, unique],
            ).fetchall()
        return {r[0]: (int(r[1]), float(r[2])) for r in rows}

    def feedback_stats(self, tenant_id: str) -> dict[str, tuple[int, float]]:
        with self._conn("feedback") as conn:
            rows = conn.execute(
                "SELECT memory_id, signals, reward_sum FROM memory_feedback WHERE tenant_id = %s "
                'ORDER BY memory_id COLLATE "C"',
                [tenant_id],
            ).fetchall()
        return {r[0]: (int(r[1]), float(r[2])) for r in rows}

    def clear_feedback(self, tenant_id: str, ids: Sequence[str]) -> None:
        if not ids:
            return
        with self.transaction("feedback") as conn:
            conn.execute(
                "DELETE FROM memory_feedback WHERE tenant_id = %s AND memory_id = ANY(%s)",
                [tenant_id, list(dict.fromkeys(ids))],
            )

    # ------------------------------------------------------------------ server feature: API keys
    _KEY_COLUMNS = "key_id, tenant_id, name, roles, salt, key_hash, identifiers, created_at, revoked_at"

    def api_key_put(self, record: Any) -> None:
        with self.transaction("auth") as conn:
            conn.execute(
                f"INSERT INTO api_keys ({self._KEY_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                [
                    record.key_id,
                    record.tenant_id,
                    record.name,
                    Json(list(record.roles)),
                    record.salt,
                    record.key_hash,
                    Json(dict(record.identifiers)),
                    record.created_at,
                    record.revoked_at,
                ],
            )

    @staticmethod
    def _api_key(row: Sequence[Any]) -> ApiKeyRecord:
        return ApiKeyRecord(
            key_id=row[0],
            tenant_id=row[1],
            name=row[2],
            roles=tuple(row[3]),
            salt=row[4],
            key_hash=row[5],
            identifiers=dict(row[6]),
            created_at=row[7],
            revoked_at=row[8],
        )

    def api_key_get(self, key_id: str) -> Any:
        with self._conn("auth") as conn:
            row = conn.execute(f"SELECT {self._KEY_COLUMNS} FROM api_keys WHERE key_id = %s", [key_id]).fetchone()
        return self._api_key(row) if row else None

    def api_key_list(self, tenant_id: str) -> builtins.list[Any]:
        with self._conn("auth") as conn:
            rows = conn.execute(
                f"SELECT {self._KEY_COLUMNS} FROM api_keys WHERE tenant_id = %s ORDER BY created_at, key_id",
                [tenant_id],
            ).fetchall()
        return [self._api_key(r) for r in rows]

    def api_key_revoke(self, tenant_id: str, key_id: str, at: datetime) -> bool:
        with self.transaction("auth") as conn:
            cur = conn.execute(
                "UPDATE api_keys SET revoked_at = %s WHERE tenant_id = %s AND key_id = %s AND revoked_at IS NULL",
                [at, tenant_id, key_id],
            )
            return cur.rowcount == 1

    def id_exists_in_other_tenant(self, tenant_id: str, memory_id: str) -> bool:
        with self._conn("audit") as conn:
            row = conn.execute(
                "SELECT 1 FROM memories WHERE id = %s AND tenant_id <> %s LIMIT 1", [memory_id, tenant_id]
            ).fetchone()
        return row is not None

    # -------------------------------------------------------------------- hygiene and governance
    # Same semantics as DuckDBProvider (``hygiene/schema.py`` there, migration 3 in postgres_schema
    # here): policies and event details are ``json`` objects, timestamps ``timestamptz`` (aware UTC).
    def get_tenant_policy(self, tenant_id: str) -> dict[str, Any] | None:
        with self._conn("policy_get") as conn:
            row = conn.execute("SELECT policy FROM tenant_policies WHERE tenant_id = %s", [tenant_id]).fetchone()
        return dict(row[0]) if row else None

    def put_tenant_policy(self, tenant_id: str, policy: Mapping[str, Any], updated_at: datetime) -> None:
        with self.transaction("policy_set") as conn:
            conn.execute(
                "INSERT INTO tenant_policies (tenant_id, policy, updated_at) VALUES (%s, %s, %s) "
                "ON CONFLICT (tenant_id) DO UPDATE SET policy = excluded.policy, updated_at = excluded.updated_at",
                [tenant_id, Json(dict(policy), dumps=dump_json), to_utc(updated_at)],
            )

    def append_memory_events(self, events: Sequence[Mapping[str, Any]]) -> None:
        if not events:
            return
        rows = [
            [
                e["tenant_id"],
                e["id"],
                to_utc(e["ts"]),
                e["event"],
                e.get("memory_id"),
                e.get("layer"),
                e.get("principal"),
                e.get("code"),
                e.get("outcome") or "ok",
                Json(dict(e.get("details") or {}), dumps=dump_json),
            ]
            for e in events
        ]
        with self.transaction("memory_events") as conn, conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO memory_events (tenant_id, id, ts, event, memory_id, layer, principal, code, outcome, "
                "details) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                rows,
            )

    def delete_memory_events(self, tenant_id: str, memory_ids: Sequence[str]) -> int:
        with self.transaction("memory_events") as conn, conn.cursor() as cur:
            cur.execute(
                "DELETE FROM memory_events WHERE tenant_id = %s AND memory_id = ANY(%s)", [tenant_id, list(memory_ids)]
            )
            return int(cur.rowcount)

    def prune_memory_events(self, tenant_id: str, events: Sequence[str], before: datetime) -> int:
        with self.transaction("memory_events") as conn, conn.cursor() as cur:
            cur.execute(
                "DELETE FROM memory_events WHERE tenant_id = %s AND event = ANY(%s) AND ts < %s",
                [tenant_id, builtins.list(events), to_utc(before)],
            )
            return int(cur.rowcount)

    def count_memory_events(self, tenant_id: str, since: datetime | None = None) -> dict[str, int]:
        where = "tenant_id = %s"
        params: builtins.list[Any] = [tenant_id]
        if since is not None:
            where += " AND ts >= %s"
            params.append(to_utc(since))
        with self._conn("memory_events") as conn:
            rows = conn.execute(
                f"SELECT event, outcome, count(*) FROM memory_events WHERE {where} GROUP BY event, outcome", params
            ).fetchall()
        counts: dict[str, int] = {}
        for event, outcome, n in rows:
            counts[str(event)] = counts.get(str(event), 0) + int(n)
            counts[f"{event}.{outcome}"] = counts.get(f"{event}.{outcome}", 0) + int(n)
        return counts

    def list_memory_events(
        self, tenant_id: str, *, memory_id: str | None = None, events: Sequence[str] | None = None, limit: int = 50
    ) -> builtins.list[dict[str, Any]]:
        where = "tenant_id = %s"
        params: builtins.list[Any] = [tenant_id]
        if memory_id is not None:
            where += " AND memory_id = %s"
            params.append(memory_id)
        if events is not None:
            where += " AND event = ANY(%s)"
            params.append(builtins.list(events))
        params.append(int(limit))
        with self._conn("memory_events") as conn:
            rows = conn.execute(
                "SELECT id, ts, event, memory_id, layer, principal, code, outcome, details FROM memory_events "
                f"WHERE {where} ORDER BY ts DESC, id DESC LIMIT %s",
                params,
            ).fetchall()
        return [
            {
                "tenant_id": tenant_id,
                "id": r[0],
                "ts": r[1],
                "event": r[2],
                "memory_id": r[3],
                "layer": r[4],
                "principal": r[5],
                "code": r[6],
                "outcome": r[7],
                "details": r[8] or {},
            }
            for r in rows
        ]

    def daily_memory_events(self, tenant_id: str, since: datetime) -> builtins.list[tuple[date, str, int]]:
        with self._conn("memory_events") as conn:
            rows = conn.execute(
                "SELECT (ts AT TIME ZONE 'UTC')::date AS day, event, count(*) FROM memory_events "
                "WHERE tenant_id = %s AND ts >= %s GROUP BY day, event ORDER BY day, event",
                [tenant_id, to_utc(since)],
            ).fetchall()
        return [(r[0], str(r[1]), int(r[2])) for r in rows]

    def count_user_memories(
        self, tenant_id: str, user_id: str, now: datetime, *, exclude_ids: Sequence[str] = (), tx: Any = None
    ) -> int:
        """Inside a write transaction (``tx``, the quota hook) the count first takes a transaction-level
        advisory lock on (tenant, user), so concurrent adds for one user are counted one after the
        other (READ COMMITTED: the count's snapshot is taken after the lock) and the quota holds."""
        count_sql = (
            "SELECT count(*) FROM memories WHERE tenant_id = %s AND (identifiers ->> 'user_id') = %s "
            "AND status = 'active' AND (expires_at IS NULL OR expires_at > %s) AND NOT (id = ANY(%s))"
        )
        params = [tenant_id, user_id, to_utc(now), list(exclude_ids)]
        if tx is not None:
            tx.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, %s))",
                [f"{tenant_id}\x1f{user_id}", _QUOTA_LOCK_SEED],
            )
            row = tx.execute(count_sql, params).fetchone()
        else:
            with self._conn("quota") as conn:
                row = conn.execute(count_sql, params).fetchone()
        return int(row[0]) if row else 0
