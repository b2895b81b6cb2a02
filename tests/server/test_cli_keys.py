"""API keys while the server runs: ``stratamem keys … --server URL --admin-key KEY`` goes through the
running server's admin routes (the server owns the DuckDB file), against a real uvicorn server."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import httpx

from .conftest import LiveServer, cli_key, run_cli


def test_keys_are_managed_through_a_running_server(live_db: Path, live_server: Callable[[], LiveServer]) -> None:
    admin = cli_key(live_db, "acme", "admin")  # the first admin key: on the file, before the start
    srv = live_server()
    # the file is the server's now: the CLI says so, and how to go through the server instead
    locked = run_cli("keys", "create", "--db", str(live_db), "-t", "acme")
    lines = [line for line in locked.stderr.splitlines() if line.strip()]
    assert locked.returncode == 2 and len(lines) == 1 and lines[0].startswith("error PROVIDER_ERROR: ")
    assert "locked by another process" in lines[0] and "--server" in lines[0]

    created = run_cli(
        "keys",
        "create",
        "--server",
        srv.url,
        "--admin-key",
        admin,
        "--role",
        "writer",
        "--user-id",
        "alice",
        "--name",
        "alice-app",
    )
    assert created.returncode == 0, created.stderr
    assert "for tenant acme with role writer" in created.stdout
    key = created.stdout.split()[-1]
    headers = {"Authorization": f"Bearer {key}"}
    added = httpx.post(
        srv.url + "/v1/memories",
        headers=headers,
        timeout=30,
        json={"content": "User prefers dark mode", "layer": "user", "identifiers": {"userId": "alice"}},
    )
    assert added.status_code == 201, added.text

    listed = run_cli("keys", "list", "--server", srv.url, "--admin-key", admin, "--json")
    assert listed.returncode == 0, listed.stderr
    rows = {r["name"]: r for r in json.loads(listed.stdout)}
    assert rows["alice-app"]["identifiers"] == {"userId": "alice"} and rows["alice-app"]["revokedAt"] is None
    key_id = rows["alice-app"]["keyId"]

    wrong_tenant = run_cli("keys", "create", "--server", srv.url, "--admin-key", admin, "-t", "globex")
    assert wrong_tenant.returncode == 2 and wrong_tenant.stderr.startswith("error FORBIDDEN: ")
    assert len(json.loads(run_cli("keys", "list", "--server", srv.url, "--admin-key", admin, "--json").stdout)) == 2
    not_admin = run_cli("keys", "list", "--server", srv.url, "--admin-key", key)
    assert not_admin.returncode == 2 and not_admin.stderr.startswith("error FORBIDDEN: ")
    no_key = run_cli("keys", "list", "--server", srv.url)
    assert no_key.returncode == 2 and no_key.stderr.startswith("error MISSING_TENANT_CONTEXT: ")

    revoked = run_cli("keys", "revoke", key_id, "--server", srv.url, "--admin-key", admin)
    assert revoked.returncode == 0 and f"revoked {key_id}" in revoked.stdout
    assert httpx.get(srv.url + "/v1/memories", headers=headers, timeout=30).status_code == 401
