"""Redis write coordination against a real Redis and real processes (SPEC R-COORD)."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import redis
from prometheus_client import REGISTRY

from stratamem import ErrorCode, Memory, MemoryError, TenantContext
from stratamem.coordination import LockTimeout, QueuedWriter, RedisLock, WriteCoordinator

from . import workers

SPAWN = mp.get_context("spawn")
ACME = TenantContext(tenant_id="acme", principal="u1")
U1 = {"user_id": "u1"}


def test_four_processes_800_writes_through_one_writer(tmp_path: Path, redis_url: str, prefix: str) -> None:
    db = str(tmp_path / "shared.duckdb")
    writer = SPAWN.Process(target=workers.writer, args=(db, redis_url, prefix, 800, 5.0))
    writer.start()
    outs = [tmp_path / f"client{n}.json" for n in range(4)]
    clients = [SPAWN.Process(target=workers.client, args=(redis_url, prefix, n, 200, str(outs[n]))) for n in range(4)]
    for c in clients:
        c.start()
    for c in clients:
        c.join(timeout=240)
        assert c.exitcode == 0
    writer.join(timeout=60)
    assert writer.exitcode == 0
    results = [json.loads(o.read_text()) for o in outs]
    assert [r["errors"] for r in results] == [[], [], [], []]
    returned = [i for r in results for i in r["ids"]]
    assert len(returned) == len(set(returned)) == 800
    with Memory.open(db, embedder="hashing") as mem:  # the writer exited: the file is free again
        stored: list[str] = []
        contents: list[str] = []
        cursor = None
        while True:
            page = mem.list(ACME, layer="user", identifiers=U1, limit=100, cursor=cursor)
            stored += [m.id for m in page.memories]
            contents += [m.content for m in page.memories]
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
    assert page.total_count == 800
    assert sorted(stored) == sorted(returned)
    assert len(set(contents)) == 800 == len(contents)  # no write applied twice
    assert {f"process {n} write {i}" for n in range(4) for i in range(200)} == set(contents)


def test_a_dead_writer_loses_the_lock_after_its_ttl(
    tmp_path: Path, redis_url: str, prefix: str, rclient: redis.Redis
) -> None:
    db = str(tmp_path / "takeover.duckdb")
    first = SPAWN.Process(target=workers.writer, args=(db, redis_url, prefix, None, 1.0))
    first.start()
    lock_key = f"{prefix}:writer"
    deadline = time.monotonic() + 60
    while not rclient.exists(lock_key):
        assert time.monotonic() < deadline and first.is_alive()
        time.sleep(0.05)
    second = WriteCoordinator(lambda: Memory.open(db, embedder="hashing"), rclient, prefix, lock_ttl=1.0, poll=0.1)
    with pytest.raises(LockTimeout) as err:  # the live writer keeps extending its lock
        second.start(timeout=1.5)
    assert err.value.code is ErrorCode.PROVIDER_ERROR and err.value.retryable
    assert "within 1.5 s" in err.value.message
    first.kill()  # SIGKILL: no release, no cleanup
    first.join()
    killed_at = time.monotonic()
    second.start(timeout=10)
    took = time.monotonic() - killed_at
    assert took <= 1.0 + 1.0  # the TTL (1 s) plus backoff slack
    assert second.lock.owned()
    # the new writer serves the queue (and owns the DuckDB file the dead one held)
    serve = threading.Thread(target=second.run, kwargs={"max_writes": 1})
    serve.start()
    out = QueuedWriter(rclient, prefix, timeout=20).add(ACME, content="after takeover", layer="user", identifiers=U1)
    serve.join(timeout=20)
    assert not serve.is_alive()
    with Memory.open(db, embedder="hashing") as mem:
        got = mem.get(ACME, out.memory.id)
    assert got is not None and got.content == "after takeover"
    assert not rclient.exists(lock_key)  # released on close


def test_lock_release_is_compare_and_delete(rclient: redis.Redis, prefix: str) -> None:
    a = RedisLock(rclient, f"{prefix}:lock", ttl=0.2, timeout=1)
    a.acquire()
    assert a.token and rclient.get(f"{prefix}:lock") == a.token.encode()
    time.sleep(0.35)  # a's TTL passes
    b = RedisLock(rclient, f"{prefix}:lock", ttl=5, timeout=1)
    b.acquire()
    a.release()  # must not delete b's lock
    assert b.owned() and rclient.get(f"{prefix}:lock") == (b.token or "").encode()
    assert a.extend() is False
    contended_before = (
        REGISTRY.get_sample_value("stratamem_coord_lock_contention_total", {"lock": f"{prefix}:lock"}) or 0.0
    )
    c = RedisLock(rclient, f"{prefix}:lock", ttl=5, timeout=0.3, backoff_initial=0.01)
    start = time.monotonic()
    with pytest.raises(LockTimeout):
        c.acquire()
    assert 0.3 <= time.monotonic() - start < 1.5
    after = REGISTRY.get_sample_value("stratamem_coord_lock_contention_total", {"lock": f"{prefix}:lock"})
    assert after is not None and after - contended_before >= 3  # several backed-off attempts
    b.release()
    assert not rclient.exists(f"{prefix}:lock")


def test_results_errors_and_order_round_trip(tmp_path: Path, rclient: redis.Redis, prefix: str) -> None:
    mem = Memory.open(tmp_path / "rt.duckdb", embedder="hashing")
    coord = WriteCoordinator(mem, rclient, prefix, lock_ttl=5, poll=0.05)
    coord.start()
    serve = threading.Thread(target=coord.run)
    serve.start()
    try:
        qw = QueuedWriter(rclient, prefix, timeout=20)
        added = qw.add(ACME, content="first", layer="user", identifiers=U1, metadata={"tags": ["x"]}, importance=0.7)
        assert added.embedding_generated is True and added.memory.importance == pytest.approx(0.7)
        upd = qw.update(ACME, added.memory.id, content="first, edited")
        assert upd.memory.version == 2
        with pytest.raises(MemoryError) as err:  # the writer's MemoryError reaches the caller intact
            qw.update(ACME, added.memory.id, content="stale", if_match="not-the-etag")
        assert err.value.code is ErrorCode.CONFLICT
        conflict_id = err.value.details["conflict_id"]  # seed 001: the rejected content is kept for review
        with pytest.raises(MemoryError) as bad:
            qw.add(ACME, content="x", layer="nope", identifiers=U1)
        assert bad.value.code is ErrorCode.INVALID_LAYER
        bulk = qw.bulk_add(ACME, [{"content": f"b{i}", "layer": "user", "identifiers": U1} for i in range(3)])
        ids = [r.memory.id for r in bulk.results]
        assert qw.bulk_delete(ACME, ids).deleted == 3
        assert qw.delete(ACME, added.memory.id).success
        left = mem.get(ACME, conflict_id)
        assert left is not None and left.content == "stale" and left.provenance.conflict_of == added.memory.id
        assert mem.stats(ACME).total == 1
        waited = REGISTRY.get_sample_value(
            "stratamem_coord_write_wait_seconds_count", {"queue": prefix, "operation": "add"}
        )
        assert waited is not None and waited >= 2
    finally:
        coord.stop()
        serve.join(timeout=10)
        mem.close()


def test_a_timed_out_write_is_never_applied_later(tmp_path: Path, rclient: redis.Redis, prefix: str) -> None:
    qw = QueuedWriter(rclient, prefix, timeout=0.3)
    before = REGISTRY.get_sample_value("stratamem_coord_timeouts_total", {"kind": "write"}) or 0.0
    with pytest.raises(MemoryError) as err:  # no writer yet
        qw.add(ACME, content="too late", layer="user", identifiers=U1)
    assert err.value.code is ErrorCode.PROVIDER_ERROR and err.value.retryable
    assert "not applied" in err.value.message
    assert REGISTRY.get_sample_value("stratamem_coord_timeouts_total", {"kind": "write"}) == before + 1
    assert qw.depth() == 1
    with Memory.open(tmp_path / "late.duckdb", embedder="hashing") as mem:
        coord = WriteCoordinator(mem, rclient, prefix, lock_ttl=5)
        coord.start()
        assert coord.step(0.5) is True  # taken from the queue and dropped: its deadline passed
        coord.close()
        assert mem.stats(ACME).total == 0
    assert qw.depth() == 0


def test_cli_writer_serves_the_queue(tmp_path: Path, redis_url: str, prefix: str, rclient: redis.Redis) -> None:
    db = str(tmp_path / "cli.duckdb")
    env = {
        **os.environ,
        "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src"),
        "STRATAMEM_EMBEDDER": "hashing",
    }
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "stratamem",
            "writer",
            "--db",
            db,
            "--redis",
            redis_url,
            "--queue",
            prefix,
            "--lock-ttl",
            "2",
        ],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out = QueuedWriter(rclient, prefix, timeout=60).add(
            ACME, content="via the CLI writer", layer="user", identifiers=U1
        )
    finally:
        proc.terminate()
        _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 0, stderr
    assert "writer ready" in stderr
    with Memory.open(db, embedder="hashing") as mem:
        got = mem.get(ACME, out.memory.id)
    assert got is not None and got.content == "via the CLI writer"
    assert not rclient.exists(f"{prefix}:writer")


def test_a_malformed_queue_entry_does_not_stop_the_writer(tmp_path: Path, rclient: redis.Redis, prefix: str) -> None:
    with Memory.open(tmp_path / "junk.duckdb", embedder="hashing") as mem:
        coord = WriteCoordinator(mem, rclient, prefix, lock_ttl=5)
        coord.start()
        rclient.lpush(f"{prefix}:queue", b"\xff not json", b'["a list"]')
        assert coord.step(0.2) is True and coord.step(0.2) is True  # both dropped
        assert rclient.llen(f"{prefix}:queue") == 0 and rclient.llen(f"{prefix}:processing") == 0
        coord.close()
