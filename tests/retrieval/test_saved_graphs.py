"""Saved HNSW graphs of the search index (retrieval/ann_store.py) on a real DuckDB file.

A saved graph is a cache: reopening reads it instead of rebuilding, a write that removes a vector
removes the file at once, and a stale, foreign or corrupt file costs a rebuild, never a wrong answer.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import numpy as np

from stratamem import Memory, MemoryConfig, TenantContext
from stratamem.layers import Layer, parse_identifiers, scope_key
from stratamem.providers.duckdb import DuckDBProvider
from stratamem.retrieval.ann_store import AnnStore, vector_hashes
from stratamem.retrieval.search_index import SearchIndex

from .test_search_index import IDS, query, same_page, sentence

CONFIG = MemoryConfig(ann_threshold=300)
KEY = ("acme", "user", scope_key(Layer.USER, parse_identifiers(IDS)))


def provider(mem: Memory) -> DuckDBProvider:
    p = mem.engine.provider
    assert isinstance(p, DuckDBProvider)
    return p


def index_of(mem: Memory) -> SearchIndex:
    index = provider(mem).search_index
    assert index is not None and index.store is not None
    return index


def warm(mem: Memory) -> dict[str, object]:
    """Search once (loads the partition, starts the HNSW build or restore) and wait for it."""
    mem.search(TenantContext(tenant_id="acme", principal="u1"), "warm up", identifiers=IDS, threshold=0.0)
    index = index_of(mem)
    assert index.wait_ready(300)
    parts = index.stats()["ann_partitions"]
    assert isinstance(parts, list) and len(parts) == 1
    return dict(parts[0])


def store(db_path: Path) -> AnnStore:
    return AnnStore(f"{db_path.resolve()}.index")


def fill(mem: Memory, acme: TenantContext, n: int, seed: int = 3) -> list[str]:
    rng = random.Random(seed)
    texts = list(dict.fromkeys(sentence(rng) for _ in range(n)))
    return [
        r.memory.id
        for i in range(0, len(texts), 1000)
        for r in mem.bulk_add(
            acme, [{"content": t, "layer": "user", "identifiers": IDS} for t in texts[i : i + 1000]]
        ).results
    ]


def recall(mem: Memory, texts: list[str]) -> float:
    p = provider(mem)
    values = []
    for text in texts:
        q = " ".join(text.split()[:4])
        want = {h.entry.id for h in p.search(query(mem, "acme", q, exact=True)).hits}
        got = {h.entry.id for h in p.search(query(mem, "acme", q)).hits}
        values.append(len(want & got) / len(want))
    return sum(values) / len(values)


def test_graph_is_saved_after_the_build_and_restored_on_reopen(db_path: Path, acme: TenantContext) -> None:
    with Memory.open(db_path, embedder="hashing", config=CONFIG) as mem:
        fill(mem, acme, 800)
        info = warm(mem)
        assert info == {**info, "ready": True, "restored": False, "saved": True}
        assert store(db_path).path(KEY).exists()
        # rows added after the save are added to the graph in memory, and saved again on close
        late = fill(mem, acme, 40, seed=99)
        before = store(db_path).path(KEY).stat().st_mtime_ns
    assert store(db_path).path(KEY).stat().st_mtime_ns > before
    with Memory.open(db_path, embedder="hashing", config=CONFIG) as mem:
        info = warm(mem)
        assert info["restored"] is True and info["ready"] is True
        part = index_of(mem)._partitions[KEY]
        assert part.ann_unsaved == 0 and not part.ann_removed  # nothing had to be patched in
        assert set(late) <= {part.ids[s] for s in part.ann_slots}
        rng = random.Random(3)
        texts = [sentence(rng) for _ in range(800)]
        assert recall(mem, random.Random(1).sample(texts, 40)) >= 0.95
        for text in texts[:10]:
            same_page(mem, query(mem, "acme", " ".join(text.split()[:4]), exact=True))


def test_a_delete_removes_the_saved_graph_at_once(db_path: Path, acme: TenantContext) -> None:
    with Memory.open(db_path, embedder="hashing", config=CONFIG) as mem:
        ids = fill(mem, acme, 800)
        warm(mem)
        path = store(db_path).path(KEY)
        assert path.exists()
        mem.delete(acme, ids[0])
        assert not path.exists()  # the file held the deleted row's vector
    assert not path.exists()  # a graph that lost a vector is never written
    with Memory.open(db_path, embedder="hashing", config=CONFIG) as mem:
        info = warm(mem)
        assert info["restored"] is False and info["saved"] is True  # rebuilt, then saved clean
        p = provider(mem)
        assert ids[0] not in {h.entry.id for h in p.search(query(mem, "acme", "Alice", limit=50)).hits}


def test_writes_to_a_partition_not_in_memory_discard_its_file(db_path: Path, acme: TenantContext) -> None:
    with Memory.open(db_path, embedder="hashing", config=CONFIG) as mem:
        ids = fill(mem, acme, 800)
        warm(mem)
    path = store(db_path).path(KEY)
    with Memory.open(db_path, embedder="hashing", config=CONFIG) as mem:
        mem.add(acme, content="Zanzibar quokka telemetry", layer="user", identifiers=IDS)  # adds keep it
        mem.update(acme, ids[1], metadata={"checked": True})  # same content, same vector: kept
        assert path.exists()
        mem.update(acme, ids[2], content="Quetzalcoatl invoice reconciliation moved to Tuesdays")
        assert not path.exists()
    with Memory.open(db_path, embedder="hashing", config=CONFIG) as mem:
        warm(mem)
        assert path.exists()
        mem.delete(acme, ids[3])  # partition loaded: its own removal discards the file
        assert not path.exists()
    with Memory.open(db_path, embedder="hashing", config=CONFIG) as mem:
        warm(mem)
    with Memory.open(db_path, embedder="hashing", config=CONFIG) as mem:
        mem.delete(acme, ids[4])  # not loaded: every file of the tenant not in memory goes
        assert not path.exists()
        hits = provider(mem).search(query(mem, "acme", "Quetzalcoatl invoice reconciliation", limit=5)).hits
        assert hits[0].entry.id == ids[2]
        assert not {ids[3], ids[4]} & {
            h.entry.id for h in provider(mem).search(query(mem, "acme", "Alice", limit=100)).hits
        }


def test_rows_changed_behind_the_index_are_patched_out_of_the_saved_graph(db_path: Path, acme: TenantContext) -> None:
    with Memory.open(db_path, embedder="hashing", config=CONFIG) as mem:
        ids = fill(mem, acme, 800)
        warm(mem)
    with Memory.open(db_path, embedder="hashing", config=CONFIG) as mem:
        p = provider(mem)
        new_vec = mem.engine.embeddings.embed_query("Quetzalcoatl invoice reconciliation", "search")
        with p.transaction() as cur:  # SQL the index does not see (as another tool might run)
            cur.execute(
                f"UPDATE memories SET embedding = ?::FLOAT[{len(new_vec)}] WHERE tenant_id = 'acme' AND id = ?",
                [str([float(x) for x in new_vec]), ids[5]],
            )
            cur.execute("DELETE FROM memories WHERE tenant_id = 'acme' AND id = ?", [ids[6]])
        info = warm(mem)
        part = index_of(mem)._partitions[KEY]
        assert info["restored"] is True and part.ann_removed  # stale slots were taken out
        assert not store(db_path).path(KEY).exists()  # and a file with stale vectors is not kept
        dense = p.search(query(mem, "acme", "Quetzalcoatl invoice reconciliation", limit=1, weight=0.0))
        assert dense.hits[0].entry.id == ids[5]
        assert ids[6] not in {h.entry.id for h in p.search(query(mem, "acme", "Alice", limit=100)).hits}


def test_foreign_or_corrupt_files_are_ignored(db_path: Path, acme: TenantContext) -> None:
    with Memory.open(db_path, embedder="hashing", config=CONFIG) as mem:
        fill(mem, acme, 800)
        mem.bulk_add(
            acme,
            [
                {"content": sentence(random.Random(i)), "layer": "user", "identifiers": {"user_id": "u2"}}
                for i in range(10)
            ],
        )
        warm(mem)
    s = store(db_path)
    other = ("acme", "user", scope_key(Layer.USER, parse_identifiers({"user_id": "u2"})))
    shutil.copy(s.path(KEY), s.path(other))  # a file under another partition's name
    assert s.load(other, 384) is None  # the key inside is checked
    s.path(KEY).write_bytes(b"not a graph")
    with Memory.open(db_path, embedder="hashing", config=CONFIG) as mem:
        info = warm(mem)
        assert info["restored"] is False and info["ready"] is True
        same_page(mem, query(mem, "acme", "Alice prefers dark mode", exact=True))
        assert s.load(KEY, 384) is not None  # rebuilt and saved again
        assert not s.path(other).exists() or s.load(other, 384) is None


def test_restore_and_disabling_the_index_discard_saved_graphs(db_path: Path, acme: TenantContext) -> None:
    with Memory.open(db_path, embedder="hashing", config=CONFIG) as mem:
        fill(mem, acme, 800)
        warm(mem)
        assert store(db_path).files()
        provider(mem).rows_replaced("acme")  # what a snapshot restore calls
        assert not store(db_path).files()
        warm(mem)
        assert store(db_path).files()
    with Memory.open(db_path, embedder="hashing", config=MemoryConfig(search_index=False)):
        assert not store(db_path).files()


def test_vector_hashes_are_per_row_and_content_sensitive() -> None:
    rows = np.random.default_rng(0).standard_normal((50, 16)).astype(np.float32)
    h = vector_hashes(rows)
    assert h.dtype == np.uint64 and len(set(h.tolist())) == 50
    assert np.array_equal(h, vector_hashes(rows.copy()))
    changed = rows.copy()
    changed[7, 3] = np.nextafter(changed[7, 3], np.float32(np.inf))
    assert np.flatnonzero(vector_hashes(changed) != h).tolist() == [7]


def test_close_stops_a_running_build_and_saves_nothing_unfinished(db_path: Path, acme: TenantContext) -> None:
    mem = Memory.open(db_path, embedder="hashing", config=CONFIG)
    fill(mem, acme, 3000)
    index = index_of(mem)
    mem.search(acme, "warm up", identifiers=IDS, threshold=0.0)  # starts the HNSW build
    builders = list(index._builders)
    assert builders
    mem.close()
    assert not any(t.is_alive() for t in builders)  # stopped (or finished), never left running
    part = index._partitions[KEY]
    saved = store(db_path).load(KEY, 384)
    if part.ann is None:  # stopped mid-build: no graph, so no file
        assert saved is None
    else:  # finished before the stop: saved whole
        assert saved is not None and int((saved.ids != "").sum()) == part.n_live
        saved.close()


def test_a_process_exiting_during_a_build_exits_cleanly(db_path: Path, acme: TenantContext) -> None:
    import subprocess
    import sys
    import textwrap

    with Memory.open(db_path, embedder="hashing", config=CONFIG) as mem:
        fill(mem, acme, 3000)
    script = textwrap.dedent(f"""
        from stratamem import Memory, MemoryConfig, TenantContext
        mem = Memory.open({str(db_path)!r}, embedder="hashing", config=MemoryConfig(ann_threshold=300))
        mem.search(TenantContext(tenant_id="acme", principal="u1"), "warm up", identifiers={{"user_id": "u1"}})
        # exits without close() while the HNSW build runs on its background thread
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "terminate called" not in done.stderr
