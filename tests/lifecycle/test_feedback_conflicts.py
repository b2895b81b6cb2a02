"""Memory-R1 feedback/pruning (seed 000) and seed-001 optimistic concurrency conflicts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from prometheus_client import REGISTRY

from stratamem import Memory, MemoryError, TenantContext

from .conftest import Clock

U = {"user_id": "u1"}
SRC = str(Path(__file__).resolve().parents[2] / "src")


def test_negative_rewards_mark_for_pruning(lmem: Memory, acme: TenantContext) -> None:
    bad = lmem.add(acme, "the office is in building 7", layer="user", identifiers=U).memory.id
    good = lmem.add(acme, "the office is in building 9", layer="user", identifiers=U).memory.id
    marked_before = REGISTRY.get_sample_value("stratamem_lifecycle_pruning_marked_total") or 0.0
    r1 = lmem.feedback(acme, [bad, good], -1.0)
    assert [(i.signals, i.mean_reward, i.marked_for_pruning) for i in r1.items] == [(1, -1.0, False)] * 2
    lmem.feedback(acme, [good], 1.0)
    lmem.feedback(acme, [bad], -1.0)
    assert lmem.get(acme, bad) is not None  # 2 signals: not yet (min 3)
    r3 = lmem.feedback(acme, [bad], -0.5)
    assert [(i.signals, i.mean_reward, i.marked_for_pruning) for i in r3.items] == [(3, -0.833333, True)]
    assert (REGISTRY.get_sample_value("stratamem_lifecycle_pruning_marked_total") or 0.0) == marked_before + 1
    hits = [r.memory.id for r in lmem.search(acme, "the office is in building", identifiers=U, threshold=0.5).results]
    assert bad not in hits and good in hits
    dry = lmem.prune(acme, dry_run=True)
    assert [(c.id, c.signals, c.mean_reward, c.status) for c in dry.candidates] == [(bad, 3, -0.833333, "archived")]
    assert dry.pruned == []
    done = lmem.prune(acme, dry_run=False)
    assert done.pruned == [bad]
    assert lmem.lifecycle.list(acme, "user", U)[0].id == good  # the pruned one is soft-deleted


def test_mixed_rewards_not_pruned(lmem: Memory, acme: TenantContext) -> None:
    mid = lmem.add(acme, "sometimes helpful", layer="user", identifiers=U).memory.id
    for reward in (-1.0, -1.0, 1.0):
        out = lmem.feedback(acme, [mid], reward)
    assert out.items[0].mean_reward == -0.333333 and not out.items[0].marked_for_pruning
    assert lmem.prune(acme).candidates == []


def test_feedback_validation(lmem: Memory, acme: TenantContext, globex: TenantContext) -> None:
    mid = lmem.add(acme, "x", layer="user", identifiers=U).memory.id
    for ids, reward in ([[mid], 2.0], [[], 1.0], [[mid], True], ["abc", 1.0]):
        with pytest.raises(MemoryError) as exc:
            lmem.feedback(acme, ids, reward)  # type: ignore[arg-type]
        assert exc.value.code.value == "INVALID_PARAMS"
    with pytest.raises(MemoryError) as exc2:
        lmem.feedback(globex, [mid], -1.0)
    assert exc2.value.code.value == "MEMORY_NOT_FOUND"


def test_prune_cli_dry_run(tmp_path: Path, clock: Clock) -> None:
    db = tmp_path / "prune.duckdb"
    ctx = TenantContext(tenant_id="acme", principal="u1")
    with Memory.open(db, embedder="hashing", clock=clock) as mem:
        mid = mem.add(ctx, "useless memory", layer="user", identifiers=U).memory.id
        for _ in range(3):
            mem.feedback(ctx, [mid], -1.0)
    env = {**os.environ, "PYTHONPATH": SRC, "STRATAMEM_EMBEDDER": "hashing", "COLUMNS": "200"}
    out = subprocess.run(
        [sys.executable, "-m", "stratamem", "prune", "--dry-run", "--db", str(db), "-t", "acme", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["dry_run"] is True and report["pruned"] == []
    assert [(c["id"], c["signals"], c["mean_reward"]) for c in report["candidates"]] == [(mid, 3, -1.0)]
    table = subprocess.run(
        [sys.executable, "-m", "stratamem", "prune", "--dry-run", "--db", str(db), "-t", "acme"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert "1 pruning candidates (dry run)" in table.stdout and mid in table.stdout
    maint = subprocess.run(
        [sys.executable, "-m", "stratamem", "maintain", "--db", str(db), "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert maint.returncode == 0, maint.stderr
    assert json.loads(maint.stdout)["tenants"][0]["prune_candidates"] == 1


def test_a_conflict_entry_supersedes_nothing(lmem: Memory, acme: TenantContext) -> None:
    """A stale update is kept for review, not as the current fact: even when its content states a
    change ("Dana moved to Berlin", "Prefers long answers"), the memory it conflicts with stays current."""
    user = {"user_id": "dana"}
    for first, second, stale_content in [
        ("Dana lives in Hamburg", "Dana lives in Hamburg, near the port", "Dana moved to Berlin last month"),
        ("Prefers concise answers", "Prefers short answers", "Prefers long answers"),
    ]:
        original = lmem.add(acme, first, layer="user", identifiers=user).memory
        lmem.update(acme, original.id, content=second, if_match=original.etag)
        with pytest.raises(MemoryError) as exc:
            lmem.update(acme, original.id, content=stale_content, if_match=original.etag)
        assert exc.value.code.value == "CONFLICT"
        current = lmem.get(acme, original.id)
        assert current is not None and current.status == "active" and current.content == second
        assert current.provenance.superseded_by is None
        listed = {m.id for m in lmem.list(acme, layer="user", identifiers=user, limit=100).memories}
        assert original.id in listed


def test_if_match_mismatch_stores_conflict_entry(lmem: Memory, acme: TenantContext) -> None:
    original = lmem.add(
        acme,
        "deploy window is Friday",
        layer="team",
        identifiers={"team_id": "ops"},
        metadata={"tags": ["ops"]},
        tier="long_term",
        provenance={"agentId": "a1"},
    ).memory
    stale = original.etag
    lmem.update(acme, original.id, content="deploy window is Thursday", if_match=stale)
    with pytest.raises(MemoryError) as exc:
        lmem.update(acme, original.id, content="deploy window is Monday", metadata={"priority": 1}, if_match=stale)
    assert exc.value.code.value == "CONFLICT"
    conflict_id = exc.value.details["conflict_id"]
    current = lmem.get(acme, original.id)
    assert current is not None and current.content == "deploy window is Thursday" and current.version == 2
    conflict = lmem.get(acme, conflict_id)
    assert conflict is not None
    assert conflict.content == "deploy window is Monday" and conflict.tier == "long_term"
    assert conflict.provenance.conflict is True and conflict.provenance.conflict_of == original.id
    assert conflict.provenance.agent_id == "a1"
    assert conflict.metadata == {"tags": ["ops"], "priority": 1, "conflict": True, "conflict_of": original.id}
    listed = lmem.conflicts(acme)
    assert [m.id for m in listed.memories] == [conflict_id]
    assert [m.id for m in lmem.conflicts(acme, memory_id=original.id).memories] == [conflict_id]
    assert lmem.conflicts(acme, memory_id="other").memories == []
    assert lmem.lifecycle.stats.conflicts == 1
    # delete with a stale etag is rejected too, and the entry survives
    with pytest.raises(MemoryError) as exc2:
        lmem.delete(acme, original.id, if_match=stale)
    assert exc2.value.code.value == "CONFLICT" and lmem.get(acme, original.id) is not None
