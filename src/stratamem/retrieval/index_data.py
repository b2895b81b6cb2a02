"""Data of the in-process search index: partition keys, defaults, loaded rows, staged changes and
the inverted index (postings) of a partition. See :mod:`stratamem.retrieval.search_index`."""

from __future__ import annotations

import copy
import inspect
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from ..model import MemoryEntry

PartitionKey = tuple[str, str, str]  # (tenant_id, layer, scope key)

#: Default size (live rows) above which a partition is served by HNSW.
DEFAULT_ANN_THRESHOLD = 20_000
#: Default cap of mirrored rows over all partitions (least recently searched evicted first).
DEFAULT_MAX_ROWS = 2_000_000
_INITIAL_CAPACITY = 64
#: Lexical candidates re-scored in an ANN search, at least (the best ``lex`` first).
_LEXICAL_CANDIDATES = 200
#: HNSW search expansion grows with the partition beyond this size (``search_expansion``).
EXPANSION_REFERENCE_ROWS = 100_000
EXPANSION_GROWTH = 0.65
_EXPANSION_MAX = 4096


def search_expansion(base: int, rows: int, reference: int = EXPANSION_REFERENCE_ROWS) -> int:
    """HNSW search expansion for a partition of ``rows``: ``base`` up to ``reference`` rows (100k),
    then ``base · (rows / reference) ** 0.65`` (rounded up to a multiple of 32).

    Measured by ``benchmarks/ann_sweep.py`` on all-MiniLM-L6-v2 embeddings of ``benchmarks/sentences.py``
    (i8 graph, connectivity 32, expansion 128 on add; dense recall@10 of 64 re-scored candidates
    against the exact scan, 600 queries): at 100k expansion 192 gives 0.975; at 300k
    192 gives 0.946, 416 0.977; at 1M 192 gives 0.880, 512 0.949, 768 0.963, 864 0.970
    (latencies in ``benchmarks/RESULTS.md``). The rule gives 192, 416 and 864 for those sizes."""
    if rows <= reference:
        return base
    grown = base * (rows / reference) ** EXPANSION_GROWTH
    return int(min(_EXPANSION_MAX, max(base, 32 * math.ceil(grown / 32))))


