"""The CLI reads its ``STRATAMEM_*`` variables through ``stratamem.settings`` (no option reads the
environment itself), with the same precedence as before: the command line, then the variable, then
the option's default; a variable with a bad value is one coded error line."""

from __future__ import annotations

import json
from pathlib import Path

from stratamem.cli import app

from .test_cli_surprises import _commands, one_error_line, run


def test_no_option_reads_the_environment_itself() -> None:
    commands = _commands(app)
    assert len(commands) > 30
    readers = [
        f"{path} {param.name}"
        for path, cmd in commands
        for param in getattr(cmd, "params", [])
        if getattr(param, "envvar", None)
    ]
    assert readers == []


def test_command_line_then_variable_then_default(tmp_path: Path) -> None:
    from_env, from_flag = tmp_path / "env.duckdb", tmp_path / "flag.duckdb"
    env = {"STRATAMEM_DB": str(from_env), "STRATAMEM_TENANT": "acme"}
    assert run("add", "kept in the env store", "--user-id", "u", cwd=tmp_path, env=env).returncode == 0
    assert (
        run("add", "kept in the flag store", "--user-id", "u", "--db", str(from_flag), cwd=tmp_path, env=env).returncode
        == 0
    )
    assert from_env.is_file() and from_flag.is_file() and not (tmp_path / "data").exists()
    listed = json.loads(run("list", "--json", cwd=tmp_path, env=env).stdout)
    assert [m["content"] for m in listed["memories"]] == ["kept in the env store"]
    # the former name still works when STRATAMEM_DB is unset
    old = {"STRATAMEM_STORE": str(from_flag), "STRATAMEM_TENANT": "acme"}
    listed = json.loads(run("list", "--json", cwd=tmp_path, env=old).stdout)
    assert [m["content"] for m in listed["memories"]] == ["kept in the flag store"]
    # -t wins over STRATAMEM_TENANT
    other = json.loads(run("list", "-t", "globex", "--json", cwd=tmp_path, env=env).stdout)
    assert other["totalCount"] == 0


def test_keys_server_and_admin_key_come_from_the_settings(tmp_path: Path) -> None:
    env = {"STRATAMEM_SERVER": "http://127.0.0.1:9", "STRATAMEM_TENANT": "acme"}
    line = one_error_line(run("keys", "list", cwd=tmp_path, env=env), "MISSING_TENANT_CONTEXT")
    assert "--server needs --admin-key" in line  # the server URL was read from STRATAMEM_SERVER


def test_a_bad_variable_is_one_coded_error(tmp_path: Path) -> None:
    env = {"STRATAMEM_METRICS_PORT": "not-a-port"}
    line = one_error_line(run("stats", "-t", "acme", cwd=tmp_path, env=env), "CONFIGURATION_ERROR")
    assert line.startswith("error CONFIGURATION_ERROR: STRATAMEM_METRICS_PORT: ")
    line = one_error_line(
        run("serve", "--db", "memory://", cwd=tmp_path, env={"STRATAMEM_PORT": "x"}), "INVALID_PARAMS"
    )
    assert "port" in line
