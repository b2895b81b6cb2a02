"""``stratamem keys create|list|revoke``: API keys, on the store file or through a running server.

One process owns a DuckDB file. While ``stratamem serve`` runs, ``--server URL --admin-key KEY``
(or ``STRATAMEM_SERVER`` / ``STRATAMEM_ADMIN_KEY``) sends the command to the server's admin routes
(``/v1/keys``); the tenant then comes from the admin key. The first admin key of a tenant is
created on the file, before the server starts.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

import typer
from pydantic.alias_generators import to_camel

from ..server.keys import create_key, key_grants, key_identifiers
from .common import (
    DEFAULT_DB,
    AgentOpt,
    CompanyOpt,
    DbOpt,
    EmbedderOpt,
    JsonOpt,
    ObjectIdOpt,
    ObjectTypeOpt,
    OrgOpt,
    ProjectOpt,
    SessionOpt,
    TeamOpt,
    UserOpt,
    coded_errors,
    emit_json,
    fail,
    from_settings,
    identifiers,
    open_store,
    require_tenant,
)
from .server_cmds import GrantOpt

KeysTenantOpt = Annotated[
    str | None,
    typer.Option(
        "--tenant",
        "-t",
        show_default=False,
        callback=from_settings(lambda s: s.tenant),
        help="Tenant id (required on a store file; with --server the admin key's tenant; env STRATAMEM_TENANT).",
    ),
]
ServerOpt = Annotated[
    str | None,
    typer.Option(
        "--server",
        show_default=False,
        callback=from_settings(lambda s: s.server),
        help="URL of a running `stratamem serve`: manage keys through its admin routes (env STRATAMEM_SERVER).",
    ),
]
AdminKeyOpt = Annotated[
    str | None,
    typer.Option(
        "--admin-key",
        show_default=False,
        callback=from_settings(lambda s: s.admin_key),
        help="An admin API key of the tenant (with --server; env STRATAMEM_ADMIN_KEY).",
    ),
]


def _call(server: str, admin_key: str | None, method: str, path: str, body: Any = None) -> Any:
    """One admin request to a running server; an error answer becomes ``error CODE: message``."""
    import httpx  # noqa: PLC0415  only the --server path talks HTTP (keeps CLI start fast)

    if not admin_key:
        raise fail("MISSING_TENANT_CONTEXT", "--server needs --admin-key (or STRATAMEM_ADMIN_KEY): an admin API key")
    try:
        resp = httpx.request(
            method,
            server.rstrip("/") + path,
            json=body,
            headers={"Authorization": f"Bearer {admin_key}"},
            timeout=30,
        )
    except httpx.HTTPError as exc:
        raise fail("PROVIDER_ERROR", f"cannot reach {server}: {exc}") from None
    try:
        data = resp.json()
    except ValueError:
        data = None
    if resp.status_code >= 400:
        if isinstance(data, dict) and "code" in data:
            raise fail(str(data["code"]), str(data.get("message", "")))
        raise fail("PROVIDER_ERROR", f"{server} answered HTTP {resp.status_code}")
    return data


def _check_tenant(server_tenant: str, given: str | None) -> None:
    if given is not None and given != server_tenant:
        raise fail("FORBIDDEN", f"the admin key belongs to tenant {server_tenant}, not {given}")


def register(app: typer.Typer) -> None:
    keys = typer.Typer(help="Manage API keys (stored hashed; a key is shown once).", no_args_is_help=True)
    app.add_typer(keys, name="keys")

    @keys.command("create")
    def keys_create(
        db: DbOpt = DEFAULT_DB,
        tenant_id: KeysTenantOpt = None,
        role: Annotated[str, typer.Option("--role", "-r", help="reader, writer or admin.")] = "writer",
        name: Annotated[str | None, typer.Option("--name", help="Label for the key.")] = None,
        server: ServerOpt = None,
        admin_key: AdminKeyOpt = None,
        agent_id: AgentOpt = None,
        user_id: UserOpt = None,
        session_id: SessionOpt = None,
        project_id: ProjectOpt = None,
        team_id: TeamOpt = None,
        org_id: OrgOpt = None,
        company_id: CompanyOpt = None,
        object_type: ObjectTypeOpt = None,
        object_id: ObjectIdOpt = None,
        grant: GrantOpt = None,
        embedder: EmbedderOpt = None,
    ) -> None:
        """Create an API key; it is printed once, as the last word of the output. A key bound to
        identifiers (--user-id …) acts only for them plus the scopes given with --grant."""
        ids = identifiers(
            agent_id, user_id, session_id, project_id, team_id, org_id, company_id, object_type, object_id
        )
        if server:
            camel = {to_camel(k): v for k, v in ids.items()}
            if tenant_id is not None:  # checked before anything is created
                for row in _call(server, admin_key, "GET", "/v1/keys"):
                    _check_tenant(str(row["tenantId"]), tenant_id)
            data = _call(
                server,
                admin_key,
                "POST",
                "/v1/keys",
                {"role": role, "name": name, "identifiers": camel, "grants": grant or []},
            )
            key_id, label, owner, key = data["keyId"], data["name"], data["tenantId"], data["key"]
        else:
            owner = require_tenant(tenant_id)
            with open_store(db, embedder) as mem, coded_errors():
                created = create_key(mem.engine.provider, owner, role, name=name, identifiers=ids, grants=grant or [])
            key_id, label, key = created.record.key_id, created.record.name, created.key
        typer.echo(f"created API key {key_id} ({label}) for tenant {owner} with role {role}.")
        typer.echo("It is shown only once and stored only as a hash; keep it secret:")
        typer.echo(key)

    @keys.command("list")
    def keys_list(
        db: DbOpt = DEFAULT_DB,
        tenant_id: KeysTenantOpt = None,
        server: ServerOpt = None,
        admin_key: AdminKeyOpt = None,
        embedder: EmbedderOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        """List a tenant's keys (ids and labels; never the keys)."""
        rows: list[dict[str, Any]]
        if server:
            rows = [
                {k: r.get(k) for k in ("keyId", "name", "roles", "identifiers", "grants", "createdAt", "revokedAt")}
                for r in _call(server, admin_key, "GET", "/v1/keys")
            ]
        else:
            owner = require_tenant(tenant_id)
            with open_store(db, embedder, must_exist=True) as mem:
                records = mem.engine.provider.api_key_list(owner)
            rows = [
                {
                    "keyId": r.key_id,
                    "name": r.name,
                    "roles": list(r.roles),
                    "identifiers": key_identifiers(r),
                    "grants": key_grants(r),
                    "createdAt": r.created_at.isoformat(),
                    "revokedAt": r.revoked_at.isoformat() if r.revoked_at else None,
                }
                for r in records
            ]
        if as_json:
            emit_json(rows)
            return
        for row in rows:
            state = "revoked" if row["revokedAt"] else "active"
            typer.echo(f"{row['keyId']}  {row['name']}  {','.join(row['roles'])}  {state}")

    @keys.command("revoke")
    def keys_revoke(
        key_id: Annotated[str, typer.Argument(help="Key id (the part after smk_).")],
        db: DbOpt = DEFAULT_DB,
        tenant_id: KeysTenantOpt = None,
        server: ServerOpt = None,
        admin_key: AdminKeyOpt = None,
        embedder: EmbedderOpt = None,
    ) -> None:
        """Revoke a key of this tenant."""
        if server:
            _call(server, admin_key, "DELETE", f"/v1/keys/{key_id}")
        else:
            owner = require_tenant(tenant_id)
            with open_store(db, embedder, must_exist=True) as mem:
                ok = mem.engine.provider.api_key_revoke(owner, key_id, datetime.now(UTC))
            if not ok:
                raise fail("INVALID_PARAMS", f"tenant {owner} has no active key {key_id}")
        typer.echo(f"revoked {key_id}")
