"""Encryption at rest: the configured key and the envelope that encrypts snapshot files.

One master key (``STRATAMEM_ENCRYPTION_KEY``, or the first line of the file named by
``STRATAMEM_ENCRYPTION_KEY_FILE``, or ``Memory.open(encryption_key=…)``) does two jobs:

* the embedded DuckDB file is encrypted with DuckDB's own database encryption (AES-256-GCM), the
  key given as it is (``ATTACH … (ENCRYPTION_KEY …)``, so the DuckDB CLI opens the file with it);
* every snapshot file is encrypted before upload (:func:`encrypt_file`): a fresh 256-bit data key per
  file encrypts the file with AES-256-GCM in 1 MiB chunks, and the data key is stored wrapped
  (AES-256-GCM) by a key-encryption key derived from the master key with HKDF-SHA256.

A key has a ``key_id`` (derived with HKDF, safe to show and to store) so a wrong key is named as such
instead of failing as "corrupt". Previous keys (``STRATAMEM_ENCRYPTION_PREVIOUS_KEY_FILE``, one per
line) still decrypt snapshots written before a rotation. Uses the ``cryptography`` package.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import struct
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from .errors import ErrorCode, MemoryError
from .settings import Settings

ENV_KEY = "STRATAMEM_ENCRYPTION_KEY"
ENV_KEY_FILE = "STRATAMEM_ENCRYPTION_KEY_FILE"
ENV_PREVIOUS_KEY_FILE = "STRATAMEM_ENCRYPTION_PREVIOUS_KEY_FILE"
#: Shortest accepted key, in characters (``stratamem encryption generate-key`` makes 43).
MIN_KEY_LENGTH = 16

#: First bytes of an encrypted snapshot file.
MAGIC = b"STRATAMEM-ENC1\n"
_CHUNK = 1 << 20
_TAG = 16
_WRAP_AAD = b"stratamem snapshot data key v1:"


def _crypto_missing(exc: ImportError) -> MemoryError:
    return MemoryError(
        ErrorCode.CONFIGURATION_ERROR,
        "encryption at rest needs the encryption extra: pip install 'stratamem[encryption]'",
        operation="open",
        details={"reason": "encryption_unavailable"},
    )


def _hkdf(secret: bytes, info: bytes, length: int = 32) -> bytes:
    try:
        from cryptography.hazmat.primitives import hashes  # noqa: PLC0415  encryption extra (cryptography)
        from cryptography.hazmat.primitives.kdf.hkdf import HKDF  # noqa: PLC0415  encryption extra
    except ImportError as exc:  # pragma: no cover - the extra is installed in every test environment
        raise _crypto_missing(exc) from exc
    return HKDF(algorithm=hashes.SHA256(), length=length, salt=None, info=info).derive(secret)


class EncryptionKey:
    """A master key. ``repr``/``str`` show only its ``key_id``, never the secret."""

    __slots__ = ("_secret", "key_id")

    def __init__(self, secret: str) -> None:
        if not isinstance(secret, str) or len(secret.strip()) < MIN_KEY_LENGTH:
            raise MemoryError(
                ErrorCode.CONFIGURATION_ERROR,
                f"the encryption key must be at least {MIN_KEY_LENGTH} characters "
                "(`stratamem encryption generate-key` prints a new one)",
                operation="open",
                details={"reason": "encryption_key_too_short"},
            )
        self._secret = secret.strip()
        #: Public id of the key (16 hex digits), stored beside what it encrypts.
        self.key_id = _hkdf(self._secret.encode(), b"stratamem key id v1", 8).hex()

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> EncryptionKey:
        keys = _read_key_file(path)
        if not keys:
            raise MemoryError(
                ErrorCode.CONFIGURATION_ERROR,
                f"encryption key file {os.fspath(path)} is empty",
                operation="open",
                details={"reason": "encryption_key_file", "path": os.fspath(path)},
            )
        return keys[0]

    def reveal(self) -> str:
        """The secret itself (for DuckDB's ``ENCRYPTION_KEY``)."""
        return self._secret

    def derive(self, purpose: bytes) -> bytes:
        """A 256-bit key for one purpose (HKDF-SHA256 with ``purpose`` as info)."""
        return _hkdf(self._secret.encode(), b"stratamem " + purpose)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EncryptionKey) and secrets.compare_digest(
            self._secret.encode(), other._secret.encode()
        )

    def __hash__(self) -> int:
        return hash(self.key_id)

    def __repr__(self) -> str:
        return f"EncryptionKey(key_id={self.key_id!r})"

    __str__ = __repr__


