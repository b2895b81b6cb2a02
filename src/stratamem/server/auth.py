"""Credentials → :class:`TenantContext`: API keys (``smk_…``) or signed JWTs (HS256/RS256, PyJWT).

The tenant always comes from the credential. No credential → MISSING_TENANT_CONTEXT; an unknown,
revoked, malformed, expired or badly signed one → INVALID_TENANT_CONTEXT.

JWT claims: ``tenant`` (or ``tenant_id``), ``sub`` (principal), ``roles`` (list of reader/writer/admin;
absent → ``["reader"]``: a token grants nothing it does not name), ``exp`` (required, a number of
seconds; no later than ``ServerSettings.jwt_max_lifetime`` from now, or from ``iat`` when given);
``aud``/``iss`` are checked when configured. Every failure is INVALID_TENANT_CONTEXT (401) with a
message that names no exception class.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import jwt

from ..errors import ErrorCode, MemoryError
from ..model import TenantContext
from ..providers.base import MemoryProvider
from .keys import PREFIX, KeyCache, credential_grant, key_grants, key_identifiers, verify_key
from .settings import ServerSettings

READ_ROLES = frozenset({"reader", "writer", "admin"})
WRITE_ROLES = frozenset({"writer", "admin"})


@dataclass(frozen=True)
class AuthResult:
    ctx: TenantContext
    #: Rate-limit bucket: ``key:<id>`` or ``jwt:<tenant>:<sub>``.
    subject: str
    identifiers: dict[str, str] = field(default_factory=dict)


def _invalid(message: str) -> MemoryError:
    return MemoryError(ErrorCode.INVALID_TENANT_CONTEXT, message, operation="auth")


def credential_from_headers(authorization: str | None, api_key: str | None) -> str:
    if api_key and api_key.strip():
        return api_key.strip()
    if authorization and authorization.strip():
        scheme, _, value = authorization.strip().partition(" ")
        if scheme.lower() != "bearer" or not value.strip():
            raise _invalid("the Authorization header must be 'Bearer <API key or token>'")
        return value.strip()
    raise MemoryError(
        ErrorCode.MISSING_TENANT_CONTEXT,
        "no credentials: send 'Authorization: Bearer <key>' or 'X-API-Key: <key>'",
        operation="auth",
    )


#: JWT failures → the message the caller sees (never the library's exception class name).
_JWT_MESSAGES: tuple[tuple[type[jwt.PyJWTError], str], ...] = (
    (jwt.ImmatureSignatureError, "the bearer token is not valid yet"),
    (jwt.InvalidSignatureError, "the bearer token's signature does not verify"),
    (jwt.InvalidAudienceError, "the bearer token is for another audience"),
    (jwt.InvalidIssuerError, "the bearer token is from another issuer"),
    (jwt.MissingRequiredClaimError, "the bearer token lacks a required claim (exp)"),
    (jwt.DecodeError, "malformed bearer token"),
)
#: Largest ``exp``/``iat`` accepted as a number (year 9999): beyond it datetime cannot represent it.
_MAX_TIMESTAMP = 253_402_300_799


def _timestamp(claims: dict[str, Any], name: str) -> datetime | None:
    """A NumericDate claim as a datetime; INVALID_TENANT_CONTEXT when it is not a finite number in range."""
    value = claims.get(name)
    if value is None and name not in claims:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= _MAX_TIMESTAMP:
        raise _invalid(f"the bearer token's '{name}' claim must be a number of seconds since 1970")
    return datetime.fromtimestamp(float(value), UTC)


def _decode_jwt(token: str, settings: ServerSettings) -> dict[str, Any]:
    keys: list[tuple[str, str]] = []
    if settings.jwt_secret:
        keys.append((settings.jwt_secret, "HS256"))
    if settings.jwt_public_key:
        keys.append((settings.jwt_public_key, "RS256"))
    if not keys:
        raise _invalid("invalid API key")
    try:
        alg = jwt.get_unverified_header(token).get("alg")
    except jwt.PyJWTError:
        raise _invalid("malformed bearer token") from None
    for key, algorithm in keys:
        if alg != algorithm:
            continue
        try:
            # exp/iat/nbf are checked here, not by PyJWT: it accepts numeric strings and overflows on
            # huge numbers (an unhandled OverflowError would turn a bad token into a 5xx).
            claims: dict[str, Any] = jwt.decode(
                token,
                key,
                algorithms=[algorithm],
                audience=settings.jwt_audience,
                issuer=settings.jwt_issuer,
                options={"verify_exp": False, "verify_iat": False, "verify_nbf": False},
            )
        except jwt.PyJWTError as exc:
            message = next((m for cls, m in _JWT_MESSAGES if isinstance(exc, cls)), "invalid bearer token")
            raise _invalid(message) from None
        except (ValueError, TypeError, OverflowError):
            raise _invalid("malformed bearer token") from None
        if not isinstance(claims, dict):
            raise _invalid("malformed bearer token")
        _check_times(claims, settings)
        return claims
    raise _invalid(f"bearer tokens signed with {alg!r} are not accepted")


def _check_times(claims: dict[str, Any], settings: ServerSettings) -> None:
    now = datetime.now(UTC)
    exp = _timestamp(claims, "exp")
    if exp is None:
        raise _invalid("the bearer token lacks a required claim (exp)")
    if exp <= now:
        raise _invalid("the bearer token has expired")
    nbf = _timestamp(claims, "nbf")
    if nbf is not None and nbf > now:
        raise _invalid("the bearer token is not valid yet")
    iat = _timestamp(claims, "iat")
    longest = settings.jwt_max_lifetime
    if longest is not None and exp - min(iat or now, now) > longest:
        raise _invalid(f"the bearer token's lifetime is longer than {int(longest.total_seconds())} s")


def authenticate(
    credential: str, provider: MemoryProvider, settings: ServerSettings, keys: KeyCache | None = None
) -> AuthResult:
    """The caller of a credential (API key, through ``keys`` when given, or signed JWT)."""
    now = datetime.now(UTC)
    if credential.startswith(PREFIX + "_"):
        rec = keys.verify(provider, credential) if keys is not None else verify_key(provider, credential)
        ids = key_identifiers(rec)
        ctx = TenantContext(
            tenant_id=rec.tenant_id,
            principal=f"key:{rec.name}",
            roles=rec.roles,
            credential=rec.key_id,
            grant=credential_grant(rec.roles, ids, key_grants(rec)),
        )
        return AuthResult(ctx=ctx, subject=f"key:{rec.key_id}", identifiers=ids)
    if credential.count(".") != 2:
        raise _invalid("invalid API key")
    claims = _decode_jwt(credential, settings)
    tenant = claims.get("tenant", claims.get("tenant_id"))
    sub = claims.get("sub")
    roles = claims.get("roles", ["reader"])  # fail closed: a token that names no role only reads
    if not isinstance(tenant, str) or not isinstance(roles, list) or not all(isinstance(r, str) for r in roles):
        raise _invalid("the bearer token lacks a 'tenant' claim or has malformed 'roles'")
    exp = _timestamp(claims, "exp")
    raw_ids, scopes = claims.get("identifiers", {}), claims.get("grants", [])
    if not isinstance(raw_ids, dict) or not isinstance(scopes, list) or not all(isinstance(g, str) for g in scopes):
        raise _invalid("the bearer token has malformed 'identifiers' or 'grants'")
    ids = {str(k): str(v) for k, v in raw_ids.items()}
    try:
        grant = credential_grant(roles, ids, scopes)
        ctx = TenantContext(
            tenant_id=tenant,
            principal=str(sub) if sub is not None else None,
            roles=tuple(roles),
            expires_at=exp,
            grant=grant,
        )
    except (ValueError, TypeError, MemoryError):
        raise _invalid("malformed bearer token claims") from None
    ctx.validate_at(now, "auth")
    return AuthResult(ctx=ctx, subject=f"jwt:{tenant}:{sub}", identifiers=ids)


def require_role(ctx: TenantContext, allowed: frozenset[str], operation: str) -> None:
    if not any(ctx.has_role(r) for r in allowed):
        raise MemoryError(
            ErrorCode.FORBIDDEN,
            f"this credential's roles {list(ctx.roles)} may not {operation}",
            operation=operation,
            details={"required_roles": sorted(allowed)},
        )
