"""StratamemMemory against AutoGen's ``Memory`` protocol with the real ``autogen-core`` package, on a
real DuckDB file: add/query/clear/close and ``update_context`` on a real model context."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from .conftest import need

need("autogen_core", "autogen")  # before the framework imports: skip or fail (CI) with a clear reason

from autogen_core.memory import Memory as AutogenMemory  # noqa: E402
from autogen_core.memory import MemoryContent, MemoryMimeType  # noqa: E402
from autogen_core.model_context import BufferedChatCompletionContext, UnboundedChatCompletionContext  # noqa: E402
from autogen_core.models import AssistantMessage, SystemMessage, UserMessage  # noqa: E402

from stratamem import Memory, TenantContext  # noqa: E402
from stratamem.integrations.autogen import StratamemMemory  # noqa: E402

ACME = TenantContext(tenant_id="acme", principal="agent")
ALICE = {"user_id": "alice"}


def test_add_query_clear_close(open_mem: Callable[..., Memory]) -> None:
    mem = open_mem(embedder="onnx")
    memory = StratamemMemory(mem, ACME, {**ALICE, "project_id": "p1"}, k=3)
    assert isinstance(memory, AutogenMemory)

    async def main() -> None:
        await memory.add(MemoryContent(content="User prefers formal language", mime_type=MemoryMimeType.TEXT))
        await memory.add(
            MemoryContent(content="User's cat is called Miso", mime_type="text/plain", metadata={"source": "chat"})
        )
        await memory.add(MemoryContent(content={"city": "Lisbon", "since": 2021}, mime_type=MemoryMimeType.JSON))
        await memory.add(
            MemoryContent(
                content="The team ships on Fridays", mime_type=MemoryMimeType.TEXT, metadata={"layer": "project"}
            )
        )
        with pytest.raises(ValueError):
            await memory.add(MemoryContent(content=b"\x00\x01", mime_type=MemoryMimeType.BINARY))
        found = await memory.query("what is the name of my cat")
        assert found.results[0].content == "User's cat is called Miso"
        meta = found.results[0].metadata or {}
        assert meta["source"] == "chat" and meta["layer"] == "user" and isinstance(meta["score"], float)
        assert mem.get(ACME, meta["id"]) is not None
        as_json = [
            r for r in (await memory.query("where does the user live")).results if r.mime_type == "application/json"
        ]
        assert as_json and as_json[0].content == {"city": "Lisbon", "since": 2021}
        assert (await memory.query(MemoryContent(content="cat", mime_type="text/plain"))).results
        # the layer named in the metadata was used
        project = mem.list(ACME, "project", identifiers={"project_id": "p1"}).memories
        assert [m.content for m in project] == ["The team ships on Fridays"]
        await memory.clear()  # only the user scope of this object
        assert mem.list(ACME, "user", identifiers=ALICE).memories == []
        assert len(mem.list(ACME, "project", identifiers={"project_id": "p1"}).memories) == 1
        await memory.close()
        assert mem.list(ACME, "project", identifiers={"project_id": "p1"}).total_count == 1  # not owned: still open

    asyncio.run(main())


def test_update_context_on_a_real_model_context(open_mem: Callable[..., Memory]) -> None:
    mem = open_mem(embedder="onnx")
    memory = StratamemMemory(mem, ACME, ALICE, k=2, max_tokens=200)

    async def main() -> None:
        for fact in ("User prefers answers in TypeScript", "User lives in Lisbon", "User's cat is called Miso"):
            await memory.add(MemoryContent(content=fact, mime_type=MemoryMimeType.TEXT))
        empty = UnboundedChatCompletionContext()
        assert (await memory.update_context(empty)).memories.results == []  # no user message: nothing added
        assert await empty.get_messages() == []
        context = BufferedChatCompletionContext(buffer_size=10)
        await context.add_message(UserMessage(content="hi", source="user"))
        await context.add_message(AssistantMessage(content="hello!", source="assistant"))
        await context.add_message(
            UserMessage(content="which programming language should your answers use", source="user")
        )
        result = await memory.update_context(context)
        assert len(result.memories.results) == 2
        assert result.memories.results[0].content == "User prefers answers in TypeScript"
        messages = await context.get_messages()
        assert len(messages) == 4 and isinstance(messages[-1], SystemMessage)
        assert "[user] User prefers answers in TypeScript" in messages[-1].content

    asyncio.run(main())
