"""The MCP tool definitions of ``stratamem mcp`` as plain dicts, for clients that register tools
themselves: read from the real MCP server object, so they are exactly what ``tools/list`` returns."""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING, Any

from .server import build_mcp_server

if TYPE_CHECKING:
    from ..sdk import Memory


def _unbound(context: Any) -> Any:
    raise RuntimeError("tool definitions only: this MCP server object is never called")


async def amcp_tools(memory: Memory) -> list[dict[str, Any]]:
    """The stratamem MCP tools as ``{"name", "description", "inputSchema"}`` dicts (MCP wire names)."""
    server = build_mcp_server(lambda: memory, _unbound)
    tools = await server.list_tools()
    return [{"name": t.name, "description": t.description or "", "inputSchema": dict(t.input_schema)} for t in tools]


def mcp_tools(memory: Memory) -> list[dict[str, Any]]:
    """Sync :func:`amcp_tools`; safe to call from inside a running event loop (runs in a helper thread)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(amcp_tools(memory))
    out: list[list[dict[str, Any]]] = []
    worker = threading.Thread(target=lambda: out.append(asyncio.run(amcp_tools(memory))))
    worker.start()
    worker.join()
    return out[0]
