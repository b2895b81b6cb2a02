"""PostgreSQL provider specifics (the shared contract is tests/conformance, parametrised over it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import psycopg
import pytest
from psycopg import sql

from stratamem import ErrorCode, Layer, Memory, MemoryError, TenantContext
from stratamem.providers import postgres_schema
from stratamem.providers.base import Scope, SearchQuery
from stratamem.providers.postgres import PostgresProvider, split_url

from .conftest import admin

SRC = str(Path(__file__).resolve().parents[2] / "src")
ACME = TenantContext(tenant_id="acme", principal="u1")
GLOBEX = TenantContext(tenant_id="globex", principal="u9")
U1 = {"user_id": "u1"}


def test_url_routes_to_postgres_and_crud_works(pg_mem: Memory) -> None:
    assert isinstance(pg_mem.engine.provider, PostgresProvider)
    out = pg_mem.add(
        ACME,
        content="User prefers dark mode",
        layer="user",
        identifiers=U1,
        metadata={"tags": ["ui"], "big": 2**62, "ratio": 1.0, "deep": {"a": [1, "x", None]}},
    )
    got = pg_mem.get(ACME, out.memory.id)
    assert got == out.memory
    assert got.metadata["big"] == 2**62 and isinstance(got.metadata["ratio"], float)
    upd = pg_mem.update(ACME, out.memory.id, content="User prefers light mode", metadata={"tags": ["ui", "v2"]})
    assert upd.memory.version == 2 and upd.memory.content == "User prefers light mode"
    again = pg_mem.get(ACME, out.memory.id)
    assert again is not None and again.metadata["tags"] == ["ui", "v2"] and again.metadata["big"] == 2**62
    hits = pg_mem.search(ACME, "User prefers light mode", identifiers=U1)
    assert [r.memory.id for r in hits.results] == [out.memory.id]
    assert hits.results[0].score == pytest.approx(1.0, abs=1e-4)
    assert pg_mem.delete(ACME, out.memory.id).success
    assert pg_mem.get(ACME, out.memory.id) is None
    assert pg_mem.stats(ACME).total == 0


def test_schema_is_versioned_and_indexed(pg_mem: Memory, pg_url: str, pg_schema: str) -> None:
    info = pg_mem.engine.store_info
    expected = [m.version for m in postgres_schema.all_migrations()]  # core, server + feature migrations
    assert {1, 2, 3, 4, 6} <= set(expected)  # core, server, hygiene, lifecycle (memory_feedback), postings
    assert info.schema_version == max(expected) and info.extras["schema"] == pg_schema
    with admin(pg_url) as conn:
        versions = conn.execute(
            sql.SQL("SELECT version, description FROM {}.schema_version").format(sql.Identifier(pg_schema))
        ).fetchall()
        assert sorted(v[0] for v in versions) == expected
        indexes = dict(
            conn.execute(
                "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = %s "
                "AND tablename IN ('memories', 'memory_feedback', 'lexical_postings')",
                [pg_schema],
            ).fetchall()
        )
    assert "memory_feedback_pkey" in indexes
    assert "USING hnsw (embedding vector_cosine_ops)" in indexes["memories_embedding_hnsw"]
    assert "USING gin (content_tsv)" in indexes["memories_tsv_idx"]
    # tenant_id leads every B-tree index (the HNSW/GIN indexes are searched under a tenant filter)
    for name, ddl in indexes.items():
        if "btree" in ddl:
            assert ddl.split("(", 1)[1].startswith("tenant_id"), name


def test_concurrent_first_open_migrates_once(pg_store_url: str, pg_url: str, pg_schema: str) -> None:
    errors: list[BaseException] = []
    mems: list[Memory] = []

    def opener() -> None:
        try:
            mems.append(Memory.open(pg_store_url, embedder="hashing"))
        except BaseException as exc:  # asserted below
            errors.append(exc)

    threads = [threading.Thread(target=opener) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for m in mems:
        m.close()
    assert errors == [] and len(mems) == 4
    with admin(pg_url) as conn:
        rows = conn.execute(
            sql.SQL("SELECT count(*) FROM {}.schema_version").format(sql.Identifier(pg_schema))
        ).fetchone()
    assert rows is not None and rows[0] == len(postgres_schema.all_migrations())


def test_embedder_mismatch_is_a_configuration_error(open_pg: Callable[..., Memory]) -> None:
    open_pg().close()
    with pytest.raises(MemoryError) as err:
        open_pg(embedder="hashing:64")
    assert err.value.code is ErrorCode.CONFIGURATION_ERROR
    assert "password" not in err.value.message


def test_bad_server_is_a_configuration_error_without_the_password() -> None:
    with pytest.raises(MemoryError) as err:
        Memory.open("postgresql://someone:s3cret@127.0.0.1:1/nope", embedder="hashing")
    assert err.value.code is ErrorCode.CONFIGURATION_ERROR
    assert "s3cret" not in err.value.message


def test_schema_name_is_validated_and_url_is_split() -> None:
    assert split_url("postgres://u:p@h:5/db?schema=abc&sslmode=disable") == (
        "postgresql://u:p@h:5/db?sslmode=disable",
        "abc",
    )
    with pytest.raises(MemoryError) as err:
        PostgresProvider("postgresql://h/db?schema=x;drop")
    assert err.value.code is ErrorCode.CONFIGURATION_ERROR


def test_nul_characters_are_rejected_cleanly(pg_mem: Memory) -> None:
    # Through the SDK the write guards strip control characters, so a NUL never reaches PostgreSQL …
    stored = pg_mem.add(ACME, content="nul \x00 byte", layer="user", identifiers=U1).memory
    assert "\x00" not in stored.content and stored.content.startswith("nul ")
    # … and a provider-level write that carries one is refused with a clear code, not a driver error.
    bad = stored.model_copy(
        update={"id": str(uuid.uuid4()), "content": "nul \x00 byte", "embedding": pg_mem.generate_embedding("nul byte")}
    )
    with pytest.raises(MemoryError) as err:
        pg_mem.engine.provider.add([bad])
    assert err.value.code is ErrorCode.INVALID_PARAMS
    assert pg_mem.stats(ACME).total == 1


def test_dropped_connections_are_recovered(open_pg: Callable[..., Memory], pg_store_url: str, pg_url: str) -> None:
    """Kill every pooled backend: the pool's checkout check and the engine's retry hide it."""
    app = f"stratamem-test-{uuid.uuid4().hex[:8]}"
    pg_mem = open_pg(PostgresProvider(pg_store_url, application_name=app, min_size=2))
    pg_mem.add(ACME, content="before the outage", layer="user", identifiers=U1)
    with admin(pg_url) as conn:
        killed = conn.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = %s", [app]
        ).fetchone()
    assert killed is not None and killed[0] >= 1
    out = pg_mem.add(ACME, content="after the outage", layer="user", identifiers=U1)
    assert pg_mem.get(ACME, out.memory.id) is not None
    assert pg_mem.stats(ACME).total == 2


def test_ann_mode_uses_the_hnsw_index(open_pg: Callable[..., Memory], pg_store_url: str) -> None:
    exact = open_pg()
    exact.bulk_add(
        ACME,
        [{"content": f"fact number {i} about topic {i % 7}", "layer": "user", "identifiers": U1} for i in range(60)],
    )
    ann = open_pg(PostgresProvider(pg_store_url, search_mode="ann"))
    for q in ("fact number 5 about topic 5", "fact number 42 about topic 0"):
        a = exact.search(ACME, q, identifiers=U1, threshold=0.0, limit=5)
        b = ann.search(ACME, q, identifiers=U1, threshold=0.0, limit=5)
        assert b.results[0].memory.id == a.results[0].memory.id
        assert b.results[0].score == pytest.approx(a.results[0].score, abs=1e-5)
        assert all(r.memory.tenant_id == "acme" for r in b.results)
    assert ann.search(GLOBEX, "fact number 5 about topic 5", identifiers=U1, threshold=0.0).results == []


def test_lexical_search_ranks_the_tsvector(pg_mem: Memory) -> None:
    provider = pg_mem.engine.provider
    assert isinstance(provider, PostgresProvider)
    keep = pg_mem.add(ACME, content="The quarterly report is due on Friday", layer="user", identifiers=U1).memory
    pg_mem.add(ACME, content="Lunch is at noon", layer="user", identifiers=U1)
    pg_mem.add(GLOBEX, content="The quarterly report is secret", layer="user", identifiers=U1)
    q = SearchQuery(
        tenant_id="acme",
        scope=Scope(Layer.USER, '["u1"]'),
        vector=np.zeros(384, np.float32),
        text="quarterly report",
        limit=10,
        min_score=0.0,
        now=datetime.now(UTC),
    )
    page = provider.lexical_search(q)
    assert [h.entry.id for h in page.hits] == [keep.id] and 0.0 < page.hits[0].score < 1.0
    assert provider.capabilities().keyword_search is True


def test_cli_accepts_a_postgres_url(pg_store_url: str) -> None:
    env = {**os.environ, "PYTHONPATH": SRC, "STRATAMEM_EMBEDDER": "hashing", "COLUMNS": "200"}

    def run(*args: str) -> str:
        out = subprocess.run(
            [sys.executable, "-m", "stratamem", *args, "--db", pg_store_url],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert out.returncode == 0, out.stdout + out.stderr
        return out.stdout

    added = json.loads(run("add", "Deploys happen on Tuesday", "-t", "acme", "--user-id", "u1", "--json"))
    found = json.loads(run("search", "Deploys happen on Tuesday", "-t", "acme", "--user-id", "u1", "--json"))
    assert found["results"][0]["memory"]["id"] == added["memory"]["id"]
    assert json.loads(run("stats", "-t", "acme", "--json"))["total"] == 1


def test_sql_injection_in_every_string_field_is_stored_verbatim(pg_mem: Memory, pg_url: str, pg_schema: str) -> None:
    evil = [
        "'; DROP TABLE memories; --",
        "x' OR '1'='1",
        "$$; DROP SCHEMA public CASCADE; $$",
        '"; TRUNCATE embedding_cache; --',
        "%s %(tenant_id)s {} ? $1",
        "Robert'); DELETE FROM schema_version WHERE ('1'='1",
    ]
    victim = pg_mem.add(GLOBEX, content="globex private note", layer="user", identifiers=U1).memory
    for i, s in enumerate(evil):
        ctx = TenantContext(tenant_id=f"evil-{i}", principal=s)  # the engine validates tenant ids; see below
        ids = {
            "user_id": s,
            "agent_id": s,
            "session_id": s,
            "project_id": s,
            "team_id": s,
            "org_id": s,
            "company_id": s,
        }
        out = pg_mem.add(
            ctx,
            content=s,
            layer="agent",
            identifiers=ids,
            tier=s,
            metadata={"tags": [s], s: s, "source": {"type": s, "reference": s}},
            provenance={"agent_id": s, "source": s},
        )
        got = pg_mem.get(ctx, out.memory.id)
        assert got is not None and got.content == s and got.tenant_id == f"evil-{i}"
        assert got.identifiers.user_id == s and got.identifiers.agent_id == s and got.tier == s
        assert got.metadata[s] == s and got.metadata["source"] == {"type": s, "reference": s}
        assert got.provenance.agent_id == s
        hits = pg_mem.search(
            ctx, s, identifiers=ids, layers=["agent"], threshold=0.0, filter={"tags": [s], "custom": {s: {"eq": s}}}
        )
        assert [r.memory.id for r in hits.results] == [out.memory.id]
        page = pg_mem.list(ctx, layer="agent", identifiers=ids, filter={"tags": [s]})
        assert [m.id for m in page.memories] == [out.memory.id]
        assert pg_mem.update(ctx, out.memory.id, content=s + " v2").memory.version == 2
    # hostile tenant ids straight at the provider (below the engine's validation) match nothing
    provider = pg_mem.engine.provider
    now = datetime.now(UTC)
    for s in evil:
        assert provider.get(s, victim.id, now) is None
        assert provider.delete(s, [victim.id, s]) == []
        assert provider.count_by_layer(s, now) == {}
        assert provider.cache_get(s, s, [s]) == {}
    # nothing was dropped, truncated or leaked: every tenant sees exactly its own row
    assert pg_mem.get(GLOBEX, victim.id) is not None
    assert pg_mem.stats(GLOBEX).total == 1
    with admin(pg_url) as conn:
        tables = {
            r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s", [pg_schema]).fetchall()
        }
        assert {"memories", "embedding_cache", "schema_version", "store_meta"} <= tables
        row = conn.execute(
            sql.SQL("SELECT count(*), count(DISTINCT tenant_id) FROM {}.memories").format(sql.Identifier(pg_schema))
        ).fetchone()
        assert row == (len(evil) + 1, len(evil) + 1)
        assert conn.execute("SELECT count(*) FROM pg_namespace WHERE nspname = 'public'").fetchone() == (1,)


def test_write_hook_receives_the_psycopg_connection(pg_mem: Memory) -> None:
    seen: list[object] = []

    class Hook:
        def after_add(self, tx: object, entries: object) -> None:
            assert isinstance(tx, psycopg.Connection)
            seen.append(tx.execute("SELECT count(*) FROM memories WHERE tenant_id = 'acme'").fetchone())

        def after_update(self, tx: object, entry: object, previous: object) -> None: ...

        def after_delete(self, tx: object, tenant_id: str, ids: object) -> None: ...

    pg_mem.engine.provider.write_hooks.append(Hook())
    pg_mem.add(ACME, content="visible inside the transaction", layer="user", identifiers=U1)
    assert seen == [(1,)]
