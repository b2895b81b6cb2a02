"""The ``stratamem`` command line (typer + rich).

Each feature registers its commands from its own module; this file only assembles them.
"""

from __future__ import annotations

import typer

from . import (
    coordination_cmds,
    demo_cmd,
    graph_cmds,
    hygiene_cmds,
    lifecycle_cmds,
    memory_cmds,
    models_cmds,
    server_cmds,
    snapshot_cmds,
)

app = typer.Typer(
    name="stratamem",
    help="Layered, multi-tenant semantic memory for AI agents.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

memory_cmds.register(app)
demo_cmd.register(app)
server_cmds.register(app)
graph_cmds.register(app)
coordination_cmds.register(app)
snapshot_cmds.register(app)
lifecycle_cmds.register(app)
models_cmds.register(app)
hygiene_cmds.register(app)


def main() -> None:
    app()
