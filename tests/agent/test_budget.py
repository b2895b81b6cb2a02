"""Context budget (``fit_context``): large tool outputs stored and replaced by a retrievable pointer,
the oldest turns compacted into a summary memory near the limit (rules offline, the configured LLM
against a real local OpenAI-compatible server, counted fallback), idempotent, on a real DuckDB file."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY

from stratamem import AsyncMemory, Memory, MemoryError, TenantContext
from stratamem.agent.budget import message_tokens
from stratamem.llm import OpenAIChatLLM

from ..chat_server import ChatServer

S = {"user_id": "alice", "session_id": "s1"}
BIG = "\n".join(f"row {i}: value {i * 7} status ok" for i in range(400))


@pytest.fixture()
def chat() -> Iterator[ChatServer]:
    server = ChatServer()
    yield server
    server.close()


def conversation(turns: int = 12, big_every: int = 3) -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = [{"role": "system", "content": "You are a helpful coding agent."}]
    for i in range(turns):
        msgs.append({"role": "user", "content": f"Please check build number {i}. The deadline is Friday."})
        msgs.append(
            {
                "role": "assistant",
                "content": f"Running the build check {i} now.",
                "tool_calls": [{"id": f"c{i}", "type": "function"}],
            }
        )
        output = f"{BIG}\nbuild {i}" if big_every and i % big_every == 0 else f"build {i} passed"
        msgs.append({"role": "tool", "tool_call_id": f"c{i}", "name": "ci", "content": output})
        msgs.append({"role": "assistant", "content": f"Build {i} passed. Anything else?"})
    return msgs


def test_small_prompts_pass_unchanged(mem: Memory, acme: TenantContext) -> None:
    msgs = conversation(turns=2, big_every=0)
    out = mem.fit_context(acme, msgs, 10_000, identifiers=S)
    assert out.messages == msgs and out.pruned == [] and out.compacted_messages == 0
    assert out.tokens_before == out.tokens_after == sum(message_tokens(m) for m in msgs)
    assert mem.stats(acme).total == 0


def test_large_tool_outputs_become_retrievable_pointers(mem: Memory, acme: TenantContext) -> None:
    msgs = conversation(turns=3, big_every=1)  # three large outputs; the newest is inside keep_recent
    out = mem.fit_context(acme, msgs, 100_000, identifiers=S, keep_recent=4)
    assert [p.index for p in out.pruned] == [3, 7]  # not 11: among the 4 newest messages
    for p in out.pruned:
        stub = out.messages[p.index]["content"]
        assert p.memory_id in stub and stub.startswith("[tool output pruned:")
        assert out.messages[p.index]["tool_call_id"] == msgs[p.index]["tool_call_id"]  # the call pairing stays
        stored = mem.get(acme, p.memory_id)
        assert stored is not None and stored.content == msgs[p.index]["content"]  # the full output
        assert stored.metadata["kind"] == "tool_output" and stored.metadata["toolName"] == "ci"
    assert out.messages[11]["content"] == msgs[11]["content"]
    assert out.compacted_messages == 0 and out.tokens_after < out.tokens_before
    assert msgs[3]["content"].startswith("row 0")  # the caller's messages are not modified


def test_near_the_limit_the_oldest_turns_become_a_summary(mem: Memory, acme: TenantContext) -> None:
    msgs = conversation()
    out = mem.fit_context(acme, msgs, 800, identifiers=S)
    assert out.tokens_before > 800 >= out.tokens_after and not out.over_budget
    assert out.messages[0] == msgs[0]  # the system prompt stays first
    summary_msg = out.messages[1]
    assert summary_msg["role"] == "system" and out.summary_memory_id in summary_msg["content"]
    assert out.summary_method == "rules" and out.compacted_messages > 0
    assert out.messages[-4:] == msgs[-4:]  # the newest turns untouched
    first_kept = out.messages[2]
    assert first_kept["role"] != "tool"  # no tool result without its call
    summary = mem.get(acme, out.summary_memory_id or "")
    assert summary is not None and summary.metadata["kind"] == "conversation_summary"
    assert summary.metadata["compactedMessages"] == out.compacted_messages
    assert "user: Please check build number" in summary.content


def test_fit_context_is_idempotent(mem: Memory, acme: TenantContext) -> None:
    msgs = conversation()
    first = mem.fit_context(acme, msgs, 800, identifiers=S)
    stored = mem.stats(acme).total
    again = mem.fit_context(acme, msgs, 800, identifiers=S)
    assert again.messages == first.messages and again.summary_memory_id == first.summary_memory_id
    assert mem.stats(acme).total == stored
    # identical outputs are stored once
    contents = [m.content for m in mem.list(acme, "session", identifiers=S, limit=100).memories]
    assert len(contents) == len(set(contents))


def test_llm_summary_and_fallback(chat: ChatServer, mem: Memory, acme: TenantContext) -> None:
    def respond(body: dict[str, Any]) -> tuple[int, Any]:
        if "Summarise the earlier part" in body["messages"][0]["content"]:
            return 200, {"content": "Alice asked for build checks 0 to 5; all passed. Deadline Friday."}
        return 200, {"entities": [], "relations": []}

    chat.respond = respond
    mem.hygiene.configure(llm=OpenAIChatLLM(chat.url, "m"))
    out = mem.fit_context(acme, conversation(), 800, identifiers=S)
    assert out.summary_method == "llm"
    assert out.messages[1]["content"].endswith("Alice asked for build checks 0 to 5; all passed. Deadline Friday.")
    call = next(r for r in chat.requests if "Summarise the earlier part" in r["body"]["messages"][0]["content"])
    assert "- user: Please check build number 0." in call["body"]["messages"][1]["content"]

    chat.respond = lambda body: (500, None)
    before = (
        REGISTRY.get_sample_value(
            "stratamem_llm_fallbacks_total", {"task": "context_compaction", "reason": "PROVIDER_ERROR"}
        )
        or 0.0
    )
    other = mem.fit_context(acme, conversation(turns=13), 800, identifiers={"user_id": "alice", "session_id": "s2"})
    assert other.summary_method == "rules" and other.compacted_messages > 0
    assert (
        REGISTRY.get_sample_value(
            "stratamem_llm_fallbacks_total", {"task": "context_compaction", "reason": "PROVIDER_ERROR"}
        )
        == before + 1
    )


def test_an_output_that_cannot_be_stored_stays(mem: Memory, acme: TenantContext) -> None:
    secret = "config dump\n" + "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n" + BIG
    msgs = [
        {"role": "user", "content": "dump the config"},
        {"role": "tool", "content": secret},
        *conversation(turns=1, big_every=0)[1:],
    ]
    out = mem.fit_context(acme, msgs, 100_000, identifiers=S)
    # the secret guard refuses to store it: it stays in the prompt (nothing is lost) and is reported
    assert out.pruned == [] and out.messages[1]["content"] == secret
    assert [(k.index, k.code) for k in out.not_pruned] == [(1, "UNSAFE_CONTENT")]


def test_bad_arguments_are_client_errors(mem: Memory, acme: TenantContext) -> None:
    for kwargs in ({"max_tokens": 0}, {"max_tokens": True}, {"max_tokens": 10, "compact_at": 0}):
        with pytest.raises(MemoryError) as err:
            mem.fit_context(acme, conversation(1), identifiers=S, **kwargs)  # type: ignore[arg-type]
        assert err.value.code.value == "INVALID_PARAMS"
    with pytest.raises(MemoryError) as err:
        mem.fit_context(acme, "hello", 10, identifiers=S)  # type: ignore[arg-type]
    assert err.value.code.value == "INVALID_PARAMS"
    with pytest.raises(MemoryError) as err:  # pruning needs a session scope
        mem.fit_context(acme, conversation(3, 1), 100_000, identifiers={"user_id": "alice"})
    assert err.value.code.value == "MISSING_IDENTIFIER"


def test_async_fit_context(tmp_path: Path) -> None:
    t = TenantContext(tenant_id="acme", principal="u1")

    async def main() -> int:
        async with await AsyncMemory.open(tmp_path / "a.duckdb", embedder="hashing") as amem:
            out = await amem.fit_context(t, conversation(), 800, identifiers=S)
            return out.compacted_messages

    assert asyncio.run(main()) > 0
