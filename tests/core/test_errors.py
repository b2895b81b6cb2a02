"""Error handling (SPEC R-ERR, seed 000 "Memory Error Handling", "Tenant Context Propagation")."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from stratamem import ErrorCode, Memory, MemoryConfig, MemoryError, TenantContext

U1 = {"user_id": "u1"}


def _codes(fn: Callable[[], Any]) -> ErrorCode:
    with pytest.raises(MemoryError) as err:
        fn()
    return err.value.code


def test_every_operation_requires_a_tenant_context(mem: Memory, acme: TenantContext) -> None:
    mid = mem.add(acme, content="x", layer="user", identifiers=U1).memory.id
    calls: dict[str, Callable[[], Any]] = {
        "add": lambda: mem.add(content="x", layer="user", identifiers=U1),
        "search": lambda: mem.search(query="x", identifiers=U1),
        "get": lambda: mem.get(None, mid),
        "update": lambda: mem.update(None, mid, content="y"),
        "delete": lambda: mem.delete(None, mid),
        "list": lambda: mem.list(None, layer="user", identifiers=U1),
        "bulk_add": lambda: mem.bulk_add(None, [{"content": "x", "layer": "user", "identifiers": U1}]),
        "bulk_delete": lambda: mem.bulk_delete(None, [mid]),
        "stats": lambda: mem.stats(None),
    }
    for name, call in calls.items():
        with pytest.raises(MemoryError) as err:
            call()
        assert err.value.code is ErrorCode.MISSING_TENANT_CONTEXT, name
        assert err.value.operation == name
        assert "TenantContext" in err.value.message
    assert mem.get(acme, mid) is not None  # nothing proceeded


def test_expired_or_malformed_context_is_invalid(mem: Memory) -> None:
    expired = TenantContext(tenant_id="acme", expires_at=datetime.now(UTC) - timedelta(seconds=1))
    code = _codes(lambda: mem.add(expired, content="x", layer="user", identifiers=U1))
    assert code is ErrorCode.INVALID_TENANT_CONTEXT
    bad = TenantContext(tenant_id="bad tenant; drop table")
    assert _codes(lambda: mem.get(bad, "x")) is ErrorCode.INVALID_TENANT_CONTEXT
    assert _codes(lambda: mem.get("acme", "x")) is ErrorCode.INVALID_TENANT_CONTEXT  # type: ignore[arg-type]


def test_content_too_long_reports_the_limit(open_mem: Callable[..., Memory], acme: TenantContext) -> None:
    mem = open_mem(config=MemoryConfig(max_content_length=100))
    with pytest.raises(MemoryError) as err:
        mem.add(acme, content="x" * 101, layer="user", identifiers=U1)
    assert err.value.code is ErrorCode.CONTENT_TOO_LONG
    assert err.value.details["max_length"] == 100
    assert err.value.retryable is False
    assert mem.add(acme, content="x" * 100, layer="user", identifiers=U1).memory.content == "x" * 100


def test_provider_limit_applies_by_default(mem: Memory, acme: TenantContext) -> None:
    limit = mem.capabilities().max_content_length
    with pytest.raises(MemoryError) as err:
        mem.add(acme, content="y" * (limit + 1), layer="user", identifiers=U1)
    assert err.value.details["max_length"] == limit


def test_query_too_long(mem: Memory, acme: TenantContext) -> None:
    with pytest.raises(MemoryError) as err:
        mem.search(acme, "q" * 5000, identifiers=U1)
    assert err.value.code is ErrorCode.QUERY_TOO_LONG
    assert err.value.details["max_length"] == 2048


@pytest.mark.parametrize(
    "kwargs",
    [
        {"content": "", "layer": "user", "identifiers": U1},
        {"content": "   ", "layer": "user", "identifiers": U1},
        {"content": 42, "layer": "user", "identifiers": U1},
        {"content": "ok", "layer": "user", "identifiers": U1, "metadata": {"tags": "notalist"}},
        {"content": "ok", "layer": "user", "identifiers": U1, "metadata": {"x": object()}},
        {"content": "ok", "layer": "user", "identifiers": {"user_id": ["list"]}},
        {"content": "ok", "layer": "user", "identifiers": U1, "importance": 3},
        {"content": "ok", "layer": "user", "identifiers": U1, "expires_at": "not a date"},
    ],
)
def test_bad_add_input_is_invalid_params(mem: Memory, acme: TenantContext, kwargs: dict[str, Any]) -> None:
    assert _codes(lambda: mem.add(acme, **kwargs)) is ErrorCode.INVALID_PARAMS
    assert mem.list(acme).total_count == 0  # nothing half-written


def test_bad_search_and_list_params(mem: Memory, acme: TenantContext) -> None:
    assert _codes(lambda: mem.search(acme, "", identifiers=U1)) is ErrorCode.INVALID_PARAMS
    assert _codes(lambda: mem.search(acme, "q", identifiers=U1, limit=0)) is ErrorCode.INVALID_PARAMS
    assert _codes(lambda: mem.search(acme, "q", identifiers=U1, limit=101)) is ErrorCode.INVALID_PARAMS
    assert _codes(lambda: mem.search(acme, "q", identifiers=U1, threshold=1.5)) is ErrorCode.INVALID_PARAMS
    assert _codes(lambda: mem.search(acme, "q", identifiers=U1, layers=["nope"])) is ErrorCode.INVALID_LAYER
    assert _codes(lambda: mem.search(acme, "q", identifiers=U1, layers=["team"])) is ErrorCode.MISSING_IDENTIFIER
    assert _codes(lambda: mem.search(acme, "q", identifiers={})) is ErrorCode.MISSING_IDENTIFIER
    assert _codes(lambda: mem.search(acme, "q", identifiers=U1, filter={"n": {"gt": 1, "between": 2}})) is (
        ErrorCode.INVALID_PARAMS
    )
    assert _codes(lambda: mem.list(acme, layer="user", identifiers=U1, limit=500)) is ErrorCode.INVALID_PARAMS
    assert _codes(lambda: mem.get(acme, "")) is ErrorCode.INVALID_PARAMS


def test_error_shape(mem: Memory, acme: TenantContext) -> None:
    with pytest.raises(MemoryError) as err:
        mem.add(acme, content="x", layer="session", identifiers=U1)
    body = err.value.to_dict()
    assert set(body) == {"code", "message", "operation", "details", "retryable"}
    assert body["code"] == "MISSING_IDENTIFIER" and body["operation"] == "add"
    assert body["details"]["identifier"] == "sessionId"


def test_retryable_defaults() -> None:
    assert MemoryError(ErrorCode.PROVIDER_ERROR, "x").retryable is True
    assert MemoryError(ErrorCode.RATE_LIMITED, "x").retryable is True
    assert MemoryError(ErrorCode.EMBEDDING_FAILED, "x").retryable is True
    assert MemoryError(ErrorCode.INVALID_LAYER, "x").retryable is False
    assert MemoryError(ErrorCode.UNAUTHORIZED, "x").retryable is False


def test_closed_memory_refuses_work(open_mem: Callable[..., Memory], acme: TenantContext) -> None:
    mem = open_mem()
    mem.close()
    assert _codes(lambda: mem.get(acme, "x")) is ErrorCode.PROVIDER_ERROR
