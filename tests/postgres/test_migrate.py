"""Moving a tenant between stores: DuckDB → PostgreSQL → DuckDB with identical search results,
resumable after a crash (in-process and a killed ``stratamem migrate`` process), idempotent,
re-embedding when the model differs, the knowledge graph copied where both stores keep one.

Real DuckDB files, the real PostgreSQL of ``.services.env`` (one schema per test), the real CLI."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from stratamem import Memory, TenantContext
from stratamem.migration import MigrationReport, migrate_tenant
from stratamem.providers import open_provider
from stratamem.server.keys import create_key

T = TenantContext(tenant_id="acme", principal="u1")
OTHER = TenantContext(tenant_id="other", principal="x")
IDS = {"user_id": "u1", "project_id": "phoenix", "team_id": "core"}
TOPICS = ["deploys", "database", "editor", "review", "oncall", "budget", "hiring", "security", "testing", "docs"]
QUERIES = ["which database do we use", "who reviews code", "editor theme", "on-call rotation", "budget for hiring"]
SRC = Path(__file__).resolve().parents[2] / "src"


def _seed(path: Path, n: int = 60) -> dict[str, Any]:
    """A tenant with every kind of data: layers, an update, a delete, a supersession, expiry, importance,
    an archived memory, feedback, a manual graph link, a policy, an API key; plus another tenant."""
    mem = Memory.open(path, embedder="hashing")
    try:
        added = []
        for i in range(n):
            topic = TOPICS[i % len(TOPICS)]
            layer = ("user", "project", "team")[i % 3]
            added.append(
                mem.add(
                    T,
                    f"Note {i} about {topic}: Alice and Bob agreed on step {i * 7} for {topic}",
                    layer=layer,
                    identifiers=IDS,
                    metadata={"n": i, "tags": [topic]},
                ).memory.id
            )
        mem.add(T, "The team uses PostgreSQL 16 for the main database", layer="team", identifiers=IDS, importance=0.9)
        first = mem.add(T, "User prefers light mode in the editor", layer="user", identifiers=IDS).memory.id
        mem.add(T, "User prefers dark mode in the editor", layer="user", identifiers=IDS, supersedes=[first])
        mem.add(
            T,
            "Temporary on-call swap with Carol this week",
            layer="team",
            identifiers=IDS,
            expires_at=datetime.now(UTC) + timedelta(days=2),
        )
        mem.update(T, added[1], content="Note 1 about database: Alice and Bob moved to PostgreSQL")
        mem.delete(T, added[2])
        mem.lifecycle.feedback(T, [added[3], added[4]], 1.0)
        mem.engine.provider.set_status("acme", [added[5]], "archived", datetime.now(UTC))
        mem.graph.link(T, added[6], added[7], "FOLLOWS")
        mem.policies.set(T, deny_patterns=["forbidden-word"])
        key = create_key(mem.engine.provider, "acme", "writer", name="ci")
        mem.add(OTHER, "Another tenant's memory about the database", layer="user", identifiers={"user_id": "x"})
        return {"ids": added, "key_id": key.record.key_id}
    finally:
        mem.close()


def _search_all(location: str | Path, embedder: str = "hashing") -> list[list[tuple[str, float]]]:
    mem = Memory.open(location, embedder=embedder)
    try:
        mem.engine.hooks.access_hooks.clear()  # reads that change nothing: compare like with like
        out = []
        for q in QUERIES:
            for kw in ({}, {"hybrid_weight": 0.5}):
                res = mem.search(T, q, identifiers=IDS, limit=8, **kw)  # type: ignore[arg-type]
                out.append([(r.memory.id, round(r.score, 6)) for r in res.results])
        return out
    finally:
        mem.close()


def _same_answers(got: list[list[tuple[str, float]]], want: list[list[tuple[str, float]]]) -> bool:
    """The same memories in the same order, with scores equal up to float rounding (PostgreSQL and
    DuckDB compute the cosine in different orders, so the last float digits may differ)."""
    return [[i for i, _ in r] for r in got] == [[i for i, _ in r] for r in want] and all(
        abs(a - b) <= 1e-5 for gr, wr in zip(got, want, strict=True) for (_, a), (_, b) in zip(gr, wr, strict=True)
    )


def _entries(location: str | Path, tenant: str = "acme") -> dict[str, dict[str, Any]]:
    provider = open_provider(os.fspath(location))
    mem = Memory.open(provider, embedder="hashing")
    try:
        return {e.id: e.model_dump(mode="json") for e in provider.iter_entries(tenant)}
    finally:
        mem.close()


def _assert_ok(report: MigrationReport) -> None:
    """Everything verified, except a knowledge graph the target cannot hold (PostgreSQL before it
    keeps one): that is reported as not copied, with a warning."""
    bad = {k: v for k, v in report.kinds.items() if not v.ok}
    graph_skipped = "keeps no knowledge graph" in (report.kinds["graph"].note or "")
    if graph_skipped:
        assert set(bad) == {"graph"} and report.warnings and not report.ok
        bad = {}
    assert not bad and (report.reembedded or all(s.same for s in report.searches)), (bad, report.searches)


def test_round_trip_duckdb_postgres_duckdb(tmp_path: Path, pg_store_url: str) -> None:
    source, back = tmp_path / "source.duckdb", tmp_path / "back.duckdb"
    seeded = _seed(source)
    before = _search_all(source)
    ckpt = tmp_path / "ckpt.json"

    up = migrate_tenant(source, pg_store_url, "acme", embedder="hashing", batch_size=16, checkpoint=ckpt)
    _assert_ok(up)
    assert not ckpt.exists()  # removed after a finished run
    assert up.kinds["memories"].source_count == up.kinds["memories"].target_count == 63
    assert up.kinds["keys"].target_count == 1 and up.kinds["policies"].target_count == 1
    assert up.kinds["feedback"].target_count == 2 and up.kinds["events"].target_count > 0
    assert not up.reembedded and up.searches and all(s.same for s in up.searches)
    assert _same_answers(_search_all(pg_store_url), before)  # PostgreSQL answers as the DuckDB source

    # back down with the CLI
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "stratamem",
            "migrate",
            "--from",
            pg_store_url,
            "--to",
            str(back),
            "--tenant",
            "acme",
            "--embedder",
            "hashing",
            "--batch-size",
            "10",
            "--checkpoint",
            str(tmp_path / "c2.json"),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(SRC)},
        check=False,
    )
    assert out.returncode == 0, out.stderr  # PostgreSQL → DuckDB: the graph is copied or rebuilt
    down = MigrationReport.model_validate_json(out.stdout)
    _assert_ok(down)

    assert _same_answers(_search_all(back), before)
    original, round_tripped = _entries(source), _entries(back)
    assert round_tripped == original  # ids, timestamps, versions, etags, status, provenance, importance, vectors
    assert len(_entries(back, "other")) == 0  # only the tenant asked for moved
    mem = Memory.open(back, embedder="hashing")
    try:
        record = mem.engine.provider.api_key_get(seeded["key_id"])
        assert record is not None and record.tenant_id == "acme" and record.key_hash  # hash, never a secret
        assert mem.policies.get(T).deny_patterns == ["forbidden-word"]
        assert mem.graph.stats(T).memory_nodes > 0  # rebuilt on DuckDB from the memories
    finally:
        mem.close()


def test_rerun_is_idempotent(tmp_path: Path, pg_store_url: str) -> None:
    source = tmp_path / "source.duckdb"
    _seed(source, n=20)
    first = migrate_tenant(source, pg_store_url, "acme", embedder="hashing", checkpoint=tmp_path / "c.json")
    _assert_ok(first)
    second = migrate_tenant(source, pg_store_url, "acme", embedder="hashing", checkpoint=tmp_path / "c.json")
    _assert_ok(second)
    assert second.kinds["memories"].copied == 0
    for kind in ("memories", "events", "keys", "policies", "feedback"):
        assert second.kinds[kind].target_count == first.kinds[kind].target_count
        assert second.kinds[kind].target_checksum == first.kinds[kind].target_checksum


def test_resume_after_a_crash_in_the_middle(tmp_path: Path, pg_store_url: str) -> None:
    source = tmp_path / "source.duckdb"
    _seed(source, n=60)
    ckpt = tmp_path / "c.json"
    written: list[int] = []

    def crash(phase: str, n: int) -> None:
        if phase == "memories":
            written.append(n)
            if len(written) == 2:
                raise RuntimeError("simulated crash")

    with pytest.raises(RuntimeError, match="simulated crash"):
        migrate_tenant(source, pg_store_url, "acme", embedder="hashing", batch_size=10, checkpoint=ckpt, progress=crash)
    state = json.loads(ckpt.read_text())
    assert state["phases"] == ["policies", "keys"] and state["memories_done"] == 10  # batch 2 not checkpointed
    report = migrate_tenant(source, pg_store_url, "acme", embedder="hashing", batch_size=10, checkpoint=ckpt)
    _assert_ok(report)
    assert report.resumed_from is not None and report.resumed_from["memories_done"] == 10
    # batch 2 was committed before the crash: found by etag and not written again
    assert report.kinds["memories"].copied == 63 - 20
    assert report.kinds["memories"].target_count == 63


def test_resume_after_the_process_is_killed(tmp_path: Path, pg_store_url: str) -> None:
    source = tmp_path / "source.duckdb"
    _seed(source, n=120)
    ckpt = tmp_path / "c.json"
    cmd = [
        sys.executable,
        "-m",
        "stratamem",
        "migrate",
        "--from",
        str(source),
        "--to",
        pg_store_url,
        "--tenant",
        "acme",
        "--embedder",
        "hashing",
        "--batch-size",
        "3",
        "--checkpoint",
        str(ckpt),
        "--json",
        "--no-graph",
    ]  # the memories are what is interrupted here
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    killed = False
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            done = json.loads(ckpt.read_text()).get("memories_done", 0)
        except (OSError, ValueError):
            done = 0
        if done >= 30:
            proc.send_signal(signal.SIGKILL)
            killed = True
            break
        time.sleep(0.02)
    proc.wait(timeout=60)
    proc.stdout.close()  # type: ignore[union-attr]
    proc.stderr.close()  # type: ignore[union-attr]
    assert killed, "the migration finished before it could be interrupted"
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env, check=False)
    assert out.returncode == 0, out.stdout
    report = MigrationReport.model_validate_json(out.stdout)
    _assert_ok(report)
    assert report.resumed_from is not None and report.resumed_from["memories_done"] >= 30
    assert report.kinds["memories"].target_count == report.kinds["memories"].source_count == 123


def test_another_model_re_embeds(tmp_path: Path, pg_store_url: str) -> None:
    source = tmp_path / "source.duckdb"
    _seed(source, n=12)
    report = migrate_tenant(
        source, pg_store_url, "acme", embedder="hashing", target_embedder="hashing:128", checkpoint=tmp_path / "c.json"
    )
    assert report.reembedded and report.target_model == "hashing-v1-128"
    _assert_ok(report)
    mem = Memory.open(pg_store_url, embedder="hashing:128")
    try:
        hit = mem.search(T, "which database do we use", identifiers=IDS, limit=3).results
        assert hit and "database" in hit[0].memory.content
    finally:
        mem.close()


def test_graph_copied_between_duckdb_stores(tmp_path: Path) -> None:
    source, target = tmp_path / "a.duckdb", tmp_path / "b.duckdb"
    seeded = _seed(source, n=15)
    report = migrate_tenant(source, target, "acme", embedder="hashing", checkpoint=tmp_path / "c.json")
    _assert_ok(report)
    graph = report.kinds["graph"]
    assert graph.source_count > 0 and graph.source_checksum == graph.target_checksum
    mem = Memory.open(target, embedder="hashing")
    try:  # the manual edge came along, and traversal answers on the copy
        related = mem.graph.related(T, seeded["ids"][6], hops=1)
        assert seeded["ids"][7] in {item.node.id for item in related.items}
    finally:
        mem.close()


def _pg_keeps_a_graph(pg_store_url: str) -> bool:
    mem = Memory.open(pg_store_url, embedder="hashing")
    try:
        return bool(mem.capabilities().graph)
    finally:
        mem.close()


def test_graph_round_trip_through_postgres(tmp_path: Path, pg_store_url: str) -> None:
    """Runs once the PostgreSQL provider keeps the knowledge graph (capability ``graph``)."""
    if not _pg_keeps_a_graph(pg_store_url):
        pytest.skip("the PostgreSQL provider does not report the graph capability yet (issue #29 item 1)")
    source, back = tmp_path / "a.duckdb", tmp_path / "b.duckdb"
    _seed(source, n=15)
    _assert_ok(migrate_tenant(source, pg_store_url, "acme", embedder="hashing", checkpoint=tmp_path / "1.json"))
    down = migrate_tenant(pg_store_url, back, "acme", embedder="hashing", checkpoint=tmp_path / "2.json")
    _assert_ok(down)
    first = migrate_tenant(source, tmp_path / "c.duckdb", "acme", embedder="hashing", checkpoint=tmp_path / "3.json")
    assert down.kinds["graph"].target_checksum == first.kinds["graph"].target_checksum
