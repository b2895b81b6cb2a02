"""Seed 000 "Span creation for graph traversal": attributes query type, tenant, hops, results, duration."""

from __future__ import annotations

from collections.abc import Callable

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from stratamem import Memory, TenantContext

EXPORTER = InMemorySpanExporter()


def _install() -> None:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(EXPORTER))
    trace.set_tracer_provider(provider)  # global, once per process; other tests are unaffected


def test_traversal_spans(mem: Memory, acme: TenantContext, add: Callable[..., str]) -> None:
    _install()
    add(acme, "Alice works on Project A.")
    EXPORTER.clear()
    mem.graph.related(acme, "Alice", hops=2, include_entities=True)
    mem.graph.path(acme, "Alice", "Project A")
    spans = {s.name: s for s in EXPORTER.get_finished_spans()}
    related = spans["graph.find_related"].attributes or {}
    assert related["graph.query_type"] == "find_related" and related["tenant_id"] == "acme"
    assert related["graph.hops"] == 2 and related["graph.result_count"] == 2
    assert float(related["graph.duration_ms"]) >= 0  # type: ignore[arg-type]
    assert (spans["graph.shortest_path"].attributes or {})["graph.result_count"] == 2
