"""Encrypted DuckDB files: DuckDB's own database encryption (AES-256-GCM over every block, the WAL
and temporary files), opened by attaching the file with its key; and key rotation.

DuckDB writes encrypted files only with a vetted crypto library loaded, which its ``httpfs``
extension brings (OpenSSL); the ``encryption`` extra installs the extension for this DuckDB version
as a Python package (``duckdb-extension-httpfs``), loaded from there, so nothing is downloaded at
run time. Without it, ``LOAD httpfs`` is tried (an extension DuckDB installed itself).
"""

from __future__ import annotations

import hashlib
import os
import shutil
from contextlib import suppress
from pathlib import Path
from typing import Any

import duckdb

from ...encryption import EncryptionKey
from ...errors import ErrorCode, MemoryError

#: The catalog name an encrypted store file is attached as.
CATALOG = "stratamem_store"


def _sql_string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def load_crypto(conn: Any) -> None:
    """Load the extension that lets DuckDB write encrypted files, or raise CONFIGURATION_ERROR."""
    errors: list[str] = []
    try:
        import duckdb_extension_httpfs  # type: ignore[import-untyped,import-not-found,unused-ignore]  # noqa: PLC0415  encryption extra

        path = Path(duckdb_extension_httpfs.__file__).parent / "extensions" / f"v{duckdb.__version__}"
        candidates = sorted(path.glob("httpfs.duckdb_extension"))
    except ImportError:
        candidates = []
    for ext in candidates:
        try:
            conn.execute(f"LOAD {_sql_string(str(ext))}")
            return
        except duckdb.Error as exc:
            errors.append(str(exc))
    try:
        conn.execute("LOAD httpfs")
    except duckdb.Error as exc:
        errors.append(str(exc))
        raise MemoryError(
            ErrorCode.CONFIGURATION_ERROR,
            "an encrypted DuckDB store needs DuckDB's httpfs extension for its crypto library: pip install "
            f"'stratamem[encryption]' (duckdb-extension-httpfs=={duckdb.__version__})",
            operation="open",
            details={"reason": "encryption_unavailable", "errors": [e[:200] for e in errors]},
        ) from exc


def _redact(message: str, key: EncryptionKey | None) -> str:
    return message.replace(key.reveal(), "***") if key is not None else message


def open_error(exc: duckdb.Error, path: str, key: EncryptionKey | None) -> MemoryError | None:
    """The coded error for a DuckDB failure to open ``path`` that is about its key, else None."""
    msg = str(exc)
    low = msg.lower()
    if "wrong encryption key" in low:
        return MemoryError(
            ErrorCode.CONFIGURATION_ERROR,
            f"DuckDB file {path} is encrypted with another key than the configured one (key id "
            f"{key.key_id if key else '?'}); nothing was read or changed",
            operation="open",
            details={"path": path, "reason": "encryption_key_wrong", "key_id": key.key_id if key else None},
            retryable=False,
        )
    if "without a key" in low:
        return MemoryError(
            ErrorCode.CONFIGURATION_ERROR,
            f"DuckDB file {path} is encrypted and no encryption key is configured (set "
            "STRATAMEM_ENCRYPTION_KEY or STRATAMEM_ENCRYPTION_KEY_FILE, or pass encryption_key=)",
            operation="open",
            details={"path": path, "reason": "encryption_key_missing"},
            retryable=False,
        )
    if "is not encrypted" in low:
        return MemoryError(
            ErrorCode.CONFIGURATION_ERROR,
            f"DuckDB file {path} is not encrypted but an encryption key is configured; encrypt it first "
            "with `stratamem encryption rotate --db FILE --from-plaintext` (or remove the key)",
            operation="open",
            details={"path": path, "reason": "store_not_encrypted"},
            retryable=False,
        )
    if "crypto module" in low:
        return MemoryError(
            ErrorCode.CONFIGURATION_ERROR,
            _redact(f"DuckDB cannot write the encrypted file {path}: {msg}", key),
            operation="open",
            details={"path": path, "reason": "encryption_unavailable"},
            retryable=False,
        )
    return None


def attach(conn: Any, path: str, key: EncryptionKey, *, alias: str = CATALOG, read_only: bool = False) -> None:
    """Attach the file ``path`` encrypted with ``key`` as ``alias`` (created when missing).

    A DuckDB error about the key becomes a coded MemoryError; other errors propagate with the key
    removed from their message."""
    options = f"ENCRYPTION_KEY {_sql_string(key.reveal())}" + (", READ_ONLY" if read_only else "")
    try:
        conn.execute(f"ATTACH {_sql_string(path)} AS {alias} ({options})")
    except duckdb.Error as exc:
        coded = open_error(exc, path, key)
        if coded is not None:
            raise coded from None
        raise type(exc)(_redact(str(exc), key)) from None


