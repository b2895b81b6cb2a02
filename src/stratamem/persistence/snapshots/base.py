"""Snapshot names, tenant prefixes and the manager's state: settings, the store, published manifests."""

from __future__ import annotations

import builtins
import logging
import secrets
import threading
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, cast

from pydantic import ValidationError

from ...encryption import EncryptionKey, previous_keys_from_env, resolve_key
from ...errors import ErrorCode, MemoryError
from ...model import _TENANT_RE, TenantContext
from ...providers.contracts import SnapshotSource, implements
from ...providers.duckdb import schema as duckdb_schema
from ..lazy import LazyLoader
from ..manifest import (
    FORMAT_VERSION,
    Manifest,
    Partitioning,
    PullReport,
    SnapshotInfo,
)
from ..s3 import S3Settings, S3Store

if TYPE_CHECKING:
    from ...engine import MemoryEngine


log = logging.getLogger("stratamem.snapshots")

ROOT = "graph"
#: Store bookkeeping, never part of a tenant's snapshot.
BOOKKEEPING_TABLES = frozenset({"schema_version", "store_meta"})
#: Tenant tables that are not data: credentials must not travel to object storage, and a restore
#: must never bring back a revoked API key. Features may add theirs (``NOT_SNAPSHOTTED.add(...)``).
#: The access log is folded into ``memories`` before every export (``_snapshot_cursor``).
NOT_SNAPSHOTTED: set[str] = {"api_keys", duckdb_schema.ACCESS_LOG_TABLE}
DEFAULT_RETENTION = timedelta(days=7)
DEFAULT_PARTITION_ROWS = 5000
DEFAULT_COLD_START_BUDGET_S = 3.0
#: Imported first on a cold start: what a search reads.
CRITICAL_TABLES = ("memories", "lexical_postings", "tenant_policies", "memory_feedback")
#: Pure caches (a missing row is recomputed): a lazy load serves the tenant before importing them.
#: Features may add theirs.
CACHE_TABLES: set[str] = {"embedding_cache"}
_PART_COL = "_stratamem_part"
_ROW = "_stratamem_row"
_PARENT_ROW = "_stratamem_parent"
#: Time columns a table is range-partitioned on (the first one it has).
_TIME_COLUMNS = ("created_at", "ts")
#: A table without a time column whose rows belong to another table's rows (column -> table, key)
#: is partitioned by that row's ``created_at`` ranges: lexical postings follow their memory.
_PARENTS: dict[str, tuple[str, str]] = {"memory_id": ("memories", "id")}
_PARENT_TABLES = frozenset(t for t, _ in _PARENTS.values())
_NO_RANGE = Partitioning(kind="hash", columns=[])
_ID_FORMAT = "%Y%m%dT%H%M%S%fZ"


def _ident(name: str) -> str:
    """A catalog identifier (table/column name read from information_schema) quoted for SQL."""
    return '"' + name.replace('"', '""') + '"'


def _literal(path: Path) -> str:
    """A local path we created (temp dir) as a SQL string literal; COPY TO cannot bind it."""
    return "'" + str(path).replace("'", "''") + "'"


def tenant_prefix(tenant_id: str) -> str:
    """``{tenant_id}/graph/``; the tenant id grammar (no ``/``) keeps tenants' prefixes disjoint."""
    if not isinstance(tenant_id, str) or not _TENANT_RE.match(tenant_id):
        raise MemoryError(
            ErrorCode.INVALID_TENANT_CONTEXT,
            "tenant_id must be 1-128 characters of letters, digits and _.:@- and start with a letter or digit",
            operation="snapshot",
        )
    return f"{tenant_id}/{ROOT}/"


def _tenant_id(tenant: str | TenantContext) -> str:
    tid = tenant.tenant_id if isinstance(tenant, TenantContext) else tenant
    tenant_prefix(tid)
    return tid


def new_snapshot_id(now: datetime) -> str:
    return now.astimezone(UTC).strftime(_ID_FORMAT) + "-" + secrets.token_hex(3)


