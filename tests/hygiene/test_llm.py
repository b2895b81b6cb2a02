"""LLM protocol: the rule engine, and the OpenAI-compatible client against a real local HTTP server."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from stratamem import Memory, MemoryError, TenantContext
from stratamem.llm import DecisionContext, OpenAIChatLLM, RuleBasedLLM, make_llm

from ..chat_server import ChatServer


@pytest.fixture()
def chat() -> Iterator[ChatServer]:
    server = ChatServer()
    yield server
    server.close()


def test_client_sends_chat_completions_request_and_validates_json(chat: ChatServer) -> None:
    chat.respond = lambda body: (200, {"action": "store", "reason": "stable preference"})
    llm = OpenAIChatLLM(chat.url, "test-model", api_key="k-123")
    decision = llm.decide("I prefer tea", DecisionContext(user_intent="none"))
    assert decision.action == "store" and decision.reason == "stable preference"
    req = chat.requests[0]
    assert req["path"] == "/v1/chat/completions"
    assert req["auth"] == "Bearer k-123"
    assert req["body"]["model"] == "test-model"
    assert req["body"]["response_format"] == {"type": "json_object"}
    assert req["body"]["messages"][0]["role"] == "system"
    assert "long-term memory" in req["body"]["messages"][0]["content"]
    assert "I prefer tea" in req["body"]["messages"][1]["content"]
    llm.close()


def test_client_accepts_fenced_json(chat: ChatServer) -> None:
    chat.respond = lambda body: (200, '```json\n{"content": "User prefers tea", "category": "preference"}\n```')
    out = OpenAIChatLLM(chat.url, "m").format("I prefer tea")
    assert (out.content, out.category) == ("User prefers tea", "preference")


@pytest.mark.parametrize(
    ("status", "reply", "code"),
    [
        (200, "not json at all", "PROVIDER_ERROR"),
        (200, {"action": "maybe"}, "PROVIDER_ERROR"),
        (500, None, "PROVIDER_ERROR"),
        (429, None, "RATE_LIMITED"),
        (401, None, "CONFIGURATION_ERROR"),
        (404, None, "CONFIGURATION_ERROR"),
    ],
)
def test_client_errors_are_memory_errors(chat: ChatServer, status: int, reply: Any, code: str) -> None:
    chat.respond = lambda body: (status, reply)
    with pytest.raises(MemoryError) as err:
        OpenAIChatLLM(chat.url, "m").decide("I prefer tea", DecisionContext())
    assert err.value.code.value == code
    if status == 429:
        assert err.value.details["retry_after"] == 2.0


def test_client_unreachable_is_provider_error() -> None:
    with pytest.raises(MemoryError) as err:
        OpenAIChatLLM("http://127.0.0.1:9/v1", "m", timeout=2).classify("x")
    assert err.value.code.value == "PROVIDER_ERROR" and err.value.retryable


def test_make_llm_reads_environment(chat: ChatServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STRATAMEM_LLM_URL", raising=False)
    assert isinstance(make_llm(), RuleBasedLLM)
    monkeypatch.setenv("STRATAMEM_LLM_URL", chat.url)
    monkeypatch.setenv("STRATAMEM_LLM_MODEL", "llama3")
    llm = make_llm()
    assert isinstance(llm, OpenAIChatLLM) and llm.model == "llama3" and llm.base_url == chat.url
    monkeypatch.delenv("STRATAMEM_LLM_MODEL")
    with pytest.raises(MemoryError) as err:
        make_llm()
    assert err.value.code.value == "CONFIGURATION_ERROR"


def test_process_uses_the_http_llm(chat: ChatServer, open_mem: Callable[..., Memory], acme: TenantContext) -> None:
    def respond(body: dict[str, Any]) -> tuple[int, Any]:
        system = body["messages"][0]["content"]
        if "Judge whether" in system:
            return 200, {"action": "store", "reason": "llm says durable"}
        return 200, {"content": "User drinks oolong tea every morning", "category": "preference"}

    chat.respond = respond
    mem = open_mem()
    mem.hygiene.configure(llm=OpenAIChatLLM(chat.url, "m"))
    res = mem.process(acme, "oolong every morning, that's me", identifiers={"user_id": "u1"})
    assert res.action == "created" and res.reason == "llm says durable"
    stored = mem.get(acme, res.memory_id)
    assert stored is not None and stored.content == "User drinks oolong tea every morning"
    assert stored.metadata["category"] == "preference"
    # decide + format; the third call is the knowledge graph's extraction of the stored memory
    systems = [r["body"]["messages"][0]["content"] for r in chat.requests]
    assert len([s for s in systems if "named entities" not in s]) == 2 and len(systems) == 3


def test_process_falls_back_to_rules_when_llm_fails(
    chat: ChatServer, open_mem: Callable[..., Memory], acme: TenantContext
) -> None:
    chat.respond = lambda body: (500, None)
    mem = open_mem()
    mem.hygiene.configure(llm=OpenAIChatLLM(chat.url, "m"))
    res = mem.process(acme, "I prefer green tea", identifiers={"user_id": "u1"})
    assert res.action == "created" and res.content == "User prefers green tea"
    assert mem.process(acme, "how are you?", identifiers={"user_id": "u1"}).action == "ignored"


@pytest.mark.parametrize(
    ("text", "action"),
    [
        ("I prefer dark mode", "store"),
        ("My dog's name is Rex", "store"),
        ("Always answer in British English", "store"),
        ("We use PostgreSQL 16 in production", "store"),
        ("I'm so tired today", "ignore"),
        ("What's the weather in Paris?", "ignore"),
        ("I think they work at a startup", "ignore"),
        ("I want to book a flight tonight", "ignore"),
        ("thanks!", "ignore"),
    ],
)
def test_rule_engine_decisions(text: str, action: str) -> None:
    assert RuleBasedLLM().decide(text, DecisionContext()).action == action


@pytest.mark.parametrize(
    ("text", "formatted", "category"),
    [
        ("The user told me they like dark mode lol", "User likes dark mode", "preference"),
        ("The user said they prefer using vim", "User prefers using vim", "preference"),
        ("My dog's name is Rex", "User's dog's name is Rex", "fact"),
        ("Always answer in French", "User wants the assistant to always answer in French", "instruction"),
        ("We deploy on Kubernetes", "User's team deploys on Kubernetes", "context"),
        ("Remember that I have a meeting every Monday at 3pm", "User has a meeting every Monday at 3pm", "fact"),
    ],
)
def test_rule_engine_formats_third_person(text: str, formatted: str, category: str) -> None:
    out = RuleBasedLLM().format(text)
    assert (out.content, out.category) == (formatted, category)


def test_an_llm_update_decision_supersedes_the_memory_it_names(
    chat: ChatServer, open_mem: Callable[..., Memory], acme: TenantContext
) -> None:
    """The LLM's ``update`` with ``existing_memory_id`` replaces that memory; the old one stays as history."""
    mem = open_mem()
    u = {"user_id": "u1"}
    old = mem.add(acme, "User lives in Hamburg", layer="user", identifiers=u).memory

    def respond(body: dict[str, Any]) -> tuple[int, Any]:
        if "Judge whether" in body["messages"][0]["content"]:
            return 200, {"action": "update", "reason": "moved", "existing_memory_id": old.id}
        return 200, {"content": "User lives in Berlin", "category": "fact"}

    chat.respond = respond
    mem.hygiene.configure(llm=OpenAIChatLLM(chat.url, "m"))
    res = mem.process(acme, "I live in Berlin now", identifiers=u)
    assert res.action == "updated" and res.superseded == [old.id]
    assert [m.content for m in mem.list(acme, "user", identifiers=u).memories] == ["User lives in Berlin"]
    history = mem.get(acme, old.id)
    assert history is not None and history.status == "superseded" and history.provenance.superseded_by == res.memory_id


