"""Governance policies: stored per tenant, enforced on add/update, filtering search, via SDK and CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from stratamem import Memory, MemoryError, TenantContext

U1 = {"user_id": "u1"}
ROOT = Path(__file__).resolve().parents[2]


def test_policy_is_stored_in_the_database(
    open_mem: Callable[..., Memory], db_path: Path, acme: TenantContext, globex: TenantContext
) -> None:
    mem = open_mem()
    assert mem.policies.get(acme).pii_mode == "allow"
    mem.policies.set(
        acme,
        deny_patterns=[r"\bproject\s+x\b"],
        allowed_categories=["preference", "fact"],
        max_length=200,
        pii_mode="redact",
    )
    mem.policies.set(acme, max_memories=50)  # partial change keeps the other rules
    mem.close()
    again = open_mem()
    policy = again.policies.get(acme)
    assert policy.deny_patterns == [r"\bproject\s+x\b"] and policy.max_memories == 50
    assert policy.allowed_categories == ["preference", "fact"] and policy.pii_mode == "redact"
    assert again.policies.get(globex).deny_patterns == []  # per tenant
    assert again.policies.reset(acme).deny_patterns == []


def test_invalid_policy_is_invalid_params(mem: Memory, acme: TenantContext) -> None:
    for fields in (
        {"deny_patterns": ["(unclosed"]},
        {"pii_mode": "sometimes"},
        {"max_length": 0},
        {"allowed_categories": ["gossip"]},
        {"colour": "red"},
    ):
        with pytest.raises(MemoryError) as err:
            mem.policies.set(acme, **fields)
        assert err.value.code.value == "INVALID_PARAMS"


def test_add_and_update_violations_name_the_policy(mem: Memory, acme: TenantContext) -> None:
    mem.policies.set(acme, deny_patterns=[r"\bproject\s+x\b"], allowed_categories=["preference"], max_length=40)
    cases = [
        ("Project X ships in May", {}, "deny_patterns"),
        ("User likes tea", {"category": "fact"}, "allowed_categories"),
        ("User likes a very long description of many teas and coffees", {}, "max_length"),
    ]
    for content, metadata, rule in cases:
        with pytest.raises(MemoryError) as err:
            mem.add(acme, content, layer="user", identifiers=U1, metadata=metadata)
        assert err.value.code.value == "POLICY_VIOLATION" and err.value.details["policy"] == rule
    ok = mem.add(acme, "User likes tea", layer="user", identifiers=U1, metadata={"category": "preference"}).memory
    with pytest.raises(MemoryError) as err:
        mem.update(acme, ok.id, content="User likes project x")
    assert err.value.details["policy"] == "deny_patterns"
    with pytest.raises(MemoryError) as err:
        mem.update(acme, ok.id, metadata={"category": "context"})
    assert err.value.details["policy"] == "allowed_categories"
    assert mem.get(acme, ok.id).content == "User likes tea"  # type: ignore[union-attr]
    denied = [r for r in mem.engine.audit.recent(tenant_id="acme") if r.outcome == "denied"]
    assert len(denied) == 5 and all(r.code == "POLICY_VIOLATION" for r in denied)
    assert all("tea" not in json.dumps(r.details) for r in denied)  # no content in audit records


def test_search_filters_violating_results_and_audits(mem: Memory, acme: TenantContext, globex: TenantContext) -> None:
    a = mem.add(acme, "User likes green tea", layer="user", identifiers=U1).memory
    b = mem.add(acme, "User likes green tea from project x", layer="user", identifiers=U1).memory
    mem.add(globex, "User likes green tea from project x", layer="user", identifiers=U1)
    before = mem.search(acme, "User likes green tea", identifiers=U1, threshold=0.5)
    assert {r.memory.id for r in before.results} == {a.id, b.id}
    mem.policies.set(acme, deny_patterns=["project x"])
    after = mem.search(acme, "User likes green tea", identifiers=U1, threshold=0.5)
    assert [r.memory.id for r in after.results] == [a.id] and after.total_count == 1
    rec = mem.engine.audit.recent(tenant_id="acme", action="search.policy_filter")[-1]
    assert rec.memory_ids == [b.id] and rec.details == {"filtered": 1, "policies": ["deny_patterns"]}
    assert (
        len(mem.search(globex, "User likes green tea", identifiers=U1, threshold=0.5).results) == 1
    )  # other tenant untouched


def test_policy_cli(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "STRATAMEM_EMBEDDER": "hashing", "COLUMNS": "200"}
    db = str(tmp_path / "cli.duckdb")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "stratamem", *args, "--db", db, "-t", "acme"],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )

    out = run("policy", "set", "--deny", "project x", "--pii-mode", "reject", "--max-memories", "10", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["deny_patterns"] == ["project x"]
    shown = run("policy", "show", "--json")
    assert json.loads(shown.stdout) == {
        "deny_patterns": ["project x"],
        "allowed_categories": None,
        "max_length": None,
        "pii_mode": "reject",
        "shared_pii_mode": "redact",
        "max_memories": 10,
    }
    assert "pii_mode" in run("policy", "show").stdout
    denied = run("add", "notes on project X", "--user-id", "u1")
    assert denied.returncode == 2 and "POLICY_VIOLATION" in denied.stderr
    bad = run("policy", "set", "--pii-mode", "maybe")
    assert bad.returncode == 2 and "INVALID_PARAMS" in bad.stderr
