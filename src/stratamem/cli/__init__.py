"""The ``stratamem`` command line (typer + rich).

Each feature registers its commands from its own module; this file only assembles them.
"""

from __future__ import annotations

import functools
import importlib
import sys
from types import ModuleType
from typing import Annotated

import typer
from typer.main import get_command_name
from typer.models import CommandInfo, TyperInfo

from .. import __version__

#: The modules that register commands, in the order ``--help`` lists them.
MODULES = (
    "memory_cmds",
    "demo_cmd",
    "server_cmds",
    "keys_cmds",
    "graph_cmds",
    "coordination_cmds",
    "snapshot_cmds",
    "lifecycle_cmds",
    "models_cmds",
    "hygiene_cmds",
    "encryption_cmds",
    "migrate_cmd",
)

#: The module that registers each command or group: a command line imports only its own module (the
#: others bring the engine, the HTTP server or the snapshot store, which ``stratamem mcp`` or
#: ``stratamem keys`` do not need before they start). tests/core/test_cli_start.py checks it against
#: the whole app.
COMMAND_MODULES: dict[str, str] = {
    **dict.fromkeys(("add", "search", "get", "list", "delete", "stats", "import", "export"), "memory_cmds"),
    "demo": "demo_cmd",
    "serve": "server_cmds",
    "mcp": "server_cmds",
    "keys": "keys_cmds",
    "graph": "graph_cmds",
    "writer": "coordination_cmds",
    "snapshot": "snapshot_cmds",
    **dict.fromkeys(("prune", "maintain", "forget-user", "close-session", "reflect"), "lifecycle_cmds"),
    "models": "models_cmds",
    **dict.fromkeys(("health", "process", "remember", "forget", "policy"), "hygiene_cmds"),
    "encryption": "encryption_cmds",
    "migrate": "migrate_cmd",
}


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"stratamem {__version__}")
        raise typer.Exit(0)


def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_show_version, is_eager=True, help="Print the version and exit."),
    ] = False,
) -> None:
    """Layered, multi-tenant semantic memory for AI agents."""


def build_app(modules: tuple[str, ...] = MODULES) -> typer.Typer:
    """The ``stratamem`` app with the commands of ``modules`` (default: every command)."""
    built = typer.Typer(
        name="stratamem",
        help="Layered, multi-tenant semantic memory for AI agents.",
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        add_completion=False,
    )
    built.callback()(_root)
    for name in modules:
        importlib.import_module(f"{__name__}.{name}").register(built)
    return built


@functools.cache
def whole_app() -> typer.Typer:
    """The app with every command (built once per process)."""
    return build_app()


def __getattr__(name: str) -> typer.Typer:
    """``stratamem.cli.app``: the whole app, built when first asked for."""
    if name == "app":
        return whole_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
    """An app with only the command or group that ``args`` runs, else the whole app.

    A command line names one command, so only its module is imported and only that command is
    turned into a click command (typer reads the signature and type hints of every registered
    command before it runs any, a good part of a short command's start-up). Root options, help and
    unknown names go to the whole app, whose messages list every command."""
    module = COMMAND_MODULES.get(args[0]) if args else None
    if module is None:
        return whole_app()
    partial = build_app((module,))
    infos: list[CommandInfo | TyperInfo] = [*partial.registered_commands, *partial.registered_groups]
    for info in infos:
        if _name(info) == args[0]:  # a module may register several commands: keep this one
            partial.registered_commands = [info] if isinstance(info, CommandInfo) else []
            partial.registered_groups = [info] if isinstance(info, TyperInfo) else []
            return partial
    return whole_app()  # COMMAND_MODULES names a module that does not register it: stay correct


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
