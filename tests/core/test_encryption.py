"""Encryption at rest of the embedded store: a real DuckDB file encrypted with DuckDB's database
encryption, opened without / with a wrong key, scanned for plaintext, and rotated by the CLI."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from stratamem import Memory, TenantContext
from stratamem.encryption import EncryptionKey, key_from_env
from stratamem.errors import ErrorCode, MemoryError

KEY = "first key of the tests, long enough"
NEW_KEY = "second key of the tests, also long"
SECRET_CONTENT = "Xylophonist Quentavius keeps bees"
SECRET_META = "Borgravian-ledger-77"
CTX = TenantContext(tenant_id="acme", principal="u1")
USER = {"user_id": "u1"}


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _store_bytes(path: Path) -> bytes:
    """Every file the store keeps on disk: the database, its WAL, saved index graphs."""
    out = b""
    for p in sorted(path.parent.rglob("*")):
        if p.is_file() and p.name.startswith(path.name):
            out += p.read_bytes()
    return out


def _fill(path: Path, key: str | None) -> Memory:
    mem = Memory.open(path, embedder="hashing", encryption_key=key)
    mem.add(CTX, SECRET_CONTENT, layer="user", identifiers=USER, metadata={"ledger": SECRET_META})
    mem.add(CTX, "The team ships on Fridays", layer="team", identifiers={"team_id": "t1"})
    return mem


def test_encrypted_file_holds_no_plaintext_and_reopens_with_the_key(tmp_path: Path) -> None:
    path = tmp_path / "enc.duckdb"
    mem = _fill(path, KEY)
    # while open: the WAL holds the recent writes, encrypted too
    assert SECRET_CONTENT.encode() not in _store_bytes(path)
    mem.close()
    data = _store_bytes(path)
    assert len(data) > 4096
    for needle in (SECRET_CONTENT, "Quentavius", SECRET_META, "Fridays", "acme"):
        assert needle.encode() not in data, needle
    with Memory.open(path, embedder="hashing", encryption_key=KEY) as mem:
        assert mem.engine.provider._ann_store() is None  # type: ignore[attr-defined]  # no plain HNSW files
        hits = mem.search(CTX, "Quentavius bees", identifiers=USER, threshold=0.0).results
        assert hits and hits[0].memory.content == SECRET_CONTENT
        assert hits[0].memory.metadata == {"ledger": SECRET_META}


def test_plain_store_unchanged_without_a_key(tmp_path: Path) -> None:
    path = tmp_path / "plain.duckdb"
    _fill(path, None).close()
    assert SECRET_CONTENT.encode() in _store_bytes(path)  # no key: the file is plain, as before
    with Memory.open(path, embedder="hashing") as mem:
        assert mem.encryption_key is None
        assert mem.list(CTX, "user", identifiers=USER).total_count == 1


@pytest.mark.parametrize("key", [None, "a wrong key that is long enough"])
def test_missing_or_wrong_key_is_a_coded_error_and_touches_nothing(tmp_path: Path, key: str | None) -> None:
    path = tmp_path / "enc.duckdb"
    _fill(path, KEY).close()
    before = _digest(path)
    with pytest.raises(MemoryError) as err:
        Memory.open(path, embedder="hashing", encryption_key=key)
    assert err.value.code is ErrorCode.CONFIGURATION_ERROR
    assert err.value.details["reason"] == ("encryption_key_missing" if key is None else "encryption_key_wrong")
    assert "Traceback" not in err.value.message and KEY not in str(err.value.to_dict())
    assert _digest(path) == before
    assert not Path(f"{path}.wal").exists()
    with Memory.open(path, embedder="hashing", encryption_key=KEY) as mem:  # still intact
        assert mem.list(CTX, "user", identifiers=USER).total_count == 1


def test_a_key_on_a_plain_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "plain.duckdb"
    _fill(path, None).close()
    before = _digest(path)
    with pytest.raises(MemoryError) as err:
        Memory.open(path, embedder="hashing", encryption_key=KEY)
    assert err.value.details["reason"] == "store_not_encrypted"
    assert _digest(path) == before


def test_second_provider_in_the_process_must_bring_the_same_key(tmp_path: Path) -> None:
    path = tmp_path / "enc.duckdb"
    with _fill(path, KEY):
        with pytest.raises(MemoryError) as err:
            Memory.open(path, embedder="hashing", encryption_key="yet another key, quite long")
        assert err.value.details["reason"] == "encryption_key_wrong"
        with pytest.raises(MemoryError) as err:
            Memory.open(path, embedder="hashing")
        assert err.value.details["reason"] == "encryption_key_missing"
        with Memory.open(path, embedder="hashing", encryption_key=KEY) as again:
            assert again.list(CTX, "user", identifiers=USER).total_count == 1


def test_key_from_environment_and_key_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key_file = tmp_path / "key"
    key_file.write_text(KEY + "\n")
    assert key_from_env({"STRATAMEM_ENCRYPTION_KEY_FILE": str(key_file)}) == EncryptionKey(KEY)
    assert key_from_env({"STRATAMEM_ENCRYPTION_KEY": KEY}) == EncryptionKey(KEY)
    assert key_from_env({}) is None
    with pytest.raises(MemoryError) as err:
        key_from_env({"STRATAMEM_ENCRYPTION_KEY": KEY, "STRATAMEM_ENCRYPTION_KEY_FILE": str(key_file)})
    assert err.value.details["reason"] == "encryption_key_ambiguous"
    with pytest.raises(MemoryError) as err:
        EncryptionKey("short")
    assert err.value.details["reason"] == "encryption_key_too_short"
    assert KEY not in repr(EncryptionKey(KEY))
    monkeypatch.setenv("STRATAMEM_ENCRYPTION_KEY_FILE", str(key_file))
    path = tmp_path / "env.duckdb"
    _fill(path, None).close()  # None: the environment's key
    assert SECRET_CONTENT.encode() not in _store_bytes(path)
    monkeypatch.delenv("STRATAMEM_ENCRYPTION_KEY_FILE")
    with pytest.raises(MemoryError):
        Memory.open(path, embedder="hashing")


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("STRATAMEM_ENCRYPTION")}
    return subprocess.run(
        [sys.executable, "-m", "stratamem", *args],
        capture_output=True,
        text=True,
        env={**base, **env, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")},
        timeout=300,
        check=False,
    )


def test_rotation_keeps_every_row_and_the_old_key_stops_working(tmp_path: Path) -> None:
    path = tmp_path / "rot.duckdb"
    mem = _fill(path, KEY)
    mem.add(CTX, "Another private note about Ulmbridge", layer="user", identifiers=USER)
    before = sorted((e.id, e.content, e.etag) for e in mem.export(CTX))
    mem.close()
    new_file = tmp_path / "new.key"
    new_file.write_text(NEW_KEY + "\n")
    out = _cli(
        "encryption",
        "rotate",
        "--db",
        str(path),
        "--new-key-file",
        str(new_file),
        "--json",
        env={"STRATAMEM_ENCRYPTION_KEY": KEY},
    )
    assert out.returncode == 0, out.stderr
    assert EncryptionKey(NEW_KEY).key_id in out.stdout and NEW_KEY not in out.stdout
    assert not list(tmp_path.glob("*.rotating*"))
    with pytest.raises(MemoryError) as err:
        Memory.open(path, embedder="hashing", encryption_key=KEY)
    assert err.value.details["reason"] == "encryption_key_wrong"
    with Memory.open(path, embedder="hashing", encryption_key=NEW_KEY) as mem:
        assert sorted((e.id, e.content, e.etag) for e in mem.export(CTX)) == before
        assert mem.search(CTX, "Ulmbridge", identifiers=USER, threshold=0.0).results
        mem.add(CTX, "written after the rotation", layer="user", identifiers=USER)  # indexes and sequences came along
    assert b"Ulmbridge" not in _store_bytes(path)


def test_rotation_with_a_wrong_current_key_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "rot.duckdb"
    _fill(path, KEY).close()
    before = _digest(path)
    out = _cli(
        "encryption",
        "rotate",
        "--db",
        str(path),
        env={"STRATAMEM_ENCRYPTION_KEY": "not the key of this file at all", "STRATAMEM_NEW_ENCRYPTION_KEY": NEW_KEY},
    )
    assert out.returncode == 2
    assert out.stderr.startswith("error CONFIGURATION_ERROR:") and "Traceback" not in out.stderr
    assert _digest(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rot.duckdb"]


def test_encrypt_a_plain_store_then_decrypt_it(tmp_path: Path) -> None:
    path = tmp_path / "plain.duckdb"
    _fill(path, None).close()
    out = _cli("encryption", "rotate", "--db", str(path), "--from-plaintext", env={"STRATAMEM_NEW_ENCRYPTION_KEY": KEY})
    assert out.returncode == 0, out.stderr
    assert SECRET_CONTENT.encode() not in path.read_bytes()
    with Memory.open(path, embedder="hashing", encryption_key=KEY) as mem:
        assert mem.list(CTX, "user", identifiers=USER).total_count == 1
    out = _cli("encryption", "rotate", "--db", str(path), "--to-plaintext", env={"STRATAMEM_ENCRYPTION_KEY": KEY})
    assert out.returncode == 0, out.stderr
    with Memory.open(path, embedder="hashing") as mem:
        assert mem.list(CTX, "user", identifiers=USER).total_count == 1


def test_generate_key_and_cli_error_without_key(tmp_path: Path) -> None:
    out = _cli("encryption", "generate-key", env={})
    assert out.returncode == 0 and len(out.stdout.strip()) >= 40
    path = tmp_path / "enc.duckdb"
    _fill(path, KEY).close()
    out = _cli("list", "--db", str(path), "-t", "acme", "--embedder", "hashing", env={})
    assert out.returncode == 2
    assert out.stderr.startswith("error CONFIGURATION_ERROR:") and "no encryption key" in out.stderr


def test_envelope_round_trip_and_tampering(tmp_path: Path) -> None:
    from stratamem.encryption import decrypt_file, encrypt_file, is_encrypted

    key = EncryptionKey(KEY)
    for size in (0, 1, (1 << 20), (5 << 19) + 7):  # empty, tiny, exactly one chunk, several chunks
        src, sealed, out = tmp_path / f"p{size}", tmp_path / f"s{size}", tmp_path / f"o{size}"
        src.write_bytes(os.urandom(size))
        encrypt_file(src, sealed, key)
        assert is_encrypted(sealed) and not is_encrypted(src)
        decrypt_file(sealed, out, [EncryptionKey(NEW_KEY), key])
        assert out.read_bytes() == src.read_bytes()
    data = sealed.read_bytes()
    # cut mid-chunk, cut at a chunk boundary (the last chunk dropped), cut one byte, one bit flipped
    for bad in (
        data[: -(1 << 20)],
        data[: -((1 << 19) + 7 + 16)],
        data[:-1],
        data[:-20] + bytes([data[-20] ^ 1]) + data[-19:],
    ):
        sealed.write_bytes(bad)
        with pytest.raises(MemoryError) as err:
            decrypt_file(sealed, out, [key])
        assert err.value.details["reason"] == "corrupt"
        assert not out.exists()
    sealed.write_bytes(data)
    with pytest.raises(MemoryError) as err:
        decrypt_file(sealed, out, [EncryptionKey(NEW_KEY)])
    assert err.value.details["reason"] == "encryption_key_wrong"
    with pytest.raises(MemoryError) as err:
        decrypt_file(sealed, out, [])
    assert err.value.details["reason"] == "encryption_key_missing"
