"""Agent loop utilities on a real DuckDB store: system contract, MCP tool definitions read from the
real MCP server (checked against a real MCP client session), context formatting within a budget, and
the write gate over a conversation turn."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from mcp import Client

from stratamem import AsyncMemory, Memory, TenantContext
from stratamem.agent.loop import CONTEXT_HEADER, estimate_tokens, format_context
from stratamem.hygiene.prompts import DEFAULT_PROMPTS, PromptTemplates
from stratamem.mcp.server import build_mcp_server, make_binding
from stratamem.mcp.tools import amcp_tools, mcp_tools

ALICE = {"user_id": "alice"}


def test_system_contract_is_the_hygiene_prompts(mem: Memory) -> None:
    text = mem.system_contract()
    for part in (DEFAULT_PROMPTS.system_contract, DEFAULT_PROMPTS.retrieval_usage, DEFAULT_PROMPTS.explicit_forget):
        assert part in text
    mem.hygiene.configure(prompts=PromptTemplates(system_contract="Keep only what the user says twice."))
    assert mem.system_contract().startswith("Keep only what the user says twice.")


def test_mcp_tools_match_a_real_mcp_client_listing(mem: Memory, acme: TenantContext) -> None:
    tools = mcp_tools(mem)
    names = [t["name"] for t in tools]
    assert {"createMemory", "searchMemory", "updateMemory", "deleteMemory", "listMemory", "memory_process"} <= set(
        names
    )
    search = next(t for t in tools if t["name"] == "searchMemory")
    assert search["inputSchema"]["type"] == "object" and "query" in search["inputSchema"]["properties"]
    assert set(tools[0]) == {"name", "description", "inputSchema"}

    binding = make_binding(acme, ALICE)
    server = build_mcp_server(lambda: mem, lambda _ctx: binding)

    async def listed() -> list[dict[str, object]]:
        async with Client(server) as client:
            result = await client.list_tools()
            return [t.model_dump(by_alias=True, include={"name", "description", "input_schema"}) for t in result.tools]

    wire = asyncio.run(listed())
    assert sorted(tools, key=lambda t: str(t["name"])) == sorted(wire, key=lambda t: str(t["name"]))


def test_mcp_tools_inside_a_running_loop(mem: Memory) -> None:
    async def inside() -> list[str]:
        return [t["name"] for t in mcp_tools(mem)]

    assert "createMemory" in asyncio.run(inside())


def test_format_context_ranks_labels_and_keeps_the_budget(mem: Memory, acme: TenantContext) -> None:
    mem.add(acme, "User prefers dark mode in every editor.", layer="user", identifiers=ALICE)
    mem.add(acme, "The team deploys on Fridays. Releases are tagged vX.Y.", layer="user", identifiers=ALICE)
    mem.add(acme, "User drinks green tea.", layer="user", identifiers=ALICE)
    results = mem.search(acme, "dark mode editor", identifiers=ALICE, limit=10, threshold=0.0)
    block = mem.format_context(results, max_tokens=200)
    lines = block.splitlines()
    assert lines[0] == CONTEXT_HEADER
    assert len(lines) == 4 and all(line.startswith("- [user] ") for line in lines[1:])
    assert "dark mode" in lines[1]  # the best hit first
    assert estimate_tokens(block) <= 200
    # a tight budget: whole sentences only, the memory that cannot fit is left out, nothing is cut
    shortened = 0
    for budget in range(1, 40):
        small = format_context(results, max_tokens=budget)
        assert estimate_tokens(small) <= budget
        for line in small.splitlines()[1:]:
            body = line.split("] ", 1)[1].rsplit(" (", 1)[0]
            assert body.endswith((".", "!", "?")), (budget, line)
            shortened += body == "The team deploys on Fridays."
    assert shortened > 0  # some budget kept the first sentence of the two-sentence memory only
    assert format_context(results, max_tokens=1) == ""


def test_format_context_entries_newest_first(mem: Memory, acme: TenantContext) -> None:
    old = mem.add(acme, "User lived in Oslo.", layer="user", identifiers=ALICE).memory
    new = mem.add(acme, "User lives in Bergen.", layer="user", identifiers=ALICE).memory
    newer = new.model_copy(update={"updated_at": old.updated_at + timedelta(days=1)})
    block = format_context([old, newer])
    assert block.index("Bergen") < block.index("Oslo")
    # dicts (e.g. from the REST API) are accepted too
    as_dicts = format_context([old.model_dump(by_alias=True), newer.model_dump()])
    assert as_dicts == block


def test_process_conversation_runs_the_write_gate(mem: Memory, acme: TenantContext) -> None:
    messages = [
        {"role": "user", "content": "I prefer window seats on flights"},
        {"role": "assistant", "content": "Noted, window seats it is."},
        {"role": "user", "content": "hello there"},
    ]
    turn = mem.process_conversation(acme, messages, response="Happy to help!", identifiers=ALICE)
    assert [r.action for r in turn.created] == ["created"]
    assert len(turn.ignored) == 1 and turn.updated == [] and turn.deleted == []
    stored = mem.get(acme, turn.memory_ids[0])
    assert stored is not None and "window" in stored.content.lower()
    # the assistant's reply is never stored
    listed = mem.list(acme, "user", identifiers=ALICE).memories
    assert all("Happy to help" not in m.content and "Noted" not in m.content for m in listed)
    # the same fact again is not a second memory
    again = mem.process_conversation(acme, ["I prefer window seats on flights"], response=None, identifiers=ALICE)
    assert again.created == []
    assert len(mem.list(acme, "user", identifiers=ALICE).memories) == 1


def test_async_twins(db_path: object, acme: TenantContext) -> None:
    async def main() -> None:
        async with await AsyncMemory.open(db_path, embedder="hashing") as amem:  # type: ignore[arg-type]
            assert (await amem.system_contract()) == amem.sync.system_contract()
            assert (await amcp_tools(amem.sync)) == mcp_tools(amem.sync)
            turn = await amem.process_conversation(acme, ["My dog is called Rex"], response="Nice!", identifiers=ALICE)
            assert len(turn.created) == 1
            hits = await amem.search(acme, "dog", identifiers=ALICE)
            assert "Rex" in await amem.format_context(hits, max_tokens=100)

    asyncio.run(main())


def test_process_conversation_reads_framework_message_objects(mem: Memory, acme: TenantContext) -> None:
    models = pytest.importorskip("autogen_core.models", reason="the autogen extra is not installed")
    UserMessage, AssistantMessage = models.UserMessage, models.AssistantMessage
    turn = mem.process_conversation(
        acme,
        [
            UserMessage(content="I work as a nurse in Porto", source="user"),
            AssistantMessage(content="Cool", source="a"),
        ],
        response=None,
        identifiers=ALICE,
    )
    assert len(turn.created) == 1 and turn.ignored == []
    assert "Cool" not in (turn.created[0].content or "")
