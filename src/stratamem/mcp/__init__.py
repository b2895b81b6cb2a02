"""MCP surface (SPEC R-MCP): the seed-003 memory tools over stdio and streamable HTTP."""