def _read_key_file(path: str | os.PathLike[str]) -> list[EncryptionKey]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise MemoryError(
            ErrorCode.CONFIGURATION_ERROR,
            f"cannot read encryption key file {os.fspath(path)}: {exc.strerror or type(exc).__name__}",
            operation="open",
            details={"reason": "encryption_key_file", "path": os.fspath(path)},
        ) from exc
    return [EncryptionKey(line) for line in text.splitlines() if line.strip() and not line.startswith("#")]


def key_from_env(env: Mapping[str, str] | None = None, *, settings: Settings | None = None) -> EncryptionKey | None:
    """The key configured in the environment (``STRATAMEM_ENCRYPTION_KEY`` or ``…_KEY_FILE``), or None.

    Args:
        env: Variables to read instead of the settings (a mapping of ``STRATAMEM_*`` names).
        settings: The environment's settings (None: read the environment now).

    Returns:
        The key, or None when none is configured.

    Raises:
        MemoryError: ``CONFIGURATION_ERROR`` when both are set or the key file cannot be read.
    """
    if env is not None:
        value, path = env.get(ENV_KEY) or None, env.get(ENV_KEY_FILE) or None
    else:
        settings = settings or Settings()
        value, path = settings.encryption_key or None, settings.encryption_key_file or None
    if value and path:
        raise MemoryError(
            ErrorCode.CONFIGURATION_ERROR,
            f"set either {ENV_KEY} or {ENV_KEY_FILE}, not both",
            operation="open",
            details={"reason": "encryption_key_ambiguous"},
        )
    if path:
        return EncryptionKey.from_file(path)
    return EncryptionKey(value) if value else None


def previous_keys_from_env(
    env: Mapping[str, str] | None = None, *, settings: Settings | None = None
) -> list[EncryptionKey]:
    """Keys that only decrypt (snapshots written before a rotation): ``STRATAMEM_ENCRYPTION_PREVIOUS_KEY_FILE``
    (from ``env`` when given, else from the settings; None: read the environment now)."""
    path = env.get(ENV_PREVIOUS_KEY_FILE) if env is not None else (settings or Settings()).encryption_previous_key_file
    return _read_key_file(path) if path else []


def resolve_key(key: EncryptionKey | str | None, settings: Settings | None = None) -> EncryptionKey | None:
    """An explicit key (object or string) or, when None, the settings' (None: read the environment now)."""
    if isinstance(key, EncryptionKey):
        return key
    if key is not None:
        return EncryptionKey(key)
    return key_from_env(settings=settings)


def generate_key() -> str:
    """A new random key (256 bits, URL-safe base64)."""
    return secrets.token_urlsafe(32)


# ------------------------------------------------------------------------------------- envelope
def _aesgcm(key: bytes) -> Any:
    try:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM  # noqa: PLC0415  encryption extra
    except ImportError as exc:  # pragma: no cover
        raise _crypto_missing(exc) from exc
    return AESGCM(key)


def _nonce(prefix: bytes, index: int, last: bool) -> bytes:
    # 7-byte random prefix, 4-byte chunk counter, 1-byte "last chunk" flag: a file cut short or with
    # chunks reordered fails authentication.
    return prefix + struct.pack(">IB", index, 1 if last else 0)


def is_encrypted(path: Path) -> bool:
    with path.open("rb") as fh:
        return fh.read(len(MAGIC)) == MAGIC


