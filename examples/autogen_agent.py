"""An AutoGen model context enriched from stratamem before a model call (no API key: no model is called).

Run: python examples/autogen_agent.py [store.duckdb]
"""

from __future__ import annotations

import asyncio
import sys

from autogen_core.memory import MemoryContent, MemoryMimeType
from autogen_core.model_context import BufferedChatCompletionContext
from autogen_core.models import UserMessage

from stratamem import Memory, TenantContext
from stratamem.integrations.autogen import StratamemMemory


async def main(path: str) -> None:
    ctx = TenantContext(tenant_id="demo", principal="autogen")
    memory = StratamemMemory(Memory.open(path), ctx, {"user_id": "alice"}, k=2, close_memory=True)
    for fact in ("User prefers answers in TypeScript", "User lives in Lisbon"):
        await memory.add(MemoryContent(content=fact, mime_type=MemoryMimeType.TEXT))
    context = BufferedChatCompletionContext(buffer_size=10)
    await context.add_message(UserMessage(content="Which programming language should you answer in?", source="user"))
    await memory.update_context(context)  # what AssistantAgent(memory=[memory]) does before each model call
    for message in await context.get_messages():
        print(f"{type(message).__name__}: {message.content}")
    await memory.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "autogen_agent.duckdb"))
