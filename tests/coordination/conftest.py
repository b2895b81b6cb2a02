"""Redis fixtures: the server at 127.0.0.1:6379 (``STRATAMEM_TEST_REDIS_URL`` overrides); every test
uses its own key prefix and deletes its keys afterwards."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
import redis

from ..conftest import require_service

REDIS_URL = os.environ.get("STRATAMEM_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


@pytest.fixture(scope="session")
def redis_url() -> str:
    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2).ping()
    except redis.RedisError as exc:
        require_service("Redis", False, f"{REDIS_URL}: {exc}")
    return REDIS_URL


@pytest.fixture()
def prefix(redis_url: str) -> Iterator[str]:
    name = f"stratamem-test-{uuid.uuid4().hex[:12]}"
    yield name
    client = redis.Redis.from_url(redis_url)
    keys = list(client.scan_iter(match=f"{name}*", count=500))
    if keys:
        client.delete(*keys)


@pytest.fixture()
def rclient(redis_url: str) -> redis.Redis:
    return redis.Redis.from_url(redis_url)
