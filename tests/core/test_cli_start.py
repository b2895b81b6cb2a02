"""A command line turns only the command it runs into a click command (``cli._for_command``): the
rest of the app is never inspected, and what the command does and prints is the whole app's."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from stratamem.cli import _for_command, app

NAMES = sorted(typer.main.get_command(app).commands)  # type: ignore[attr-defined]


def test_every_command_and_group_is_found() -> None:
    assert {"add", "search", "serve", "mcp", "models", "graph", "keys", "snapshot", "policy"} <= set(NAMES)
    for name in NAMES:
        only = _for_command([name, "--help"])
        assert only is not app, name
        assert sorted(typer.main.get_command(only).commands) == [name]  # type: ignore[attr-defined]
    # the whole app keeps every command
    assert sorted(typer.main.get_command(app).commands) == NAMES  # type: ignore[attr-defined]


@pytest.mark.parametrize("args", [[], ["--help"], ["--version"], ["no-such-command"], ["-x", "search"]])
def test_root_options_and_unknown_names_get_the_whole_app(args: list[str]) -> None:
    assert _for_command(args) is app


@pytest.mark.parametrize("args", [["search", "--help"], ["models", "--help"], ["snapshot", "push", "--help"]])
def test_help_is_the_same_as_the_whole_apps(args: list[str]) -> None:
    runner = CliRunner()
    whole = runner.invoke(app, args, env={"COLUMNS": "120"})
    only = runner.invoke(_for_command(args), args, env={"COLUMNS": "120"})
    assert whole.exit_code == only.exit_code == 0
    assert only.output == whole.output
    assert args[0] in only.output
