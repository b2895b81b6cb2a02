"""OpenTelemetry spans, one per memory operation.

The engine notifies observers after an operation, so each span is recorded with the operation's real
start and end times. Without a configured SDK ``TracerProvider`` the OpenTelemetry API is a no-op.
Attributes: ``stratamem.operation``, ``stratamem.tenant_id``, ``stratamem.layers`` and
``stratamem.result_count`` (search/list), ``stratamem.error_code``; never memory content.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode

if TYPE_CHECKING:
    from ..engine import MemoryEngine
    from ..hooks import OperationEvent


class TracingObserver:
    def __init__(self, tracer_provider: trace.TracerProvider | None = None) -> None:
        self.tracer = trace.get_tracer("stratamem", tracer_provider=tracer_provider)

    def __call__(self, event: OperationEvent) -> None:
        end = time.time_ns()
        start = end - int(event.duration_s * 1e9)
        attrs: dict[str, Any] = {"stratamem.operation": event.operation}
        if event.tenant_id:
            attrs["stratamem.tenant_id"] = str(event.tenant_id)
        if isinstance(event.extra.get("layers"), list):
            attrs["stratamem.layers"] = [str(x) for x in event.extra["layers"]]
        if isinstance(event.extra.get("layer"), str):
            attrs["stratamem.layers"] = [event.extra["layer"]]
        if isinstance(event.extra.get("result_count"), int):
            attrs["stratamem.result_count"] = event.extra["result_count"]
        span = self.tracer.start_span(f"memory.{event.operation}", start_time=start, attributes=attrs)
        if event.error_code:
            span.set_attribute("stratamem.error_code", event.error_code)
            span.set_status(Status(StatusCode.ERROR, event.error_code))
        span.end(end_time=end)


def install(engine: MemoryEngine, tracer_provider: trace.TracerProvider | None = None) -> TracingObserver:
    """Attach (or replace) the engine's tracing observer."""
    engine.hooks.observers[:] = [o for o in engine.hooks.observers if not isinstance(o, TracingObserver)]
    obs = TracingObserver(tracer_provider)
    engine.hooks.observers.append(obs)
    return obs
