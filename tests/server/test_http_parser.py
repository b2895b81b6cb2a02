"""`stratamem serve` parses HTTP with httptools (the `server` extra installs it).

uvicorn's ``http="auto"`` falls back to its pure-Python h11 parser when httptools is missing, which
cost about 1 ms of server CPU per search request (benchmarks/RESULTS.md, "HTTP parsing")."""

from __future__ import annotations

from pathlib import Path

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from stratamem import Memory
from stratamem.server.app import create_app
from stratamem.server.settings import ServerSettings


def test_the_server_uses_the_httptools_parser(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "http.duckdb", embedder="hashing") as mem:
        config = uvicorn.Config(create_app(mem, ServerSettings(mcp_enabled=False)))  # as `stratamem serve` builds it
        config.load()
        assert config.http_protocol_class is HttpToolsProtocol
