from __future__ import annotations

import threading
from pathlib import Path

from stratamem.telemetry import AuditLog, AuditRecord


def test_audit_writes_json_lines_and_ring_buffer(tmp_path: Path) -> None:
    path = tmp_path / "audit" / "audit.jsonl"
    audit = AuditLog(path, keep=3)
    audit.record(tenant_id="acme", principal="u1", action="add", memory_ids=["m1"], layer="user")
    audit.record(AuditRecord(tenant_id="acme", action="get", outcome="denied", code="FORBIDDEN", cross_tenant=True))
    audit.record(tenant_id="globex", action="delete", memory_ids=["m2"])

    on_disk = AuditLog.read_file(path)
    assert [r.action for r in on_disk] == ["add", "get", "delete"]
    assert on_disk[1].cross_tenant is True and on_disk[1].outcome == "denied"
    assert [r.action for r in audit.recent(tenant_id="acme")] == ["add", "get"]
    assert [r.memory_ids for r in audit.recent(action="delete")] == [["m2"]]

    audit.record(tenant_id="acme", action="update")  # ring buffer keeps the newest 3
    assert [r.action for r in audit.recent()] == ["get", "delete", "update"]
    assert len(AuditLog.read_file(path)) == 4


def test_audit_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    audit = AuditLog(path, keep=10_000)

    def writer(n: int) -> None:
        for i in range(200):
            audit.record(tenant_id=f"t{n}", action="add", memory_ids=[f"{n}-{i}"])

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    records = AuditLog.read_file(path)
    assert len(records) == 800
    assert len({r.memory_ids[0] for r in records}) == 800


def test_unwritable_audit_file_does_not_raise(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    audit = AuditLog(blocker / "audit.jsonl")  # parent is a file: cannot be created
    rec = audit.record(tenant_id="acme", action="add")
    assert audit.recent() == [rec]