def _json_copy(value: Any) -> Any:
    """A deep copy of JSON data (what metadata holds: it is checked and stored as JSON), several
    times cheaper than ``copy.deepcopy``; anything else falls back to it."""
    if isinstance(value, dict):
        return {k: _json_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_copy(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return copy.deepcopy(value)


def _private_copy(entry: MemoryEntry) -> MemoryEntry:
    """A copy the caller may mutate without touching the mirror: the mutable parts (metadata,
    identifiers, provenance) are copied, the rest is immutable (a third of a full deep copy)."""
    prov = entry.provenance
    # provenance holds strings and numbers, except a list of ids and any extra (JSON) fields
    prov = (
        prov.model_copy(deep=True)
        if prov.compacted_from_ids is not None or prov.__pydantic_extra__
        else prov.model_copy()
    )
    return entry.model_copy(
        update={
            "metadata": _json_copy(entry.metadata),
            "identifiers": entry.identifiers.model_copy(),
            "provenance": prov,
        }
    )


def _until(stop: threading.Event) -> Callable[[int, int], bool]:
    """A usearch progress callback that aborts the operation once ``stop`` is set. usearch checks
    the callback's annotations against ``(int, int) -> bool``, so the signature is set explicitly
    (this module's annotations are strings)."""

    def progress(done: int, total: int) -> bool:
        return not stop.is_set()

    param = inspect.Parameter
    setattr(  # noqa: B010
        progress,
        "__signature__",
        inspect.Signature(
            [
                param("done", param.POSITIONAL_OR_KEYWORD, annotation=int),
                param("total", param.POSITIONAL_OR_KEYWORD, annotation=int),
            ],
            return_annotation=bool,
        ),
    )
    return progress


def _epoch(value: datetime | None) -> float:
    return math.inf if value is None else value.timestamp()


@dataclass
class LoadedPostings:
    """A partition's stored postings (the database's lexical index), column-wise."""

    rows: np.ndarray  # int64: the row (position in ``LoadedRows``) of each posting
    terms: np.ndarray  # int64: index into ``vocab``
    vocab: list[str]
    tf: np.ndarray  # float64
    lengths: np.ndarray  # int32 per row: document length in terms (0 = no terms)

    @classmethod
    def empty(cls, n_rows: int) -> LoadedPostings:
        """No postings for a partition of ``n_rows`` rows."""
        empty = np.zeros(0, dtype=np.int64)
        return cls(empty, empty, [], np.zeros(0), np.zeros(n_rows, dtype=np.int32))


@dataclass
class LoadedRows:
    """Every row of one partition as read from the database, column-wise.

    ``entry(i)`` builds the ``MemoryEntry`` of row ``i`` (without embedding); the partition calls it
    only for rows a search returns or filters, so loading 100k rows creates no model objects.
    """

    ids: list[str]
    contents: list[str]
    active: np.ndarray  # bool: status == 'active'
    expires: np.ndarray  # float64 epoch seconds, inf = never
    vectors: np.ndarray  # float32 (n, dims)
    entry: Callable[[int], MemoryEntry]
    #: the stored postings of these rows; None = tokenise ``contents`` here
    postings: LoadedPostings | None = None

    @staticmethod
    def empty(dims: int) -> LoadedRows:
        def none(i: int) -> MemoryEntry:
            raise IndexError(i)

        return LoadedRows([], [], np.zeros(0, dtype=bool), np.zeros(0), np.zeros((0, dims), dtype=np.float32), none)


@dataclass
class _Bm25:
    arrays: list[tuple[np.ndarray, np.ndarray]]  # (slots, tf) of each query term present
    weights: list[float]  # idf of each
    best: float  # the best BM25 any row could reach: sum(idf) * (k1 + 1)
    avgdl: float


_NO_SLOTS = np.zeros(0, dtype=np.int64)
_NO_TF = np.zeros(0, dtype=np.float64)
_NO_SLOTS.flags.writeable = False
_NO_TF.flags.writeable = False


class _Postings:
    """One term's postings: numpy arrays of (slot, tf) plus a tail of recent appends.

    Slots are never reused (a changed row moves to a new slot), so a removed row's postings are
    simply skipped through the partition's ``present`` mask and dropped when the arrays are next
    compacted; appends go to the tail and are merged on the next search.
    """

    __slots__ = ("slots", "tail", "tf")

    def __init__(self, slots: np.ndarray = _NO_SLOTS, tf: np.ndarray = _NO_TF) -> None:
        self.slots = slots  # never written in place: every change makes new arrays
        self.tf = tf
        self.tail: list[tuple[int, int]] = []

    def add(self, slot: int, tf: int) -> None:
        self.tail.append((slot, tf))

    def arrays(self, present: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self.tail:
            tail = np.asarray(self.tail, dtype=np.int64).reshape(-1, 2)
            self.slots = np.concatenate([self.slots, tail[:, 0]])
            self.tf = np.concatenate([self.tf, tail[:, 1].astype(np.float64)])
            self.tail = []
        alive = present[self.slots]
        n = int(np.count_nonzero(alive))
        if n == len(self.slots):
            return self.slots, self.tf
        slots, tf = self.slots[alive], self.tf[alive]
        if n < 0.75 * len(self.slots):  # compact: most of the skipped work goes away for good
            self.slots, self.tf = slots, tf
        return slots, tf


class _PostingsTable:
    """Every term's postings of a partition.

    Postings loaded from the database stay in one block (all slots and tf, grouped by term); a
    term's ``_Postings`` is cut from it the first time a search or a write asks for the term, so a
    load of 100k rows with as many distinct terms builds no per-term objects."""

    __slots__ = ("_block", "_buckets", "_where")

    def __init__(self) -> None:
        self._buckets: dict[str, _Postings] = {}
        self._where: dict[str, int] = {}  # term -> group in the loaded block
        self._block: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # (bounds, slots, tf)

    def load(self, terms: list[str], bounds: np.ndarray, slots: np.ndarray, tf: np.ndarray) -> None:
        """Group ``i`` (term ``terms[i]``) is ``slots[bounds[i]:bounds[i + 1]]``; replaces everything."""
        self._buckets = {}
        self._where = dict(zip(terms, range(len(terms)), strict=True))
        self._block = (bounds, slots, tf)

    def get(self, term: str) -> _Postings | None:
        bucket = self._buckets.get(term)
        if bucket is None and self._block is not None:
            group = self._where.pop(term, None)
            if group is not None:
                bounds, slots, tf = self._block
                a, b = int(bounds[group]), int(bounds[group + 1])
                bucket = self._buckets[term] = _Postings(slots[a:b], tf[a:b])
        return bucket

    def bucket(self, term: str) -> _Postings:
        """The term's postings, created empty when the term is new."""
        bucket = self.get(term)
        if bucket is None:
            bucket = self._buckets[term] = _Postings()
        return bucket

    def __len__(self) -> int:
        return len(self._buckets) + len(self._where)
