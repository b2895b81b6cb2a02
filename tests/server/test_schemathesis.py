"""Property-based run of schemathesis against /openapi.json: no input produces a 5xx (bounded run)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from stratamem import Memory
from stratamem.server.app import create_app
from stratamem.server.settings import ServerSettings


@pytest.fixture()
def st_key(make_key: Callable[..., str]) -> str:
    return make_key()


@pytest.fixture()
def api_schema(server_mem: Memory, st_key: str) -> Any:
    app = create_app(server_mem, ServerSettings(mcp_enabled=False, rate_limit_per_second=0, max_body_bytes=64 * 1024))
    return schemathesis.openapi.from_asgi("/openapi.json", app)


schema = schemathesis.pytest.from_fixture("api_schema")


@schema.parametrize()
@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
def test_no_server_errors(case: Any, st_key: str) -> None:
    response = case.call(headers={"Authorization": f"Bearer {st_key}"})
    assert response.status_code < 500, (case.method, case.path, response.status_code, response.text[:500])
    if response.status_code >= 400 and case.path != "/metrics":
        body = response.json()
        assert set(body) == {"code", "message", "operation", "details", "retryable"}, body
