"""The in-process search index of the DuckDB store (retrieval/search_index.py).

Every test runs on a real DuckDB file. The reference is the provider's own SQL scan
(``DuckDBProvider._search_sql``), which reads the committed rows directly.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from stratamem import Memory, MemoryConfig, MemoryError, TenantContext
from stratamem.filters import compile_filter, parse_filter
from stratamem.layers import Layer, parse_identifiers, scope_key
from stratamem.model import MemoryEntry
from stratamem.providers.base import Scope, SearchQuery
from stratamem.providers.duckdb import DuckDBProvider
from stratamem.retrieval.search_index import search_expansion

IDS = {"user_id": "u1"}
SUBJECTS = ["Alice", "Bob", "Carol", "the team", "our customer", "the backend", "Dmitri", "Priya", "the intern"]
VERBS = ["prefers", "migrated to", "asked about", "complained about", "is evaluating", "documented", "deployed"]
OBJECTS = [
    "dark mode",
    "PostgreSQL 16",
    "the Lisbon office",
    "weekly releases",
    "Rust",
    "GraphQL",
    "Kubernetes",
    "invoice INV-{n}",
    "the billing flow",
    "vim keybindings",
    "feature flags",
    "green tea",
    "ticket #{n}",
]
WHEN = ["on Monday", "last spring", "in March 2023", "after the outage", "during onboarding", "for Q{q}"]


def sentence(rng: random.Random) -> str:
    obj = rng.choice(OBJECTS).format(n=rng.randint(100, 99999), q=rng.randint(1, 4))
    return f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {obj} {rng.choice(WHEN)}."


def provider(mem: Memory) -> DuckDBProvider:
    p = mem.engine.provider
    assert isinstance(p, DuckDBProvider)
    return p


def query(
    mem: Memory,
    tenant: str,
    text: str,
    *,
    limit: int = 10,
    min_score: float = 0.0,
    weight: float = 1.0,
    predicate: Any = None,
    exact: bool = False,
    layer: Layer = Layer.USER,
) -> SearchQuery:
    return SearchQuery(
        tenant_id=tenant,
        scope=Scope(layer, scope_key(layer, parse_identifiers(IDS))),
        vector=mem.engine.embeddings.embed_query(text, "search"),
        text=text,
        limit=limit,
        min_score=min_score,
        now=datetime.now(UTC),
        predicate=predicate,
        include_embedding=True,
        lexical_weight=weight,
        exact=exact,
    )


def same_page(mem: Memory, q: SearchQuery) -> None:
    """The index answers what the SQL scan of the committed rows answers.

    Both compute the cosine in float32 (summed in a different order), so two rows whose scores
    differ by ~1e-8 may swap places: positions are compared by score, ids wherever scores differ.
    """
    p = provider(mem)
    p.flush_appends()  # the last search's access statistics: the SQL read would write them first
    got, want = p.search(q), p._search_sql(q)
    assert got.total == want.total
    assert [h.score for h in got.hits] == pytest.approx([h.score for h in want.hits], abs=1e-6)
    by_id = {h.entry.id: h for h in want.hits}
    for g in got.hits:
        w = by_id.get(g.entry.id)
        if w is None:  # only a near-tie may differ
            assert any(
                abs(x.score - g.score) < 1e-6 and x.entry.id not in {h.entry.id for h in got.hits} for x in want.hits
            ), g.entry.id
            continue
        assert g.score == pytest.approx(w.score, abs=1e-6)
        assert g.entry.model_dump(exclude={"embedding"}) == w.entry.model_dump(exclude={"embedding"})
        assert g.entry.embedding == pytest.approx(w.entry.embedding, abs=1e-6)


def test_exact_index_matches_sql_through_every_kind_of_write(
    open_mem: Callable[..., Memory], acme: TenantContext
) -> None:
    mem = open_mem()
    rng = random.Random(7)
    ids = [
        o.memory.id
        for o in mem.bulk_add(
            acme,
            [
                {"content": sentence(rng), "layer": "user", "identifiers": IDS, "metadata": {"n": i % 5}}
                for i in range(300)
            ],
        ).results
    ]
    queries = ["Alice dark mode", "Which office did Bob move to?", "invoice", "Kubernetes migration", "green tea"]
    pred = compile_filter(parse_filter({"n": 2}, "search"))
    for text in queries:  # builds the partition from the database
        same_page(mem, query(mem, "acme", text))
    # every write path after the partition exists: add, update (content and metadata), delete,
    # status change, expiry, access tracking
    extra = mem.add(
        acme, content="Priya deployed the Lisbon billing flow on Monday", layer="user", identifiers=IDS
    ).memory.id
    mem.update(acme, ids[0], content="Alice now prefers light mode after the outage")
    mem.update(acme, ids[1], metadata={"n": 2, "edited": True})
    mem.delete(acme, ids[2])
    provider(mem).set_status("acme", [ids[3], ids[4]], "archived", datetime.now(UTC))
    provider(mem).set_expiry("acme", [ids[5]], datetime.now(UTC) - timedelta(seconds=1))
    provider(mem).set_expiry("acme", [ids[6]], datetime.now(UTC) + timedelta(days=1))
    mem.search(acme, "Alice light mode", identifiers=IDS, threshold=0.0)  # records accesses
    for text in [*queries, "Priya Lisbon", "light mode"]:
        for kw in ({}, {"weight": 0.0}, {"min_score": 0.7}, {"predicate": pred}, {"limit": 3}):
            same_page(mem, query(mem, "acme", text, **kw))
    hits = provider(mem).search(query(mem, "acme", "Priya deployed the Lisbon billing flow", limit=1)).hits
    assert hits[0].entry.id == extra
    found = {h.entry.id for h in provider(mem).search(query(mem, "acme", "anything", limit=400)).hits}
    assert ids[2] not in found and ids[3] not in found and ids[5] not in found and ids[6] in found
    accessed = provider(mem).get("acme", ids[0], datetime.now(UTC))
    page = provider(mem).search(query(mem, "acme", "Alice now prefers light mode after the outage", limit=1))
    assert accessed is not None and page.hits[0].entry.access_count == accessed.access_count >= 1


def test_rolled_back_write_leaves_the_index_untouched(open_mem: Callable[..., Memory], acme: TenantContext) -> None:
    mem = open_mem()
    mem.add(acme, content="Alice prefers green tea", layer="user", identifiers=IDS)
    mem.search(acme, "tea", identifiers=IDS, threshold=0.0)  # the partition now exists

    class Boom:
        def after_add(self, tx: Any, entries: Any) -> None:
            raise RuntimeError("hook failed")

        def after_update(self, tx: Any, entry: Any, previous: Any) -> None: ...

        def after_delete(self, tx: Any, tenant_id: str, ids: Any) -> None: ...

    provider(mem).write_hooks.append(Boom())
    with pytest.raises((RuntimeError, MemoryError)):
        mem.add(acme, content="Bob hates green tea", layer="user", identifiers=IDS)
    provider(mem).write_hooks.pop()
    res = mem.search(acme, "Bob green tea", identifiers=IDS, threshold=0.0)
    assert [r.memory.content for r in res.results] == ["Alice prefers green tea"]
    same_page(mem, query(mem, "acme", "Bob green tea"))


def test_tenants_and_layers_are_separate_partitions(
    open_mem: Callable[..., Memory], acme: TenantContext, globex: TenantContext
) -> None:
    mem = open_mem(config=MemoryConfig(ann_threshold=50))
    rng = random.Random(3)
    texts = [sentence(rng) for _ in range(120)]
    for ctx in (acme, globex):
        mem.bulk_add(ctx, [{"content": t, "layer": "user", "identifiers": IDS} for t in texts])
    mem.bulk_add(acme, [{"content": t, "layer": "agent", "identifiers": {**IDS, "agent_id": "a1"}} for t in texts[:20]])
    assert mem.search(acme, texts[0], identifiers=IDS, threshold=0.0).results  # builds + starts HNSW
    index = provider(mem).search_index
    assert index is not None and index.wait_ready(120)
    for ctx in (acme, globex):
        res = mem.search(ctx, texts[5], identifiers={**IDS, "agent_id": "a1"}, threshold=0.0, limit=100)
        assert {r.memory.tenant_id for r in res.results} == {ctx.tenant_id}
    assert index.wait_ready(120)  # globex's partition was loaded (and its HNSW started) by the loop
    stats = index.stats()
    assert {p["tenant_id"] for p in stats["ann_partitions"]} == {"acme", "globex"}
    assert all(p["layer"] == "user" and p["ready"] for p in stats["ann_partitions"])


def test_hnsw_recall_and_writes_after_the_build(open_mem: Callable[..., Memory], acme: TenantContext) -> None:
    mem = open_mem(config=MemoryConfig(ann_threshold=500))
    rng = random.Random(11)
    texts = list(dict.fromkeys(sentence(rng) for _ in range(2500)))
    ids = [
        r.memory.id
        for chunk in (texts[:1000], texts[1000:2000])
        for r in mem.bulk_add(acme, [{"content": t, "layer": "user", "identifiers": IDS} for t in chunk]).results
    ]
    p = provider(mem)
    p.search(query(mem, "acme", "warm up"))
    index = p.search_index
    assert index is not None and index.wait_ready(300)
    assert index.stats()["ann_partitions"][0]["ready"]
    recalls = {0.0: [], 1.0: []}  # type: dict[float, list[float]]
    for text in rng.sample(texts, 60):
        q = " ".join(text.split()[:4])
        for weight in recalls:
            approx = p.search(query(mem, "acme", q, weight=weight))
            exact = p.search(query(mem, "acme", q, weight=weight, exact=True))
            same_page(mem, query(mem, "acme", q, weight=weight, exact=True))
            want = {h.entry.id for h in exact.hits}
            recalls[weight].append(len(want & {h.entry.id for h in approx.hits}) / len(want))
    for weight, values in recalls.items():
        assert sum(values) / len(values) >= 0.95, (weight, sum(values) / len(values))
    # writes after the build are visible at once through the ANN path, deletes never come back
    new = mem.add(
        acme, content="Zanzibar quokka telemetry was archived by Priya", layer="user", identifiers=IDS
    ).memory.id
    assert p.search(query(mem, "acme", "Zanzibar quokka telemetry", limit=1)).hits[0].entry.id == new
    # dense only, the HNSW graph itself must hold the new row (a 3-rare-word query is an outlier the
    # graph search may not reach with the hashing embedder; the hybrid path above finds it by its words)
    dense = p.search(query(mem, "acme", "Zanzibar quokka telemetry was archived by Priya", limit=1, weight=0.0))
    assert dense.hits[0].entry.id == new
    mem.bulk_delete(acme, [new, *ids[:100]])
    gone = {new, *ids[:100]}
    for text in texts[:100]:
        assert not gone & {h.entry.id for h in p.search(query(mem, "acme", text)).hits}
    changed = mem.update(acme, ids[200], content="Quetzalcoatl invoice reconciliation moved to Tuesdays").memory
    hit = p.search(query(mem, "acme", "Quetzalcoatl invoice reconciliation", limit=1, weight=0.0)).hits[0]
    assert hit.entry.id == changed.id and hit.entry.content == changed.content
    # a predicate that rejects most candidates still finds its rows (candidate set grows, then exact)
    for i in range(2000, 2005):
        mem.add(acme, content=texts[i], layer="user", identifiers=IDS, metadata={"rare": True})
    pred = compile_filter(parse_filter({"rare": True}, "search"))
    page = p.search(query(mem, "acme", "Alice", predicate=pred))
    assert page.total == 5 and len(page.hits) == 5


def test_search_expansion_grows_with_the_partition() -> None:
    assert [search_expansion(192, n) for n in (0, 20_000, 100_000)] == [192, 192, 192]
    grown = [search_expansion(192, n) for n in (150_000, 300_000, 1_000_000, 2_000_000)]
    assert grown == sorted(grown) and grown[0] > 192 and all(g % 32 == 0 for g in grown)
    assert 768 <= search_expansion(192, 1_000_000) <= 1024  # 0.96-0.97 recall measured at 1M (docstring)
    assert search_expansion(192, 10**9) == 4096  # bounded
    assert search_expansion(64, 4_000, reference=1_000) == 160  # 64 · 4 ** 0.65 = 157.6, up to a multiple of 32


def test_a_partition_past_the_reference_size_searches_its_graph_wider(
    open_mem: Callable[..., Memory], acme: TenantContext
) -> None:
    mem = open_mem(config=MemoryConfig(ann_threshold=300))
    p = provider(mem)
    p.search(query(mem, "acme", "warm up"))  # creates the index
    index = p.search_index
    assert index is not None
    index.expansion_reference_rows = 400  # as a 100k partition would, at test size
    rng = random.Random(17)
    texts = list(dict.fromkeys(sentence(rng) for _ in range(700)))[:600]
    mem.bulk_add(acme, [{"content": t, "layer": "user", "identifiers": IDS} for t in texts[:350]])
    p.search(query(mem, "acme", "warm up"))
    assert index.wait_ready(120)
    part = index.stats()["ann_partitions"][0]
    assert part["ready"] and part["expansion_search"] == index.expansion_search  # 350 rows: the base
    mem.bulk_add(acme, [{"content": t, "layer": "user", "identifiers": IDS} for t in texts[350:]])
    page = p.search(query(mem, "acme", texts[500]))
    assert page.hits[0].entry.content == texts[500]
    want = search_expansion(index.expansion_search, 600, 400)
    assert want > index.expansion_search
    assert index.stats()["ann_partitions"][0]["expansion_search"] == want
    graph = index._partitions[("acme", "user", scope_key(Layer.USER, parse_identifiers(IDS)))].ann
    assert graph.expansion_search == want  # the usearch graph itself searches wider


def test_index_is_rebuilt_from_the_database_on_reopen(db_path: Path, acme: TenantContext) -> None:
    rng = random.Random(5)
    with Memory.open(db_path, embedder="hashing") as mem:
        mem.bulk_add(acme, [{"content": sentence(rng), "layer": "user", "identifiers": IDS} for _ in range(50)])
        gone = mem.add(acme, content="Ephemeral note about Zanzibar", layer="user", identifiers=IDS).memory.id
        before = mem.search(acme, "Alice dark mode", identifiers=IDS, threshold=0.0)
        mem.delete(acme, gone)
    with Memory.open(db_path, embedder="hashing") as mem:
        after = mem.search(acme, "Alice dark mode", identifiers=IDS, threshold=0.0)
        assert [r.memory.id for r in after.results] == [r.memory.id for r in before.results if r.memory.id != gone]
        assert gone not in {
            r.memory.id for r in mem.search(acme, "Zanzibar", identifiers=IDS, threshold=0.0, limit=100).results
        }


def test_two_memory_objects_on_one_file_share_the_index(open_mem: Callable[..., Memory], acme: TenantContext) -> None:
    a, b = open_mem(), open_mem()
    a.add(acme, content="Alice prefers green tea", layer="user", identifiers=IDS)
    assert b.search(acme, "green tea", identifiers=IDS, threshold=0.0).results  # b builds the partition
    new = a.add(acme, content="Bob drinks oolong tea", layer="user", identifiers=IDS).memory.id
    assert new in {r.memory.id for r in b.search(acme, "oolong tea", identifiers=IDS, threshold=0.0).results}
    a.delete(acme, new)
    assert new not in {r.memory.id for r in b.search(acme, "oolong tea", identifiers=IDS, threshold=0.0).results}


def test_disabled_index_uses_the_sql_scan(open_mem: Callable[..., Memory], acme: TenantContext) -> None:
    mem = open_mem(config=MemoryConfig(search_index=False))
    mem.add(acme, content="Alice prefers green tea", layer="user", identifiers=IDS)
    assert provider(mem).search_index is None and provider(mem).search_index_stats() is None
    assert (
        mem.search(acme, "green tea", identifiers=IDS, threshold=0.0).results[0].memory.content
        == "Alice prefers green tea"
    )


def test_rows_replaced_drops_the_tenant_partitions(
    open_mem: Callable[..., Memory], acme: TenantContext, globex: TenantContext
) -> None:
    mem = open_mem()
    for ctx in (acme, globex):
        mem.add(ctx, content="Alice prefers green tea", layer="user", identifiers=IDS)
        mem.search(ctx, "tea", identifiers=IDS, threshold=0.0)
    p = provider(mem)
    assert p.search_index is not None and p.search_index.stats()["partitions"] == 2
    with p.transaction() as cur:  # what a snapshot restore does: rows rewritten by SQL
        cur.execute("UPDATE memories SET content = 'Alice prefers coffee' WHERE tenant_id = ?", ["acme"])
    p.rows_replaced("acme")
    assert p.search_index.stats()["partitions"] == 1
    res = mem.search(acme, "tea", identifiers=IDS, threshold=0.0)
    assert res.results[0].memory.content == "Alice prefers coffee"


def test_eviction_keeps_the_mirror_bounded(open_mem: Callable[..., Memory], acme: TenantContext) -> None:
    mem = open_mem(config=MemoryConfig(search_index_max_rows=30))
    for user in ("u1", "u2", "u3"):
        mem.bulk_add(
            acme,
            [{"content": f"note {i} of {user}", "layer": "user", "identifiers": {"user_id": user}} for i in range(20)],
        )
        mem.search(acme, "note", identifiers={"user_id": user}, threshold=0.0)
    index = provider(mem).search_index
    assert index is not None and index.stats()["rows"] <= 30
    res = mem.search(acme, "note 3", identifiers={"user_id": "u1"}, threshold=0.0, limit=50)  # reloaded
    assert len(res.results) == 20


def test_entries_returned_are_copies(open_mem: Callable[..., Memory], acme: TenantContext) -> None:
    mem = open_mem()
    mem.add(acme, content="Alice prefers green tea", layer="user", identifiers=IDS, metadata={"tags": ["a"]})
    first = mem.search(acme, "tea", identifiers=IDS, threshold=0.0).results[0].memory
    first.metadata["tags"].append("mutated")
    first.provenance.source = "mutated"
    first.identifiers.user_id = "mutated"
    again = mem.search(acme, "tea", identifiers=IDS, threshold=0.0).results[0].memory
    assert again.metadata == {"tags": ["a"]}
    assert again.provenance.source != "mutated" and again.identifiers.user_id == "u1"
    assert isinstance(again, MemoryEntry)


def test_nested_metadata_and_provenance_lists_are_copies_too(
    open_mem: Callable[..., Memory], acme: TenantContext
) -> None:
    mem = open_mem()
    meta = {"tags": ["a"], "info": {"level": 2, "path": ["x", {"deep": [1.5, None, True]}]}}
    a = mem.add(acme, content="Alice prefers green tea", layer="user", identifiers=IDS, metadata=meta).memory
    b = mem.add(acme, content="Bob prefers black tea", layer="user", identifiers=IDS).memory
    merged = mem.compact(acme, [a.id, b.id], lambda entries: "Alice and Bob like tea", target_layer="user")
    for _ in range(2):  # the second search serves the mirror again
        hits = {h.memory.id: h.memory for h in mem.search(acme, "tea", identifiers=IDS, threshold=0.0).results}
        assert hits[a.id].metadata == meta
        assert hits[merged.id].provenance.compacted_from_ids == [a.id, b.id]
        hits[a.id].metadata["info"]["path"][1]["deep"].append("mutated")
        hits[a.id].metadata["info"]["level"] = 3
        assert hits[merged.id].provenance.compacted_from_ids is not None
        hits[merged.id].provenance.compacted_from_ids.append("mutated")


def test_churn_reloads_the_partition_and_rows_stay_raw_until_needed(
    open_mem: Callable[..., Memory], acme: TenantContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    from stratamem.retrieval import search_index

    monkeypatch.setattr(search_index, "COMPACT_MIN_DEAD", 5)
    # no supersession check on add: its candidate search would materialise rows before the one counted
    mem = open_mem(config=MemoryConfig(detect_supersession=False))
    rng = random.Random(9)
    ids = [
        r.memory.id
        for r in mem.bulk_add(
            acme, [{"content": sentence(rng), "layer": "user", "identifiers": IDS} for _ in range(8)]
        ).results
    ]
    p = provider(mem)
    mem.search(acme, "Alice", identifiers=IDS, threshold=0.0, limit=1)
    index = p.search_index
    assert index is not None
    part = next(iter(index._partitions.values()))
    assert sum(isinstance(e, MemoryEntry) for e in part.entries) == 1  # only the hit was materialised
    for i in range(8):  # every content change moves the row to a new slot
        mem.update(acme, ids[0], content=f"Revision {i}: Zanzibar telemetry moved")
    assert part.dead == 8 and index.stats()["partitions"] == 1
    mem.update(acme, ids[0], content="Revision final: Zanzibar telemetry moved")
    assert index.stats()["partitions"] == 0  # dropped: more dead slots than live rows (and the minimum)
    same_page(mem, query(mem, "acme", "Zanzibar telemetry revision"))
    res = mem.search(acme, "Zanzibar telemetry revision", identifiers=IDS, threshold=0.0, limit=20)
    assert [r.memory.content for r in res.results].count("Revision final: Zanzibar telemetry moved") == 1
    assert len(res.results) == 8


def test_partition_centroid_follows_enough_changes() -> None:
    """The relevance floor's centroid is cached per partition and recomputed once more than 5% of the
    rows (at least 8) changed; removed and superseded rows leave it."""
    import numpy as np

    from stratamem.retrieval.centering import centered_cosines, mean_of_unit_rows
    from stratamem.retrieval.search_index import Partition

    dims = 4
    part = Partition(("t", "user", "u"), dims)
    rows = np.eye(dims, dtype=np.float32)
    for i in range(dims):
        part._new_slot(f"m{i}", f"row {i}", rows[i], None, "active", None)
    first = part.centroid()
    assert first is not None and first.rows == dims
    np.testing.assert_allclose(first.mean, np.full(dims, 0.25), atol=1e-6)
    part.remove("m0")  # one change of four rows: the cached centroid stays (within 8 changes)
    assert part.centroid() is first
    for i in range(8):
        part._new_slot(f"n{i}", f"new {i}", rows[1], None, "active", None)
    again = part.centroid()
    assert again is not first and again is not None and again.rows == 3 + 8
    # centering removes what every row shares: two rows alike but for one axis score by that axis
    shared = np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32)
    pool = np.vstack([shared + 0.3 * rows[i % 3 + 1] for i in range(30)])
    centroid = mean_of_unit_rows(pool)
    assert centroid is not None
    raw = float(pool[0] @ pool[1] / (np.linalg.norm(pool[0]) * np.linalg.norm(pool[1])))
    centered = float(centered_cosines(pool[0], [pool[1]], centroid)[0])
    assert raw > 0.9 and centered < 0.0


def test_warm_search_index_loads_the_largest_scopes_before_any_search(tmp_path: Path) -> None:
    """Warm start: a reopened store has an empty index; ``warm_search_index`` (run by the server
    before it listens) loads every scope that fits, largest first, so no search pays for the load."""
    path = tmp_path / "warm.duckdb"
    ctx = TenantContext(tenant_id="warm")
    with Memory.open(path, embedder="hashing") as mem:
        mem.bulk_add(
            ctx,
            [
                {"content": f"fact {i} about alice", "layer": "user", "identifiers": {"user_id": "alice"}}
                for i in range(30)
            ],
        )
        mem.bulk_add(
            ctx,
            [{"content": f"fact {i} about bob", "layer": "user", "identifiers": {"user_id": "bob"}} for i in range(5)],
        )
    with Memory.open(path, embedder="hashing") as mem:
        stats = provider(mem).search_index_stats()
        assert stats is not None and stats["rows"] == 0
        assert provider(mem).warm_search_index(timeout=30) == 35
        stats = provider(mem).search_index_stats()
        assert stats is not None and stats["partitions"] == 2 and stats["rows"] == 35
        provider(mem).configure_search_index(max_rows=31)  # only what fits: the largest scope
    with Memory.open(path, embedder="hashing") as mem:
        provider(mem).configure_search_index(max_rows=31)
        assert provider(mem).warm_search_index(timeout=30) == 30


def test_a_fresh_centroid_is_read_without_waiting_for_the_partition_lock(tmp_path: Path) -> None:
    """Every default search asks for its scope's centroid after its own search: while the cached one
    is fresh it comes back even when another thread holds the partition's lock (a search, an add
    being applied); a stale one is recomputed under the lock."""
    import threading

    from ..core.locks import held_elsewhere

    acme = TenantContext(tenant_id="acme", principal="p")
    with Memory.open(tmp_path / "c.duckdb", embedder="hashing") as mem:
        for i in range(12):
            mem.add(acme, f"fact number {i} about topic {i * 7}", layer="user", identifiers=IDS)
        mem.search(acme, "fact about a topic", identifiers=IDS)  # loads the partition, computes the centroid
        provider = mem.engine.provider
        assert isinstance(provider, DuckDBProvider) and provider.search_index is not None
        key = ("acme", "user", scope_key(Layer.USER, parse_identifiers(IDS, "search")))
        part = provider.search_index._get(key)
        assert part is not None
        scope = Scope(Layer.USER, key[2])
        now = datetime.now(UTC)
        cached = part.fresh_centroid()
        assert cached[0] and cached[1] is not None

        def centroid_in_thread() -> tuple[threading.Thread, list[Any]]:
            got: list[Any] = []
            thread = threading.Thread(target=lambda: got.append(provider.scope_centroid("acme", scope, now)))
            thread.start()
            return thread, got

        with held_elsewhere(part.lock):  # as a search or an add being applied would
            fresh_reader, got = centroid_in_thread()
            fresh_reader.join(2)
            assert not fresh_reader.is_alive() and got == [cached[1]]  # answered while the lock is held
            part.changes += 10 * max(8, part.n_live)  # stale now: recomputed, under the lock
            stale_reader, got_stale = centroid_in_thread()
            stale_reader.join(0.3)
            assert stale_reader.is_alive() and got_stale == []  # waits for the lock
        stale_reader.join(5)
        assert len(got_stale) == 1 and got_stale[0] is not None and got_stale[0] is not cached[1]
