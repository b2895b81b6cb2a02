"""Property: random operation sequences over several tenants never cross tenants on PostgreSQL."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stratamem import ErrorCode, Memory, MemoryError, TenantContext

TENANTS = ["t-a", "t-b", "t-c"]
USERS = ["u1", "u2"]
WORDS = ["apple", "river", "stone", "cloud", "ember", "delta", "maple", "quartz"]

op = st.one_of(
    st.tuples(
        st.just("add"),
        st.sampled_from(TENANTS),
        st.sampled_from(USERS),
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=4),
    ),
    st.tuples(
        st.just("search"),
        st.sampled_from(TENANTS),
        st.sampled_from(USERS),
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
    ),
    st.tuples(st.just("get_other"), st.sampled_from(TENANTS), st.integers(0, 50)),
    st.tuples(st.just("delete_other"), st.sampled_from(TENANTS), st.integers(0, 50)),
    st.tuples(st.just("update_other"), st.sampled_from(TENANTS), st.integers(0, 50)),
    st.tuples(st.just("list"), st.sampled_from(TENANTS), st.sampled_from(USERS)),
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(ops=st.lists(op, min_size=1, max_size=25))
def test_no_cross_tenant_result_ever(open_pg: Callable[..., Memory], ops: list[tuple[object, ...]]) -> None:
    mem = open_pg()
    run = uuid.uuid4().hex[:8]  # one shared schema per test: unique tenants per example
    owner: dict[str, str] = {}
    for step in ops:
        kind, tenant = step[0], f"{step[1]}-{run}"
        ctx = TenantContext(tenant_id=tenant)
        if kind == "add":
            text = " ".join(step[3]) + f" ({step[1]})"  # type: ignore[arg-type]
            m = mem.add(ctx, content=text, layer="user", identifiers={"user_id": step[2]}).memory
            owner[m.id] = tenant
        elif kind == "search":
            res = mem.search(ctx, " ".join(step[3]), identifiers={"user_id": step[2]}, threshold=0.0)  # type: ignore[arg-type]
            assert all(owner[r.memory.id] == tenant and r.memory.tenant_id == tenant for r in res.results)
            assert res.total_count == sum(
                1
                for i, t in owner.items()
                if t == tenant and (g := mem.get(ctx, i)) is not None and g.identifiers.user_id == step[2]
            )
        elif kind == "list":
            page = mem.list(ctx, layer="user", identifiers={"user_id": step[2]}, limit=100)
            assert all(owner[m.id] == tenant for m in page.memories)
        else:
            foreign = [i for i, t in owner.items() if t != tenant]
            if not foreign:
                continue
            target = foreign[int(step[2]) % len(foreign)]  # type: ignore[call-overload]
            victim = TenantContext(tenant_id=owner[target])
            # read the owner's row straight from the provider: an SDK get records an access
            # (access_count, importance), which would itself change the row
            before = mem.engine.provider.get(victim.tenant_id, target, mem.engine.now())
            if kind == "get_other":
                assert mem.get(ctx, target) is None
            elif kind == "delete_other":
                assert mem.delete(ctx, target).success
            else:
                try:
                    mem.update(ctx, target, content="hijack")
                    raise AssertionError("cross-tenant update succeeded")
                except MemoryError as exc:
                    assert exc.code is ErrorCode.MEMORY_NOT_FOUND
            after = mem.engine.provider.get(victim.tenant_id, target, mem.engine.now())
            assert after is not None and after == before  # the owner's row is untouched
