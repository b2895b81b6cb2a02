"""Credentials → :class:`TenantContext`: API keys (``smk_…``) or signed JWTs (HS256/RS256, PyJWT).

The tenant always comes from the credential. No credential → MISSING_TENANT_CONTEXT; an unknown,
revoked, malformed, expired or badly signed one → INVALID_TENANT_CONTEXT.

JWT claims: ``tenant`` (or ``tenant_id``), ``sub`` (principal), ``roles`` (list, default
``["writer"]``), ``exp`` (required); ``aud``/``iss`` are checked when configured.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import jwt

from ..errors import ErrorCode, MemoryError
from ..model import TenantContext
from ..providers.base import MemoryProvider
from .keys import PREFIX, verify_key
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
    raise MemoryError(ErrorCode.MISSING_TENANT_CONTEXT,
                      "no credentials: send 'Authorization: Bearer <key>' or 'X-API-Key: <key>'", operation="auth")


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
            claims: dict[str, Any] = jwt.decode(
                token, key, algorithms=[algorithm], audience=settings.jwt_audience, issuer=settings.jwt_issuer,
                options={"require": ["exp"]},
            )
            return claims
        except jwt.ExpiredSignatureError:
            raise _invalid("the bearer token has expired") from None
        except jwt.PyJWTError as exc:
            raise _invalid(f"invalid bearer token: {type(exc).__name__}") from None
    raise _invalid(f"bearer tokens signed with {alg!r} are not accepted")


def authenticate(credential: str, provider: MemoryProvider, settings: ServerSettings) -> AuthResult:
    now = datetime.now(UTC)
    if credential.startswith(PREFIX + "_"):
        rec = verify_key(provider, credential)
        ctx = TenantContext(tenant_id=rec.tenant_id, principal=f"key:{rec.name}", roles=rec.roles,
                            credential=rec.key_id)
        return AuthResult(ctx=ctx, subject=f"key:{rec.key_id}", identifiers=dict(rec.identifiers))
    if credential.count(".") != 2:
        raise _invalid("invalid API key")
    claims = _decode_jwt(credential, settings)
    tenant = claims.get("tenant", claims.get("tenant_id"))
    sub = claims.get("sub")
    roles = claims.get("roles", ["writer"])
    if not isinstance(tenant, str) or not isinstance(roles, list) or not all(isinstance(r, str) for r in roles):
        raise _invalid("the bearer token lacks a 'tenant' claim or has malformed 'roles'")
    try:
        ctx = TenantContext(tenant_id=tenant, principal=str(sub) if sub is not None else None, roles=tuple(roles),
                            expires_at=datetime.fromtimestamp(int(claims["exp"]), UTC))
    except (ValueError, TypeError):
        raise _invalid("malformed bearer token claims") from None
    ctx.validate_at(now, "auth")
    ids = claims.get("identifiers")
    return AuthResult(ctx=ctx, subject=f"jwt:{tenant}:{sub}",
                      identifiers={str(k): str(v) for k, v in ids.items()} if isinstance(ids, dict) else {})


def require_role(ctx: TenantContext, allowed: frozenset[str], operation: str) -> None:
    if not any(ctx.has_role(r) for r in allowed):
        raise MemoryError(ErrorCode.FORBIDDEN, f"this credential's roles {list(ctx.roles)} may not {operation}",
                          operation=operation, details={"required_roles": sorted(allowed)})
