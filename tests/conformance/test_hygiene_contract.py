"""Hygiene and governance contract: the write gate, policies, events, health and quota behave the
same on every provider (DuckDB, in-memory, PostgreSQL).

Everything goes through the public SDK (``process`` / ``forget`` / ``policies`` / ``health``); the
provider's hygiene methods (``get_tenant_policy``, ``put_tenant_policy``, ``append_memory_events``,
``count_memory_events``, ``count_user_memories``) are also called directly where the contract pins
down their exact answers. Every test uses fresh tenant ids; secret strings carry a per-test random
part, so scanning the whole raw store for them cannot match another test's rows.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import duckdb
import psycopg
import pytest
from psycopg import sql

from stratamem import Memory, MemoryError, TenantContext
from stratamem.embeddings import Embedder
from stratamem.hygiene.policies import DEFAULT_POLICY
from stratamem.providers import MemoryProvider

from .conftest import ProviderFactory

U1 = {"user_id": "u1"}


def _code(err: pytest.ExceptionInfo[MemoryError]) -> str:
    return str(err.value.code.value)


# ------------------------------------------------------------------------------ raw store access


def _raw_text(provider_name: str, store: Memory, tmp_path: Path, tenant_id: str) -> str:
    """Every stored value beneath the SDK, as text: all columns of all tables (DuckDB file, the
    PostgreSQL schema's rows of this tenant plus tenant-less tables), or the in-memory provider's state.

    Closes the store first (DuckDB allows one open instance of a file)."""
    provider = store.engine.provider
    if provider_name == "inmemory":
        return repr(vars(provider))
    store.close()
    chunks: list[str] = []
    if provider_name == "duckdb":
        con = duckdb.connect(str(tmp_path / "conformance.duckdb"), read_only=True)
        try:
            for (table,) in con.execute("SELECT table_name FROM information_schema.tables").fetchall():
                for row in con.execute(f'SELECT CAST(t AS VARCHAR) FROM "{table}" t').fetchall():
                    chunks.append(str(row[0]))
        finally:
            con.close()
        return "\n".join(chunks)
    assert provider_name == "postgres"
    with psycopg.connect(os.environ["STRATAMEM_TEST_PG_URL"], autocommit=True) as conn:
        tables = conn.execute(
            "SELECT t.table_name, EXISTS (SELECT 1 FROM information_schema.columns c WHERE c.table_schema = "
            "t.table_schema AND c.table_name = t.table_name AND c.column_name = 'tenant_id') "
            "FROM information_schema.tables t WHERE t.table_schema = current_schema() AND t.table_type = 'BASE TABLE'"
        ).fetchall()
        for table, has_tenant in tables:
            query = sql.SQL("SELECT t::text FROM {} t").format(sql.Identifier(table))
            if has_tenant:
                query = sql.SQL("{} WHERE t.tenant_id = %s").format(query)
            rows = conn.execute(query, [tenant_id] if has_tenant else []).fetchall()
            chunks.extend(str(r[0]) for r in rows)
    return "\n".join(chunks)


# ------------------------------------------------------------------------------ policies


def test_policy_round_trip_and_violations(
    store: Memory, open_store: Callable[..., Memory], tenant: TenantContext, other_tenant: TenantContext
) -> None:
    p = store.engine.provider
    assert p.get_tenant_policy(tenant.tenant_id) is None
    assert store.policies.get(tenant) == DEFAULT_POLICY
    policy = store.policies.set(
        tenant,
        deny_patterns=[r"project\s+x"],
        allowed_categories=["preference", "fact"],
        max_length=80,
        pii_mode="redact",
        max_memories=50,
    )
    assert p.get_tenant_policy(tenant.tenant_id) == policy.model_dump()
    # stored in the backend: a second store over the same backing data reads it back
    assert open_store().policies.get(tenant) == policy

    with pytest.raises(MemoryError) as err:
        store.add(tenant, "Kick-off of Project  X is in May", layer="user", identifiers=U1)
    assert _code(err) == "POLICY_VIOLATION" and err.value.details["policy"] == "deny_patterns"
    with pytest.raises(MemoryError) as err:
        store.add(tenant, "Standup is at nine", layer="user", identifiers=U1, metadata={"category": "instruction"})
    assert _code(err) == "POLICY_VIOLATION" and err.value.details["policy"] == "allowed_categories"
    with pytest.raises(MemoryError) as err:
        store.add(tenant, "x" * 81, layer="user", identifiers=U1)
    assert _code(err) == "POLICY_VIOLATION" and err.value.details == {
        "policy": "max_length",
        "max_length": 80,
        "length": 81,
    }
    kept = store.add(
        tenant, "Ping me at user@example.com", layer="user", identifiers=U1, metadata={"category": "preference"}
    ).memory
    assert kept.content == "Ping me at [REDACTED_EMAIL]"
    with pytest.raises(MemoryError) as err:
        store.update(tenant, kept.id, content="Moved to project x")
    assert _code(err) == "POLICY_VIOLATION" and err.value.details["policy"] == "deny_patterns"
    assert store.list(tenant, "user", identifiers=U1).total_count == 1

    # put overwrites (upsert), reset stores the default policy
    changed = store.policies.set(tenant, pii_mode="reject")
    assert p.get_tenant_policy(tenant.tenant_id) == changed.model_dump()
    assert changed.deny_patterns == [r"project\s+x"] and changed.pii_mode == "reject"
    assert store.policies.reset(tenant) == DEFAULT_POLICY
    assert p.get_tenant_policy(tenant.tenant_id) == DEFAULT_POLICY.model_dump()
    assert store.add(tenant, "Kick-off of Project X is in May", layer="user", identifiers=U1).memory.content.startswith(
        "Kick-off"
    )

    # the other tenant never had a policy
    assert p.get_tenant_policy(other_tenant.tenant_id) is None


def test_policy_put_get_provider_round_trip(store: Memory, tenant: TenantContext) -> None:
    p = store.engine.provider
    doc: dict[str, Any] = {
        "deny_patterns": ["o'neil; DROP TABLE tenant_policies; --", "café ☕"],
        "allowed_categories": None,
        "max_length": 12,
        "pii_mode": "allow",
        "max_memories": None,
    }
    p.put_tenant_policy(tenant.tenant_id, doc, datetime.now(UTC))
    assert p.get_tenant_policy(tenant.tenant_id) == doc
    p.put_tenant_policy(tenant.tenant_id, {**doc, "max_length": 13}, datetime.now(UTC))
    assert p.get_tenant_policy(tenant.tenant_id) == {**doc, "max_length": 13}


# ------------------------------------------------------------------------------ write gate


@pytest.fixture()
def model_store(provider_name: str, make_provider: ProviderFactory, minilm: Embedder) -> Iterator[Memory]:
    """A store opened with the real embedder. PostgreSQL gets its own schema: the shared conformance
    schema is bound to the hashing embedder (the store records its embedding model)."""
    schema: str | None = None
    provider: MemoryProvider
    if provider_name == "postgres":
        from stratamem.providers.postgres import PostgresProvider

        make_provider()  # the factory checks that PostgreSQL is configured (require_service)
        schema = f"hyg_{uuid.uuid4().hex[:16]}"
        provider = PostgresProvider(os.environ["STRATAMEM_TEST_PG_URL"], schema=schema)
    else:
        provider = make_provider()
    mem = Memory.open(provider, embedder=minilm)  # type: ignore[arg-type]
    try:
        yield mem
    finally:
        mem.close()
        if schema is not None:
            with psycopg.connect(os.environ["STRATAMEM_TEST_PG_URL"], autocommit=True) as conn:
                conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


@pytest.mark.model
def test_same_fact_three_ways_is_one_memory(model_store: Memory, tenant: TenantContext) -> None:
    results = [
        model_store.process(tenant, text, identifiers=U1)
        for text in (
            "I prefer dark mode",
            "Dark mode is my favorite",
            "The user told me they like dark mode lol",
        )
    ]
    assert [r.action for r in results] == ["created", "updated", "updated"]
    assert len({r.memory_id for r in results}) == 1
    listed = model_store.list(tenant, "user", identifiers=U1)
    assert listed.total_count == 1
    assert (listed.memories[0].content, listed.memories[0].version) == ("User likes dark mode", 3)
    assert model_store.process(tenant, "I love hiking in the Alps", identifiers=U1).action == "created"
    assert model_store.list(tenant, "user", identifiers=U1).total_count == 2


def test_forget_deletes_matches_and_search_no_longer_finds_them(store: Memory, tenant: TenantContext) -> None:
    dog = store.process(tenant, "My dog's name is Rex", identifiers=U1)
    cat = store.process(tenant, "My cat is called Tom", identifiers=U1)
    tea = store.process(tenant, "I prefer green tea", identifiers=U1)
    assert [dog.action, cat.action, tea.action] == ["created"] * 3
    assert dog.content == "User's dog's name is Rex"
    session = store.add(
        tenant, "User's dog's name is Rex", layer="session", identifiers={"user_id": "u1", "session_id": "s1"}
    ).memory
    other_user = store.add(tenant, "User's dog's name is Rex", layer="user", identifiers={"user_id": "u2"}).memory
    assert store.search(tenant, "what is the name of my dog", identifiers=U1).results[0].memory.id == dog.memory_id

    out = store.forget(tenant, "forget my dog's name", identifiers={"user_id": "u1", "session_id": "s1"})
    assert (out.action, out.count) == ("deleted", 2)
    assert set(out.memory_ids) == {dog.memory_id, session.id}
    assert store.get(tenant, dog.memory_id) is None and store.get(tenant, session.id) is None
    after = store.search(tenant, "what is the name of my dog", identifiers=U1, threshold=0.0)
    assert {r.memory.id for r in after.results} == {cat.memory_id, tea.memory_id}
    assert store.get(tenant, other_user.id) is not None  # another user's memory is not theirs to forget
    assert store.forget(tenant, "forget my dog's name", identifiers=U1).count == 0


def test_secret_is_refused_and_never_stored(
    provider_name: str, store: Memory, tmp_path: Path, tenant: TenantContext
) -> None:
    tag = uuid.uuid4().hex
    marker = f"User prefers dark mode {tag[:8]}"
    kept = store.add(tenant, marker, layer="user", identifiers=U1).memory
    secrets = [f"My API key is sk-proj-{tag}", f"my password is Pw{tag[:12]}"]
    for text in secrets:
        with pytest.raises(MemoryError) as err:
            store.add(tenant, text, layer="user", identifiers=U1)
        assert _code(err) == "UNSAFE_CONTENT"
        with pytest.raises(MemoryError) as err:
            store.remember(tenant, text, identifiers=U1)
        assert _code(err) == "UNSAFE_CONTENT"
        assert store.process(tenant, text, identifiers=U1).action == "ignored"
        with pytest.raises(MemoryError) as err:
            store.update(tenant, kept.id, content=text)
        assert _code(err) == "UNSAFE_CONTENT"
    with pytest.raises(MemoryError):
        store.bulk_add(
            tenant,
            [
                {"content": "fine", "layer": "user", "identifiers": U1},
                {"content": secrets[0], "layer": "user", "identifiers": U1},
            ],
        )
    assert store.engine.provider.count_memory_events(tenant.tenant_id)["reject"] >= 2 * len(secrets) + 1
    raw = _raw_text(provider_name, store, tmp_path, tenant.tenant_id)
    assert marker in raw  # the scan does see stored content
    assert tag not in raw.replace(marker, "")
    for needle in (f"sk-proj-{tag}", f"Pw{tag[:12]}"):
        assert needle not in raw, needle


def test_quota_per_user(store: Memory, tenant: TenantContext) -> None:
    store.policies.set(tenant, max_memories=2)
    store.add(tenant, "User likes tea", layer="user", identifiers=U1)
    store.add(tenant, "User is in a meeting", layer="session", identifiers={"user_id": "u1", "session_id": "s1"})
    with pytest.raises(MemoryError) as err:
        store.add(tenant, "User likes coffee", layer="user", identifiers=U1)
    assert _code(err) == "QUOTA_EXCEEDED"
    assert err.value.details == {"max_memories": 2, "current": 2, "user_id": "u1"}
    with pytest.raises(MemoryError) as err:
        store.process(tenant, "I prefer window seats", identifiers=U1)
    assert _code(err) == "QUOTA_EXCEEDED"
    with pytest.raises(MemoryError) as err:  # a batch that would cross the quota is refused whole
        store.bulk_add(
            tenant,
            [{"content": f"User u3 fact {i}", "layer": "user", "identifiers": {"user_id": "u3"}} for i in range(3)],
        )
    assert _code(err) == "QUOTA_EXCEEDED"
    assert store.list(tenant, "user", identifiers={"user_id": "u3"}).total_count == 0
    store.add(tenant, "User u2 likes tea", layer="user", identifiers={"user_id": "u2"})  # each user has their own quota
    assert store.list(tenant, "user", identifiers=U1).total_count == 1
    # deleting frees quota
    first = store.list(tenant, "user", identifiers=U1).memories[0]
    store.delete(tenant, first.id)
    store.add(tenant, "User likes coffee", layer="user", identifiers=U1)


def test_count_user_memories(store: Memory, tenant: TenantContext, other_tenant: TenantContext) -> None:
    p = store.engine.provider
    now = datetime.now(UTC) + timedelta(days=1)
    a = store.add(tenant, "User likes tea", layer="user", identifiers=U1).memory
    b = store.add(
        tenant, "User is travelling", layer="session", identifiers={"user_id": "u1", "session_id": "s1"}
    ).memory
    store.add(tenant, "User two likes tea", layer="user", identifiers={"user_id": "u2"})
    store.add(tenant, "Team uses Go", layer="project", identifiers={"project_id": "p1"})
    store.add(other_tenant, "User likes tea", layer="user", identifiers=U1)
    assert p.count_user_memories(tenant.tenant_id, "u1", now) == 2
    assert p.count_user_memories(tenant.tenant_id, "u1", now, exclude_ids=[a.id]) == 1
    assert p.count_user_memories(tenant.tenant_id, "u2", now) == 1
    assert p.count_user_memories(tenant.tenant_id, "u1'; --", now) == 0
    assert p.count_user_memories(other_tenant.tenant_id, "u1", now) == 1
    p.set_expiry(tenant.tenant_id, [b.id], now - timedelta(hours=1))  # expired entries do not count
    assert p.count_user_memories(tenant.tenant_id, "u1", now) == 1
    p.set_status(tenant.tenant_id, [a.id], "archived", now)  # only live (active) entries count
    assert p.count_user_memories(tenant.tenant_id, "u1", now) == 0


# ------------------------------------------------------------------------------ events and health


def test_events_and_health(store: Memory, tenant: TenantContext) -> None:
    store.process(tenant, "I prefer dark mode", identifiers=U1)  # create
    store.process(tenant, "I prefer dark mode!", identifiers=U1)  # dedupe -> update
    store.process(tenant, "hi", identifiers=U1)  # ignore
    store.process(tenant, "what time is it?", identifiers=U1)  # ignore
    store.remember(tenant, "My dog's name is Rex", identifiers=U1)  # create (explicit)
    with pytest.raises(MemoryError):
        store.add(tenant, "my password is hunter22", layer="user", identifiers=U1)  # reject
    store.add(
        tenant,
        "User prefers dark mode",
        layer="project",
        identifiers={"project_id": "p"},
        metadata={"category": "preference"},
    )
    store.add(tenant, "User prefers dark mode", layer="project", identifiers={"project_id": "p"})  # stored duplicate
    store.search(tenant, "dark mode", identifiers=U1, threshold=0.5)  # hit
    store.search(tenant, "quantum chromodynamics lecture", identifiers=U1, threshold=0.99)  # miss
    store.forget(tenant, "forget my dog's name", identifiers=U1)  # delete
    h = store.health(tenant)
    assert h.tenant_id == tenant.tenant_id and h.total_memories == 3
    assert h.memories_by_category == {"preference": 2, "uncategorized": 1}
    assert h.memories_by_source == {"inferred": 1, "explicit": 0, "other": 2}
    assert h.events == {
        "access": 2,  # the two memories the hit search returned
        "access.ok": 2,
        "create": 4,
        "create.ok": 4,
        "dedupe": 1,
        "dedupe.ok": 1,
        "delete": 1,
        "delete.ok": 1,
        "ignore": 2,
        "ignore.ignored": 2,
        "reject": 1,
        "reject.denied": 1,
        "search": 2,
        "search.hit": 1,
        "search.miss": 1,
        "update": 1,
        "update.ok": 1,
    }
    assert h.events == store.engine.provider.count_memory_events(tenant.tenant_id)
    assert h.write_rejection_rate == round(3 / 8, 4)
    assert h.search_hit_rate == 0.5
    assert h.duplicate_rate == round(1 / 3, 4)
    assert h.average_age_days >= 0.0
    assert store.health(tenant, since=datetime.now(UTC) + timedelta(hours=1)).events == {}


def test_memory_events_append_and_count_since(store: Memory, tenant: TenantContext) -> None:
    p = store.engine.provider
    t0 = datetime(2031, 5, 4, 12, 0, tzinfo=UTC)

    def event(minutes: int, name: str, outcome: str = "ok") -> dict[str, Any]:
        return {
            "tenant_id": tenant.tenant_id,
            "id": str(uuid.uuid4()),
            "ts": t0 + timedelta(minutes=minutes),
            "event": name,
            "memory_id": None,
            "layer": "user",
            "principal": "u1",
            "code": None,
            "outcome": outcome,
            "details": {"note": "it's ☕", "results": minutes},
        }

    p.append_memory_events([])
    p.append_memory_events([event(0, "search", "hit"), event(10, "search", "miss"), event(20, "create")])
    p.append_memory_events([event(30, "search", "hit")])
    assert p.count_memory_events(tenant.tenant_id) == {
        "search": 3,
        "search.hit": 2,
        "search.miss": 1,
        "create": 1,
        "create.ok": 1,
    }
    assert p.count_memory_events(tenant.tenant_id, t0 + timedelta(minutes=10)) == {
        "search": 2,
        "search.hit": 1,
        "search.miss": 1,
        "create": 1,
        "create.ok": 1,
    }
    assert p.count_memory_events(tenant.tenant_id, t0 + timedelta(minutes=30)) == {"search": 1, "search.hit": 1}
    assert p.count_memory_events(tenant.tenant_id, t0 + timedelta(minutes=31)) == {}
    # a non-UTC aware timestamp names the same instant
    plus2 = t0.astimezone(timezone(timedelta(hours=2)))
    assert p.count_memory_events(tenant.tenant_id, plus2 + timedelta(minutes=25)) == {"search": 1, "search.hit": 1}


# ------------------------------------------------------------------------------ tenant isolation


def test_policies_and_events_are_isolated_per_tenant(
    store: Memory, tenant: TenantContext, other_tenant: TenantContext
) -> None:
    p = store.engine.provider
    store.policies.set(tenant, deny_patterns=["blue whale"], max_memories=1, pii_mode="reject")
    store.add(tenant, "User likes the ocean", layer="user", identifiers=U1)
    store.search(tenant, "ocean", identifiers=U1)
    with pytest.raises(MemoryError):
        store.add(tenant, "A blue whale sighting", layer="user", identifiers={"user_id": "u2"})
    with pytest.raises(MemoryError):
        store.add(tenant, "User likes sailing", layer="user", identifiers=U1)  # quota
    a_events = p.count_memory_events(tenant.tenant_id)
    assert a_events["create"] == 1 and a_events["reject"] == 2 and a_events["search"] == 1

    # B sees none of it: default policy, no events, no health
    assert p.get_tenant_policy(other_tenant.tenant_id) is None
    assert store.policies.get(other_tenant) == DEFAULT_POLICY
    assert p.count_memory_events(other_tenant.tenant_id) == {}
    b_health = store.health(other_tenant)
    assert (b_health.total_memories, b_health.events) == (0, {})
    # and A's rules do not apply to B
    store.add(other_tenant, "A blue whale sighting", layer="user", identifiers=U1)
    store.add(other_tenant, "User likes sailing", layer="user", identifiers=U1)
    store.add(other_tenant, "Email me at b@example.com", layer="user", identifiers=U1)
    assert p.count_memory_events(other_tenant.tenant_id) == {"create": 3, "create.ok": 3}
    assert p.count_user_memories(other_tenant.tenant_id, "u1", datetime.now(UTC) + timedelta(days=1)) == 3
    # B's activity and policy changes leave A untouched
    store.policies.set(other_tenant, max_length=5)
    assert store.policies.get(tenant).deny_patterns == ["blue whale"]
    assert p.count_memory_events(tenant.tenant_id) == a_events
    assert store.health(tenant).total_memories == 1


def test_prune_memory_events_deletes_old_rows_of_the_kinds_only(
    store: Memory, tenant: TenantContext, other_tenant: TenantContext
) -> None:
    """The access-history retention: rows of the named kinds logged before the cut are deleted for this
    tenant only; newer rows, other kinds and other tenants' rows stay."""
    p = store.engine.provider
    t0 = datetime(2031, 5, 4, 12, 0, tzinfo=UTC)

    def event(tenant_id: str, days: int, name: str) -> dict[str, Any]:
        return {
            "tenant_id": tenant_id,
            "id": str(uuid.uuid4()),
            "ts": t0 + timedelta(days=days),
            "event": name,
            "memory_id": "m1",
            "layer": "user",
            "principal": "u1",
            "code": None,
            "outcome": "ok",
            "details": {},
        }

    rows = [
        event(t, d, k)
        for t in (tenant.tenant_id, other_tenant.tenant_id)
        for d in (0, 1, 5)
        for k in ("access", "search", "create")
    ]
    p.append_memory_events(rows)
    cut = t0 + timedelta(days=1)  # strictly before: the row logged at the cut stays
    assert p.prune_memory_events(tenant.tenant_id, ["access"], cut) == 1
    assert p.prune_memory_events(tenant.tenant_id, ["access"], cut) == 0
    assert p.count_memory_events(tenant.tenant_id) == {
        "access": 2,
        "access.ok": 2,
        "search": 3,
        "search.ok": 3,
        "create": 3,
        "create.ok": 3,
    }
    kept = p.list_memory_events(tenant.tenant_id, events=["access"])
    assert sorted(r["ts"] for r in kept) == [t0 + timedelta(days=1), t0 + timedelta(days=5)]
    assert p.count_memory_events(other_tenant.tenant_id)["access"] == 3  # untouched
    # a non-UTC aware cut names the same instant; a tenant id with SQL in it matches nothing
    plus2 = (t0 + timedelta(days=5, seconds=1)).astimezone(timezone(timedelta(hours=2)))
    assert p.prune_memory_events(tenant.tenant_id, ["access", "search"], plus2) == 5
    assert p.count_memory_events(tenant.tenant_id) == {"create": 3, "create.ok": 3}
    assert p.prune_memory_events("x' OR '1'='1", ["access"], plus2) == 0
    assert p.prune_memory_events(other_tenant.tenant_id, [], plus2) == 0
    assert p.count_memory_events(other_tenant.tenant_id)["access"] == 3


# ------------------------------------------------------------------------------ name resolution


@pytest.mark.model
def test_a_question_naming_the_user_finds_their_preference(model_store: Memory, tenant: TenantContext) -> None:
    """Issue repro: once the user's name is known, facts are stored about the name, so "what theme does
    Alice like" returns the dark-mode memory first (it used to read "User prefers dark mode", score
    under the default threshold, and the name fact and Alice's other memories were returned instead)."""
    for text in ("My name is Alice", "I prefer dark mode", "My favourite editor is Neovim", "My manager is Bob Chen"):
        assert model_store.process(tenant, text, identifiers=U1).action == "created"
    contents = {m.content for m in model_store.list(tenant, "user", identifiers=U1).memories}
    assert contents == {
        "User's name is Alice",
        "Alice prefers dark mode",
        "Alice's favourite editor is Neovim",
        "Alice's manager is Bob Chen",
    }
    hits = model_store.search(tenant, "what theme does Alice like", identifiers=U1).results
    assert hits and hits[0].memory.content == "Alice prefers dark mode"


def test_facts_are_written_about_the_known_name(store: Memory, tenant: TenantContext) -> None:
    """The name comes from a stored memory that states it, or from the same text; without a name the
    neutral "User" stays; instructions to the assistant stay as they are."""
    u2 = {"user_id": "u2"}
    assert store.process(tenant, "I prefer dark mode", identifiers=u2).content == "User prefers dark mode"
    assert store.process(tenant, "My name is Dana", identifiers=U1).content == "User's name is Dana"
    daughter = store.process(tenant, "My daughter Emma starts school in September", identifiers=U1)
    assert daughter.content == "Dana's daughter Emma starts school in September"
    style = store.process(tenant, "Please keep your answers short, bullet points", identifiers=U1)
    assert (style.content, style.category) == ("Keep your answers short, bullet points", "instruction")
    # the name stated in the same text, and a session write that finds it in the user layer
    u3 = {"user_id": "u3"}
    both = store.process(tenant, "My name is Sam, I prefer dark mode", identifiers=u3)
    assert both.content == "User's name is Sam, Sam prefers dark mode"
    session = store.process(tenant, "I drive a red Volvo", identifiers={**u3, "session_id": "s1"}, layer="session")
    assert session.content == "Sam drives a red Volvo"
    # another user of the tenant does not get Dana's name
    assert store.process(tenant, "I drive a blue bike", identifiers=u2).content == "User drives a blue bike"


def test_a_change_supersedes_the_fact_stored_before_the_name_was_known(store: Memory, tenant: TenantContext) -> None:
    old = store.process(tenant, "I am vegetarian", identifiers=U1)
    assert old.content == "User is vegetarian"
    store.process(tenant, "My name is Dana", identifiers=U1)
    new = store.process(tenant, "I'm not vegetarian anymore, I eat fish now", identifiers=U1)
    assert new.action == "updated" and new.superseded == [old.memory_id]
    assert new.content == "Dana is not vegetarian anymore, Dana eats fish"
    current = {m.content for m in store.list(tenant, "user", identifiers=U1).memories}
    assert current == {"User's name is Dana", "Dana is not vegetarian anymore, Dana eats fish"}
    # a single-valued attribute: "User lives in …" is replaced by "Dana lives in …"
    city = store.process(tenant, "I live in Hamburg", identifiers={"user_id": "u4"})
    store.process(tenant, "Call me Kit", identifiers={"user_id": "u4"})
    moved = store.process(tenant, "I live in Berlin", identifiers={"user_id": "u4"})
    assert moved.content == "Kit lives in Berlin" and moved.superseded == [city.memory_id]


def test_a_restated_fact_updates_the_memory_written_before_the_name_was_known(
    store: Memory, tenant: TenantContext
) -> None:
    first = store.process(tenant, "I prefer dark mode", identifiers=U1)
    store.process(tenant, "My name is Dana", identifiers=U1)
    again = store.process(tenant, "I prefer dark mode", identifiers=U1)
    assert (again.action, again.memory_id, again.content) == ("updated", first.memory_id, "Dana prefers dark mode")