def connect(path: str, key: EncryptionKey, config: dict[str, Any]) -> Any:
    """An in-memory connection with the encrypted store file attached and selected (``USE``)."""
    conn = duckdb.connect(":memory:", config=config)
    try:
        load_crypto(conn)
        conn.execute("SET temp_file_encryption = true")
        attach(conn, path, key)
        conn.execute(f"USE {CATALOG}")
    except BaseException:
        conn.close()
        raise
    return conn


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _table_digests(conn: Any, alias: str) -> dict[str, tuple[int, Any]]:
    """Row count and an order-independent hash of every table of catalog ``alias``."""
    tables = [
        (str(s), str(t))
        for s, t in conn.execute(
            "SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = ? ORDER BY 1, 2", [alias]
        ).fetchall()
    ]
    out: dict[str, tuple[int, Any]] = {}
    for schema, table in tables:
        ident = f'{alias}."{schema}"."{table.replace(chr(34), chr(34) * 2)}"'
        row = conn.execute(f"SELECT count(*), bit_xor(hash(t)) FROM {ident} AS t").fetchone()
        out[f"{schema}.{table}"] = (int(row[0]), row[1])
    return out


def rotate(path: str | os.PathLike[str], old: EncryptionKey | None, new: EncryptionKey | None) -> dict[str, Any]:
    """Re-encrypt the DuckDB file ``path`` from key ``old`` to key ``new`` (None: plaintext).

    Safe against failures: the data is copied into a new file beside it (``COPY FROM DATABASE``), the
    copy is reopened with the new key and every table's row count and content hash compared with the
    original, and only then is the new file moved over the old one (``os.replace``, atomic). Any
    failure before that leaves the original untouched and removes the new file. The file must not be
    open in another process (DuckDB's lock refuses it). Saved search-index graphs beside the file
    (``FILE.index``) are removed: they are rebuilt, and an encrypted store keeps none on disk."""
    src = Path(path).resolve()
    if not src.is_file():
        raise MemoryError(
            ErrorCode.CONFIGURATION_ERROR, f"no DuckDB file at {src}", operation="rotate", details={"path": str(src)}
        )
    if old is None and new is None:
        raise MemoryError(
            ErrorCode.INVALID_PARAMS, "give an old key, a new key, or both", operation="rotate", details={}
        )
    tmp = src.with_name(src.name + ".rotating")
    for leftover in (tmp, Path(f"{tmp}.wal")):
        leftover.unlink(missing_ok=True)
    conn = duckdb.connect(":memory:")
    try:
        load_crypto(conn)
        conn.execute("SET temp_file_encryption = true")
        if old is None:
            try:
                conn.execute(f"ATTACH {_sql_string(str(src))} AS old_store")
            except duckdb.Error as exc:
                coded = open_error(exc, str(src), None)
                if coded is not None:
                    raise coded from None
                raise
        else:
            attach(conn, str(src), old, alias="old_store")
        # fold the WAL into the file so the copy below reads one consistent state
        conn.execute("CHECKPOINT old_store")
        before_hash = _digest(src)
        if new is None:
            conn.execute(f"ATTACH {_sql_string(str(tmp))} AS new_store")
        else:
            attach(conn, str(tmp), new, alias="new_store")
        conn.execute("COPY FROM DATABASE old_store TO new_store")
        conn.execute("CHECKPOINT new_store")
        expected = _table_digests(conn, "old_store")
        conn.execute("DETACH new_store")
        # verify the new file as it will be opened: a fresh attach with the new key, read-only
        if new is None:
            conn.execute(f"ATTACH {_sql_string(str(tmp))} AS check_store (READ_ONLY)")
        else:
            attach(conn, str(tmp), new, alias="check_store", read_only=True)
        got = _table_digests(conn, "check_store")
        if got != expected:
            raise MemoryError(
                ErrorCode.PROVIDER_ERROR,
                f"the re-encrypted copy of {src} does not match the original; the original is unchanged",
                operation="rotate",
                details={"path": str(src), "tables": sorted(set(got) ^ set(expected))},
                retryable=False,
            )
        conn.execute("DETACH check_store")
        conn.execute("DETACH old_store")
    except BaseException:
        conn.close()
        for leftover in (tmp, Path(f"{tmp}.wal")):
            leftover.unlink(missing_ok=True)
        raise
    conn.close()
    if _digest(src) != before_hash:  # written to while we copied (DuckDB's lock should prevent it)
        tmp.unlink(missing_ok=True)
        raise MemoryError(
            ErrorCode.CONFLICT,
            f"{src} changed during the rotation; nothing was replaced, run it again with the store closed",
            operation="rotate",
            details={"path": str(src)},
        )
    os.replace(tmp, src)
    Path(f"{src}.wal").unlink(missing_ok=True)  # checkpointed above: empty or gone
    with suppress(OSError):
        shutil.rmtree(f"{src}.index")
    return {
        "path": str(src),
        "tables": len(expected),
        "rows": sum(n for n, _ in expected.values()),
        "old_key_id": old.key_id if old else None,
        "new_key_id": new.key_id if new else None,
    }