@pytest.mark.parametrize(
    ("text", "formatted"),
    [
        ("I prefer dark mode", "Dana prefers dark mode"),
        ("My daughter Emma starts school in September", "Dana's daughter Emma starts school in September"),
        ("My name is Dana", "User's name is Dana"),
        ("Call me Dee", "User wants to be called Dee"),
        ("We deploy on Kubernetes", "Dana's team deploys on Kubernetes"),
        ("I'm not vegetarian anymore, I eat fish now", "Dana is not vegetarian anymore, Dana eats fish"),
        ("Please keep your answers short", "Keep your answers short"),
    ],
)
def test_rule_engine_writes_the_known_name(text: str, formatted: str) -> None:
    assert RuleBasedLLM().format(text, user_name="Dana").content == formatted


def test_the_llm_is_told_the_known_name(chat: ChatServer, open_mem: Callable[..., Memory], acme: TenantContext) -> None:
    """The format prompt carries the user's name; a statement the LLM still opens with "User" is
    written about the name all the same."""
    u = {"user_id": "u1"}
    mem = open_mem()
    mem.add(acme, "User's name is Dana", layer="user", identifiers=u)

    def respond(body: dict[str, Any]) -> tuple[int, Any]:
        system = body["messages"][0]["content"]
        if "Judge whether" in system:
            return 200, {"action": "store", "reason": "durable"}
        if "named entities" in system:
            return 200, {"entities": [], "relations": []}
        return 200, {"content": "User drinks oolong tea every morning", "category": "preference"}

    chat.respond = respond
    mem.hygiene.configure(llm=OpenAIChatLLM(chat.url, "m"))
    res = mem.process(acme, "oolong every morning, that's me", identifiers=u)
    assert res.content == "Dana drinks oolong tea every morning"
    formats = [r["body"]["messages"][0]["content"] for r in chat.requests]
    formats = [s for s in formats if "one short factual statement" in s]
    assert len(formats) == 1 and 'The user\'s name is Dana. Write "Dana"' in formats[0]
    # no name known: the prompt is the plain format prompt
    chat.requests.clear()
    assert mem.process(acme, "oolong every morning, that's me", identifiers={"user_id": "u2"}).content == (
        "User drinks oolong tea every morning"
    )
    formats = [r["body"]["messages"][0]["content"] for r in chat.requests if "one short factual" in str(r["body"])]
    assert formats and all("name is" not in s for s in formats)
