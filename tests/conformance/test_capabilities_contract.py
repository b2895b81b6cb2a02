"""Capabilities follow the written contracts (``providers/contracts.py``), for every provider.

A provider's concern flags (graph, lifecycle, keys, governance, snapshots) are what
``contracts.implements`` finds, the features that need a concern accept exactly the providers
whose flag is set, and a concern left to ``MemoryProvider``'s defaults reports False and raises
CONFIGURATION_ERROR when used.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from stratamem import Memory
from stratamem.errors import ErrorCode, MemoryError
from stratamem.graph.service import GraphService, GraphUnavailable
from stratamem.persistence import S3Settings, SnapshotManager
from stratamem.providers import InMemoryProvider, MemoryProvider
from stratamem.providers.contracts import (
    GovernanceStore,
    GraphBackend,
    KeyStore,
    LifecycleStore,
    MemoryStore,
    SnapshotSource,
    implements,
)

CONTRACTS = {
    "graph": GraphBackend,
    "lifecycle": LifecycleStore,
    "keys": KeyStore,
    "governance": GovernanceStore,
    "snapshots": SnapshotSource,
}
#: What each shipped provider implements: the embedded store runs the graph and snapshots on its SQL.
EXPECTED = {
    "duckdb": dict.fromkeys(CONTRACTS, True),
    "inmemory": {"graph": False, "lifecycle": True, "keys": True, "governance": True, "snapshots": False},
    "postgres": {"graph": True, "lifecycle": True, "keys": True, "governance": True, "snapshots": False},
}


def test_capability_flags_are_derived_from_the_contracts(store: Memory, provider_name: str) -> None:
    provider = store.engine.provider
    caps = store.capabilities()
    assert implements(provider, MemoryStore)
    flags = {name: getattr(caps, name) for name in CONTRACTS}
    assert flags == {name: implements(provider, contract) for name, contract in CONTRACTS.items()}
    assert flags == EXPECTED[provider_name]


def test_features_accept_exactly_the_providers_meeting_their_contract(store: Memory) -> None:
    caps = store.capabilities()
    graph = store.engine.graph
    assert isinstance(graph, GraphService if caps.graph else GraphUnavailable)
    if caps.snapshots:
        return
    with pytest.raises(MemoryError) as err:
        SnapshotManager(store, S3Settings(bucket="unused"))
    assert err.value.code == ErrorCode.CONFIGURATION_ERROR
    assert "snapshots are not supported by provider" in err.value.message


class _NoLifecycle(InMemoryProvider):
    """A provider that leaves the lifecycle concern to ``MemoryProvider``'s defaults."""

    name = "no-lifecycle"
    record_access = MemoryProvider.record_access  # type: ignore[assignment]
    set_status = MemoryProvider.set_status  # type: ignore[assignment]


def test_a_concern_left_to_the_defaults_is_reported_unsupported() -> None:
    provider = _NoLifecycle()
    mem = Memory.open(provider, embedder="hashing")
    try:
        caps = mem.capabilities()
        assert caps.lifecycle is False
        assert (caps.keys, caps.governance) == (True, True)
        with pytest.raises(MemoryError) as err:
            provider.set_status("t1", ["m1"], "archived", datetime.now(UTC))
        assert err.value.code == ErrorCode.CONFIGURATION_ERROR
        assert err.value.message == "lifecycle is not supported by provider no-lifecycle"
    finally:
        mem.close()


def test_the_unsupported_defaults_keep_their_messages_and_operations() -> None:
    class Bare(InMemoryProvider):
        name = "bare"
        api_key_get = MemoryProvider.api_key_get  # type: ignore[assignment]
        get_tenant_policy = MemoryProvider.get_tenant_policy  # type: ignore[assignment]

    provider = Bare()
    with pytest.raises(MemoryError) as keys:
        provider.api_key_get("k1")
    assert (keys.value.message, keys.value.operation) == ("API keys are not supported by provider bare", "auth")
    with pytest.raises(MemoryError) as hygiene:
        provider.get_tenant_policy("t1")
    assert (hygiene.value.message, hygiene.value.operation) == ("hygiene is not supported by provider bare", "hygiene")
    assert not implements(provider, KeyStore)
    assert not implements(provider, GovernanceStore)
