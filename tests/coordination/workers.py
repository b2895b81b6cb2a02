"""Process entry points for the coordination tests (imported by ``spawn``ed children)."""

from __future__ import annotations

import json
from pathlib import Path

import redis

from stratamem import Memory, MemoryError, TenantContext
from stratamem.coordination import QueuedWriter, WriteCoordinator


def writer(db: str, redis_url: str, prefix: str, max_writes: int | None, lock_ttl: float) -> None:
    client = redis.Redis.from_url(redis_url)
    coord = WriteCoordinator(lambda: Memory.open(db, embedder="hashing"), client, prefix, lock_ttl=lock_ttl, poll=0.2)
    coord.start(timeout=30)
    coord.run(max_writes=max_writes)


def client(redis_url: str, prefix: str, n: int, count: int, out: str) -> None:
    qw = QueuedWriter(redis.Redis.from_url(redis_url), prefix, timeout=60)
    ctx = TenantContext(tenant_id="acme", principal=f"proc-{n}")
    ids: list[str] = []
    errors: list[str] = []
    for i in range(count):
        try:
            ids.append(
                qw.add(
                    ctx,
                    content=f"process {n} write {i}",
                    layer="user",
                    identifiers={"user_id": "u1"},
                    metadata={"proc": n, "i": i},
                ).memory.id
            )
        except MemoryError as exc:
            errors.append(f"{exc.code.value}: {exc.message}")
    Path(out).write_text(json.dumps({"ids": ids, "errors": errors}))
