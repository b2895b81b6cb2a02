"""A real `stratamem serve` (uvicorn) on a free loopback port: keys from the CLI, happy path, auth."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx

from .conftest import LiveServer, cli_key, run_cli


def test_keys_create_prints_the_key_last_and_once(live_db: Path) -> None:
    res = run_cli("keys", "create", "--db", str(live_db), "--tenant", "acme", "--role", "reader", "--name", "ci")
    assert res.returncode == 0, res.stderr
    key = res.stdout.split()[-1]
    assert key.startswith("smk_") and res.stdout.count(key) == 1
    listed = run_cli("keys", "list", "--db", str(live_db), "--tenant", "acme", "--json")
    assert key not in listed.stdout and '"name": "ci"' in listed.stdout and '"reader"' in listed.stdout
    bad = run_cli("keys", "create", "--db", str(live_db), "--tenant", "acme", "--role", "root")
    assert bad.returncode == 2 and "INVALID_PARAMS" in bad.stderr
    key_id = key.split("_")[1]
    assert run_cli("keys", "revoke", key_id, "--db", str(live_db), "--tenant", "acme").returncode == 0
    assert "revoked" in run_cli("keys", "list", "--db", str(live_db), "--tenant", "acme").stdout


def test_live_server_happy_path_and_auth(live_db: Path, live_server: Callable[[], LiveServer]) -> None:
    key = cli_key(live_db, "acme")
    other = cli_key(live_db, "globex")
    srv = live_server()
    with httpx.Client(base_url=srv.url, timeout=30) as http:
        assert http.get("/health").json()["status"] == "healthy"
        r = http.post(
            "/v1/memories",
            headers={"Authorization": f"Bearer {key}"},
            json={"content": "User prefers dark mode", "layer": "user", "identifiers": {"userId": "alice"}},
        )
        assert r.status_code == 201, r.text
        mid = r.json()["memory"]["id"]
        s = http.post(
            "/v1/memories/search",
            headers={"X-API-Key": key},
            json={"query": "User prefers dark mode", "identifiers": {"userId": "alice"}},
        )
        assert s.status_code == 200 and s.json()["results"][0]["memory"]["id"] == mid
        assert http.get(f"/v1/memories/{mid}", headers={"X-API-Key": key}).status_code == 200

        missing = http.get("/v1/memories")
        assert missing.status_code == 401 and missing.json()["code"] == "MISSING_TENANT_CONTEXT"
        bad = http.get("/v1/memories", headers={"X-API-Key": key[:-2] + "zz"})
        assert bad.status_code == 401 and bad.json()["code"] == "INVALID_TENANT_CONTEXT"
        cross = http.get(f"/v1/memories/{mid}", headers={"X-API-Key": other})
        assert cross.status_code == 404 and cross.json()["code"] == "MEMORY_NOT_FOUND"

        metrics = http.get("/metrics").text
        for name in (
            "memory_operations_total",
            "memory_operations_errors",
            "memory_operations_latency",
            "memory_search_results",
            "memory_storage_size",
        ):
            assert name in metrics
        spec = http.get("/openapi.json").json()
        assert "/v1/memories/search" in spec["paths"]