def encrypt_file(src: Path, dst: Path, key: EncryptionKey) -> None:
    """Write ``src`` encrypted to ``dst`` (envelope: magic, header, AES-256-GCM chunks)."""
    data_key = secrets.token_bytes(32)
    wrap_nonce = secrets.token_bytes(12)
    wrapped = _aesgcm(key.derive(b"snapshot kek v1")).encrypt(wrap_nonce, data_key, _WRAP_AAD + key.key_id.encode())
    prefix = secrets.token_bytes(7)
    header = json.dumps(
        {
            "v": 1,
            "alg": "AES-256-GCM",
            "key_id": key.key_id,
            "wrap_nonce": base64.b64encode(wrap_nonce).decode(),
            "wrapped_key": base64.b64encode(wrapped).decode(),
            "nonce_prefix": base64.b64encode(prefix).decode(),
            "chunk": _CHUNK,
        },
        sort_keys=True,
    ).encode()
    aad = MAGIC + header
    cipher = _aesgcm(data_key)
    with src.open("rb") as fin, dst.open("wb") as fout:
        fout.write(MAGIC + struct.pack(">I", len(header)) + header)
        index, chunk = 0, fin.read(_CHUNK)
        while True:
            following = fin.read(_CHUNK) if len(chunk) == _CHUNK else b""
            last = not following
            fout.write(cipher.encrypt(_nonce(prefix, index, last), chunk, aad))
            if last:
                return
            index, chunk = index + 1, following


def _envelope_error(message: str, reason: str, **details: Any) -> MemoryError:
    return MemoryError(
        ErrorCode.CONFIGURATION_ERROR,
        message,
        operation="snapshot",
        details={"reason": reason, **details},
        retryable=False,
    )


def _read_header(fh: IO[bytes]) -> tuple[dict[str, Any], bytes]:
    if fh.read(len(MAGIC)) != MAGIC:
        raise _envelope_error("not an encrypted snapshot file", "not_encrypted")
    (size,) = struct.unpack(">I", fh.read(4))
    if size > 1 << 16:
        raise _envelope_error("encrypted snapshot file has an invalid header", "corrupt")
    raw = fh.read(size)
    try:
        header: dict[str, Any] = json.loads(raw)
    except ValueError as exc:
        raise _envelope_error("encrypted snapshot file has an invalid header", "corrupt") from exc
    return header, raw


def decrypt_file(src: Path, dst: Path, keys: Sequence[EncryptionKey]) -> None:
    """Decrypt an envelope written by :func:`encrypt_file` with whichever of ``keys`` it names.

    No key, a key it does not name, or a file that fails authentication: CONFIGURATION_ERROR with
    ``details.reason`` ``encryption_key_missing`` / ``encryption_key_wrong`` / ``corrupt``."""
    from cryptography.exceptions import InvalidTag  # noqa: PLC0415  encryption extra (cryptography)

    with src.open("rb") as fin:
        header, raw = _read_header(fin)
        key_id = str(header.get("key_id"))
        if not keys:
            raise _envelope_error(
                f"snapshot file is encrypted (key id {key_id}) and no encryption key is configured "
                f"(set {ENV_KEY} or {ENV_KEY_FILE})",
                "encryption_key_missing",
                file_key_id=key_id,
            )
        key = next((k for k in keys if k.key_id == key_id), None)
        if key is None:
            raise _envelope_error(
                f"snapshot file was encrypted with key id {key_id}, not with the configured key "
                f"({', '.join(k.key_id for k in keys)}); give that key ({ENV_PREVIOUS_KEY_FILE} holds old keys)",
                "encryption_key_wrong",
                file_key_id=key_id,
                key_ids=[k.key_id for k in keys],
            )
        aad = MAGIC + raw
        try:
            data_key = _aesgcm(key.derive(b"snapshot kek v1")).decrypt(
                base64.b64decode(header["wrap_nonce"]),
                base64.b64decode(header["wrapped_key"]),
                _WRAP_AAD + key_id.encode(),
            )
            prefix, chunk = base64.b64decode(header["nonce_prefix"]), int(header["chunk"])
            if not 1 <= chunk <= 16 * _CHUNK or len(prefix) != 7:
                raise ValueError("invalid chunk size or nonce")
            cipher = _aesgcm(data_key)
            with dst.open("wb") as fout:
                index, block = 0, fin.read(chunk + _TAG)
                while True:
                    following = fin.read(chunk + _TAG) if len(block) == chunk + _TAG else b""
                    last = not following
                    fout.write(cipher.decrypt(_nonce(prefix, index, last), block, aad))
                    if last:
                        return
                    index, block = index + 1, following
        except (InvalidTag, KeyError, ValueError, TypeError) as exc:
            dst.unlink(missing_ok=True)
            raise _envelope_error(
                "encrypted snapshot file failed authentication (corrupted or tampered with)", "corrupt"
            ) from exc


