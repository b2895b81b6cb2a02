"""Observation without the server: a real Memory opened with ``observe`` feeds the server's metric names,
records one OpenTelemetry span per operation (the SDK's in-memory exporter) and audits cross-tenant
attempts; a Memory opened without it attaches none of that."""

from __future__ import annotations

import re
import socket
from pathlib import Path

import httpx
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import REGISTRY

from stratamem import AsyncMemory, Memory, MemoryError, ObserveConfig, TenantContext
from stratamem.telemetry.audit import AuditLog
from stratamem.telemetry.observe import observers_of

ACME = TenantContext(tenant_id="acme", principal="alice")
GLOBEX = TenantContext(tenant_id="globex", principal="mallory")
ALICE = {"user_id": "alice"}


def _sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def _value(text: str, name: str, labels: str) -> float:
    m = re.search(rf"^{re.escape(name)}\{{{re.escape(labels)}\}} ([0-9.e+-]+)$", text, re.M)
    assert m, f"{name}{{{labels}}} not exposed"
    return float(m.group(1))


@pytest.fixture(autouse=True)
def _no_observe_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("STRATAMEM_OBSERVE", "STRATAMEM_METRICS_PORT", "STRATAMEM_AUDIT_LOG"):
        monkeypatch.delenv(name, raising=False)


def test_observed_memory_emits_metrics_spans_and_audit(tmp_path: Path) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    audit_file = tmp_path / "audit.jsonl"
    config = ObserveConfig(tracer_provider=provider, audit_log=audit_file, metrics_port=0)
    adds, errors = (
        _sample("memory_operations_total", op="add"),
        _sample("memory_operations_errors_total", code="INVALID_LAYER"),
    )
    with Memory.open(tmp_path / "o.duckdb", embedder="hashing", observe=config) as mem:
        assert observers_of(mem.engine) == ["metrics", "tracing", "audit"]
        size = _value(mem.metrics_text(), "memory_storage_size", 'layer="user"')
        secret = "the launch code is 1234"
        mid = mem.add(ACME, secret, layer="user", identifiers=ALICE).memory.id
        mem.add(ACME, "prefers dark mode", layer="user", identifiers=ALICE)
        with pytest.raises(MemoryError):
            mem.add(ACME, "x", layer="nope", identifiers=ALICE)
        assert mem.search(ACME, "dark mode", identifiers=ALICE, threshold=0).results
        assert mem.get(GLOBEX, mid) is None  # another tenant asks for acme's id

        text = mem.metrics_text()
        assert _value(text, "memory_operations_total", 'op="add"') == adds + 3
        assert _value(text, "memory_operations_errors_total", 'code="INVALID_LAYER"') == errors + 1
        assert _value(text, "memory_storage_size", 'layer="user"') == size + 2
        assert 'memory_operations_latency_bucket{le="1.0",op="search"}' in text
        assert _value(text, "memory_search_results_count", 'layer="user"') >= 1

        url = mem.observation.metrics_url if mem.observation else None
        assert url and url.startswith("http://127.0.0.1:")
        scraped = httpx.get(url, timeout=10)
        assert scraped.status_code == 200
        assert _value(scraped.text, "memory_operations_total", 'op="add"') == adds + 3
        assert _value(scraped.text, "memory_storage_size", 'layer="user"') == size + 2

    spans = exporter.get_finished_spans()
    assert [s.name for s in spans] == ["memory.add", "memory.add", "memory.add", "memory.search", "memory.get"]
    search = spans[3]
    assert search.attributes and search.attributes["stratamem.tenant_id"] == "acme"
    assert search.attributes["stratamem.result_count"] == 2
    failed = spans[2]
    assert failed.attributes and failed.attributes["stratamem.error_code"] == "INVALID_LAYER"
    assert spans[4].attributes and spans[4].attributes["stratamem.tenant_id"] == "globex"

    records = AuditLog.read_file(audit_file)
    cross = [r for r in records if r.cross_tenant]
    assert len(cross) == 1 and cross[0].tenant_id == "globex" and cross[0].principal == "mallory"
    assert cross[0].action == "get" and cross[0].memory_ids == [mid] and cross[0].outcome == "denied"
    assert [r.action for r in records if r.outcome == "ok"] == ["add", "add"]
    assert "1234" not in audit_file.read_text()
    with pytest.raises(httpx.TransportError):  # closing the store stops its metrics endpoint
        httpx.get(url, timeout=2)


def test_observation_is_off_by_default(tmp_path: Path) -> None:
    adds = _sample("memory_operations_total", op="add")
    with Memory.open(tmp_path / "off.duckdb", embedder="hashing") as mem:
        assert mem.observation is None and observers_of(mem.engine) == []
        mid = mem.add(ACME, "prefers dark mode", layer="user", identifiers=ALICE).memory.id
        assert mem.get(GLOBEX, mid) is None
        assert _sample("memory_operations_total", op="add") == adds  # no metric moved
        assert not [r for r in mem.engine.audit.recent() if r.cross_tenant]
        with pytest.raises(MemoryError) as err:
            mem.metrics_text()
        assert err.value.code.value == "CONFIGURATION_ERROR"


def test_environment_turns_observation_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STRATAMEM_OBSERVE", "1")
    with Memory.open(tmp_path / "env.duckdb", embedder="hashing") as mem:
        assert observers_of(mem.engine) == ["metrics", "tracing", "audit"]
        assert mem.observation is not None and mem.observation.metrics_url is None
    with Memory.open(tmp_path / "env.duckdb", embedder="hashing", observe=False) as mem:
        assert observers_of(mem.engine) == []  # an explicit False wins over the environment


def test_partial_observation_and_a_taken_port(tmp_path: Path) -> None:
    with Memory.open(
        tmp_path / "a.duckdb", embedder="hashing", observe=ObserveConfig(tracing=False, audit=False, metrics_port=0)
    ) as mem:
        assert observers_of(mem.engine) == ["metrics"]
        url = mem.observation.metrics_url if mem.observation else None
        assert url
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        # the same address and port in one process: the endpoint is shared, not a second bind
        with Memory.open(tmp_path / "c.duckdb", embedder="hashing", observe=ObserveConfig(metrics_port=port)) as other:
            assert other.observation is not None and other.observation.metrics_url == url
        assert httpx.get(url, timeout=10).status_code == 200  # still served for the first store

    with socket.socket() as taken:  # a port another program holds: a coded error, the store is not left open
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(MemoryError) as err:
            Memory.open(
                tmp_path / "b.duckdb", embedder="hashing", observe=ObserveConfig(metrics_port=taken.getsockname()[1])
            )
        assert err.value.code.value == "CONFIGURATION_ERROR"
    with Memory.open(tmp_path / "b.duckdb", embedder="hashing") as again:
        assert again.list(ACME).total_count == 0


def test_async_memory_observes_too(tmp_path: Path) -> None:
    import asyncio

    async def main() -> str:
        async with await AsyncMemory.open(tmp_path / "async.duckdb", embedder="hashing", observe=True) as mem:
            assert mem.observation is not None
            await mem.add(ACME, "prefers tea", layer="user", identifiers=ALICE)
            return await mem.metrics_text()

    assert 'memory_operations_total{op="add"}' in asyncio.run(main())
