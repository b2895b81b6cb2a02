"""Reflection jobs: a session's memories distilled into agent-layer summaries and rules with
provenance, offline by rules and with an LLM (a real local OpenAI-compatible server), idempotent, run
by ``reflect`` (SDK sync and async, CLI), ``close_session`` and ``maintain``."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY

from stratamem import AsyncMemory, Memory, MemoryError, TenantContext
from stratamem.lifecycle.config import LifecycleConfig, ReflectionConfig
from stratamem.llm import OpenAIChatLLM

from ..chat_server import ChatServer
from .conftest import Clock

SRC = str(Path(__file__).resolve().parents[2] / "src")
S = {"user_id": "alice", "session_id": "s1"}
AGENT = {"agent_id": "coder", "user_id": "alice"}
TEXTS = [
    "User prefers TypeScript for code examples",
    "Always answer with short bullet points",
    "User is debugging a flaky login test",
    "User prefers TypeScript for code examples!",
    "hello there",
]


@pytest.fixture()
def chat() -> Iterator[ChatServer]:
    server = ChatServer()
    yield server
    server.close()


def _session(mem: Memory, ctx: TenantContext, texts: list[str] = TEXTS, agent: str | None = "coder") -> list[str]:
    """The session's memories, one clock second apart (the stores' clock is frozen between steps)."""
    prov = {"agentId": agent} if agent else None
    clock = mem.engine.clock
    out = []
    for t in texts:
        out.append(mem.add(ctx, t, layer="session", identifiers=S, provenance=prov).memory.id)
        if isinstance(clock, Clock):
            clock.advance(seconds=1)
    return out


def _agent_memories(mem: Memory, ctx: TenantContext) -> list[Any]:
    return mem.list(ctx, "agent", identifiers=AGENT, limit=100).memories


def test_rules_distil_summary_and_rules_with_provenance(lmem: Memory, acme: TenantContext) -> None:
    ids = _session(lmem, acme)
    out = lmem.reflect(acme, "alice", "s1")
    assert (out.method, out.agent_id, out.evaluated, out.created) == ("rules", "coder", 5, 3)
    stored = {m.id: m for m in _agent_memories(lmem, acme)}
    summary = stored[out.summary_id or ""]
    assert summary.metadata["kind"] == "reflection_summary" and summary.metadata["reflectedSessionId"] == "s1"
    assert summary.content.startswith("Session s1: User prefers TypeScript for code examples")
    assert "flaky login test" in summary.content and "hello" not in summary.content  # small talk left out
    assert sorted(summary.provenance.compacted_from_ids or []) == sorted(ids)
    assert summary.provenance.source == "reflection" and summary.provenance.agent_id == "coder"
    rules = {stored[r].content: stored[r] for r in out.rule_ids}
    assert set(rules) == {
        "User prefers TypeScript for code examples",
        "User wants the assistant to always answer with short bullet points",
    }
    ts = rules["User prefers TypeScript for code examples"]
    assert ts.metadata["kind"] == "reflection_rule" and ts.metadata["category"] == "preference"
    assert sorted(ts.metadata["reflectedFromIds"]) == sorted([ids[0], ids[3]])  # the near-duplicate merged
    assert (
        rules["User wants the assistant to always answer with short bullet points"].metadata["category"]
        == "instruction"
    )


def test_reflect_is_idempotent_and_follows_new_sources(lmem: Memory, acme: TenantContext) -> None:
    _session(lmem, acme)
    first = lmem.reflect(acme, "alice", "s1")
    again = lmem.reflect(acme, "alice", "s1")
    assert again.unchanged and again.created == 0 and again.summary_id == first.summary_id
    assert len(_agent_memories(lmem, acme)) == 3
    lmem.add(
        acme, "Never use semicolons in JavaScript", layer="session", identifiers=S, provenance={"agentId": "coder"}
    )
    lmem.add(acme, "Always answer with short bullet points please", layer="session", identifiers=S)
    third = lmem.reflect(acme, "alice", "s1")
    assert not third.unchanged and third.summary_id != first.summary_id
    new_rules = [lmem.get(acme, r) for r in third.rule_ids]
    # only the new rule: the bullet-point instruction is a rule of the agent scope already
    assert [r.content for r in new_rules if r] == ["User wants the assistant to never use semicolons in JavaScript"]
    # the old summary is kept as superseded history; one current summary
    current = [m for m in _agent_memories(lmem, acme) if m.metadata["kind"] == "reflection_summary"]
    assert [m.id for m in current] == [third.summary_id]
    history = lmem.list(acme, "agent", identifiers=AGENT, include_superseded=True, limit=100).memories
    assert first.summary_id in {m.id for m in history}


def test_reflect_needs_an_agent_and_skips_empty_sessions(lmem: Memory, acme: TenantContext) -> None:
    assert lmem.reflect(acme, "alice", "s1").skipped == "the session has no memories"
    _session(lmem, acme, agent=None)
    out = lmem.reflect(acme, "alice", "s1")
    assert out.skipped and out.created == 0 and "agent" in out.skipped
    named = lmem.reflect(acme, "alice", "s1", agent_id="coder")
    assert named.created == 3 and named.agent_id == "coder"
    with pytest.raises(MemoryError) as err:
        lmem.reflect(acme, "alice", "")
    assert err.value.code.value in ("MISSING_IDENTIFIER", "INVALID_PARAMS")


def test_reflection_leaves_sensitive_memories_and_other_tenants_alone(
    lmem: Memory, acme: TenantContext, globex: TenantContext
) -> None:
    lmem.add(
        acme,
        "User prefers Rust for systems code",
        layer="session",
        identifiers=S,
        metadata={"private": True},
        provenance={"agentId": "coder"},
    )
    _session(lmem, acme)
    _session(lmem, globex, ["User prefers Go for everything"])
    out = lmem.reflect(acme, "alice", "s1")
    contents = " ".join(m.content for m in _agent_memories(lmem, acme))
    assert "Rust" not in contents and "Go for everything" not in contents and out.evaluated == 5


def _reflect_reply(body: dict[str, Any]) -> tuple[int, Any]:
    system = body["messages"][0]["content"]
    if "Distil them" in system:
        return 200, {
            "summary": "Alice worked on a flaky login test in TypeScript.",
            "rules": [
                {"content": "When the user asks for code, answer in TypeScript", "sources": [1, 4, 99]},
                {"content": "Keep answers to short bullet points", "sources": []},
            ],
        }
    return 200, {"entities": [], "relations": []}


def test_llm_reflection(chat: ChatServer, dmem: Memory, acme: TenantContext) -> None:
    chat.respond = _reflect_reply
    dmem.hygiene.configure(llm=OpenAIChatLLM(chat.url, "m"))
    ids = _session(dmem, acme)
    out = dmem.reflect(acme, "alice", "s1")
    assert out.method == "llm" and out.created == 3
    call = next(r for r in chat.requests if "Distil them" in r["body"]["messages"][0]["content"])
    assert "1. User prefers TypeScript for code examples\n2. Always answer" in call["body"]["messages"][1]["content"]
    summary = dmem.get(acme, out.summary_id or "")
    assert summary is not None and summary.content == "Session s1: Alice worked on a flaky login test in TypeScript."
    assert summary.metadata["reflectedBy"] == "llm"
    rules = {r.content: r for r in (dmem.get(acme, i) for i in out.rule_ids) if r}
    ts = rules["When the user asks for code, answer in TypeScript"]
    assert ts.metadata["reflectedFromIds"] == [ids[0], ids[3]]  # numbers 1 and 4; 99 is no source
    assert sorted(rules["Keep answers to short bullet points"].metadata["reflectedFromIds"]) == sorted(ids)
    assert dmem.reflect(acme, "alice", "s1").unchanged


def test_llm_failure_falls_back_to_rules_and_counts(chat: ChatServer, dmem: Memory, acme: TenantContext) -> None:
    chat.respond = lambda body: (
        (200, "no json here")
        if "Distil them" in body["messages"][0]["content"]
        else (200, {"entities": [], "relations": []})
    )
    dmem.hygiene.configure(llm=OpenAIChatLLM(chat.url, "m"))
    before = (
        REGISTRY.get_sample_value("stratamem_llm_fallbacks_total", {"task": "reflection", "reason": "PROVIDER_ERROR"})
        or 0.0
    )
    _session(dmem, acme)
    out = dmem.reflect(acme, "alice", "s1")
    assert out.method == "rules" and out.created == 3
    assert (
        REGISTRY.get_sample_value("stratamem_llm_fallbacks_total", {"task": "reflection", "reason": "PROVIDER_ERROR"})
        == before + 1
    )


def test_close_session_reflects_first(lmem: Memory, acme: TenantContext) -> None:
    _session(lmem, acme)
    closed = lmem.close_session(acme, "alice", "s1", agent_id="coder")
    assert closed.reflection is not None and closed.reflection.created == 3
    assert {m.metadata.get("kind") for m in _agent_memories(lmem, acme)} >= {"reflection_summary", "reflection_rule"}
    # reflections are not promoted by the close (only explicit promotion moves them up)
    user = lmem.list(acme, "user", identifiers={"user_id": "alice"}, limit=100).memories
    assert not any(m.metadata.get("kind", "").startswith("reflection") for m in user)
    lmem.lifecycle.config = LifecycleConfig(reflection=ReflectionConfig(on_close_session=False))
    assert lmem.close_session(acme, "alice", "s1").reflection is None


def test_maintain_reflects_idle_sessions(local_lmem: Memory, acme: TenantContext, clock: Clock) -> None:
    _session(local_lmem, acme)
    report = local_lmem.maintain(tenants=[acme.tenant_id]).tenants[0]
    assert report.reflected == 0 and report.errors == {}  # not idle yet
    clock.advance(hours=2)
    report = local_lmem.maintain(tenants=[acme.tenant_id]).tenants[0]
    assert report.reflected == 3 and report.errors == {}
    assert local_lmem.maintain(tenants=[acme.tenant_id]).tenants[0].reflected == 0  # unchanged: nothing new
    local_lmem.lifecycle.config = LifecycleConfig(reflection=ReflectionConfig(in_maintenance=False))
    local_lmem.add(
        acme, "Never use semicolons in JavaScript", layer="session", identifiers=S, provenance={"agentId": "coder"}
    )
    clock.advance(hours=2)
    assert local_lmem.maintain(tenants=[acme.tenant_id]).tenants[0].reflected == 0


def test_async_reflect(tmp_path: Path) -> None:
    t = TenantContext(tenant_id="acme", principal="u1")

    async def main() -> int:
        async with await AsyncMemory.open(tmp_path / "a.duckdb", embedder="hashing") as mem:
            await mem.add(t, "User prefers TypeScript for code examples", layer="session", identifiers=S)
            out = await mem.reflect(t, "alice", "s1", agent_id="coder")
            return out.created

    assert asyncio.run(main()) == 2


def test_cli_reflect(tmp_path: Path) -> None:
    db = tmp_path / "cli.duckdb"
    with Memory.open(db, embedder="hashing") as mem:
        mem.add(
            TenantContext(tenant_id="acme", principal="u1"),
            "Always answer in British English",
            layer="session",
            identifiers=S,
        )
    env = {**os.environ, "PYTHONPATH": SRC, "STRATAMEM_EMBEDDER": "hashing", "COLUMNS": "200"}
    env.pop("STRATAMEM_LLM_URL", None)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "stratamem",
            "reflect",
            "--user-id",
            "alice",
            "--session-id",
            "s1",
            "--agent-id",
            "coder",
            "--db",
            str(db),
            "-t",
            "acme",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["created"] == 2 and result["method"] == "rules" and result["agent_id"] == "coder"
