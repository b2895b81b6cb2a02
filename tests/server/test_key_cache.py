"""The server's cache of verified API keys (server/keys.py ``KeyCache``): a revoked key is refused at
once when revoked through the server, within the TTL when revoked elsewhere; no plaintext kept."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from fastapi.testclient import TestClient

from stratamem import Memory, MemoryError
from stratamem.server.keys import KeyCache, create_key


def h(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def test_revoked_through_the_server_is_refused_at_once(
    make_client: Callable[..., TestClient], server_mem: Memory
) -> None:
    client = make_client(key_cache_ttl=3600)
    admin = create_key(server_mem.engine.provider, "acme", "admin").key
    reader = create_key(server_mem.engine.provider, "acme", "reader")
    assert client.get("/v1/memories", headers=h(reader.key)).status_code == 200  # cached now
    assert len(client.app.state.key_cache) == 1  # type: ignore[attr-defined]
    assert client.delete(f"/v1/keys/{reader.record.key_id}", headers=h(admin)).status_code == 200
    r = client.get("/v1/memories", headers=h(reader.key))
    assert r.status_code == 401 and r.json()["code"] == "INVALID_TENANT_CONTEXT"
    assert client.get("/v1/memories", headers=h(admin)).status_code == 200  # other keys stay


def test_forget_user_refuses_the_users_keys_at_once(make_client: Callable[..., TestClient], server_mem: Memory) -> None:
    client = make_client(key_cache_ttl=3600)
    admin = create_key(server_mem.engine.provider, "acme", "admin").key
    alice = create_key(server_mem.engine.provider, "acme", "writer", identifiers={"user_id": "alice"}).key
    assert client.get("/v1/memories", headers=h(alice), params={"userId": "alice"}).status_code == 200
    assert client.delete("/v1/admin/users/alice", headers=h(admin)).status_code == 200
    r = client.get("/v1/memories", headers=h(alice), params={"userId": "alice"})
    assert r.status_code == 401 and r.json()["code"] == "INVALID_TENANT_CONTEXT"


def test_revoked_elsewhere_is_refused_once_the_ttl_passed(server_mem: Memory) -> None:
    provider = server_mem.engine.provider
    now = [0.0]
    cache = KeyCache(5.0, clock=lambda: now[0])
    created = create_key(provider, "acme", "writer")
    assert cache.verify(provider, created.key).key_id == created.record.key_id
    assert provider.api_key_revoke("acme", created.record.key_id, datetime.now(UTC)) is True  # as the CLI does
    now[0] = 4.9  # still within the TTL: the documented window
    assert cache.verify(provider, created.key).key_id == created.record.key_id
    now[0] = 5.1
    with pytest.raises(MemoryError) as err:
        cache.verify(provider, created.key)
    assert err.value.code.value == "INVALID_TENANT_CONTEXT"


def test_failures_are_not_cached_and_no_plaintext_is_kept(server_mem: Memory) -> None:
    provider = server_mem.engine.provider
    cache = KeyCache(60.0)
    created = create_key(provider, "acme", "writer")
    tampered = created.key[:-4] + ("AAAA" if not created.key.endswith("AAAA") else "BBBB")
    for _ in range(2):
        with pytest.raises(MemoryError):
            cache.verify(provider, tampered)
    assert len(cache) == 0
    cache.verify(provider, created.key)
    assert cache.digests() == [hashlib.sha256(created.key.encode()).hexdigest()]
    secret = created.key.rsplit("_", 1)[1]
    assert all(secret not in d for d in cache.digests())


def test_bounded_and_disabled(server_mem: Memory) -> None:
    provider = server_mem.engine.provider
    keys = [create_key(provider, "acme", "reader").key for _ in range(3)]
    cache = KeyCache(60.0, max_entries=2)
    for key in keys:
        cache.verify(provider, key)
    assert len(cache) == 2  # the least recently used went out
    assert hashlib.sha256(keys[0].encode()).hexdigest() not in cache.digests()
    off = KeyCache(0.0)
    created = create_key(provider, "acme", "reader")
    off.verify(provider, created.key)
    assert len(off) == 0
    provider.api_key_revoke("acme", created.record.key_id, datetime.now(UTC))
    with pytest.raises(MemoryError):
        off.verify(provider, created.key)


def test_holds_says_whether_verify_would_skip_the_store(server_mem: Memory) -> None:
    provider = server_mem.engine.provider
    now = [0.0]
    cache = KeyCache(5.0, clock=lambda: now[0])
    created = create_key(provider, "acme", "writer")
    assert not cache.holds(created.key)  # never verified
    cache.verify(provider, created.key)
    assert cache.holds(created.key) and cache.holds(f"  {created.key} ")  # as verify strips it
    now[0] = 5.1
    assert not cache.holds(created.key)  # expired: verify reads the store again
    cache.verify(provider, created.key)
    cache.invalidate(created.record.key_id)
    assert not cache.holds(created.key)
    off = KeyCache(0.0)
    off.verify(provider, created.key)
    assert not off.holds(created.key)


def test_authentication_stays_on_the_event_loop_only_for_a_cached_key(
    make_client: Callable[..., TestClient], server_mem: Memory
) -> None:
    from starlette.requests import Request

    from stratamem.server.deps import authenticates_in_process

    client = make_client(key_cache_ttl=3600)
    key = create_key(server_mem.engine.provider, "acme", "reader").key

    def request(**headers: str) -> Request:
        raw = [(k.lower().encode(), v.encode()) for k, v in headers.items()]
        return Request({"type": "http", "app": client.app, "headers": raw})

    assert not authenticates_in_process(request(), f"Bearer {key}", None)  # first use: the key's record is read
    assert client.get("/v1/memories", headers=h(key)).status_code == 200
    assert authenticates_in_process(request(), f"Bearer {key}", None)
    assert authenticates_in_process(request(), None, key)
    assert not authenticates_in_process(request(), None, None)  # no credential: refused on a worker thread
    assert not authenticates_in_process(request(), "Bearer a.b.c", None)  # a JWT is verified on a worker thread
    assert not authenticates_in_process(request(), "Basic abc", None)