def snapshot_time(snapshot_id: str) -> datetime:
    return datetime.strptime(snapshot_id.split("-", 1)[0], _ID_FORMAT).replace(tzinfo=UTC)


def _to_utc(value: datetime | str) -> datetime:
    dt = datetime.fromisoformat(value.replace("Z", "+00:00")) if isinstance(value, str) else value
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


@dataclass
class _Table:
    name: str
    columns: list[tuple[str, str]]
    primary_key: list[str]


@dataclass
class _Written:
    """Objects a push created, removed again if it fails."""

    tmp_keys: list[str] = field(default_factory=list)
    final_keys: list[str] = field(default_factory=list)
    manifest_key: str | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


#: What a lazy pull waits for (within its budget): tenants able to answer searches, or fully loaded.
WaitFor = Literal["queryable", "loaded"]


def _check_wait_for(wait_for: str) -> None:
    if wait_for not in ("queryable", "loaded"):
        raise MemoryError(
            ErrorCode.INVALID_PARAMS,
            f"wait_for must be 'queryable' or 'loaded', not {wait_for!r}",
            operation="snapshot",
            details={"field": "wait_for"},
        )


class HasEngine(Protocol):
    """An object holding an engine (``stratamem.Memory``)."""

    @property
    def engine(self) -> MemoryEngine: ...


