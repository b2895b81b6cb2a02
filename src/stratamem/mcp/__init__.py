"""MCP surface: the memory tools over stdio and streamable HTTP."""
