"""stratamem: layered, multi-tenant semantic memory for AI agents.

Public API: :class:`Memory`, :class:`AsyncMemory`, :class:`TenantContext`, :class:`MemoryError`
and the data models.
"""

from typing import TYPE_CHECKING, Any

from .config import MemoryConfig
from .errors import ErrorCode, MemoryError, StratamemError
from .layers import get_accessible_layers
from .model import (
    AddMemoryOutput,
    HealthCheckResult,
    Layer,
    LayerIdentifiers,
    ListMemoriesOutput,
    MemoryEntry,
    MetadataFilter,
    Provenance,
    SearchMemoryOutput,
    SearchResult,
    TenantContext,
    UpdateMemoryOutput,
)
from .telemetry.observe import ObserveConfig

if TYPE_CHECKING:
    from .client import AsyncClient, Client
    from .sdk import AsyncMemory, Memory

__version__ = "0.1.0"

__all__ = [
    "AddMemoryOutput",
    "AsyncClient",
    "AsyncMemory",
    "Client",
    "ErrorCode",
    "HealthCheckResult",
    "Layer",
    "LayerIdentifiers",
    "ListMemoriesOutput",
    "Memory",
    "MemoryConfig",
    "MemoryEntry",
    "MemoryError",
    "MetadataFilter",
    "ObserveConfig",
    "Provenance",
    "SearchMemoryOutput",
    "SearchResult",
    "StratamemError",
    "TenantContext",
    "UpdateMemoryOutput",
    "__version__",
    "get_accessible_layers",
]


def __getattr__(name: str) -> Any:
    """Load the engine (``Memory``, ``AsyncMemory``: numpy, DuckDB, the providers) and the HTTP client
    (``Client``, ``AsyncClient``: httpx) when first used: a process that needs neither (``stratamem mcp``
    answering the MCP handshake, ``stratamem keys``) does not pay for importing them, and opening an
    embedded store stays offline."""
    if name in ("Memory", "AsyncMemory"):
        from . import sdk  # noqa: PLC0415 - the engine is imported on first use

        return getattr(sdk, name)
    if name in ("Client", "AsyncClient"):
        from . import client  # noqa: PLC0415 - httpx is imported only by applications that use the client

        return getattr(client, name)
    raise AttributeError(f"module 'stratamem' has no attribute {name!r}")
