"""The query model in the CLI: list/search --order, --since/--until, --tag with --tags-match, --include-narrower."""

from __future__ import annotations

import json
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
