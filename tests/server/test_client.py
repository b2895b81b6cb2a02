"""stratamem.Client / AsyncClient against a real `stratamem serve` (uvicorn on a loopback port).

The same scenario runs on the embedded Memory and on the Client, so both answer alike; the clients'
signatures match Memory's method for method."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from stratamem import AsyncClient, AsyncMemory, Client, Memory, MemoryError, TenantContext
from stratamem.model import AddMemoryOutput, MemoryEntry, SearchMemoryOutput

from .conftest import LiveServer, cli_key, free_port

U = {"user_id": "alice"}
S = {"user_id": "alice", "session_id": "s1"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, dict[str, str]]]:
    db = tmp_path_factory.mktemp("client") / "live.duckdb"
    keys = {"writer": cli_key(db, "acme"), "admin": cli_key(db, "acme", "admin"), "other": cli_key(db, "globex")}
    srv = LiveServer(db)
    srv.start()
    yield srv, keys
    srv.stop()


def scenario(mem: Any, t: TenantContext) -> list[Any]:
    """Calls that must answer the same embedded and over HTTP; returns comparable observations."""
    seen: list[Any] = []
    for i, tags in enumerate((["a"], ["a", "b"], ["b"])):
        out = mem.add(t, f"garden note {i}", layer="user", identifiers=U, metadata={"tags": tags})
        assert isinstance(out, AddMemoryOutput)
    mem.add(t, "session garden note", layer="session", identifiers=S)
    listing = mem.list(t, "user", identifiers=U, order="newest")
    seen.append([m.content for m in listing.memories])
    seen.append(
        [m.content for m in mem.list(t, "user", identifiers=U, filter={"tags": ["a", "b"]}, tags_match="all").memories]
    )
    seen.append(len(mem.list(t, "user", identifiers=S, include_narrower=True).memories))
    seen.append(mem.list(t, "user", identifiers=U, since=datetime.now(UTC) + timedelta(days=1)).memories)
    found = mem.search(t, "garden note", identifiers=U, layers=["user"], threshold=0.0, order="oldest")
    assert isinstance(found, SearchMemoryOutput)
    seen.append([r.memory.content for r in found.results])
    first = listing.memories[-1]
    got = mem.get(t, first.id)
    assert isinstance(got, MemoryEntry) and got.etag == first.etag
    upd = mem.update(
        t, first.id, content="garden note zero", if_match=first.etag, expires_at=datetime.now(UTC) + timedelta(days=3)
    )
    assert upd.memory.expires_at is not None and upd.embedding_regenerated
    assert mem.update(t, first.id, metadata={"k": 1}).memory.expires_at is not None
    assert mem.update(t, first.id, expires_at=None).memory.expires_at is None
    for call, code in (
        (lambda: mem.update(t, first.id, content="x", if_match="stale", record_conflict=False), "CONFLICT"),
        (lambda: mem.add(t, "x", layer="galaxy", identifiers=U), "INVALID_LAYER"),
        (lambda: mem.add(t, "x", layer="session", identifiers=U), "MISSING_IDENTIFIER"),
        (lambda: mem.list(t, "user", identifiers=U, filter={"createdAt": {"gte": "2026-01-01"}}), "INVALID_PARAMS"),
        (lambda: mem.update(t, "no-such-id", content="x"), "MEMORY_NOT_FOUND"),
    ):
        with pytest.raises(MemoryError) as exc:
            call()
        assert exc.value.code.value == code
        seen.append(exc.value.code.value)
    assert mem.get(t, "no-such-id") is None
    seen.append(mem.delete(t, first.id).success)
    bulk = mem.bulk_add(
        t,
        [
            {"content": "bulk one", "layer": "user", "identifiers": U},
            {"content": "bulk two", "layer": "project", "identifiers": {"projectId": "p"}},
        ],
    )
    ids = [r.memory.id for r in bulk.results]
    seen.append(mem.bulk_delete(t, ids).deleted)
    seen.append(mem.stats(t).by_layer)
    seen.append(sorted(e.content for e in mem.export(t)))
    return seen


def test_client_answers_like_the_embedded_store(server: tuple[LiveServer, dict[str, str]], tmp_path: Path) -> None:
    srv, keys = server
    t = TenantContext(tenant_id="acme", principal="alice")
    with Memory.open(tmp_path / "embedded.duckdb", embedder="hashing") as mem:
        embedded = scenario(mem, t)
    with Client(srv.url, api_key=keys["writer"]) as client:
        remote = scenario(client, t)
    assert remote == embedded


def test_client_lifecycle_gate_and_admin(server: tuple[LiveServer, dict[str, str]]) -> None:
    srv, keys = server
    t = TenantContext(tenant_id="acme", principal="bob")
    b = {"user_id": "bob"}
    with Client(srv.url, api_key=keys["writer"]) as c:
        assert c.health_check().status == "healthy"
        assert c.capabilities().vector_search
        assert len(c.generate_embedding("hello")) > 0
        assert [x.value for x in c.get_accessible_layers(S)] == [x.value for x in Memory.get_accessible_layers(S)]
        note = c.add(t, "Bob likes green tea", layer="user", identifiers=b).memory
        promoted = c.promote(t, note.id, "project", identifiers={"project_id": "tea"})
        assert promoted.layer.value == "project"
        two = c.add(t, "Bob likes black tea", layer="user", identifiers=b).memory
        summary = c.compact(t, [note.id, two.id], lambda es: " / ".join(e.content for e in es))
        assert "green tea" in summary.content and "black tea" in summary.content
        assert c.soft_delete(t, [summary.id]) == [summary.id]
        assert c.restore(t, [summary.id]) == [summary.id]
        assert c.feedback(t, [summary.id], 1.0) is not None
        assert c.prune(t, dry_run=True) is not None
        assert c.conflicts(t).memories == [] or True
        c.add(t, "session scratch", layer="session", identifiers={"user_id": "bob", "session_id": "s9"})
        closed = c.close_session(t, "bob", "s9")
        assert closed is not None
        assert c.delete_by_scope(t, "project", {"project_id": "tea"}) >= 1
        assert c.remember(t, "Remember that Bob's deadline is Friday", identifiers=b).action in (
            "created",
            "updated",
            "ignored",
        )
        assert c.health(t) is not None
        assert c.crud(t, {"operation": "read", "scope": {"userId": "bob"}, "layer": "user"}) is not None
        with pytest.raises(MemoryError) as exc:  # a ctx naming another tenant than the key's
            c.add(TenantContext(tenant_id="globex", principal="x"), "x", layer="user", identifiers=b)
        assert exc.value.code.value == "FORBIDDEN"
        with pytest.raises(MemoryError) as exc:  # an admin route with a writer key
            c.forget_user(t, "bob")
        assert exc.value.code.value == "FORBIDDEN"
    with Client(srv.url, api_key=keys["admin"]) as admin:
        assert admin.maintain() is not None
        assert admin.maintenance_runs(t, limit=1).runs[0].outcome == "ok"
        history = admin.memory_events(t, two.id).events
        assert [e.event for e in history][-1] == "create" and history[-1].memory_id == two.id
        assert all(e.event == "access" for e in admin.memory_events(t, two.id, events=["access"]).events)
        assert admin.event_trends(t, days=2).days[-1].writes >= 3
        with pytest.raises(MemoryError) as exc:
            admin.memory_events(t, "no-such-id")
        assert exc.value.code.value == "MEMORY_NOT_FOUND"
        report = admin.forget_user(t, "bob")
        assert report.memories >= 1
    with Client(srv.url, api_key=keys["writer"][:-2] + "zz") as bad:
        with pytest.raises(MemoryError) as exc:
            bad.list(t, "user", identifiers=b)
        assert exc.value.code.value == "INVALID_TENANT_CONTEXT" and not exc.value.retryable


def test_unreachable_server_is_a_retryable_provider_error() -> None:
    with (
        Client(f"http://127.0.0.1:{free_port()}", api_key="smk_x", retries=2, timeout=2) as c,
        pytest.raises(MemoryError) as exc,
    ):
        c.search(None, "anything", identifiers=U)
    assert exc.value.code.value == "PROVIDER_ERROR" and exc.value.retryable and exc.value.operation == "search"


def test_async_client(server: tuple[LiveServer, dict[str, str]]) -> None:
    srv, keys = server
    t = TenantContext(tenant_id="acme", principal="carol")
    c_ids = {"user_id": "carol"}

    async def run() -> None:
        async with AsyncClient(srv.url, api_key=keys["writer"]) as c:
            made = await c.add(t, "Carol prefers window seats", layer="user", identifiers=c_ids)
            found = await c.search(t, "window seats", identifiers=c_ids)
            assert found.results[0].memory.id == made.memory.id
            page = await c.list(t, "user", identifiers=c_ids, order="newest")
            assert [m.id for m in page.memories] == [made.memory.id]
            assert (await c.update(t, made.memory.id, expires_at=None)).memory.expires_at is None
            assert [e.id async for e in c.export(t) if e.id == made.memory.id] == [made.memory.id]
            assert await c.get(t, "missing") is None
            writes = await c.memory_events(t, made.memory.id, events=["create", "update"])
            assert [e.event for e in writes.events] == ["update", "create"]
            reads = (await c.memory_events(t, made.memory.id, events=["access"])).events
            assert [e.details["operation"] for e in reads] == ["search"]  # the search above returned it
            assert len((await c.event_trends(t, days=3)).days) == 3
            assert (await c.maintenance_runs(t)).tenant_id == "acme"
            assert (await c.delete(t, made.memory.id)).success

    asyncio.run(run())


def _public(cls: type) -> dict[str, inspect.Signature]:
    return {n: inspect.signature(f) for n, f in inspect.getmembers(cls, callable) if not n.startswith("_")}


def test_client_signatures_match_memory() -> None:
    client, memory = _public(Client), _public(Memory)
    for name, sig in client.items():
        if name == "close" or name not in memory:
            continue
        assert list(sig.parameters) == list(memory[name].parameters), name
    assert {"add", "search", "get", "update", "delete", "list", "export", "promote", "compact"} <= set(client)
    aclient, amemory = _public(AsyncClient), _public(AsyncMemory)
    assert set(client) == set(aclient)
    for name, sig in aclient.items():
        assert list(sig.parameters) == list(client[name].parameters), name
        if name in amemory and name != "close":
            assert list(sig.parameters) == list(amemory[name].parameters), name