class SnapshotBase:
    """State of a snapshot manager and the manifests it reads (``mem.snapshots``)."""

    def __init__(
        self,
        memory: HasEngine | MemoryEngine,
        settings: S3Settings | None = None,
        *,
        store: S3Store | None = None,
        retention: timedelta = DEFAULT_RETENTION,
        gc_grace: timedelta = timedelta(hours=1),
        partition_rows: int = DEFAULT_PARTITION_ROWS,
        exclude_tables: tuple[str, ...] = (),
        clock: Callable[[], datetime] | None = None,
        encryption_key: EncryptionKey | str | None = None,
        previous_keys: Sequence[EncryptionKey | str] = (),
    ) -> None:
        engine = memory.engine if hasattr(memory, "engine") else memory
        #: Files are encrypted with this key before upload (None: ``STRATAMEM_ENCRYPTION_KEY``…, or
        #: plain files when no key is configured); ``previous_keys`` (and
        #: ``STRATAMEM_ENCRYPTION_PREVIOUS_KEY_FILE``) also decrypt, for snapshots older than a rotation.
        self.encryption_key = resolve_key(encryption_key)
        self.decryption_keys = [
            *([self.encryption_key] if self.encryption_key else []),
            *(k if isinstance(k, EncryptionKey) else EncryptionKey(k) for k in previous_keys),
            *previous_keys_from_env(),
        ]
        self.engine: MemoryEngine = engine
        provider = engine.provider
        if not implements(provider, SnapshotSource):
            raise MemoryError(
                ErrorCode.CONFIGURATION_ERROR,
                f"snapshots are not supported by provider {provider.name}",
                operation="snapshot",
            )
        self.provider = cast(SnapshotSource, provider)
        self.settings = settings or (store.settings if store is not None else S3Settings.from_env())
        self.s3 = store or S3Store(self.settings)
        self.retention = retention
        self.gc_grace = gc_grace
        self.partition_rows = max(1, int(partition_rows))
        self.exclude = BOOKKEEPING_TABLES | frozenset(NOT_SNAPSHOTTED) | frozenset(exclude_tables)
        self.clock = clock or (lambda: datetime.now(UTC))
        #: Reports of the pulls ``open_from_snapshot`` made.
        self.last_reports: builtins.list[PullReport] = []
        self._loader: LazyLoader | None = None
        self._manifest_cache: dict[str, Manifest] = {}
        #: (schema versions, embedding model, tables) of this store, read once per pull.
        self._catalog: tuple[set[int], str | None, set[str]] | None = None

    # ============================================================================= manifests
    def _manifest_keys(self, tenant_id: str) -> builtins.list[tuple[str, str]]:
        """``(snapshot_id, key)`` of every published manifest, newest first."""
        prefix = tenant_prefix(tenant_id) + "manifests/"
        out = []
        for obj in self.s3.list(prefix):
            key = str(obj["Key"])
            name = key[len(prefix) :]
            if name.endswith(".json") and "/" not in name:
                out.append((name[:-5], key))
        return sorted(out, reverse=True)

    def _load_manifest(self, tenant_id: str, key: str) -> Manifest:
        try:
            manifest = Manifest.model_validate_json(self.s3.get_bytes(key))
        except ValidationError as exc:
            raise MemoryError(
                ErrorCode.PROVIDER_ERROR,
                f"snapshot manifest {key} is not valid",
                operation="snapshot",
                details={"key": key, "error": str(exc)[:300]},
            ) from exc
        return self._checked_manifest(tenant_id, key, manifest)

    @staticmethod
    def _checked_manifest(tenant_id: str, key: str, manifest: Manifest) -> Manifest:
        if manifest.tenant_id != tenant_id or manifest.format_version > FORMAT_VERSION:
            raise MemoryError(
                ErrorCode.PROVIDER_ERROR,
                f"snapshot manifest {key} does not belong to this tenant or has an unsupported format",
                operation="snapshot",
                details={"key": key},
            )
        prefix = tenant_prefix(tenant_id)
        if any(not k.startswith(prefix) for k in manifest.object_keys()):
            raise MemoryError(
                ErrorCode.PROVIDER_ERROR,
                f"snapshot manifest {key} references files outside the tenant's prefix",
                operation="snapshot",
                details={"key": key},
            )
        return manifest

    def latest_manifest(self, tenant: str | TenantContext) -> Manifest | None:
        tenant_id = _tenant_id(tenant)
        for _, key in self._manifest_keys(tenant_id):
            try:
                return self._load_manifest(tenant_id, key)
            except MemoryError as exc:
                log.warning("skipping unreadable manifest %s: %s", key, exc.message)
        return None

    def list(self, tenant: str | TenantContext) -> builtins.list[SnapshotInfo]:
        """Published snapshots of a tenant, newest first."""
        tenant_id = _tenant_id(tenant)
        out = []
        for _, key in self._manifest_keys(tenant_id):
            try:
                m = self._load_manifest(tenant_id, key)
            except MemoryError:
                continue
            out.append(
                SnapshotInfo(
                    snapshot_id=m.snapshot_id,
                    tenant_id=tenant_id,
                    created_at=m.created_at,
                    rows=m.total_rows,
                    bytes=m.total_bytes,
                    files=sum(len(p.files) for t in m.tables for p in t.partitions),
                    schema_version=m.schema_version,
                    manifest_key=key,
                )
            )
        return out

    def _manifest(self, tenant_id: str, snapshot_id: str, key: str) -> Manifest:
        """A published manifest (immutable once written, so cached by id)."""
        cached = self._manifest_cache.get(snapshot_id)
        if cached is not None and cached.tenant_id == tenant_id:
            return cached
        manifest = self._load_manifest(tenant_id, key)
        self._manifest_cache[snapshot_id] = manifest
        return manifest

    # ================================================================================== misc
    def _audit(
        self, tenant_id: str, action: str, outcome: str, details: dict[str, Any], code: str | None = None
    ) -> None:
        with suppress(Exception):
            self.engine.audit.record(
                tenant_id=tenant_id, principal="snapshots", action=action, outcome=outcome, code=code, details=details
            )

    def stored_tenants(self) -> builtins.list[str]:
        """Tenants that have a prefix in the bucket."""
        out = []
        paginator = self.s3.client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self.s3.bucket, Delimiter="/"):
            for p in page.get("CommonPrefixes", []):
                name = str(p["Prefix"]).rstrip("/")
                if _TENANT_RE.match(name):
                    out.append(name)
        return sorted(out)
