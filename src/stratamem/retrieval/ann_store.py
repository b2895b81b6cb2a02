"""Saved HNSW graphs of the search index's partitions, beside the DuckDB file.

Building the HNSW graph of a 100k-row partition takes about two minutes on one core; reading a
saved one takes a fraction of a second. ``AnnStore`` keeps, for each partition whose graph was
built, one file ``{root}/{sha256(tenant)[:16]}/{sha256(key)[:32]}.npz`` holding:

* ``key``: the (tenant, layer, scope) partition key, checked on load (never trust a file name);
* ``ids``: the memory id of every slot (``""`` for an empty slot), which is the graph's key space;
* ``hashes``: a 64-bit hash of each slot's vector bytes (``vector_hashes``);
* ``graph``: the usearch index serialised with ``Index.save()`` (one file, replaced atomically).

The file is a cache, never the truth: rows always come from the database, a slot whose id or vector
hash differs from the database's is taken out of the graph (and the current vector put in), and
every candidate is re-scored exactly from the database's vectors. So a stale, foreign or corrupt file
can cost recall or a rebuild, never a wrong, deleted or other-tenant result.

Deleted rows: a graph file holds vectors. When a row leaves a partition (delete, purge, new content,
moved scope), the partition's file is removed at once, before the write returns; a tenant whose
rows are rewritten outside the index (snapshot restore) loses all its files. Files are written only
from graphs that hold no removed vector.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

PartitionKey = tuple[str, str, str]
FORMAT_VERSION = 1
_HASH_SEED = 0x5EED_57A7A


def _digest(value: str, n: int) -> str:
    return hashlib.sha256(value.encode()).hexdigest()[:n]


def vector_hashes(vectors: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each row's float32 bytes: ``Σ word_i · m_i mod 2^64`` over the row's 64-bit
    words with fixed odd multipliers (one integer mat-vec; any single changed word changes it)."""
    rows = np.ascontiguousarray(vectors, dtype=np.float32)
    if rows.shape[1] % 2:
        rows = np.concatenate([rows, np.zeros((len(rows), 1), dtype=np.float32)], axis=1)
    words = rows.view(np.uint64)
    mult = np.random.default_rng(_HASH_SEED).integers(1, 2**63, size=words.shape[1], dtype=np.uint64) | np.uint64(1)
    return np.asarray(words @ mult, dtype=np.uint64)


@dataclass
class SavedGraph:
    """A saved graph's slot table; the graph itself is read later (``graph()``, background build)
    from the file as it was opened, even if it has since been replaced or removed."""

    ids: np.ndarray  # str per slot ("" = empty)
    hashes: np.ndarray  # uint64 per slot
    params: dict[str, int]
    data: Any  # the open NpzFile

    def graph(self) -> bytes:
        try:
            return bytes(self.data["graph"].tobytes())
        finally:
            self.close()

    def close(self) -> None:
        self.data.close()


class AnnStore:
    """The folder of saved graphs of one database (``{database}.index``)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def path(self, key: PartitionKey) -> Path:
        return self.root / _digest(key[0], 16) / f"{_digest(chr(0).join(key), 32)}.npz"

    def load(self, key: PartitionKey, dims: int) -> SavedGraph | None:
        """The saved graph of ``key``, or None (missing, another key, other dimensions, unreadable)."""
        path = self.path(key)
        if not path.exists():
            return None
        data = None
        try:
            data = np.load(path, allow_pickle=False)
            if int(data["version"]) == FORMAT_VERSION and tuple(str(v) for v in data["key"]) == key:
                params = {str(k): int(v) for k, v in zip(data["param_names"], data["param_values"], strict=True)}
                ids, hashes = data["ids"], data["hashes"]
                if params.get("dims") == dims and len(ids) == len(hashes):
                    return SavedGraph(ids=ids, hashes=hashes, params=params, data=data)
        except Exception:  # a cache: unreadable means absent
            log.warning("search index: ignoring unreadable saved graph %s", path, exc_info=True)
        if data is not None:
            data.close()
        return None

    def save(
        self, key: PartitionKey, ids: list[str | None], hashes: np.ndarray, graph: bytes, params: dict[str, int]
    ) -> None:
        """Write the graph file atomically (temporary file, fsync, rename)."""
        path = self.path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        buf = io.BytesIO()
        np.savez(
            buf,
            version=np.int64(FORMAT_VERSION),
            key=np.array(key),
            ids=np.array([i or "" for i in ids]),
            hashes=np.asarray(hashes, dtype=np.uint64),
            graph=np.frombuffer(graph, dtype=np.uint8),
            param_names=np.array(list(params)),
            param_values=np.array(list(params.values()), dtype=np.int64),
        )
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".npz")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(buf.getbuffer())
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def discard(self, key: PartitionKey) -> None:
        self.path(key).unlink(missing_ok=True)

    def discard_tenant(self, tenant_id: str) -> None:
        shutil.rmtree(self.root / _digest(tenant_id, 16), ignore_errors=True)

    def discard_all(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def files(self) -> list[Path]:
        return sorted(self.root.glob("*/*.npz")) if self.root.exists() else []

    def files_of(self, tenant_id: str) -> list[Path]:
        folder = self.root / _digest(tenant_id, 16)
        return sorted(folder.glob("*.npz")) if folder.exists() else []
