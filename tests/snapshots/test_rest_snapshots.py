"""Snapshot admin routes against a real S3-compatible server (SeaweedFS): push, list, restore."""

from __future__ import annotations

from collections.abc import Callable

from fastapi.testclient import TestClient

from stratamem import Memory, MemoryError
from stratamem.persistence import S3Settings, S3Store
from stratamem.server.app import create_app
from stratamem.server.keys import create_key
from stratamem.server.settings import ServerSettings


def h(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def test_push_list_restore_through_rest(
    mem_factory: Callable[[str], Memory], s3_settings: S3Settings, s3: S3Store
) -> None:
    mem = mem_factory("rest")
    mem.configure_snapshots(s3_settings)
    admin = create_key(mem.engine.provider, "acme", "admin").key
    writer = create_key(mem.engine.provider, "acme", "writer").key
    with TestClient(create_app(mem, ServerSettings(mcp_enabled=False, snapshots_enabled=False))) as client:
        ids = [
            client.post(
                "/v1/memories",
                headers=h(writer),
                json={"content": f"fact {i}", "layer": "user", "identifiers": {"userId": "u1"}},
            ).json()["memory"]["id"]
            for i in range(3)
        ]
        denied = client.post("/v1/snapshots", headers=h(writer))
        assert denied.status_code == 403 and denied.json()["code"] == "FORBIDDEN"
        pushed = client.post("/v1/snapshots", headers=h(admin))
        assert pushed.status_code == 201, pushed.text
        report = pushed.json()
        assert report["tenant_id"] == "acme" and report["published"] is True and report["rows"] >= 3
        listed = client.get("/v1/snapshots", headers=h(admin)).json()
        assert [s["snapshot_id"] for s in listed] == [report["snapshot_id"]]

        assert client.delete(f"/v1/memories/{ids[0]}", headers=h(writer)).json()["success"] is True
        restored = client.post("/v1/snapshots/restore", headers=h(admin), json={})
        assert restored.status_code == 200, restored.text
        assert restored.json()["snapshot_id"] == report["snapshot_id"]
        assert client.get(f"/v1/memories/{ids[0]}", headers=h(writer)).status_code == 200

        # the same error code as the SDK for a snapshot that does not exist
        missing = client.post("/v1/snapshots/restore", headers=h(admin), json={"snapshotId": "nope"})
        try:
            mem.snapshots.pull("acme", snapshot_id="nope")
        except MemoryError as exc:
            assert missing.json()["code"] == exc.code.value, missing.text
        else:
            raise AssertionError("the SDK restored a snapshot that does not exist")
