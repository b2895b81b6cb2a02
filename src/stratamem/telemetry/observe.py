"""Observation of an engine: metrics, spans and the audit of writes, denials and cross-tenant attempts.

The one place that wires the three observers of :mod:`stratamem.telemetry` onto an engine. The server
(``stratamem serve``) always does; embedded users opt in with ``Memory.open(..., observe=True)`` (or an
:class:`ObserveConfig`, or ``STRATAMEM_OBSERVE=1`` / ``STRATAMEM_METRICS_PORT``), which also covers every
CLI command and ``stratamem mcp`` over stdio. Off by default: an unobserved engine has none of the
observers and feeds no metric.

* metrics: the Prometheus series of :mod:`.metrics` (same names as the server's ``/metrics``), read
  with :func:`metrics_text` or scraped from an optional HTTP endpoint (``metrics_port``) served by
  prometheus_client's ``start_http_server``;
* spans: one per operation, through the given tracer provider or OpenTelemetry's global one;
* audit: JSON lines to the ``stratamem.audit`` logger, the engine's ring buffer and an optional file.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prometheus_client import REGISTRY, CollectorRegistry, generate_latest, start_http_server
from prometheus_client.metrics_core import Metric
from pydantic import BaseModel, ConfigDict, Field

from ..errors import ErrorCode, MemoryError
from ..settings import Settings
from . import audit_observer, metrics, tracing
from .audit import AuditLog

if TYPE_CHECKING:
    from wsgiref.simple_server import WSGIServer

    from ..engine import MemoryEngine

log = logging.getLogger("stratamem.telemetry")

#: The values of ``STRATAMEM_OBSERVE`` that turn observation on.
OBSERVE_ON = frozenset({"1", "true", "yes", "on"})


class ObserveConfig(BaseModel):
    """What an observed engine emits. ``Memory.open(observe=True)`` is ``ObserveConfig()``."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    #: Feed the Prometheus metrics (``memory_operations_total``, ``…_latency``, ``memory_storage_size``, …).
    metrics: bool = True
    #: One OpenTelemetry span per operation (``memory.add``, ``memory.search``, …).
    tracing: bool = True
    #: Audit writes, denials and cross-tenant attempts (``stratamem.audit`` logger).
    audit: bool = True
    #: Serve the metrics in the Prometheus text format at ``http://{metrics_addr}:{metrics_port}/metrics``
    #: (None: no endpoint; 0: any free port, see ``Observation.metrics_url``).
    metrics_port: int | None = Field(None, ge=0, le=65535)
    metrics_addr: str = "127.0.0.1"
    #: Also append the audit lines to this JSON-lines file (``STRATAMEM_AUDIT_LOG`` does the same).
    audit_log: Path | None = None
    #: An OpenTelemetry ``TracerProvider``; None = the global one (``trace.set_tracer_provider``).
    tracer_provider: Any = None

    @classmethod
    def from_env(cls, settings: Settings | None = None) -> ObserveConfig | None:
        """``STRATAMEM_OBSERVE`` (1/true/yes/on) or ``STRATAMEM_METRICS_PORT``; None when neither is set.

        Args:
            settings: The environment's settings (None: read the environment now).

        Returns:
            The configuration, or None when observation is off.
        """
        settings = settings or Settings()
        port = settings.metrics_port
        flag = (settings.observe or "").strip().lower()
        if port is None and flag not in OBSERVE_ON:
            return None
        return cls.model_validate({"metrics_port": port} if port is not None else {})


def resolve(observe: bool | ObserveConfig | None, settings: Settings | None = None) -> ObserveConfig | None:
    """The configuration an ``observe`` argument means: True → defaults, False → off, None → the
    settings (``STRATAMEM_OBSERVE`` / ``STRATAMEM_METRICS_PORT``; None: read the environment now)."""
    if isinstance(observe, ObserveConfig):
        return observe
    if observe is None:
        return ObserveConfig.from_env(settings)
    return ObserveConfig() if observe else None


# ---------------------------------------------------------------------------------------- metrics
#: Observed engines whose ``memory_storage_size`` is recounted before each exposition.
_engines: weakref.WeakSet[MemoryEngine] = weakref.WeakSet()
_engines_lock = threading.Lock()


