"""The configured LLM is used beyond the write gate: knowledge-graph extraction and consolidation use
it (against a real local OpenAI-compatible HTTP server), and fall back to the rules on failure with a
counted metric (``stratamem_llm_fallbacks_total``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from prometheus_client import REGISTRY

from stratamem import Memory, TenantContext
from stratamem.lifecycle.config import ConsolidationConfig, LifecycleConfig
from stratamem.llm import GraphExtraction, OpenAIChatLLM

from ..chat_server import ChatServer

U = {"user_id": "u1"}


@pytest.fixture()
def chat() -> Iterator[ChatServer]:
    server = ChatServer()
    yield server
    server.close()


def fallbacks(task: str, reason: str) -> float:
    return REGISTRY.get_sample_value("stratamem_llm_fallbacks_total", {"task": task, "reason": reason}) or 0.0


def _graph_reply(body: dict[str, Any]) -> tuple[int, Any]:
    system = body["messages"][0]["content"]
    if "named entities" in system:
        return 200, {
            "entities": [{"name": "Zorblax", "type": "PROJECT"}, {"name": "Quillon", "type": "TECHNOLOGY"}],
            "relations": [
                {"source": "Zorblax", "target": "Quillon", "type": "USES"},
                {"source": "Zorblax", "target": "Nobody", "type": "USES"},
            ],
        }
    return 500, None


def test_extract_graph_sends_the_vocabulary_and_known_names(chat: ChatServer) -> None:
    chat.respond = _graph_reply
    llm = OpenAIChatLLM(chat.url, "m")
    out = llm.extract_graph("zorblax runs on quillon", known_entities=["Zorblax"], relation_types=["USES", "PART_OF"])
    assert isinstance(out, GraphExtraction)
    assert [e.name for e in out.entities] == ["Zorblax", "Quillon"]
    user = chat.requests[0]["body"]["messages"][1]["content"]
    assert "USES, PART_OF" in user and "Known entities: Zorblax" in user and "zorblax runs on quillon" in user
    llm.close()


def test_graph_extraction_uses_the_configured_llm(
    chat: ChatServer, open_mem: Callable[..., Memory], acme: TenantContext
) -> None:
    chat.respond = _graph_reply
    mem = open_mem()
    mem.hygiene.configure(llm=OpenAIChatLLM(chat.url, "m"))
    # lower case: the offline rules find no entity here, so every node comes from the LLM's answer
    mid = mem.add(acme, "the zorblax service runs on quillon", layer="user", identifiers=U).memory.id
    assert any("named entities" in r["body"]["messages"][0]["content"] for r in chat.requests)
    related = mem.graph.related(acme, "Zorblax", hops=1, include_entities=True)
    assert mid in {i.node.id for i in related.items}
    neighbours = mem.graph.neighbors(acme, mem.graph.entity_id(acme, "Zorblax", "PROJECT"), rel_type="USES")
    assert [n.node.label for n in neighbours] == ["Quillon"]  # the dangling "Nobody" relation is dropped


def test_graph_extraction_falls_back_to_rules_and_counts(
    chat: ChatServer, open_mem: Callable[..., Memory], acme: TenantContext
) -> None:
    chat.respond = lambda body: (500, None)
    mem = open_mem()
    mem.hygiene.configure(llm=OpenAIChatLLM(chat.url, "m"))
    before = fallbacks("graph_extraction", "PROVIDER_ERROR")
    mid = mem.add(acme, "Alice works on Project Phoenix", layer="user", identifiers=U).memory.id  # the write succeeds
    assert fallbacks("graph_extraction", "PROVIDER_ERROR") == before + 1
    related = mem.graph.related(acme, "Alice", hops=1)
    assert mid in {i.node.id for i in related.items}  # the rules extracted "Alice"


def test_graph_extraction_without_an_llm_makes_no_http_call(
    chat: ChatServer, open_mem: Callable[..., Memory], acme: TenantContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("STRATAMEM_LLM_URL", raising=False)
    mem = open_mem()
    mem.add(acme, "Alice works on Project Phoenix", layer="user", identifiers=U)
    assert chat.requests == []
    assert mem.graph.related(acme, "Alice", hops=1).items


def test_graph_extraction_reads_the_environment(
    chat: ChatServer, open_mem: Callable[..., Memory], acme: TenantContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    chat.respond = _graph_reply
    monkeypatch.setenv("STRATAMEM_LLM_URL", chat.url)
    monkeypatch.setenv("STRATAMEM_LLM_MODEL", "m")
    mem = open_mem()
    mem.add(acme, "the zorblax service runs on quillon", layer="user", identifiers=U)
    assert chat.requests and "named entities" in chat.requests[0]["body"]["messages"][0]["content"]


def _consolidating(mem: Memory) -> None:
    mem.lifecycle.config = LifecycleConfig(
        consolidation=ConsolidationConfig(max_memories_before_trigger=3, similarity_threshold=0.95)
    )


def _duplicates(mem: Memory, acme: TenantContext) -> list[str]:
    ids = [
        mem.add(acme, "User prefers dark mode", layer="user", identifiers=U).memory.id,
        mem.add(acme, "User prefers dark mode!", layer="user", identifiers=U).memory.id,
    ]
    mem.add(acme, "Team standup is at nine", layer="user", identifiers=U)
    mem.add(acme, "Quarterly report due in March", layer="user", identifiers=U)
    return ids


def test_consolidation_uses_llm_summary_and_category(
    chat: ChatServer, open_mem: Callable[..., Memory], acme: TenantContext
) -> None:
    def respond(body: dict[str, Any]) -> tuple[int, Any]:
        system = body["messages"][0]["content"]
        if "Merge the memories" in system:
            return 200, {"content": "User prefers dark mode in every app"}
        if "Classify the memory" in system:
            return 200, {"category": "preference"}
        return 200, {"entities": [], "relations": []}

    chat.respond = respond
    mem = open_mem(embedder="hashing")
    _consolidating(mem)
    mem.hygiene.configure(llm=OpenAIChatLLM(chat.url, "m"))
    dups = _duplicates(mem, acme)
    assert mem.maintain(tenants=[acme.tenant_id]).tenants[0].consolidated == 1
    merged = [m for m in mem.list(acme, "user", identifiers=U).memories if m.provenance.compacted_from_ids]
    assert len(merged) == 1
    assert merged[0].content == "User prefers dark mode in every app"
    assert merged[0].metadata["category"] == "preference"
    assert sorted(merged[0].provenance.compacted_from_ids or []) == sorted(dups)
    summarize = next(r for r in chat.requests if "Merge the memories" in r["body"]["messages"][0]["content"])
    listing = summarize["body"]["messages"][1]["content"]
    assert listing == "- User prefers dark mode\n- User prefers dark mode!"  # oldest first


def test_consolidation_falls_back_to_the_longest_and_counts(
    chat: ChatServer, open_mem: Callable[..., Memory], acme: TenantContext
) -> None:
    chat.respond = lambda body: (429, None)
    mem = open_mem(embedder="hashing")
    _consolidating(mem)
    mem.hygiene.configure(llm=OpenAIChatLLM(chat.url, "m"))
    before = fallbacks("consolidation", "RATE_LIMITED")
    _duplicates(mem, acme)
    report = mem.maintain(tenants=[acme.tenant_id]).tenants[0]
    assert report.consolidated == 1 and report.errors == {}
    assert fallbacks("consolidation", "RATE_LIMITED") == before + 1
    merged = [m for m in mem.list(acme, "user", identifiers=U).memories if m.provenance.compacted_from_ids]
    assert merged[0].content == "User prefers dark mode!" and "category" not in merged[0].metadata


def test_write_gate_fallback_is_counted(chat: ChatServer, open_mem: Callable[..., Memory], acme: TenantContext) -> None:
    chat.respond = lambda body: (500, None)
    mem = open_mem(embedder="hashing")
    mem.hygiene.configure(llm=OpenAIChatLLM(chat.url, "m"))
    before = fallbacks("write_gate", "PROVIDER_ERROR")
    assert mem.process(acme, "I prefer green tea", identifiers=U).action == "created"
    assert fallbacks("write_gate", "PROVIDER_ERROR") >= before + 1
