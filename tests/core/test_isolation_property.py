"""Property: random operation sequences over several tenants never return another tenant's data."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stratamem import Memory, TenantContext

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


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(op, min_size=1, max_size=30))
def test_no_cross_tenant_result_ever(ops: list[tuple[object, ...]]) -> None:
    with tempfile.TemporaryDirectory() as tmp, Memory.open(Path(tmp) / "p.duckdb", embedder="hashing") as mem:
        owner: dict[str, str] = {}  # memory id -> tenant
        contents: dict[str, str] = {}
        for step in ops:
            kind, tenant = step[0], str(step[1])
            ctx = TenantContext(tenant_id=tenant)
            if kind == "add":
                text = " ".join(step[3]) + f" ({tenant})"  # type: ignore[arg-type]
                m = mem.add(ctx, content=text, layer="user", identifiers={"user_id": step[2]}).memory
                owner[m.id], contents[m.id] = tenant, text
            elif kind == "search":
                res = mem.search(ctx, " ".join(step[3]), identifiers={"user_id": step[2]}, threshold=0.0)  # type: ignore[arg-type]
                assert all(owner[r.memory.id] == tenant and r.memory.tenant_id == tenant for r in res.results)
            elif kind == "list":
                page = mem.list(ctx, layer="user", identifiers={"user_id": step[2]}, limit=100)
                assert all(owner[m.id] == tenant for m in page.memories)
                assert page.total_count == sum(
                    1 for m in mem.list(ctx, limit=100).memories if m.identifiers.user_id == step[2]
                )
            else:
                foreign = [i for i, t in owner.items() if t != tenant]
                if not foreign:
                    continue
                target = foreign[int(step[2]) % len(foreign)]  # type: ignore[call-overload]
                if kind == "get_other":
                    assert mem.get(ctx, target) is None
                elif kind == "delete_other":
                    assert mem.delete(ctx, target).success
                else:
                    try:
                        mem.update(ctx, target, content="hijacked")
                        raise AssertionError("update of a foreign id succeeded")
                    except Exception as exc:
                        assert getattr(exc, "code", None) is not None and exc.code.value == "MEMORY_NOT_FOUND"  # type: ignore[attr-defined]
                # the owner still sees its memory, untouched
                real = mem.get(TenantContext(tenant_id=owner[target]), target)
                assert real is not None and real.content == contents[target]
