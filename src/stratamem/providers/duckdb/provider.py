"""The DuckDB provider: the parts of ``providers/duckdb/`` assembled into one class."""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING

import duckdb

from ...encryption import EncryptionKey
from ...retrieval.duckdb_lexical import DuckDBLexicalIndex
from ..base import (
    StoreInfo,
)
from ..contracts import GovernanceStore, GraphBackend, KeyStore, LifecycleStore, MemoryStore, SnapshotSource
from .cache import EmbeddingCacheMixin
from .database import CHECKPOINT_THRESHOLD, _Database
from .governance import GovernanceMixin
from .keys import KeysMixin
from .lifecycle import LifecycleMixin
from .memories import MemoriesMixin
from .rowcopy import RowCopyMixin
from .store import StoreMixin

MAX_CONTENT_LENGTH = 32_000


class DuckDBProvider(
    StoreMixin, MemoriesMixin, LifecycleMixin, EmbeddingCacheMixin, KeysMixin, GovernanceMixin, RowCopyMixin
):
    name = "duckdb"
    version = duckdb.__version__

    def __init__(
        self,
        path: str | os.PathLike[str] = "stratamem.duckdb",
        *,
        max_content_length: int = MAX_CONTENT_LENGTH,
        read_batch: int = 512,
        checkpoint_threshold: str = CHECKPOINT_THRESHOLD,
        defer_appends: bool = True,
        encryption_key: EncryptionKey | str | None = None,
    ) -> None:
        super().__init__()
        self.path = str(path)
        #: The file is encrypted with this key (DuckDB database encryption); None: a plain file. The
        #: environment is not read here: ``Memory.open`` resolves ``STRATAMEM_ENCRYPTION_KEY``.
        self.encryption_key = EncryptionKey(encryption_key) if isinstance(encryption_key, str) else encryption_key
        #: An operation's bookkeeping appends are written by a worker right after it returns (True) or
        #: before it returns (False); either way every read and write of the store sees them.
        self.defer_appends = defer_appends
        self.checkpoint_threshold = checkpoint_threshold
        self.max_content_length = max_content_length
        self._read_batch = read_batch
        self._db: _Database | None = None
        self._info: StoreInfo | None = None
        #: Serve searches from the in-process index (retrieval/search_index.py); False = SQL scan.
        self.use_search_index = True
        self._index_settings: dict[str, int] = {}
        self.write_hooks.append(DuckDBLexicalIndex())  # hybrid search: postings in the write transaction
        self._groups = threading.local()  # per thread: appends queued by ``grouped_appends``


if TYPE_CHECKING:  # the written contracts this provider meets, checked by mypy

    def _meets_contracts(
        p: DuckDBProvider,
    ) -> tuple[MemoryStore, LifecycleStore, KeyStore, GovernanceStore, GraphBackend, SnapshotSource]:
        return p, p, p, p, p, p
