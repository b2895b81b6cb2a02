"""The ``stratamem`` command line (typer + rich).

Each feature registers its commands from its own module; this file only assembles them.
"""

from __future__ import annotations

import copy
import importlib
import sys
from types import ModuleType
from typing import Annotated

import typer
from typer.main import get_command_name
from typer.models import CommandInfo, TyperInfo

from .. import __version__
from . import (
    coordination_cmds,
    demo_cmd,
    encryption_cmds,
    graph_cmds,
    hygiene_cmds,
    keys_cmds,
    lifecycle_cmds,
    memory_cmds,
    migrate_cmd,
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


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"stratamem {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_show_version, is_eager=True, help="Print the version and exit."),
    ] = False,
) -> None:
    """Layered, multi-tenant semantic memory for AI agents."""


memory_cmds.register(app)
demo_cmd.register(app)
server_cmds.register(app)
keys_cmds.register(app)
graph_cmds.register(app)
coordination_cmds.register(app)
snapshot_cmds.register(app)
lifecycle_cmds.register(app)
models_cmds.register(app)
hygiene_cmds.register(app)
encryption_cmds.register(app)
migrate_cmd.register(app)


def _click_exceptions() -> ModuleType:
    """The click exceptions typer raises (recent typer vendors click as ``typer._click``)."""
    try:
        return importlib.import_module("typer._click.exceptions")
    except ImportError:
        return importlib.import_module("click.exceptions")


def _name(info: CommandInfo | TyperInfo) -> str | None:
    """The name typer gives a registered command or group (None when it is left to typer's defaults)."""
    if isinstance(info.name, str):
        return info.name
    if isinstance(info, CommandInfo):
        return None if info.callback is None else get_command_name(info.callback.__name__)
    if info.typer_instance is not None and isinstance(info.typer_instance.info.name, str):
        return info.typer_instance.info.name
    return None


def app_for(args: list[str]) -> typer.Typer:
    """``app`` with only the command or group that ``args`` runs, else ``app`` itself.

    Typer turns every registered command into a click command (reading each one's signature and
    type hints) before it runs any, which is a good part of a short command's start-up; a command
    line names one command, so only that one is turned. Root options, help and unknown names go to
    the whole app, whose messages list every command."""
    if not args or args[0].startswith("-"):
        return app
    infos: list[CommandInfo | TyperInfo] = [*app.registered_commands, *app.registered_groups]
    for info in infos:
        if _name(info) == args[0]:
            only = copy.copy(app)  # the root callback and settings, one command
            only.registered_commands = [info] if isinstance(info, CommandInfo) else []
            only.registered_groups = [info] if isinstance(info, TyperInfo) else []
            return only
    return app


def main() -> None:
    """Run the CLI; a usage error (unknown option, missing argument, bad value) is one line
    ``error INVALID_PARAMS: message`` and exit status 2, like every other bad input."""
    cx = _click_exceptions()
    try:
        code = app_for(sys.argv[1:])(standalone_mode=False)
    except cx.NoArgsIsHelpError as exc:
        typer.echo(exc.ctx.get_help() if exc.ctx is not None else str(exc))
        sys.exit(2)
    except cx.UsageError as exc:
        where = f"{exc.ctx.command_path}: " if exc.ctx is not None else ""
        typer.echo(f"error INVALID_PARAMS: {where}{exc.format_message()}", err=True)
        sys.exit(2)
    except typer.Abort:
        typer.echo("aborted", err=True)
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)
