"""/metrics names, OpenTelemetry spans (in-memory exporter), audit log records without content."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from fastapi.testclient import TestClient
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from stratamem import Memory, TenantContext
from stratamem.server.app import create_app
from stratamem.server.settings import ServerSettings
from stratamem.telemetry.audit import AuditLog

ALICE = {"userId": "alice"}


def _value(text: str, name: str, labels: str) -> float:
    m = re.search(rf"^{re.escape(name)}\{{{re.escape(labels)}\}} ([0-9.e+-]+)$", text, re.M)
    assert m, f"{name}{{{labels}}} not in /metrics"
    return float(m.group(1))


def test_metrics_after_a_few_calls(client: TestClient, make_key: Callable[..., str]) -> None:
    key = make_key()
    hdr = {"X-API-Key": key}
    before = client.get("/metrics").text
    n_add = (
        _value(before, "memory_operations_total", 'op="add"') if 'memory_operations_total{op="add"}' in before else 0.0
    )
    for i in range(3):
        client.post("/v1/memories", headers=hdr, json={"content": f"note {i}", "layer": "user", "identifiers": ALICE})
    client.post("/v1/memories/search", headers=hdr, json={"query": "note 1", "identifiers": ALICE, "threshold": 0})
    client.post("/v1/memories", headers=hdr, json={"content": "x", "layer": "nope", "identifiers": ALICE})
    r = client.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    text = r.text
    assert _value(text, "memory_operations_total", 'op="add"') == n_add + 4
    assert _value(text, "memory_operations_errors_total", 'code="INVALID_LAYER"') >= 1
    client.get("/v1/memories")
    assert _value(client.get("/metrics").text, "memory_operations_errors_total", 'code="MISSING_TENANT_CONTEXT"') >= 1
    assert "memory_operations_latency_bucket{" in text and 'op="search"' in text
    assert _value(text, "memory_search_results_count", 'layer="user"') >= 1
    assert _value(text, "memory_storage_size", 'layer="user"') == 3
    # the DuckDB store's own memory accounting, by tag (duckdb_memory())
    held = re.findall(r'^stratamem_store_memory_bytes\{tag="([A-Z_]+)"\} ([0-9.e+]+)$', text, re.M)
    assert held and all(float(size) > 0 for _, size in held), held
    assert "python_info" in text or "process_" in text  # the default registry is exported


def test_spans_per_operation(server_mem: Memory, make_key: Callable[..., str]) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    key = make_key()
    app = create_app(server_mem, ServerSettings(mcp_enabled=False), tracer_provider=provider)
    with TestClient(app) as client:
        client.post(
            "/v1/memories",
            headers={"X-API-Key": key},
            json={"content": "dark mode", "layer": "user", "identifiers": ALICE},
        )
        client.post(
            "/v1/memories/search",
            headers={"X-API-Key": key},
            json={"query": "dark mode", "identifiers": {**ALICE, "projectId": "p"}, "threshold": 0},
        )
        client.get("/v1/memories/missing", headers={"X-API-Key": key})
        client.post("/v1/memories/search", headers={"X-API-Key": key}, json={"query": "q"})
    spans = {s.name: s for s in exporter.get_finished_spans()}
    search = next(s for s in exporter.get_finished_spans() if s.name == "memory.search")
    assert search.attributes is not None
    assert search.attributes["stratamem.tenant_id"] == "acme"
    assert list(search.attributes["stratamem.layers"]) == ["user", "project"]  # type: ignore[arg-type]
    assert search.attributes["stratamem.result_count"] == 1
    assert spans["memory.add"].end_time is not None and spans["memory.add"].start_time is not None
    assert spans["memory.add"].end_time >= spans["memory.add"].start_time
    failed = [s for s in exporter.get_finished_spans() if s.attributes and s.attributes.get("stratamem.error_code")]
    assert failed and failed[0].attributes["stratamem.error_code"] == "MISSING_IDENTIFIER"  # type: ignore[index]


def test_audit_log_file_records_writes_denials_and_cross_tenant(
    server_mem: Memory, tmp_path: Path, make_key: Callable[..., str], client: TestClient
) -> None:
    path = tmp_path / "audit.jsonl"
    server_mem.engine.audit = AuditLog(path)
    secret_text = "the launch code is 1234"
    key = make_key()
    r = client.post(
        "/v1/memories", headers={"X-API-Key": key}, json={"content": secret_text, "layer": "user", "identifiers": ALICE}
    )
    mid = r.json()["memory"]["id"]
    client.patch(f"/v1/memories/{mid}", headers={"X-API-Key": key}, json={"content": secret_text + "!"})
    client.get("/v1/memories", headers={"X-API-Key": "smk_0000000000000000_xxxxxxxxxxxxxxxxxxxxxxxx"})
    server_mem.get(TenantContext(tenant_id="globex", principal="mallory"), mid)  # SDK calls are audited too
    client.delete(f"/v1/memories/{mid}", headers={"X-API-Key": key})
    records = AuditLog.read_file(path)
    actions = [(r.action, r.outcome) for r in records]
    assert ("add", "ok") in actions and ("update", "ok") in actions and ("delete", "ok") in actions
    assert ("GET /v1/memories", "denied") in actions
    cross = [r for r in records if r.cross_tenant]
    assert len(cross) == 1 and cross[0].tenant_id == "globex" and cross[0].principal == "mallory"
    assert cross[0].memory_ids == [mid]
    add = next(r for r in records if r.action == "add")
    assert add.principal and add.principal.startswith("key:") and add.memory_ids == [mid] and add.layer == "user"
    assert secret_text not in path.read_text() and "1234" not in path.read_text()
