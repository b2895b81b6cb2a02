"""Snapshots encrypted before upload, on a real SeaweedFS: the bucket holds no plaintext, a restore
decrypts, a wrong or missing key is a coded error, a key rotation re-uploads every partition."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from stratamem import Memory, MemoryError, TenantContext
from stratamem.encryption import EncryptionKey
from stratamem.errors import ErrorCode
from stratamem.persistence import S3Settings, S3Store

from .conftest import contents

KEY = "snapshot test key, long enough"
NEW_KEY = "the key after the rotation, long"
ACME = TenantContext(tenant_id="acme", principal="u1")
SECRETS = ("Vindelicorum", "Pemberthwaite", "ledger-Ochre-913")


def _fill(mem: Memory) -> None:
    for i in range(12):
        mem.add(
            ACME,
            f"note {i}: {SECRETS[0]} met {SECRETS[1]} at the harbour",
            layer="user",
            identifiers={"user_id": "u1"},
            metadata={"ref": SECRETS[2]},
        )


def _bucket_bytes(s3: S3Store) -> list[tuple[str, bytes]]:
    return [(str(o["Key"]), s3.get_bytes(str(o["Key"]))) for o in s3.list("")]


def test_uploaded_objects_hold_no_plaintext_and_restore_decrypts(
    open_mem: Callable[..., Memory], tmp_path: Path, s3_settings: S3Settings, s3: S3Store
) -> None:
    mem = open_mem(tmp_path / "src.duckdb", encryption_key=KEY)
    _fill(mem)
    [report] = mem.configure_snapshots(s3_settings).push("acme")
    assert report.files_written > 0
    objects = _bucket_bytes(s3)
    data_objects = [(k, b) for k, b in objects if "/data/" in k]
    assert data_objects and all(k.endswith(".parquet.enc") for k, _ in data_objects)
    for key, body in objects:
        for needle in SECRETS:
            assert needle.encode() not in body, (key, needle)
        if "/data/" in key:
            assert body.startswith(b"STRATAMEM-ENC1\n") and b"PAR1" not in body[:64]
    manifest = mem.snapshots.latest_manifest("acme")
    assert manifest is not None
    key_ids = {f.key_id for t in manifest.tables for p in t.partitions for f in p.files}
    assert key_ids == {EncryptionKey(KEY).key_id}

    restored = Memory.open_from_snapshot("acme", settings=s3_settings, embedder="hashing", encryption_key=KEY)
    try:
        assert contents(restored, ACME) == contents(mem, ACME)
        assert restored.search(ACME, "Pemberthwaite harbour", identifiers={"user_id": "u1"}, threshold=0.0).results
    finally:
        restored.close()


@pytest.mark.parametrize("key", [None, "some other key that is long"])
def test_restore_without_the_key_is_a_coded_error_and_keeps_the_rows(
    open_mem: Callable[..., Memory], tmp_path: Path, s3_settings: S3Settings, s3: S3Store, key: str | None
) -> None:
    mem = open_mem(tmp_path / "src.duckdb", encryption_key=KEY)
    _fill(mem)
    mem.configure_snapshots(s3_settings).push("acme")
    target = open_mem(tmp_path / "target.duckdb", encryption_key=key)
    target.add(ACME, "a row the failed restore must keep", layer="user", identifiers={"user_id": "u1"})
    with pytest.raises(MemoryError) as err:
        target.configure_snapshots(s3_settings).restore("acme")
    assert err.value.code is ErrorCode.CONFIGURATION_ERROR
    assert err.value.details["reason"] == ("encryption_key_missing" if key is None else "encryption_key_wrong")
    assert [e.content for e in target.export(ACME)] == ["a row the failed restore must keep"]


def test_rotation_rewrites_every_partition_and_previous_keys_restore_old_snapshots(
    open_mem: Callable[..., Memory], tmp_path: Path, s3_settings: S3Settings, s3: S3Store
) -> None:
    mem = open_mem(tmp_path / "a.duckdb", encryption_key=KEY)
    _fill(mem)
    [first] = mem.configure_snapshots(s3_settings).push("acme")
    mem.close()
    # a store with the new key restores the old snapshot (previous key), then pushes the same data:
    # no file of the old key is reused
    mgr_old_then_new = open_mem(tmp_path / "c.duckdb", encryption_key=NEW_KEY).configure_snapshots(
        s3_settings, previous_keys=[KEY]
    )
    mgr_old_then_new.restore("acme")  # an old snapshot restores with the previous key
    [second] = mgr_old_then_new.push("acme")
    assert second.files_reused == 0 and second.files_written == first.files_written
    manifest = mgr_old_then_new.latest_manifest("acme")
    assert manifest is not None
    assert {f.key_id for t in manifest.tables for p in t.partitions for f in p.files} == {EncryptionKey(NEW_KEY).key_id}
    # the old key alone no longer reads the newest snapshot
    only_old = open_mem(tmp_path / "d.duckdb", encryption_key=KEY)
    with pytest.raises(MemoryError) as err:
        only_old.configure_snapshots(s3_settings).restore("acme")
    assert err.value.details["reason"] == "encryption_key_wrong"


def test_plain_snapshots_unchanged_without_a_key(
    open_mem: Callable[..., Memory], tmp_path: Path, s3_settings: S3Settings, s3: S3Store
) -> None:
    mem = open_mem(tmp_path / "plain.duckdb")
    _fill(mem)
    mem.configure_snapshots(s3_settings).push("acme")
    data = [(k, b) for k, b in _bucket_bytes(s3) if "/data/" in k]
    assert data and all(k.endswith(".parquet") and b.startswith(b"PAR1") for k, b in data)
    # an encrypted store still restores an older plain snapshot
    enc = open_mem(tmp_path / "enc.duckdb", encryption_key=KEY)
    enc.configure_snapshots(s3_settings).restore("acme")
    assert contents(enc, ACME) == contents(mem, ACME)


def test_lazy_cold_start_decrypts(
    open_mem: Callable[..., Memory], tmp_path: Path, s3_settings: S3Settings, s3: S3Store
) -> None:
    mem = open_mem(tmp_path / "src.duckdb", encryption_key=KEY)
    _fill(mem)
    mem.configure_snapshots(s3_settings).push("acme")
    restored = Memory.open_from_snapshot(
        "acme",
        settings=s3_settings,
        embedder="hashing",
        encryption_key=KEY,
        lazy=True,
        wait_for="loaded",
        budget_s=60.0,
    )
    try:
        assert contents(restored, ACME) == contents(mem, ACME)
    finally:
        restored.close()
