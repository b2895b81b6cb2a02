"""The query model in the CLI: list/search --order, --since/--until, --tag with --tags-match, --include-narrower."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from .test_cli import run


def test_cli_query_model(tmp_path: Path) -> None:
    db = str(tmp_path / "q.duckdb")
    base = ("--db", db, "-t", "acme", "--user-id", "u1")
    run("add", "first garden note", *base, "--tag", "a", "--json")
    run("add", "second garden note", *base, "--tag", "a", "--tag", "b", "--json")
    run("add", "session garden note", *base, "--session-id", "s1", "--layer", "session", "--json")

    def contents(*args: str) -> list[str]:
        out = json.loads(run(*args, "--json").stdout)
        return (
            [m["content"] for m in out["memories"]]
            if "memories" in out
            else [r["memory"]["content"] for r in out["results"]]
        )

    assert contents("list", *base, "--layer", "user", "--order", "newest") == [
        "second garden note",
        "first garden note",
    ]
    assert contents("list", *base, "--layer", "user", "--tag", "a", "--tag", "b", "--tags-match", "all") == [
        "second garden note"
    ]
    assert len(contents("list", *base, "--session-id", "s1", "--layer", "user", "--include-narrower")) == 3
    assert contents("list", *base, "--layer", "user", "--since", "2999-01-01") == []
    assert contents("search", "garden note", *base, "--layer", "user", "--threshold", "0", "--order", "oldest") == [
        "first garden note",
        "second garden note",
    ]
    bad = run("list", *base, "--layer", "user", "--order", "sideways", check=False)
    assert bad.returncode == 2 and "INVALID_PARAMS" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_cli_list_expires_before(tmp_path: Path) -> None:
    """``list --expires-before``: the memories set to expire before that time, paged by the store."""
    db = str(tmp_path / "x.duckdb")
    base = ("--db", db, "-t", "acme", "--user-id", "u1")
    now = datetime.now(UTC)
    lines = [
        {"content": f"note {name}", "layer": "user", "identifiers": {"userId": "u1"}, "expiresAt": when}
        for name, when in (
            ("in two days", (now + timedelta(days=2)).isoformat()),
            ("never", None),
            ("in five days", (now + timedelta(days=5)).isoformat()),
            ("in twenty days", (now + timedelta(days=20)).isoformat()),
        )
    ]
    file = tmp_path / "seed.jsonl"
    file.write_text("".join(json.dumps({k: v for k, v in line.items() if v is not None}) + "\n" for line in lines))
    run("import", str(file), "--db", db, "-t", "acme", "--json")
    week = (now + timedelta(days=7)).isoformat()
    first = json.loads(run("list", *base, "--layer", "user", "--expires-before", week, "-n", "1", "--json").stdout)
    assert [m["content"] for m in first["memories"]] == ["note in two days"] and first["totalCount"] == 2
    rest = json.loads(
        run(
            "list",
            *base,
            "--layer",
            "user",
            "--expires-before",
            week,
            "-n",
            "1",
            "--cursor",
            first["nextCursor"],
            "--json",
        ).stdout
    )
    assert [m["content"] for m in rest["memories"]] == ["note in five days"] and rest["nextCursor"] is None
    table = run("list", *base, "--layer", "user", "--expires-before", week).stdout
    assert "expires" in table and "note in five days" in table and "note never" not in table
    bad = run("list", *base, "--layer", "user", "--expires-before", "next week", check=False)
    assert bad.returncode == 2 and "INVALID_PARAMS" in bad.stderr and "expires_before" in bad.stderr
