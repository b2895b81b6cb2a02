"""StratamemSession against the OpenAI Agents SDK's ``Session`` behaviours with the real ``openai-agents``
package, on a real DuckDB file; a real ``Runner`` run uses it with a scripted local model (no API)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

from .conftest import need

need("agents", "openai-agents")  # before the framework imports: skip or fail (CI) with a clear reason

from agents import Agent, Model, ModelResponse, Runner, Usage, set_tracing_disabled  # noqa: E402
from agents.memory import SessionABC, SessionSettings  # noqa: E402
from openai.types.responses import ResponseOutputMessage, ResponseOutputText  # noqa: E402

from stratamem import Memory, TenantContext  # noqa: E402
from stratamem.integrations.openai_agents import StratamemSession  # noqa: E402

ACME = TenantContext(tenant_id="acme", principal="agent")


def test_session_protocol(open_mem: Callable[..., Memory]) -> None:
    mem = open_mem(embedder="hashing")
    session = StratamemSession(mem, ACME, "alice", "s1")
    other = StratamemSession(mem, ACME, "alice", "s2")
    assert isinstance(session, SessionABC) and session.session_id == "s1"

    async def main() -> None:
        assert await session.get_items() == [] and await session.pop_item() is None
        items: list[Any] = [
            {"role": "user", "content": "My cat is called Miso"},
            {"role": "assistant", "content": [{"type": "output_text", "text": "Nice name!"}]},
            {"role": "user", "content": "What is my cat called?"},
        ]
        await session.add_items(items[:2])
        await session.add_items(items[2:])
        await other.add_items([{"role": "user", "content": "another session"}])
        assert await session.get_items() == items  # chronological
        assert await session.get_items(limit=2) == items[1:]  # the latest N, oldest first
        assert await session.get_items(limit=0) == []
        # the items are session memories, searchable like any other
        hits = mem.search(
            ACME, "cat Miso", identifiers={"user_id": "alice", "session_id": "s1"}, layers=["session"], threshold=0.0
        )
        assert any("Miso" in r.memory.content for r in hits.results)
        assert await session.pop_item() == items[2]
        assert await session.get_items() == items[:2]
        await session.add_items([{"role": "user", "content": "again"}])
        assert (await session.get_items())[-1] == {"role": "user", "content": "again"}
        mem.add(
            ACME,
            "a fact written by the write gate",
            layer="session",
            identifiers={"user_id": "alice", "session_id": "s1"},
        )
        await session.clear_session()
        assert await session.get_items() == []
        assert (
            len(mem.list(ACME, "session", identifiers={"user_id": "alice", "session_id": "s1"}).memories) == 1
        )  # not an item
        assert len(await other.get_items()) == 1
        limited = StratamemSession(mem, ACME, "alice", "s2", session_settings=SessionSettings(limit=0))
        assert await limited.get_items() == [] and len(await limited.get_items(limit=5)) == 1

    asyncio.run(main())


class ScriptedModel(Model):
    """A local model that answers with the number of user messages it was given (no network)."""

    def __init__(self) -> None:
        self.seen: list[Any] = []

    async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> ModelResponse:
        self.seen.append(input)
        users = (
            [i for i in input if isinstance(i, dict) and i.get("role") == "user"] if isinstance(input, list) else [1]
        )
        text = ResponseOutputText(type="output_text", text=f"I have seen {len(users)} user messages", annotations=[])
        message = ResponseOutputMessage(id="m", type="message", role="assistant", status="completed", content=[text])
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the scripted model does not stream")


def test_a_runner_keeps_history_in_the_session(open_mem: Callable[..., Memory]) -> None:
    set_tracing_disabled(True)
    mem = open_mem(embedder="hashing")
    model = ScriptedModel()
    agent = Agent(name="assistant", instructions="Be brief.", model=model)
    session = StratamemSession(mem, ACME, "alice", "run-1")

    async def main() -> None:
        first = await Runner.run(agent, "My cat is called Miso", session=session)
        assert first.final_output == "I have seen 1 user messages"
        second = await Runner.run(agent, "What is my cat called?", session=session)
        assert second.final_output == "I have seen 2 user messages"  # the first turn came from stratamem
        history = await session.get_items()
        assert [i.get("role") for i in history] == ["user", "assistant", "user", "assistant"]

    asyncio.run(main())
    # a fresh object on the same store and session sees the same history
    again = StratamemSession(mem, ACME, "alice", "run-1")
    assert len(asyncio.run(again.get_items())) == 4
