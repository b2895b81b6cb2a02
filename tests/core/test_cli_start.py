"""A command line turns only the command it runs into a click command (``cli.app_for``): the
rest of the app is never inspected, and what the command does and prints is the whole app's."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from stratamem.cli import COMMAND_MODULES, MODULES, app, app_for, build_app

NAMES = sorted(typer.main.get_command(app).commands)  # type: ignore[attr-defined]


def test_every_command_and_group_is_found() -> None:
    assert {"add", "search", "serve", "mcp", "models", "graph", "keys", "snapshot", "policy"} <= set(NAMES)
    for name in NAMES:
        only = app_for([name, "--help"])
        assert only is not app, name
        assert sorted(typer.main.get_command(only).commands) == [name]  # type: ignore[attr-defined]
    # the whole app keeps every command
    assert sorted(typer.main.get_command(app).commands) == NAMES  # type: ignore[attr-defined]


@pytest.mark.parametrize("args", [[], ["--help"], ["--version"], ["no-such-command"], ["-x", "search"]])
def test_root_options_and_unknown_names_get_the_whole_app(args: list[str]) -> None:
    assert app_for(args) is app


@pytest.mark.parametrize("args", [["search", "--help"], ["models", "--help"], ["snapshot", "push", "--help"]])
def test_help_is_the_same_as_the_whole_apps(args: list[str]) -> None:
    runner = CliRunner()
    whole = runner.invoke(app, args, env={"COLUMNS": "120"})
    only = runner.invoke(app_for(args), args, env={"COLUMNS": "120"})
    assert whole.exit_code == only.exit_code == 0
    assert only.output == whole.output
    assert args[0] in only.output


def test_each_command_is_registered_by_the_module_the_map_names() -> None:
    """A command line imports only the module ``COMMAND_MODULES`` names for it: the map must name the
    module that registers each command, and cover the whole app."""
    assert sorted(COMMAND_MODULES) == NAMES
    for module in MODULES:
        alone = typer.main.get_command(build_app((module,)))
        registered = sorted(alone.commands)  # type: ignore[attr-defined]
        assert registered == sorted(n for n, m in COMMAND_MODULES.items() if m == module), module
