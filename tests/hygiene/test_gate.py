"""process / remember / forget (seed 003 §4.1) and the memory_events / health report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from stratamem import Memory, MemoryError, TenantContext
from stratamem.embeddings import Embedder
from stratamem.hygiene.prompts import PromptTemplates

U1 = {"user_id": "u1"}
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def real(open_mem: Callable[..., Memory], minilm: Embedder) -> Memory:
    return open_mem(embedder=minilm)


@pytest.mark.model
def test_same_fact_three_ways_is_one_memory(real: Memory, acme: TenantContext) -> None:
    results = [
        real.process(acme, text, identifiers=U1)
        for text in (
            "I prefer dark mode",
            "Dark mode is my favorite",
            "The user told me they like dark mode lol",
        )
    ]
    assert [r.action for r in results] == ["created", "updated", "updated"]
    assert len({r.memory_id for r in results}) == 1
    listed = real.list(acme, "user", identifiers=U1)
    assert listed.total_count == 1
    assert listed.memories[0].content == "User likes dark mode"
    assert listed.memories[0].version == 3
    # a different preference is a different memory
    assert real.process(acme, "I love hiking in the Alps", identifiers=U1).action == "created"
    assert real.list(acme, "user", identifiers=U1).total_count == 2


@pytest.mark.model
def test_forget_my_dogs_name(real: Memory, acme: TenantContext) -> None:
    dog = real.process(acme, "My dog's name is Rex", identifiers=U1)
    cat = real.process(acme, "My cat is called Tom", identifiers=U1)
    tea = real.process(acme, "I prefer green tea", identifiers=U1)
    assert [dog.action, cat.action, tea.action] == ["created"] * 3
    assert real.search(acme, "what is the name of my dog", identifiers=U1).results[0].memory.id == dog.memory_id
    out = real.forget(acme, "forget my dog's name", identifiers=U1)
    assert (out.action, out.count, out.memory_ids) == ("deleted", 1, [dog.memory_id])
    assert real.get(acme, dog.memory_id) is None
    after = real.search(acme, "what is the name of my dog", identifiers=U1, threshold=0.0)
    assert dog.memory_id not in [r.memory.id for r in after.results]
    assert {r.memory.id for r in after.results} == {cat.memory_id, tea.memory_id}


def test_forget_deletes_every_match_across_personal_layers(mem: Memory, acme: TenantContext) -> None:
    ids = {"user_id": "u1", "session_id": "s1"}
    a = mem.add(acme, "User's dog's name is Rex", layer="user", identifiers=ids).memory
    b = mem.add(acme, "User's dog's name is Rex", layer="session", identifiers=ids).memory
    other = mem.add(acme, "User's dog's name is Rex", layer="user", identifiers={"user_id": "u2"}).memory
    out = mem.forget(acme, "please forget my dog's name", identifiers=ids)
    assert out.count == 2 and set(out.memory_ids) == {a.id, b.id}
    assert mem.get(acme, other.id) is not None
    assert mem.forget(acme, "forget my dog's name", identifiers=ids).count == 0
    with pytest.raises(MemoryError) as err:
        mem.forget(acme, "forget", identifiers=ids)
    assert err.value.code.value == "INVALID_PARAMS"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("I'm so frustrated right now", "emotional state"),
        ("Can you summarise this article for me?", "one-off question or request"),
        ("I think my manager might be leaving", "speculation, not a fact"),
        ("I need to finish the slides today", "transient state or goal"),
        ("hello!", "small talk"),
    ],
)
def test_noise_is_ignored_with_a_reason(mem: Memory, acme: TenantContext, text: str, reason: str) -> None:
    res = mem.process(acme, text, identifiers=U1)
    assert (res.action, res.reason, res.memory_id) == ("ignored", reason, None)
    assert mem.list(acme, "user", identifiers=U1).total_count == 0


def test_remember_stores_what_would_be_ignored(mem: Memory, acme: TenantContext) -> None:
    text = "I have a dentist appointment on Friday at 3pm"
    assert mem.process(acme, "I need to go to the dentist today", identifiers=U1).action == "ignored"
    res = mem.remember(acme, f"Remember that {text}", identifiers=U1)
    assert res.action == "created" and res.source == "explicit"
    stored = mem.get(acme, res.memory_id)
    assert stored is not None and stored.content == "User has a dentist appointment on Friday at 3pm"
    assert stored.metadata["source"] == {"type": "explicit", "reference": "process"}
    assert stored.metadata["category"] == "fact"


def test_category_source_and_layer(mem: Memory, acme: TenantContext) -> None:
    res = mem.process(acme, "Always answer in Spanish", identifiers=U1)
    stored = mem.get(acme, res.memory_id)
    assert stored is not None and stored.layer.value == "user"
    assert (stored.metadata["category"], stored.metadata["source"]["type"]) == ("instruction", "inferred")
    ids = {"user_id": "u1", "project_id": "p1"}
    ctx = mem.process(acme, "Our project uses Rust and Tokio", identifiers=ids, layer="project")
    entry = mem.get(acme, ctx.memory_id)
    assert entry is not None and entry.layer.value == "project" and entry.metadata["category"] == "context"
    mem.hygiene.configure(layer="session")
    with pytest.raises(MemoryError) as err:
        mem.process(acme, "I prefer tea", identifiers=U1)
    assert err.value.code.value == "MISSING_IDENTIFIER"


def test_prompts_are_overridable(mem: Memory) -> None:
    custom = PromptTemplates(write_decision="Only store favourite colours.")
    mem.hygiene.configure(prompts=custom)
    assert mem.hygiene.config.prompts.system("write_decision").endswith("Only store favourite colours.")
    assert mem.hygiene.config.prompts.format_memory == PromptTemplates().format_memory


def test_invalid_process_input(mem: Memory, acme: TenantContext) -> None:
    for kwargs in ({"text": ""}, {"text": "I like tea", "intent": "maybe"}):
        with pytest.raises(MemoryError) as err:
            mem.process(acme, identifiers=U1, **kwargs)  # type: ignore[arg-type]
        assert err.value.code.value == "INVALID_PARAMS"
    with pytest.raises(MemoryError) as err:
        mem.process(None, "I like tea", identifiers=U1)
    assert err.value.code.value == "MISSING_TENANT_CONTEXT"


def test_events_and_health(mem: Memory, acme: TenantContext, globex: TenantContext) -> None:
    mem.process(acme, "I prefer dark mode", identifiers=U1)  # create
    mem.process(acme, "I prefer dark mode!", identifiers=U1)  # dedupe -> update
    mem.process(acme, "hi", identifiers=U1)  # ignore
    mem.process(acme, "what time is it?", identifiers=U1)  # ignore
    mem.remember(acme, "My dog's name is Rex", identifiers=U1)  # create (explicit)
    with pytest.raises(MemoryError):
        mem.add(acme, "my password is hunter22", layer="user", identifiers=U1)  # reject
    mem.add(
        acme,
        "User prefers dark mode",
        layer="project",
        identifiers={"project_id": "p"},
        metadata={"category": "preference"},
    )
    mem.add(acme, "User prefers dark mode", layer="project", identifiers={"project_id": "p"})  # stored duplicate
    mem.search(acme, "dark mode", identifiers=U1, threshold=0.5)  # hit
    mem.search(acme, "quantum chromodynamics lecture", identifiers=U1, threshold=0.99)  # miss
    mem.forget(acme, "forget my dog's name", identifiers=U1)  # delete
    h = mem.health(acme)
    assert h.total_memories == 3
    assert h.memories_by_category == {"preference": 2, "uncategorized": 1}
    assert h.memories_by_source == {"inferred": 1, "explicit": 0, "other": 2}
    assert h.events["create"] == 4 and h.events["ignore"] == 2 and h.events["reject"] == 1
    assert h.events["dedupe"] == 1 and h.events["delete"] == 1 and h.events["update"] == 1
    # rejected = 2 ignores + 1 secret; attempts = 4 creates + 2 ignores + 1 reject + 1 dedupe
    assert h.write_rejection_rate == round(3 / 8, 4)
    assert h.search_hit_rate == 0.5
    assert h.duplicate_rate == round(1 / 3, 4)
    assert h.average_age_days >= 0.0
    assert mem.health(globex).total_memories == 0 and mem.health(globex).events == {}


def test_health_cli(tmp_path: Path) -> None:
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

    assert run("process", "I prefer dark mode", "--user-id", "u1").stdout.startswith("created")
    assert "ignored" in run("process", "thanks!", "--user-id", "u1").stdout
    remembered = run("remember", "My dog's name is Rex", "--user-id", "u1", "--json")
    assert json.loads(remembered.stdout)["action"] == "created"
    assert "deleted count=1" in run("forget", "forget my dog's name", "--user-id", "u1").stdout
    table = run("health")
    assert table.returncode == 0, table.stderr
    assert "write-rejection rate" in table.stdout and "33.3%" in table.stdout
    report = json.loads(run("health", "--json").stdout)
    assert report["total_memories"] == 1 and report["memories_by_source"]["inferred"] == 1
