"""A LangGraph agent whose long-term memory is stratamem (no API key: the reply is scripted).

Run: python examples/langgraph_agent.py [store.duckdb]
"""

from __future__ import annotations

import sys
from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore

from stratamem import Memory, TenantContext
from stratamem.integrations.langgraph import StratamemStore


class State(TypedDict):
    user: str
    message: str
    reply: str


def agent(state: State, *, store: BaseStore) -> dict[str, Any]:
    ns = ("memories", state["user"])
    recalled = store.search(ns, query=state["message"], limit=1)
    if state["message"].lower().startswith("remember"):
        store.put(ns, str(len(store.search(ns, limit=100))), {"content": state["message"][len("remember") :].strip()})
        return {"reply": "Noted."}
    return {"reply": f"From memory: {recalled[0].value['content']}" if recalled else "I don't know yet."}


def main(path: str) -> None:
    mem = Memory.open(path)
    store = StratamemStore(mem, TenantContext(tenant_id="demo", principal="langgraph"), {"user_id": "alice"})
    builder = StateGraph(State)
    builder.add_node("agent", agent)
    builder.add_edge(START, "agent")
    builder.add_edge("agent", END)
    graph = builder.compile(store=store)
    for message in ("remember my cat is called Miso", "what is my cat called?"):
        print(graph.invoke({"user": "alice", "message": message, "reply": ""})["reply"])
    mem.close()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "langgraph_agent.duckdb")
