"""Bearer tokens fail closed: a bad ``exp`` is 401 (never a 5xx or a dropped connection), a token
without ``roles`` reads only, lifetimes are capped, and error bodies name no exception classes."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from fastapi.testclient import TestClient

from .conftest import LiveServer

SECRET = "test-hs256-secret-that-is-long-enough-0123456789"
ALICE = {"userId": "alice"}
#: Exception class names an error body must never carry.
CLASS_NAMES = ("Error", "Exception", "Overflow", "Decode", "Signature")


def token(claims: dict[str, Any]) -> str:
    return jwt.encode(claims, SECRET, algorithm="HS256")


def h(tok: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {tok}"}


BAD_EXP: list[Any] = [1e300, 10**18, 2**63, str(int(time.time()) + 60), float("inf"), True, None, [1], -1]


@pytest.fixture()
def jwt_server(live_db: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LiveServer]:
    monkeypatch.setenv("STRATAMEM_JWT_SECRET", SECRET)
    monkeypatch.setenv("STRATAMEM_JWT_MAX_LIFETIME", "1h")
    srv = LiveServer(live_db)
    srv.start()
    yield srv
    srv.stop()


def test_bad_exp_is_401_over_a_real_server(jwt_server: LiveServer) -> None:
    for exp in BAD_EXP:
        claims = {"tenant": "acme", "sub": "svc", "roles": ["writer"], "exp": exp}
        try:
            tok = token(claims)
        except (OverflowError, ValueError):  # PyJWT cannot encode it: nobody can send it either
            continue
        r = httpx.get(jwt_server.url + "/v1/memories", headers=h(tok), timeout=30)
        assert r.status_code == 401, (exp, r.status_code, r.text)
        body = r.json()
        assert body["code"] == "INVALID_TENANT_CONTEXT"
        assert not any(name in body["message"] for name in CLASS_NAMES), body
        mcp = httpx.post(
            jwt_server.url + "/mcp",
            headers={**h(tok), "Accept": "application/json, text/event-stream"},
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            timeout=30,
        )
        assert mcp.status_code == 401, (exp, mcp.status_code, mcp.text)
    # the server is still up and a good token works
    good = token({"tenant": "acme", "sub": "svc", "roles": ["writer"], "exp": int(time.time()) + 60})
    assert httpx.get(jwt_server.url + "/v1/memories", headers=h(good), timeout=30).status_code == 200
    # longer than STRATAMEM_JWT_MAX_LIFETIME (1 h): refused
    long = token({"tenant": "acme", "sub": "svc", "exp": int(time.time()) + 7200})
    r = httpx.get(jwt_server.url + "/v1/memories", headers=h(long), timeout=30)
    assert r.status_code == 401 and "lifetime" in r.json()["message"]


def test_token_without_roles_is_a_reader(make_client: Callable[..., TestClient]) -> None:
    client = make_client(jwt_secret=SECRET)
    plain = token({"tenant": "acme", "sub": "svc", "exp": int(time.time()) + 60})
    assert client.get("/v1/memories", headers=h(plain)).status_code == 200
    r = client.post("/v1/memories", headers=h(plain), json={"content": "x", "layer": "user", "identifiers": ALICE})
    assert r.status_code == 403 and r.json()["code"] == "FORBIDDEN"
    for roles in ("writer", [1], {"a": 1}, ["root"]):  # malformed or unknown roles grant nothing
        tok = token({"tenant": "acme", "sub": "svc", "roles": roles, "exp": int(time.time()) + 60})
        r = client.post("/v1/memories", headers=h(tok), json={"content": "x", "layer": "user", "identifiers": ALICE})
        assert r.status_code in (401, 403), (roles, r.text)


def test_max_lifetime_is_configurable(make_client: Callable[..., TestClient]) -> None:
    now = int(time.time())
    default = make_client(jwt_secret=SECRET)  # 24 h unless configured
    assert default.get("/v1/memories", headers=h(token({"tenant": "acme", "exp": now + 3600}))).status_code == 200
    r = default.get("/v1/memories", headers=h(token({"tenant": "acme", "exp": now + 2 * 86400})))
    assert r.status_code == 401
    # an issued-at far in the past does not stretch the lifetime either
    r = default.get("/v1/memories", headers=h(token({"tenant": "acme", "iat": now - 3 * 86400, "exp": now + 60})))
    assert r.status_code == 401
    short = make_client(jwt_secret=SECRET, jwt_max_lifetime="5m")
    assert short.get("/v1/memories", headers=h(token({"tenant": "acme", "exp": now + 3600}))).status_code == 401
    assert short.get("/v1/memories", headers=h(token({"tenant": "acme", "exp": now + 60}))).status_code == 200


def test_error_bodies_name_no_exception_classes(make_client: Callable[..., TestClient]) -> None:
    client = make_client(jwt_secret=SECRET)
    now = int(time.time())
    for bad in [
        jwt.encode({"tenant": "acme", "exp": now + 60}, "another-secret-of-sufficient-length-xyz", algorithm="HS256"),
        token({"tenant": "acme", "exp": now + 60, "nbf": now + 3600}),
        token({"tenant": "acme", "exp": now + 60})[:-4] + "AAAA",
        "a.b.c",
    ]:
        r = client.get("/v1/memories", headers=h(bad))
        assert r.status_code == 401, r.text
        assert not any(name in r.json()["message"] for name in CLASS_NAMES), r.json()
