"""Bad input never looks like a server fault: every public ``Memory`` method answers wrong types and
unknown enum values with a coded client error, never PROVIDER_ERROR and never another exception."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stratamem import ErrorCode, Memory, MemoryError, TenantContext

U1 = {"user_id": "u1"}

#: Methods that take no caller input beyond the store itself, or that open or close stores
#: (their arguments are locations and S3 settings, not memory operations).
SKIPPED = frozenset({"open", "open_from_snapshot", "close", "configure_snapshots", "health_check", "capabilities"})


def test_compact_with_an_unknown_target_layer_is_invalid_layer(mem: Memory, acme: TenantContext) -> None:
    a = mem.add(acme, content="alpha fact", layer="user", identifiers=U1).memory.id
    b = mem.add(acme, content="beta fact", layer="user", identifiers=U1).memory.id
    with pytest.raises(MemoryError) as err:
        mem.compact(acme, [a, b], lambda entries: "merged", target_layer="bogus")
    assert err.value.code is ErrorCode.INVALID_LAYER and err.value.operation == "compact"
    assert "bogus" in err.value.message and err.value.retryable is False


def test_bulk_delete_reports_refused_and_not_found_ids(mem: Memory, acme: TenantContext, globex: TenantContext) -> None:
    mine = mem.add(acme, content="mine", layer="user", identifiers=U1).memory.id
    theirs = mem.add(globex, content="theirs", layer="user", identifiers=U1).memory.id
    out = mem.bulk_delete(acme, [mine, "no-such-id", "", theirs, "x" * 300])
    assert out.deleted == 1
    assert out.failed == ["", "x" * 256]
    assert [(f.code, "1-256" in f.reason) for f in out.failures] == [("INVALID_PARAMS", True)] * 2
    assert out.not_found == ["no-such-id", theirs]  # another tenant's id reads as not found
    assert mem.get(globex, theirs) is not None
    assert mem.bulk_delete(acme, [mine]).not_found == [mine]
    with pytest.raises(MemoryError) as err:
        mem.bulk_delete(acme, [mine, 7])  # type: ignore[list-item]
    assert err.value.code is ErrorCode.INVALID_PARAMS


def _public_methods() -> list[tuple[str, inspect.Signature]]:
    out = []
    for name, member in inspect.getmembers(Memory):
        if name.startswith("_") or name in SKIPPED or isinstance(member, property):
            continue
        if callable(member):
            out.append((name, inspect.signature(member)))
    return out


METHODS = _public_methods()

_junk: st.SearchStrategy[Any] = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(
        [
            "bogus",
            "WORKSPACE ",
            "tenant",
            "",
            " ",
            "-1",
            "user",
            "session",
            "remember",
            "forget",
            "deleted",
            "1e309",
            "0x10",
            "2026-13-45",
        ]
    ),
    st.binary(max_size=8),
    st.builds(object),
    st.lists(st.one_of(st.none(), st.integers(), st.text(max_size=6), st.sampled_from(["bogus", "user"])), max_size=3),
    st.dictionaries(
        st.sampled_from(["user_id", "userId", "layer", "bogus", "content", "session_id", "tags"]),
        st.one_of(st.none(), st.integers(), st.text(max_size=6), st.lists(st.integers(), max_size=2)),
        max_size=3,
    ),
)


@pytest.fixture(scope="module")
def fuzz_mem(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Memory]:
    path: Path = tmp_path_factory.mktemp("fuzz") / "store.duckdb"
    mem = Memory.open(path, embedder="hashing")
    yield mem
    mem.close()


@pytest.mark.parametrize(("name", "sig"), METHODS, ids=[m[0] for m in METHODS])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_wrong_types_get_a_coded_client_error(
    fuzz_mem: Memory, name: str, sig: inspect.Signature, data: st.DataObject
) -> None:
    ctx = TenantContext(tenant_id="fuzz", principal="p")
    params = [p for p in sig.parameters.values() if p.name != "self"]
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for p in params:
        if p.kind is p.VAR_KEYWORD:
            kwargs.update(data.draw(st.dictionaries(st.sampled_from(["bogus", "limit", "layer"]), _junk, max_size=2)))
            continue
        if p.kind is p.VAR_POSITIONAL:
            continue
        value: Any = ctx if p.name == "ctx" else data.draw(_junk, label=p.name)
        if p.kind is p.KEYWORD_ONLY:
            kwargs[p.name] = value
        else:
            args.append(value)
    method: Callable[..., Any] = getattr(fuzz_mem, name)
    try:
        result = method(*args, **kwargs)
        if inspect.isgenerator(result) or name == "export":
            list(result)
    except MemoryError as exc:
        assert exc.code is not ErrorCode.PROVIDER_ERROR, f"{name}: {exc!r}"
        assert exc.code is not ErrorCode.COMPACTION_FAILED or name == "compact", f"{name}: {exc!r}"
