"""The public methods of ``Memory``, ``AsyncMemory``, ``Client`` and ``AsyncClient`` take the tenant
context and the operation's subject positionally; every other argument is keyword-only, so a call
reads ``mem.add(t, "text", layer="user", identifiers=ids)`` and arguments can be added without
shifting anyone's call."""

from __future__ import annotations

import inspect

import pytest

from stratamem import AsyncClient, AsyncMemory, Client, Memory

#: The parameters each method takes positionally (after ``self`` / ``cls``); the rest are keyword-only.
POSITIONAL: dict[str, list[str]] = {
    "open": ["location"],
    "add": ["ctx", "content"],
    "search": ["ctx", "query"],
    "get": ["ctx", "memory_id"],
    "update": ["ctx", "memory_id"],
    "delete": ["ctx", "memory_id"],
    "list": ["ctx", "layer"],
    "bulk_add": ["ctx", "items"],
    "bulk_delete": ["ctx", "ids"],
    "stats": ["ctx"],
    "export": ["ctx"],
    "generate_embedding": ["text"],
    "get_accessible_layers": ["identifiers"],
    "health_check": [],
    "capabilities": [],
    "configure_snapshots": ["settings"],
    "open_from_snapshot": ["tenants"],
    "close_session": ["ctx", "user_id", "session_id"],
    "reflect": ["ctx", "user_id", "session_id"],
    "promote": ["ctx", "source_id", "target_layer"],
    "compact": ["ctx", "source_ids", "callback"],
    "delete_by_scope": ["ctx", "layer", "identifiers"],
    "soft_delete": ["ctx", "ids"],
    "restore": ["ctx", "ids"],
    "feedback": ["ctx", "memory_ids", "reward"],
    "prune": ["ctx"],
    "conflicts": ["ctx"],
    "maintain": [],
    "crud": ["ctx", "request"],
    "process": ["ctx", "text"],
    "remember": ["ctx", "text"],
    "forget": ["ctx", "text"],
    "forget_user": ["ctx", "user_id"],
    "health": ["ctx"],
    "memory_events": ["ctx", "memory_id"],
    "event_trends": ["ctx"],
    "maintenance_runs": ["ctx"],
    "system_contract": [],
    "format_context": ["memories"],
    "process_conversation": ["ctx", "messages"],
    "metrics_text": [],
    "fit_context": ["ctx", "messages", "max_tokens"],
    "close": [],
}

_POSITIONAL_KINDS = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def _public_methods(cls: type) -> dict[str, inspect.Signature]:
    out = {}
    for name, member in vars(cls).items():
        if name.startswith("_") or isinstance(member, property):
            continue
        fn = member.__func__ if isinstance(member, classmethod | staticmethod) else member
        if callable(fn):
            out[name] = inspect.signature(fn)
    return out


@pytest.mark.parametrize("cls", [Memory, AsyncMemory, Client, AsyncClient], ids=lambda c: c.__name__)
def test_only_context_and_subject_are_positional(cls: type) -> None:
    methods = _public_methods(cls)
    unknown = sorted(set(methods) - set(POSITIONAL))
    assert unknown == [], f"{cls.__name__}: decide the positional parameters of {unknown}"
    for name, sig in methods.items():
        params = [p for p in sig.parameters.values() if p.name not in ("self", "cls")]
        positional = [p.name for p in params if p.kind in _POSITIONAL_KINDS]
        assert positional == POSITIONAL[name], f"{cls.__name__}.{name}"
        assert all(p.kind in (*_POSITIONAL_KINDS, p.KEYWORD_ONLY, p.VAR_KEYWORD) for p in params), name


def test_a_former_positional_argument_is_refused() -> None:
    mem = Memory.open("memory://", embedder="hashing")
    try:
        with pytest.raises(TypeError):
            mem.add(None, "text", "user")  # type: ignore[misc]
        with pytest.raises(TypeError):
            mem.search(None, "text", {"user_id": "u1"})  # type: ignore[misc]
    finally:
        mem.close()
