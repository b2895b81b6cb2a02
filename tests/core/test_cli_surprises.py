"""The CLI never surprises: one default store, no silent store or tenant, one coded line per bad input.

Every test runs the real ``stratamem`` command (a subprocess) on real DuckDB files.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import typer

import stratamem
from stratamem.cli import app
from stratamem.sdk import DEFAULT_STORE

SRC = str(Path(__file__).resolve().parents[2] / "src")


def run(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("STRATAMEM_DB", "STRATAMEM_STORE", "STRATAMEM_TENANT")}
    full = {**base, "PYTHONPATH": SRC, "STRATAMEM_EMBEDDER": "hashing", "COLUMNS": "200", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "stratamem", *args], cwd=cwd, capture_output=True, text=True, env=full, timeout=120
    )


def one_error_line(out: subprocess.CompletedProcess[str], code: str) -> str:
    """The run failed with exit 2 and exactly one line ``error CODE: …`` on stderr; that line."""
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert out.returncode == 2, (out.returncode, out.stdout, out.stderr)
    assert len(lines) == 1 and lines[0].startswith(f"error {code}: "), out.stderr
    return lines[0]


def test_version(tmp_path: Path) -> None:
    out = run("--version", cwd=tmp_path)
    assert out.returncode == 0 and out.stdout.strip() == f"stratamem {stratamem.__version__}"


def _commands(group: typer.Typer) -> list[tuple[str, object]]:
    import importlib

    core = importlib.import_module("typer.main")
    root = core.get_command(group)
    found: list[tuple[str, object]] = []

    def walk(cmd: object, path: str) -> None:
        subs = getattr(cmd, "commands", None)
        if subs:
            for name, sub in subs.items():
                walk(sub, f"{path} {name}".strip())
        else:
            found.append((path, cmd))

    walk(root, "")
    return found


def test_every_command_has_the_same_default_store() -> None:
    commands = _commands(app)
    with_db = [(path, p) for path, cmd in commands for p in getattr(cmd, "params", []) if p.name == "db"]
    assert len(with_db) >= 25  # add, search, …, serve, mcp, keys, demo, snapshot, graph, writer
    for path, param in with_db:
        assert param.default == DEFAULT_STORE == "data/stratamem.duckdb", path
        # STRATAMEM_DB is read through stratamem.settings by the option's callback, and documented
        assert param.callback is not None and "STRATAMEM_DB" in (getattr(param, "help", None) or ""), path


def test_default_store_and_env_var_are_shared_by_commands(tmp_path: Path) -> None:
    assert (
        run(
            "add",
            "the backend runs on PostgreSQL",
            "-t",
            "acme",
            "--project-id",
            "b",
            "--layer",
            "project",
            cwd=tmp_path,
        ).returncode
        == 0
    )
    assert (tmp_path / "data" / "stratamem.duckdb").is_file() and not (tmp_path / "stratamem.duckdb").exists()
    listed = run("list", "-t", "acme", "--json", cwd=tmp_path)
    assert json.loads(listed.stdout)["totalCount"] == 1
    key = run("keys", "create", "-t", "acme", "--role", "reader", cwd=tmp_path)
    assert key.returncode == 0 and key.stdout.split()[-1].startswith("smk_")
    assert "reader" in run("keys", "list", "-t", "acme", cwd=tmp_path).stdout
    # STRATAMEM_DB moves every command to another file
    other = tmp_path / "elsewhere.duckdb"
    env = {"STRATAMEM_DB": str(other)}
    assert run("add", "only in the other store", "-t", "acme", "--user-id", "u", cwd=tmp_path, env=env).returncode == 0
    assert json.loads(run("stats", "-t", "acme", "--json", cwd=tmp_path, env=env).stdout)["total"] == 1
    assert json.loads(run("stats", "-t", "acme", "--json", cwd=tmp_path).stdout)["total"] == 1
    assert other.is_file()


READ_COMMANDS = [
    ("search", "anything", "-t", "acme", "--user-id", "u"),
    ("list", "-t", "acme"),
    ("get", "some-id", "-t", "acme"),
    ("stats", "-t", "acme"),
    ("export", "-t", "acme"),
    ("health", "-t", "acme"),
    ("policy", "show", "-t", "acme"),
    ("keys", "list", "-t", "acme"),
    ("graph", "check"),
    ("graph", "related", "x", "-t", "acme"),
    ("graph", "path", "a", "b", "-t", "acme"),
]


@pytest.mark.parametrize("args", READ_COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_read_commands_never_create_a_store(tmp_path: Path, args: tuple[str, ...]) -> None:
    missing = tmp_path / "typo" / "stroe.duckdb"
    line = one_error_line(run(*args, "--db", str(missing), cwd=tmp_path), "CONFIGURATION_ERROR")
    assert str(missing) in line
    assert not missing.exists() and not missing.parent.exists()


def test_missing_tenant_is_an_error_unless_the_env_sets_it(tmp_path: Path) -> None:
    db = tmp_path / "t.duckdb"
    line = one_error_line(run("add", "x", "--db", str(db), "--user-id", "u", cwd=tmp_path), "MISSING_TENANT_CONTEXT")
    assert "STRATAMEM_TENANT" in line
    assert not db.exists()  # checked before the store is opened
    for args in (("list",), ("search", "x", "--user-id", "u"), ("stats",), ("keys", "create")):
        one_error_line(run(*args, "--db", str(db), cwd=tmp_path), "MISSING_TENANT_CONTEXT")
    env = {"STRATAMEM_TENANT": "acme"}
    assert run("add", "x", "--db", str(db), "--user-id", "u", cwd=tmp_path, env=env).returncode == 0
    assert json.loads(run("list", "--db", str(db), "--json", cwd=tmp_path, env=env).stdout)["totalCount"] == 1
    assert (
        json.loads(run("list", "--db", str(db), "-t", "globex", "--json", cwd=tmp_path, env=env).stdout)["totalCount"]
        == 0
    )


def test_import_of_a_non_utf8_file_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "latin1.jsonl"
    bad.write_bytes(
        b'{"content": "ok", "layer": "user", "identifiers": {"userId": "u"}}\n'
        + '{"content": "café"}\n'.encode("latin-1")
    )
    line = one_error_line(
        run("import", str(bad), "--db", str(tmp_path / "i.duckdb"), "-t", "acme", cwd=tmp_path), "INVALID_PARAMS"
    )
    assert "latin1.jsonl:2" in line and "UTF-8" in line


@pytest.mark.parametrize(
    "args",
    [("search",), ("search", "q", "--bogus"), ("list", "-t", "acme", "--limit", "many"), ("nosuchcommand",)],
    ids=["missing-argument", "unknown-option", "bad-int", "unknown-command"],
)
def test_usage_errors_are_one_coded_line(tmp_path: Path, args: tuple[str, ...]) -> None:
    one_error_line(run(*args, cwd=tmp_path), "INVALID_PARAMS")


def test_a_locked_store_names_the_holder_and_is_not_retryable(tmp_path: Path) -> None:
    db = tmp_path / "locked.duckdb"
    assert run("add", "x", "--db", str(db), "-t", "acme", "--user-id", "u", cwd=tmp_path).returncode == 0
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from stratamem import Memory; "
            f"m = Memory.open({str(db)!r}, embedder='hashing'); print('ready', flush=True); time.sleep(60)",
        ],
        env={**os.environ, "PYTHONPATH": SRC},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        line = one_error_line(run("stats", "--db", str(db), "-t", "acme", cwd=tmp_path), "PROVIDER_ERROR")
        assert f"locked by another process (process {holder.pid}," in line and "--server" in line
        probe = run_python(
            "import json; from stratamem import Memory, MemoryError\n"
            f"try:\n    Memory.open({str(db)!r}, embedder='hashing')\n"
            "except MemoryError as e:\n    print(json.dumps(e.to_dict()))\n"
        )
        err = json.loads(probe)
        assert err["code"] == "PROVIDER_ERROR" and err["retryable"] is False
        assert err["details"]["reason"] == "locked" and err["details"]["pid"] == holder.pid
    finally:
        holder.kill()
        holder.wait()
    deadline = time.monotonic() + 10  # the lock goes with the process
    while run("stats", "--db", str(db), "-t", "acme", cwd=tmp_path).returncode != 0:
        assert time.monotonic() < deadline


def run_python(code: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": SRC}, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    return out.stdout
