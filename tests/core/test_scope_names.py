"""Other APIs' scope names (``workspace``/``workspaceId``, ``global``) map onto stratamem's layers
on every surface; the SDK and the CLI here, REST in tests/server/test_scope_names_rest.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from stratamem import ErrorCode, Layer, Memory, MemoryError, TenantContext
from stratamem.layers import parse_layer
from stratamem.scopes import LAYER_ALIASES

SRC = str(Path(__file__).resolve().parents[2] / "src")


def test_every_scope_name_parses_to_its_layer() -> None:
    assert {name: parse_layer(name) for name in ("workspace", "Workspace ", "global")} == {
        "workspace": Layer.PROJECT,
        "Workspace ": Layer.PROJECT,
        "global": Layer.COMPANY,
    }
    for same in ("user", "session", "agent", "org", "object"):
        assert parse_layer(same) is Layer(same)
    assert set(LAYER_ALIASES) == {"workspace", "global"}


def test_add_to_workspace_with_workspace_id_is_the_project_layer(mem: Memory, acme: TenantContext) -> None:
    out = mem.add(acme, content="Deploys go out on Tuesdays", layer="workspace", identifiers={"workspaceId": "w1"})
    assert out.memory.layer is Layer.PROJECT and out.memory.identifiers.project_id == "w1"
    found = mem.search(acme, "Deploys go out on Tuesdays", identifiers={"workspace_id": "w1"}, threshold=0)
    assert [r.memory.id for r in found.results] == [out.memory.id]
    listed = mem.list(acme, layer="workspace", identifiers={"projectId": "w1"})
    assert [e.id for e in listed.memories] == [out.memory.id]
    assert mem.get_accessible_layers({"workspaceId": "w1", "userId": "u1"}) == [Layer.USER, Layer.PROJECT]


def test_workspace_id_that_contradicts_project_id_is_invalid(mem: Memory, acme: TenantContext) -> None:
    with pytest.raises(MemoryError) as err:
        mem.add(acme, content="x", layer="workspace", identifiers={"workspaceId": "w1", "projectId": "p2"})
    assert err.value.code is ErrorCode.INVALID_PARAMS and "workspaceId" in err.value.message
    same = mem.add(acme, content="y", layer="workspace", identifiers={"workspaceId": "w1", "projectId": "w1"})
    assert same.memory.identifiers.project_id == "w1"
    with pytest.raises(MemoryError) as missing:
        mem.add(acme, content="z", layer="workspace", identifiers={"userId": "u1"})
    assert missing.value.code is ErrorCode.MISSING_IDENTIFIER


def test_cli_takes_workspace_layer_and_workspace_id(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": SRC, "STRATAMEM_EMBEDDER": "hashing", "COLUMNS": "200"}
    db = str(tmp_path / "cli.duckdb")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "stratamem",
            "add",
            "Standup is at 9",
            "--db",
            db,
            "-t",
            "acme",
            "--layer",
            "workspace",
            "--workspace-id",
            "w1",
            "--json",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    memory = json.loads(out.stdout)["memory"]
    assert memory["layer"] == "project" and memory["identifiers"]["projectId"] == "w1"
