"""An OpenAI Agents SDK agent whose conversation history lives in stratamem (no API key: a scripted model).

Run: python examples/openai_agents_agent.py [store.duckdb]
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from typing import Any

from agents import Agent, Model, ModelResponse, Runner, Usage, set_tracing_disabled
from openai.types.responses import ResponseOutputMessage, ResponseOutputText

from stratamem import Memory, TenantContext
from stratamem.integrations.openai_agents import StratamemSession


class ScriptedModel(Model):
    """Answers with how many user turns it can see: the earlier ones come from the stratamem session."""

    async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> ModelResponse:
        turns = (
            [i for i in input if isinstance(i, dict) and i.get("role") == "user"]
            if isinstance(input, list)
            else [input]
        )
        text = ResponseOutputText(type="output_text", text=f"I can see {len(turns)} user turn(s).", annotations=[])
        message = ResponseOutputMessage(id="m", type="message", role="assistant", status="completed", content=[text])
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the scripted model does not stream")


async def main(path: str) -> None:
    set_tracing_disabled(True)  # offline: no trace upload
    mem = Memory.open(path)
    session = StratamemSession(mem, TenantContext(tenant_id="demo", principal="agents"), "alice", "chat-1")
    agent = Agent(name="assistant", instructions=mem.system_contract(), model=ScriptedModel())
    for text in ("My cat is called Miso", "What is my cat called?"):
        print((await Runner.run(agent, text, session=session)).final_output)
    mem.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "openai_agents_agent.duckdb"))
