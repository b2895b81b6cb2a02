"""Building the app (with the /mcp mount) leaves the host's logging as it was: the MCP SDK's server
configures the root logger (INFO, a rich console handler) when it is built and the root logger has
no handler yet, which put every write's audit line through rich on stderr inside the request."""

from __future__ import annotations

import logging

from stratamem import Memory
from stratamem.server.app import create_app
from stratamem.server.settings import ServerSettings


def test_create_app_keeps_an_unconfigured_root_logger(server_mem: Memory) -> None:
    root = logging.getLogger()
    saved, saved_level = list(root.handlers), root.level
    root.handlers[:] = []  # as in `stratamem serve`: nothing configured the root logger (pytest did here)
    root.setLevel(logging.WARNING)
    try:
        create_app(server_mem, ServerSettings(mcp_enabled=True))
        assert root.handlers == [] and root.level == logging.WARNING
    finally:
        root.handlers[:] = saved
        root.setLevel(saved_level)
