"""Group commit of concurrent single adds (``add_groups.py``) on every provider.

Adds of one tenant that arrive while another of its adds is being stored share one embedding call
and one store transaction; each caller still gets its own output or its own error, a group behaves
as if its adds ran in arrival order (supersession), and tenants never share a transaction.

To make a group form deterministically, a write hook (it runs inside every add transaction, on
every provider) holds the first transaction open until the other adds have queued behind it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pytest
from prometheus_client import REGISTRY

from stratamem import Memory, MemoryConfig, MemoryEntry, MemoryError, TenantContext
from stratamem.model import AddMemoryOutput

U = {"user_id": "u1"}


class Transactions:
    """A write hook recording each add transaction (tenant, contents). ``hold()`` makes the next add
    transaction wait until ``release()``; an entry whose content contains ``poison`` aborts the
    transaction it is in."""

    def __init__(self, poison: str | None = None) -> None:
        self.poison = poison
        self.calls: list[tuple[str, list[str]]] = []
        self._lock = threading.Lock()
        self._hold = False
        self.holding = threading.Event()
        self._released = threading.Event()

    def hold(self) -> None:
        self._hold = True

    def release(self) -> None:
        self._released.set()

    def after_add(self, tx: Any, entries: Sequence[MemoryEntry]) -> None:
        with self._lock:
            self.calls.append((entries[0].tenant_id, [e.content for e in entries]))
            hold, self._hold = self._hold, False
        if self.poison is not None and any(self.poison in e.content for e in entries):
            raise ValueError("a poisoned entry")
        if hold:
            self.holding.set()
            assert self._released.wait(30), "the held transaction was never released"

    def after_update(self, tx: Any, entry: MemoryEntry, previous: MemoryEntry) -> None:
        return None

    def after_delete(self, tx: Any, tenant_id: str, ids: Sequence[str]) -> None:
        return None


def _wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.005)


def _group_sizes() -> tuple[float, float]:
    """(groups stored, adds in them) so far in this process."""
    count = REGISTRY.get_sample_value("stratamem_add_group_size_count") or 0.0
    total = REGISTRY.get_sample_value("stratamem_add_group_size_sum") or 0.0
    return count, total


@pytest.fixture()
def pool() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(max_workers=16) as executor:
        yield executor


def _add(mem: Memory, ctx: TenantContext, content: str, supersedes: Sequence[str] | None = None) -> AddMemoryOutput:
    return mem.add(ctx, content, layer="user", identifiers=U, supersedes=supersedes)


def _grouped(
    mem: Memory,
    pool: ThreadPoolExecutor,
    hook: Transactions,
    first: tuple[TenantContext, str],
    queued: Sequence[tuple[TenantContext, str] | tuple[TenantContext, str, Sequence[str]]],
) -> tuple[Future[AddMemoryOutput], list[Future[AddMemoryOutput]]]:
    """Add ``first`` and hold its transaction; queue ``queued`` (same tenant; a third item: the ids
    the add supersedes) behind it one by one, in that order, then release. Returns the futures of
    the first add and of the queued ones."""
    hook.hold()
    head = pool.submit(_add, mem, *first)
    _wait_for(hook.holding.is_set, "the first add's transaction")
    rest: list[Future[AddMemoryOutput]] = []
    for item in queued:
        rest.append(pool.submit(_add, mem, *item))
        n = len(rest)
        _wait_for(lambda n=n: mem.engine.add_groups.queued(first[0].tenant_id) == n, "the add to queue")  # type: ignore[misc]
    hook.release()
    return head, rest


def test_concurrent_adds_share_one_transaction_and_keep_their_own_results(
    store: Memory, tenant: TenantContext, pool: ThreadPoolExecutor
) -> None:
    hook = Transactions()
    store.engine.provider.write_hooks.append(hook)
    before = _group_sizes()
    texts = [f"note {i}: the deploy of service {i} finished" for i in range(7)]
    head, rest = _grouped(store, pool, hook, (tenant, "the first note"), [(tenant, t) for t in texts])
    first = head.result(30)
    outs = [f.result(30) for f in rest]
    assert first.memory.content == "the first note"
    assert [o.memory.content for o in outs] == texts  # each caller got its own memory
    assert len({o.memory.id for o in [first, *outs]}) == 8
    assert [calls for _, calls in hook.calls] == [["the first note"], texts]  # 2 transactions for 8 adds
    after = _group_sizes()
    assert (after[0] - before[0], after[1] - before[1]) == (2, 8)
    for out in outs:
        got = store.get(tenant, out.memory.id)
        assert got is not None and got.content == out.memory.content and got.etag == out.memory.etag
    assert store.list(tenant, layer="user", identifiers=U, limit=100).total_count == 8
    hits = store.search(tenant, "deploy of service 3", identifiers=U, threshold=0.0, limit=1).results
    assert hits[0].memory.id == outs[3].memory.id  # stored with the right vector


def test_tenants_never_share_a_transaction(
    store: Memory, tenant: TenantContext, other_tenant: TenantContext, pool: ThreadPoolExecutor
) -> None:
    hook = Transactions()
    store.engine.provider.write_hooks.append(hook)
    head, rest = _grouped(store, pool, hook, (tenant, "ours first"), [(tenant, "ours one")])
    theirs = pool.submit(_add, store, other_tenant, "theirs one")  # another tenant: never queued behind ours
    outs = [f.result(30) for f in [head, *rest, theirs]]
    assert [o.memory.tenant_id for o in outs] == [tenant.tenant_id] * 2 + [other_tenant.tenant_id]
    assert store.engine.add_groups.queued(other_tenant.tenant_id) == 0
    assert sorted(hook.calls) == sorted(
        [(tenant.tenant_id, ["ours first"]), (tenant.tenant_id, ["ours one"]), (other_tenant.tenant_id, ["theirs one"])]
    )
    assert store.list(other_tenant, layer="user", identifiers=U).total_count == 1
    assert store.list(tenant, layer="user", identifiers=U).total_count == 2


def test_a_failing_add_fails_alone(open_store: Callable[..., Memory], tenant: TenantContext) -> None:
    store = open_store(config=MemoryConfig(retry_max_attempts=1))
    hook = Transactions(poison="POISON")
    store.engine.provider.write_hooks.append(hook)
    texts = ["good one", "POISON pill", "good two", "good three"]
    with ThreadPoolExecutor(max_workers=8) as pool:
        head, rest = _grouped(store, pool, hook, (tenant, "good first"), [(tenant, t) for t in texts])
        assert head.result(30).memory.content == "good first"
        results: list[AddMemoryOutput | MemoryError] = []
        for future in rest:
            try:
                results.append(future.result(30))
            except MemoryError as exc:
                results.append(exc)
    bad = results[1]
    assert isinstance(bad, MemoryError) and bad.code.value == "PROVIDER_ERROR" and bad.operation == "add"
    good = [r for r in results if not isinstance(r, MemoryError)]
    assert [g.memory.content for g in good] == ["good one", "good two", "good three"]
    # the group's transaction failed as a whole, then each add was stored alone (by its own caller)
    assert [c for _, c in hook.calls[1:2]] == [texts]
    assert sorted(c for _, c in hook.calls[2:]) == sorted([t] for t in texts)
    stored = {m.content for m in store.list(tenant, layer="user", identifiers=U).memories}
    assert stored == {"good first", "good one", "good two", "good three"}


def test_an_invalid_add_is_refused_before_it_joins_a_group(
    store: Memory, tenant: TenantContext, pool: ThreadPoolExecutor
) -> None:
    hook = Transactions()
    store.engine.provider.write_hooks.append(hook)
    hook.hold()
    head = pool.submit(_add, store, tenant, "held first")
    _wait_for(hook.holding.is_set, "the first add's transaction")
    bad = pool.submit(store.add, tenant, "x", layer="no-such-layer", identifiers=U)
    good = pool.submit(_add, store, tenant, "valid second")
    _wait_for(lambda: store.engine.add_groups.queued(tenant.tenant_id) == 1, "the valid add to queue")
    hook.release()
    with pytest.raises(MemoryError) as err:
        bad.result(30)
    assert err.value.code.value == "INVALID_LAYER"
    assert head.result(30).memory.content == "held first" and good.result(30).memory.content == "valid second"
    assert [c for _, c in hook.calls] == [["held first"], ["valid second"]]  # the invalid add never queued


def test_an_add_naming_no_memory_to_supersede_fails_alone_and_is_not_stored(
    store: Memory, tenant: TenantContext, pool: ThreadPoolExecutor
) -> None:
    hook = Transactions()
    store.engine.provider.write_hooks.append(hook)
    queued = [(tenant, "valid second"), (tenant, "names no memory", ["no-such-id"])]
    head, (good, bad) = _grouped(store, pool, hook, (tenant, "held first"), queued)
    with pytest.raises(MemoryError) as err:
        bad.result(30)
    assert err.value.code.value == "MEMORY_NOT_FOUND" and err.value.details["id"] == "no-such-id"
    assert head.result(30).memory.content == "held first" and good.result(30).memory.content == "valid second"
    assert [c for _, c in hook.calls] == [["held first"], ["valid second"]]  # one group, without it
    stored = {m.content for m in store.list(tenant, layer="user", identifiers=U, include_superseded=True).memories}
    assert stored == {"held first", "valid second"}


def test_single_adds_are_stored_one_by_one(store: Memory, tenant: TenantContext) -> None:
    hook = Transactions()
    store.engine.provider.write_hooks.append(hook)
    before = _group_sizes()
    outs = [_add(store, tenant, f"sequential note {i}") for i in range(3)]
    assert [c for _, c in hook.calls] == [[f"sequential note {i}"] for i in range(3)]
    after = _group_sizes()
    assert (after[0] - before[0], after[1] - before[1]) == (3, 3)
    assert [o.superseded for o in outs] == [[], [], []]
    assert store.engine.add_groups.queued(tenant.tenant_id) == 0


def test_group_adds_off_stores_each_add_alone(open_store: Callable[..., Memory], tenant: TenantContext) -> None:
    store = open_store(config=MemoryConfig(group_adds=False))
    hook = Transactions()
    store.engine.provider.write_hooks.append(hook)
    before = _group_sizes()
    with ThreadPoolExecutor(max_workers=8) as pool:
        outs = list(pool.map(lambda i: _add(store, tenant, f"ungrouped note {i}"), range(8)))
    assert len({o.memory.id for o in outs}) == 8
    assert sorted(len(c) for _, c in hook.calls) == [1] * 8
    assert _group_sizes() == before


@pytest.mark.model
def test_supersession_inside_a_group_follows_arrival_order(model_store: Memory, tenant: TenantContext) -> None:
    mem = model_store
    hook = Transactions()
    mem.engine.provider.write_hooks.append(hook)
    with ThreadPoolExecutor(max_workers=4) as pool:
        # A change queued after the fact it replaces supersedes it, as two adds in a row would.
        head, rest = _grouped(
            mem,
            pool,
            hook,
            (tenant, "Dana's birthday is on 14 March"),
            [(tenant, "Dana lives in Hamburg"), (tenant, "Dana moved to Berlin last month")],
        )
        head.result(30)
        old, new = (f.result(30) for f in rest)
        assert new.superseded == [old.memory.id] and old.superseded == []
        got = mem.get(tenant, old.memory.id)
        assert got is not None and got.status == "superseded" and got.provenance.superseded_by == new.memory.id
        assert [len(c) for _, c in hook.calls] == [1, 2]
        # A fact queued after the change is not replaced by it: in a row, it did not exist yet.
        hook2 = Transactions()
        mem.engine.provider.write_hooks.append(hook2)
        head, rest = _grouped(
            mem,
            pool,
            hook2,
            (tenant, "Marco's favourite colour is green"),
            [(tenant, "Marco switched from VS Code to Neovim"), (tenant, "Marco uses VS Code as his editor")],
        )
        head.result(30)
        change, fact = (f.result(30) for f in rest)
        assert change.superseded == [] and fact.superseded == []
        got = mem.get(tenant, fact.memory.id)
        assert got is not None and got.status == "active"
