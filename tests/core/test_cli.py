"""The CLI end to end, as a user runs it (a subprocess on a real DuckDB file)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[2] / "src")


def run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": SRC, "STRATAMEM_EMBEDDER": "hashing", "COLUMNS": "200"}
    out = subprocess.run(
        [sys.executable, "-m", "stratamem", *args], capture_output=True, text=True, env=env, timeout=120
    )
    if check:
        assert out.returncode == 0, out.stdout + out.stderr
    return out


def test_add_search_get_list_delete_stats(tmp_path: Path) -> None:
    db = str(tmp_path / "cli.duckdb")
    added = json.loads(
        run(
            "add",
            "User prefers dark mode",
            "--db",
            db,
            "-t",
            "acme",
            "--user-id",
            "u1",
            "--tag",
            "ui",
            "--metadata",
            '{"priority": 2}',
            "--json",
        ).stdout
    )
    mid = added["memory"]["id"]
    assert added["embeddingGenerated"] is True and added["memory"]["metadata"] == {"priority": 2, "tags": ["ui"]}
    found = json.loads(
        run(
            "search",
            "user prefers dark mode",
            "--db",
            db,
            "-t",
            "acme",
            "--user-id",
            "u1",
            "--threshold",
            "0.5",
            "--json",
        ).stdout
    )
    assert found["results"][0]["memory"]["id"] == mid and found["searchedLayers"] == ["user"]
    assert (
        "User prefers dark mode"
        in run("search", "dark mode", "--db", db, "-t", "acme", "--user-id", "u1", "--threshold", "0").stdout
    )
    boosted = json.loads(
        run(
            "search",
            "user prefers dark mode",
            "--db",
            db,
            "-t",
            "acme",
            "--user-id",
            "u1",
            "--threshold",
            "0.5",
            "--importance-boost",
            "0.5",
            "--recency-boost",
            "0.2",
            "--json",
        ).stdout
    )
    # importance below 1 (a few accesses so far): the score is discounted, the match kept
    assert boosted["results"][0]["memory"]["id"] == mid
    assert boosted["results"][0]["score"] < found["results"][0]["score"]
    assert json.loads(run("get", mid, "--db", db, "-t", "acme", "--json").stdout)["content"] == (
        "User prefers dark mode"
    )
    listed = json.loads(run("list", "--db", db, "-t", "acme", "--layer", "user", "--user-id", "u1", "--json").stdout)
    assert listed["totalCount"] == 1
    stats = json.loads(run("stats", "--db", db, "-t", "acme", "--json").stdout)
    assert stats["total"] == 1 and stats["byLayer"] == {"user": 1}
    assert json.loads(run("delete", mid, "--db", db, "-t", "acme", "--json").stdout)["deleted"] == 1
    missing = run("get", mid, "--db", db, "-t", "acme", check=False)
    assert missing.returncode != 0 and missing.stderr.strip().startswith("error MEMORY_NOT_FOUND:")


def test_other_tenant_sees_nothing(tmp_path: Path) -> None:
    db = str(tmp_path / "cli.duckdb")
    run("add", "acme only", "--db", db, "-t", "acme", "--user-id", "u1")
    assert json.loads(run("list", "--db", db, "-t", "globex", "--json").stdout)["totalCount"] == 0


def test_bad_input_exits_nonzero_with_one_coded_line(tmp_path: Path) -> None:
    db = str(tmp_path / "cli.duckdb")
    cases = [
        (("add", "x", "--db", db, "-t", "acme", "--layer", "bogus"), "INVALID_LAYER"),
        (("add", "x", "--db", db, "-t", "acme", "--layer", "session", "--user-id", "u1"), "MISSING_IDENTIFIER"),
        (("search", "q", "--db", db, "-t", "acme"), "MISSING_IDENTIFIER"),
        (("add", "x", "--db", db, "-t", "acme", "--user-id", "u", "--metadata", "{nope"), "INVALID_PARAMS"),
        (("list", "--db", db, "-t", "acme", "--cursor", "garbage"), "INVALID_PARAMS"),
        (("import", str(tmp_path / "missing.jsonl"), "--db", db, "-t", "acme"), "INVALID_PARAMS"),
    ]
    for args, code in cases:
        out = run(*args, check=False)
        assert out.returncode != 0, args
        lines = [line for line in out.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith(f"error {code}:"), (args, out.stderr)
        assert "Traceback" not in out.stderr


def test_export_import_round_trip(tmp_path: Path) -> None:
    src, dst = str(tmp_path / "a.duckdb"), str(tmp_path / "b.duckdb")
    lines = "\n".join(
        json.dumps(
            {
                "content": f"imported fact {i}",
                "layer": "project",
                "identifiers": {"projectId": "p1"},
                "metadata": {"n": i},
            }
        )
        for i in range(120)
    )
    (tmp_path / "in.jsonl").write_text(lines + "\n", encoding="utf-8")
    out = run("import", str(tmp_path / "in.jsonl"), "--db", src, "-t", "acme")
    assert "imported 120 memories" in out.stdout
    run("export", "--db", src, "-t", "acme", "-o", str(tmp_path / "out.jsonl"))
    exported = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(exported) == 120 and "embedding" not in exported[0]
    assert json.loads(run("import", str(tmp_path / "out.jsonl"), "--db", dst, "-t", "acme", "--json").stdout) == {
        "imported": 120
    }
    stats = json.loads(run("stats", "--db", dst, "-t", "acme", "--json").stdout)
    assert stats["byLayer"] == {"project": 120}


def test_import_reports_bad_line(tmp_path: Path) -> None:
    db = str(tmp_path / "c.duckdb")
    (tmp_path / "bad.jsonl").write_text(
        '{"content": "ok", "layer": "user", "identifiers": {"userId": "u"}}\n{"content": "no layer"}\n',
        encoding="utf-8",
    )
    out = run("import", str(tmp_path / "bad.jsonl"), "--db", db, "-t", "acme", check=False)
    assert out.returncode != 0 and "error INVALID_" in out.stderr
