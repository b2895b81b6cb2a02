"""AsyncMemory has every public method of Memory, with the same parameters (no ``**kwargs`` collapse),
and the added ones work on a real DuckDB file."""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path

from stratamem import AsyncMemory, Memory, MemoryEntry, TenantContext
from stratamem.sdk import AsyncProxy

#: Context-manager protocols differ by nature (``with`` vs ``async with``); the dunders are not compared.
EXCLUDED = {"__enter__", "__exit__", "__aenter__", "__aexit__"}


def _public(cls: type) -> dict[str, object]:
    return {name: value for name, value in inspect.getmembers(cls) if not name.startswith("_")}


def test_every_memory_method_has_an_async_twin_with_the_same_parameters() -> None:
    sync_members, async_members = _public(Memory), _public(AsyncMemory)
    missing = sorted(set(sync_members) - set(async_members) - EXCLUDED)
    assert missing == [], f"AsyncMemory lacks {missing}"
    compared = 0
    for name, member in sync_members.items():
        twin = async_members[name]
        if isinstance(member, property):
            assert isinstance(twin, property), name
            continue
        sync_params = list(inspect.signature(member).parameters.values())  # type: ignore[arg-type]
        async_params = list(inspect.signature(twin).parameters.values())  # type: ignore[arg-type]
        assert [(p.name, p.kind, p.default, p.annotation) for p in async_params] == [
            (p.name, p.kind, p.default, p.annotation) for p in sync_params
        ], name
        static = isinstance(inspect.getattr_static(Memory, name), staticmethod)
        if not static:
            # every operation is a coroutine (or an async iterator: export)
            fn = getattr(AsyncMemory, name)
            assert inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn), name
        compared += 1
    assert compared >= 30  # every method of Memory (properties checked separately)
    # instance attributes of Memory are there too
    assert isinstance(inspect.getattr_static(AsyncMemory, "engine"), property)
    assert isinstance(inspect.getattr_static(AsyncMemory, "lifecycle"), property)


def test_collapsed_signatures_are_gone() -> None:
    for name in ("open", "add", "update", "promote", "compact"):
        params = inspect.signature(getattr(AsyncMemory, name)).parameters.values()
        assert all(p.kind is not inspect.Parameter.VAR_KEYWORD for p in params), name


def test_added_async_methods_work(tmp_path: Path) -> None:
    t = TenantContext(tenant_id="acme", principal="u1")

    async def main() -> None:
        async with await AsyncMemory.open(tmp_path / "a.duckdb", embedder="hashing") as mem:
            items = [{"content": f"fact {i}", "layer": "user", "identifiers": {"user_id": "u1"}} for i in range(1203)]
            for start in (0, 1000):  # more than two export batches
                await mem.bulk_add(t, items[start : start + 1000])
            exported: list[MemoryEntry] = [e async for e in mem.export(t)]
            assert len(exported) == 1203 and exported[0].embedding is None
            assert {e.content for e in exported} == {f"fact {i}" for i in range(1203)}
            with_vectors = [e async for e in mem.export(t, include_embeddings=True)]
            assert with_vectors[0].embedding is not None and len(with_vectors[0].embedding) == 384
            vec = await mem.generate_embedding("hello")
            assert len(vec) == 384
            assert (await mem.capabilities()) == mem.sync.capabilities()
            assert [x.value for x in mem.get_accessible_layers({"user_id": "u1"})] == [
                x.value for x in Memory.get_accessible_layers({"user_id": "u1"})
            ]
            # the accessors: coroutine methods, attributes as they are
            assert isinstance(mem.policies, AsyncProxy)
            policy = await mem.policies.set(t, deny_patterns=["secret project"])
            assert policy.deny_patterns == ["secret project"]
            assert (await mem.policies.get(t)).deny_patterns == ["secret project"]
            assert mem.lifecycle.config is mem.sync.lifecycle.config
            first = exported[0]
            updated = await mem.update(t, first.id, content="fact zero, edited", tier="gold")
            assert updated.memory.content == "fact zero, edited" and updated.memory.tier == "gold"
            promoted = await mem.promote(
                t,
                first.id,
                "project",
                identifiers={"project_id": "p1"},
                delete_original=False,
                content=None,
                tags=["kept"],
            )
            assert promoted.metadata.get("tags") == ["kept"]

    asyncio.run(main())
