"""Snapshot tests run against a real S3-compatible server (SeaweedFS from scripts/start_seaweedfs.sh)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from stratamem import Memory, TenantContext
from stratamem.persistence import S3Settings, S3Store

from ..conftest import require_service


def _s3_reachable(url: str | None) -> tuple[bool, str]:
    if not url:
        return False, "STRATAMEM_TEST_S3_URL is not set (run scripts/services.sh or scripts/start_seaweedfs.sh)"
    try:
        httpx.get(url, timeout=2.0)
    except httpx.HTTPError as exc:
        return False, f"{url} does not answer: {exc}"
    return True, ""


@pytest.fixture()
def s3_settings() -> S3Settings:
    url = os.environ.get("STRATAMEM_TEST_S3_URL")
    ok, reason = _s3_reachable(url)
    require_service("S3 (SeaweedFS)", ok, reason)
    return S3Settings(
        endpoint_url=url,
        bucket=f"snap-{uuid.uuid4().hex[:12]}",  # a fresh bucket per test
        access_key_id=os.environ.get("STRATAMEM_TEST_S3_ACCESS_KEY", "stratamem-test"),
        secret_access_key=os.environ.get("STRATAMEM_TEST_S3_SECRET_KEY", "stratamem-test-secret"),
        max_workers=4,
    )


@pytest.fixture()
def s3(s3_settings: S3Settings) -> Iterator[S3Store]:
    store = S3Store(s3_settings)
    store.ensure_bucket()
    yield store
    keys = [str(o["Key"]) for o in store.list("")]
    if keys:
        store.delete(keys)
    store.client.delete_bucket(Bucket=store.bucket)


def all_keys(store: S3Store) -> set[str]:
    return {str(o["Key"]) for o in store.list("")}


def fill(mem: Memory, ctx: TenantContext, n: int, start: int = 0) -> list[str]:
    items: list[dict[str, Any]] = [
        {
            "content": f"{ctx.tenant_id} fact {i}: the user likes topic {i}",
            "layer": "user",
            "identifiers": {"user_id": "u1"},
            "metadata": {"tags": [f"t{i % 3}"]},
        }
        for i in range(start, start + n)
    ]
    ids: list[str] = []
    for chunk in range(0, len(items), 10):
        out = mem.bulk_add(ctx, items[chunk : chunk + 10])
        ids.extend(r.memory.id for r in out.results)
    return ids


def contents(mem: Memory, ctx: TenantContext) -> dict[str, str]:
    return {e.id: e.content for e in mem.export(ctx)}


@pytest.fixture()
def mem_factory(open_mem: Callable[..., Memory], tmp_path: Any) -> Callable[[str], Memory]:
    def make(name: str) -> Memory:
        return open_mem(tmp_path / f"{name}.duckdb")

    return make
