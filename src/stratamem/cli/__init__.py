"""The ``stratamem`` command line (typer + rich).

Each feature registers its commands from its own module; this file only assembles them.
"""

from __future__ import annotations

import typer

from . import demo_cmd, hygiene_cmds, memory_cmds

app = typer.Typer(
    name="stratamem",
    help="Layered, multi-tenant semantic memory for AI agents.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

memory_cmds.register(app)
demo_cmd.register(app)
hygiene_cmds.register(app)


def main() -> None:
    app()