class _Exposition:
    """Collector of the default registry's metrics that first recounts the observed stores."""

    def collect(self) -> Iterator[Metric]:
        with _engines_lock:
            engines = [e for e in _engines if not e.closed]
        if engines:
            try:  # the sum over the observed stores of this process
                metrics.refresh_storage_size(engines)
            except Exception:  # an exposition must not fail because a count did
                log.exception("cannot refresh memory_storage_size")
            try:
                metrics.refresh_store_memory(engines)
            except Exception:
                log.exception("cannot refresh stratamem_store_memory_bytes")
        yield from REGISTRY.collect()


#: The registry the embedded endpoint and :func:`metrics_text` expose: every metric of the process's
#: default registry (so the same names as the server's ``/metrics``), storage counts fresh.
EXPOSITION = CollectorRegistry(auto_describe=False)
EXPOSITION.register(_Exposition())


def metrics_text() -> str:
    """The process's metrics in the Prometheus text exposition format."""
    return generate_latest(EXPOSITION).decode("utf-8")


class _Endpoint:
    """One metrics HTTP endpoint per (address, port), shared by the engines that ask for it."""

    def __init__(self, server: WSGIServer, thread: threading.Thread) -> None:
        self.server = server
        self.thread = thread
        self.users = 0


_endpoints: dict[tuple[str, int], _Endpoint] = {}


def _open_endpoint(addr: str, port: int) -> tuple[tuple[str, int], _Endpoint]:
    with _engines_lock:
        if port:
            found = _endpoints.get((addr, port))
            if found is not None:
                found.users += 1
                return (addr, port), found
        try:
            server, thread = start_http_server(port, addr, registry=EXPOSITION)
        except OSError as exc:  # the port is taken or the address is not local
            raise MemoryError(
                ErrorCode.CONFIGURATION_ERROR,
                f"cannot serve metrics on {addr}:{port}: {exc}",
                operation="observe",
                details={"metrics_addr": addr, "metrics_port": port},
                retryable=False,
            ) from None
        key = (addr, int(server.server_port))
        endpoint = _endpoints[key] = _Endpoint(server, thread)
        endpoint.users = 1
        return key, endpoint


def _close_endpoint(key: tuple[str, int]) -> None:
    with _engines_lock:
        endpoint = _endpoints.get(key)
        if endpoint is None:
            return
        endpoint.users -= 1
        if endpoint.users > 0:
            return
        del _endpoints[key]
    endpoint.server.shutdown()
    endpoint.server.server_close()
    endpoint.thread.join(timeout=5)


# ------------------------------------------------------------------------------------ installation
class Observation:
    """What :func:`install` attached to an engine; :meth:`close` stops its metrics endpoint."""

    def __init__(self, engine: MemoryEngine, config: ObserveConfig) -> None:
        self.config = config
        self._engine = weakref.ref(engine)
        self._endpoint: tuple[str, int] | None = None

    @property
    def metrics_url(self) -> str | None:
        """``http://host:port/metrics`` of the embedded endpoint, None when there is none."""
        if self._endpoint is None:
            return None
        host, port = self._endpoint
        return f"http://{host}:{port}/metrics"

    def close(self) -> None:
        engine = self._engine()
        if engine is not None:
            with _engines_lock:
                _engines.discard(engine)
            metrics.forget(engine)
        if self._endpoint is not None:
            key, self._endpoint = self._endpoint, None
            _close_endpoint(key)


def install(engine: MemoryEngine, config: ObserveConfig | None = None) -> Observation:
    """Attach the observers ``config`` asks for to ``engine`` (each at most once) and start its
    metrics endpoint when a port is given."""
    config = config or ObserveConfig()
    observation = Observation(engine, config)
    if config.audit:
        if config.audit_log is not None:
            engine.audit = AuditLog(config.audit_log)
        audit_observer.install(engine)
    if config.tracing:
        tracing.install(engine, config.tracer_provider)
    if config.metrics:
        metrics.install(engine)
        with _engines_lock:
            _engines.add(engine)
        if config.metrics_port is not None:
            observation._endpoint, _ = _open_endpoint(config.metrics_addr, config.metrics_port)
            log.info("metrics at %s", observation.metrics_url)
    return observation


def observers_of(engine: MemoryEngine) -> list[str]:
    """Names of the telemetry observers attached to ``engine`` (``metrics``, ``tracing``, ``audit``)."""
    kinds: Iterable[tuple[str, type]] = (
        ("metrics", metrics.MetricsObserver),
        ("tracing", tracing.TracingObserver),
        ("audit", audit_observer.AuditObserver),
    )
    return [name for name, cls in kinds if any(isinstance(o, cls) for o in engine.hooks.observers)]