# ------------------------------------------------------------------------------- sealed fields
class FieldSealer:
    """Encrypts JSON values stored in a database column (PostgreSQL ``memories.metadata``).

    Each tenant has its own data key, derived from the master key and the tenant id with HKDF; a value
    is encrypted with AES-256-GCM bound (associated data) to its tenant and row id, so a sealed value
    copied to another row or tenant does not decrypt. The sealed form is a JSON object
    ``{"$stratamem_enc": 1, "k": key_id, "n": nonce, "c": ciphertext}``; a value without that mark
    (written before encryption was turned on) is returned as it is."""

    MARK = "$stratamem_enc"

    def __init__(self, key: EncryptionKey, previous: Sequence[EncryptionKey] = ()) -> None:
        self.key = key
        self._keys = {k.key_id: k for k in (*previous, key)}
        self._tenant_keys: dict[tuple[str, str], Any] = {}

    @property
    def key_ids(self) -> set[str]:
        return set(self._keys)

    def _cipher(self, key: EncryptionKey, tenant_id: str) -> Any:
        cached = self._tenant_keys.get((key.key_id, tenant_id))
        if cached is None:
            cached = _aesgcm(key.derive(b"column key v1:" + tenant_id.encode()))
            self._tenant_keys[(key.key_id, tenant_id)] = cached
        return cached

    @staticmethod
    def _aad(tenant_id: str, row_id: str) -> bytes:
        return f"{tenant_id}\x00{row_id}".encode()

    def seal(self, tenant_id: str, row_id: str, value: Any) -> dict[str, Any]:
        nonce = secrets.token_bytes(12)
        plain = json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
        sealed = self._cipher(self.key, tenant_id).encrypt(nonce, plain, self._aad(tenant_id, row_id))
        return {
            self.MARK: 1,
            "k": self.key.key_id,
            "n": base64.b64encode(nonce).decode(),
            "c": base64.b64encode(sealed).decode(),
        }

    @classmethod
    def is_sealed(cls, value: Any) -> bool:
        return isinstance(value, dict) and cls.MARK in value

    def open(self, tenant_id: str, row_id: str, value: Any) -> Any:
        if not self.is_sealed(value):
            return value
        from cryptography.exceptions import InvalidTag  # noqa: PLC0415  encryption extra (cryptography)

        key = self._keys.get(str(value.get("k")))
        if key is None:
            raise MemoryError(
                ErrorCode.CONFIGURATION_ERROR,
                f"a stored value is encrypted with key id {value.get('k')}, which is not configured",
                operation="provider",
                details={"reason": "encryption_key_wrong", "key_id": value.get("k")},
                retryable=False,
            )
        try:
            plain = self._cipher(key, tenant_id).decrypt(
                base64.b64decode(value["n"]), base64.b64decode(value["c"]), self._aad(tenant_id, row_id)
            )
        except (InvalidTag, KeyError, ValueError, TypeError) as exc:
            raise MemoryError(
                ErrorCode.PROVIDER_ERROR,
                "a stored encrypted value failed authentication (corrupted, or moved from another row)",
                operation="provider",
                details={"reason": "corrupt"},
                retryable=False,
            ) from exc
        return json.loads(plain)
