"""API keys: ``smk_<key_id>_<secret>``, shown once, stored as a salted (and optionally peppered) hash.

Why SHA-256 and not a slow password hash: the secret is 256 random bits from :mod:`secrets`, so a
brute-force search is infeasible whatever the hash speed; a slow KDF (bcrypt/argon2) only protects
low-entropy human passwords and would add tens of milliseconds to every request. Each record has its
own random salt; ``STRATAMEM_KEY_PEPPER`` (kept outside the database) is mixed in as an HMAC key, so a
stolen database file alone does not even allow offline verification. Comparison is constant-time.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from ..errors import ErrorCode, MemoryError
from ..keys_model import ApiKeyRecord
from ..layers import parse_identifiers
from ..model import Grant, TenantContext
from ..providers.base import MemoryProvider
from ..settings import Settings

PREFIX = "smk"
#: A key's explicit grants live in its identifiers record under this name (space-separated scopes),
#: so the api_keys table of every provider keeps its columns.
GRANTS_FIELD = "grants"
ROLES = ("reader", "writer", "admin")
_KEY_RE = re.compile(r"^smk_([0-9a-f]{16})_([A-Za-z0-9_-]{20,128})$")


def _pepper() -> bytes:
    return Settings().key_pepper.encode()


def hash_secret(secret: str, salt: str) -> str:
    return hmac.new(_pepper(), (salt + ":" + secret).encode(), hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class CreatedKey:
    key: str
    record: ApiKeyRecord


def key_identifiers(record: ApiKeyRecord) -> dict[str, str]:
    """The identifiers a key is bound to (without its grants)."""
    return {k: v for k, v in record.identifiers.items() if k != GRANTS_FIELD}


def key_grants(record: ApiKeyRecord) -> list[str]:
    """The scopes a key was granted explicitly (``team:t1`` …), beyond its identifiers."""
    return record.identifiers.get(GRANTS_FIELD, "").split()


def credential_grant(roles: Sequence[str], identifiers: Mapping[str, str], scopes: Sequence[str]) -> Grant:
    """The grant of a credential: tenant-wide for admins and for credentials bound to nothing (service
    keys/tokens with neither identifiers nor grants); otherwise its identifiers plus its explicit scopes."""
    if "admin" in roles or (not identifiers and not scopes):
        return Grant(all=True)
    return Grant.parse(scopes, identifiers)


def create_key(
    provider: MemoryProvider,
    tenant_id: str,
    role: str = "writer",
    *,
    name: str | None = None,
    identifiers: Mapping[str, str] | None = None,
    grants: Sequence[str] = (),
) -> CreatedKey:
    """Create and store a key; the plaintext is only in the returned object. A key bound to
    identifiers acts only for them plus ``grants`` (``["team:t1", "project:p1"]``, or ``["all"]``)."""
    if role not in ROLES:
        raise MemoryError(
            ErrorCode.INVALID_PARAMS,
            f"role must be one of {', '.join(ROLES)}",
            operation="keys",
            details={"field": "role"},
        )
    TenantContext(tenant_id=tenant_id).validate_at(datetime.now(UTC), "keys")
    ids = parse_identifiers(dict(identifiers or {}), "keys").model_dump(by_alias=True, exclude_none=True)
    scopes = Grant.parse(grants).scopes()  # validated, canonical
    if scopes:
        ids[GRANTS_FIELD] = " ".join(scopes)
    key_id = secrets.token_hex(8)
    secret = secrets.token_urlsafe(32)
    salt = secrets.token_hex(16)
    record = ApiKeyRecord(
        key_id=key_id,
        tenant_id=tenant_id,
        name=name or f"key-{key_id[:6]}",
        roles=(role,),
        salt=salt,
        key_hash=hash_secret(secret, salt),
        created_at=datetime.now(UTC),
        identifiers=ids,
    )
    provider.api_key_put(record)
    return CreatedKey(key=f"{PREFIX}_{key_id}_{secret}", record=record)


def verify_key(provider: MemoryProvider, key: str) -> ApiKeyRecord:
    """The live record of a presented key, or INVALID_TENANT_CONTEXT (bad format, unknown, revoked)."""
    m = _KEY_RE.match(key.strip())
    invalid = MemoryError(ErrorCode.INVALID_TENANT_CONTEXT, "invalid or revoked API key", operation="auth")
    if m is None:
        raise invalid
    record = provider.api_key_get(m.group(1))
    if record is None:
        hash_secret(m.group(2), "0" * 32)  # same work either way: no timing oracle for key ids
        raise invalid
    if not hmac.compare_digest(record.key_hash, hash_secret(m.group(2), record.salt)) or record.revoked_at:
        raise invalid
    return record


class KeyCache:
    """Verified API keys for ``ttl`` seconds, so a request need not read the key's record and hash
    its secret again (the read is a store round trip and, on DuckDB, waits for queued writes).

    Entries are keyed by the SHA-256 of the presented key (the plaintext is never kept) and hold
    the verified record; only successful verifications are cached. A key revoked through this
    server (``invalidate``/``clear`` from the revoke and forget-user routes) is refused at once; one
    revoked elsewhere (the CLI, another server on the same database) within ``ttl`` seconds. At most
    ``max_entries`` keys are kept (least recently used out first). Thread-safe. ``ttl`` 0 disables it.
    """

    def __init__(self, ttl: float, max_entries: int = 10_000, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self.max_entries = max_entries
        self._clock = clock
        self._entries: OrderedDict[str, tuple[float, ApiKeyRecord]] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def _digest(key: str) -> str:
        return hashlib.sha256(key.strip().encode()).hexdigest()

    def verify(self, provider: MemoryProvider, key: str) -> ApiKeyRecord:
        """The live record of ``key``: from the cache while fresh, else :func:`verify_key` (cached).

        Args:
            provider: The store holding the keys.
            key: The presented API key.

        Returns:
            The key's record.

        Raises:
            MemoryError: INVALID_TENANT_CONTEXT for a malformed, unknown or revoked key.
        """
        if self.ttl <= 0:
            return verify_key(provider, key)
        digest = self._digest(key)
        now = self._clock()
        with self._lock:
            hit = self._entries.get(digest)
            if hit is not None and hit[0] > now:
                self._entries.move_to_end(digest)
                return hit[1]
        record = verify_key(provider, key)
        with self._lock:
            self._entries[digest] = (now + self.ttl, record)
            self._entries.move_to_end(digest)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
        return record

    def holds(self, key: str) -> bool:
        """Whether :meth:`verify` would answer ``key`` from the cache (a fresh entry), without the store.

        Args:
            key: The presented API key.
        """
        if self.ttl <= 0:
            return False
        digest = self._digest(key)
        with self._lock:
            hit = self._entries.get(digest)
            return hit is not None and hit[0] > self._clock()

    def invalidate(self, key_id: str) -> None:
        """Forget every cached verification of the key ``key_id`` (it was revoked).

        Args:
            key_id: The key's id.
        """
        with self._lock:
            for digest in [d for d, (_, rec) in self._entries.items() if rec.key_id == key_id]:
                del self._entries[digest]

    def clear(self) -> None:
        """Forget every cached verification."""
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

    def digests(self) -> list[str]:
        """The keys' SHA-256 digests held (what the cache stores instead of the keys)."""
        with self._lock:
            return list(self._entries)
