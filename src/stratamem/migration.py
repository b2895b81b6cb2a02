"""Move one tenant from one store to another (DuckDB ↔ PostgreSQL): ``stratamem migrate`` and
:func:`migrate_tenant`.

What is copied, for one tenant:

* **memories**, row for row: ids, timestamps, version and etag, status, provenance (validity and
  supersession), importance, access statistics, expiry. They are written with the target
  provider's ``add`` (so its own search structures, e.g. lexical postings and DuckDB's in-process
  index, follow), without the feature write hooks: the knowledge graph is copied below, and the
  per-user quota does not apply to a copy.
* **vectors**: taken over as they are when both stores use the same embedding model, otherwise
  embedded again with the target's model.
* **knowledge graph** (nodes, entities, edges, the tenant's graph setting), when both stores hold
  one; when only the target does, it is rebuilt there from the memories (``GraphService.reindex``).
* **events** (``memory_events``), **policies** (``tenant_policies``), **API keys** (their salted
  hashes: a secret is never stored, so none is copied) and reward **feedback**.

Every write is an upsert by primary key and memories already in the target with the same etag
are skipped, so a second run copies nothing twice. A checkpoint file records the finished phases
and how many memories are in; after a crash the next run starts from there (and memories already
written by the crashed run are found and skipped). The run ends with a verification: counts and
checksums per kind in both stores, and the same sample searches run on both.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
from pydantic import BaseModel, Field

from .assembly import graph_of
from .embeddings import Embedder, make_embedder
from .errors import ErrorCode, MemoryError
from .graph.schema import GRAPH_TABLES
from .model import MemoryEntry, TenantContext
from .providers import MemoryProvider, open_provider
from .providers.base import WriteHook
from .sdk import Memory

CHECKPOINT_FORMAT = 1
_ALL_STATUSES = ("active", "archived", "deleted", "superseded")


@runtime_checkable
class RowStore(Protocol):
    """What the migration needs of a provider beyond memories: a tenant's rows of one table."""

    def table_columns(self, table: str) -> list[str] | None: ...

    def tenant_rows(
        self,
        table: str,
        columns: Sequence[str],
        tenant_id: str,
        *,
        order_by: Sequence[str],
        json_columns: Sequence[str] = (),
        batch_size: int = 1000,
    ) -> Iterator[tuple[Any, ...]]: ...

    def upsert_rows(
        self,
        table: str,
        columns: Sequence[str],
        key: Sequence[str],
        rows: Sequence[Sequence[Any]],
        *,
        json_columns: Sequence[str] = (),
    ) -> int: ...


@dataclass(frozen=True)
class TableSpec:
    """One copied table: its kind in the report, primary key and JSON columns."""

    kind: str
    name: str
    key: tuple[str, ...]
    json_columns: tuple[str, ...] = ()
    #: Copy the columns both stores have (the graph: its layout may differ between providers).
    common_columns: bool = False


PLAIN_TABLES: tuple[TableSpec, ...] = (
    TableSpec("policies", "tenant_policies", ("tenant_id",), ("policy",)),
    TableSpec("keys", "api_keys", ("key_id",), ("roles", "identifiers")),
    TableSpec("events", "memory_events", ("tenant_id", "id"), ("details",)),
    TableSpec("feedback", "memory_feedback", ("tenant_id", "memory_id")),
)
_GRAPH_KEYS = {
    "memory_nodes": ("tenant_id", "node_id"),
    "entities": ("tenant_id", "entity_id"),
    "memory_edges": ("tenant_id", "edge_id"),
    "entity_edges": ("tenant_id", "edge_id"),
}
GRAPH_SPECS: tuple[TableSpec, ...] = (
    *(TableSpec("graph", t, _GRAPH_KEYS[t], common_columns=True) for t in GRAPH_TABLES),
    TableSpec("graph", "graph_settings", ("tenant_id",), common_columns=True),
)

#: Order of the phases; the checkpoint names the finished ones.
PHASES = ("policies", "keys", "memories", "feedback", "graph", "events")


# ------------------------------------------------------------------------------------- report
class KindReport(BaseModel):
    """Counts and checksums of one kind of data of the tenant in both stores after the copy."""

    source_count: int = Field(description="Rows of this kind of the tenant in the source store.")
    target_count: int = Field(description="Rows of this kind of the tenant in the target store.")
    copied: int = Field(0, description="Rows written to the target by this run (0 on a re-run that found all).")
    source_checksum: str | None = Field(None, description="sha256 of the source's rows in canonical form.")
    target_checksum: str | None = Field(None, description="sha256 of the target's rows in canonical form.")
    ok: bool = Field(description="Counts and checksums agree (or, for a rebuilt graph, the rebuild ran).")
    note: str | None = Field(None, description="Why a kind was skipped, rebuilt or not compared.")


class SearchComparison(BaseModel):
    """One sample search run on both stores."""

    query: str
    source_ids: list[str]
    target_ids: list[str]
    same: bool = Field(
        description="Same scores rank by rank and the same ids, up to the order of equal "
        "scores (stores break ties differently) and which of the ids tied at the "
        "cut made the limit."
    )
    max_score_diff: float = Field(description="Largest score difference of the ids both returned.")


class MigrationReport(BaseModel):
    """The outcome of :func:`migrate_tenant`."""

    tenant_id: str
    source: str
    target: str
    source_model: str
    target_model: str
    reembedded: bool = Field(description="Vectors were computed again with the target's model.")
    resumed_from: dict[str, Any] | None = Field(None, description="The checkpoint this run continued from.")
    kinds: dict[str, KindReport]
    searches: list[SearchComparison]
    warnings: list[str] = Field(default_factory=list)
    ok: bool = Field(description="Every kind verified and every sample search identical.")


# --------------------------------------------------------------------------------- checkpoint
class _Checkpoint:
    def __init__(self, path: Path, identity: dict[str, str]) -> None:
        self.path = path
        self.identity = identity
        self.phases: list[str] = []
        self.memories_done = 0
        self.source_memories = -1
        self.loaded: dict[str, Any] | None = None
        with suppress(FileNotFoundError, ValueError):
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("format") == CHECKPOINT_FORMAT and data.get("identity") == identity:
                self.loaded = data
                self.phases = [p for p in data.get("phases", []) if p in PHASES]
                self.memories_done = int(data.get("memories_done", 0))
                self.source_memories = int(data.get("source_memories", -1))

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(
            json.dumps(
                {
                    "format": CHECKPOINT_FORMAT,
                    "identity": self.identity,
                    "phases": self.phases,
                    "memories_done": self.memories_done,
                    "source_memories": self.source_memories,
                }
            ),
            encoding="utf-8",
        )
        os.replace(tmp, self.path)  # atomic: a crash leaves the old or the new checkpoint

    def finish(self, phase: str) -> None:
        if phase not in self.phases:
            self.phases.append(phase)
        self.save()

    def remove(self) -> None:
        with suppress(FileNotFoundError):
            self.path.unlink()


def _display(location: str) -> str:
    """A store location without a password."""
    if "://" in location and "@" in location:
        scheme, rest = location.split("://", 1)
        creds, host = rest.rsplit("@", 1)
        return f"{scheme}://{creds.split(':', 1)[0]}:***@{host}"
    return location


def default_checkpoint(source: str, target: str, tenant_id: str) -> Path:
    """``.stratamem-migrate/<tenant>-<hash of both locations>.json`` in the working directory."""
    digest = hashlib.sha256(f"{source}\x1f{target}\x1f{tenant_id}".encode()).hexdigest()[:12]
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in tenant_id)
    return Path(".stratamem-migrate") / f"{safe}-{digest}.json"


# ----------------------------------------------------------------------------------- helpers
def _canonical(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    if isinstance(value, datetime):  # one store keeps naive UTC timestamps, the other aware ones
        value = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
        return value.isoformat()
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if isinstance(value, float):
        return repr(value)
    return value


def _digest(rows: Sequence[Any]) -> str:
    lines = sorted(json.dumps(_canonical(r), sort_keys=True, ensure_ascii=False) for r in rows)
    h = hashlib.sha256()
    for line in lines:
        h.update(line.encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()


def _entry_row(e: MemoryEntry) -> dict[str, Any]:
    return e.model_dump(mode="json", exclude={"embedding"})


def _vector_digest(entries: Sequence[MemoryEntry]) -> str:
    h = hashlib.sha256()
    for e in sorted(entries, key=lambda x: x.id):
        h.update(e.id.encode("utf-8"))
        h.update(np.asarray(e.embedding if e.embedding is not None else [], dtype=np.float32).tobytes())
    return h.hexdigest()


def _same_ranking(a: Sequence[tuple[str, float]], b: Sequence[tuple[str, float]], eps: float = 1e-5) -> bool:
    """Equal score by rank, and equal ids per group of tied scores (but the last group, cut by the limit)."""
    if len(a) != len(b) or any(abs(x[1] - y[1]) > eps for x, y in zip(a, b, strict=True)):
        return False
    groups: list[tuple[set[str], set[str]]] = []
    prev = 0.0
    for (ia, sa), (ib, _) in zip(a, b, strict=True):
        if groups and abs(sa - prev) <= eps:
            groups[-1][0].add(ia)
            groups[-1][1].add(ib)
        else:
            groups.append(({ia}, {ib}))
        prev = sa
    return all(x == y for x, y in groups[:-1])


def _row_store(provider: MemoryProvider) -> RowStore:
    if not isinstance(provider, RowStore):
        raise MemoryError(
            ErrorCode.CONFIGURATION_ERROR,
            f"provider {provider.name} cannot export or import table rows",
            operation="migrate",
        )
    return provider


@contextmanager
def _only_hooks(provider: MemoryProvider, hooks: Sequence[WriteHook]) -> Iterator[None]:
    """Run only ``hooks`` (the provider's own search structures) on writes inside the block."""
    saved = list(provider.write_hooks)
    provider.write_hooks[:] = [h for h in saved if any(h is k for k in hooks)]
    try:
        yield
    finally:
        provider.write_hooks[:] = saved


def _quiet(mem: Memory) -> None:
    """The migration's own reads (verification searches) record nothing: no access statistics, no
    events, so a second run finds both stores exactly as the first left them."""
    mem.engine.hooks.access_hooks.clear()
    mem.engine.hooks.observers.clear()


def _graph_capable(provider: MemoryProvider) -> bool:
    return bool(provider.capabilities().graph)


class _Migration:
    def __init__(
        self,
        source: Memory,
        target: Memory,
        target_builtin: Sequence[WriteHook],
        tenant_id: str,
        checkpoint: _Checkpoint,
        *,
        batch_size: int,
        samples: int,
        include_graph: bool,
        progress: Callable[[str, int], None] | None,
    ) -> None:
        self.source, self.target = source, target
        self.src, self.dst = source.engine.provider, target.engine.provider
        self.src_rows, self.dst_rows = _row_store(self.src), _row_store(self.dst)
        self.target_builtin = target_builtin
        self.tenant_id = tenant_id
        self.ckpt = checkpoint
        self.batch_size = batch_size
        self.samples = samples
        self.include_graph = include_graph
        self.progress = progress
        self.source_model = source.engine.embeddings.model_id
        self.target_model = target.engine.embeddings.model_id
        self.reembed = self.source_model != self.target_model
        self.copied: dict[str, int] = {}
        self.warnings: list[str] = []

    def _tick(self, phase: str, n: int) -> None:
        self.copied[phase] = self.copied.get(phase, 0) + n
        if self.progress is not None:
            self.progress(phase, n)

    # -- phases ---------------------------------------------------------------------------------
    def run(self) -> None:
        for phase in PHASES:
            if phase in self.ckpt.phases:
                continue
            if phase == "memories":
                self.copy_memories()
            elif phase == "graph":
                self.copy_graph()
            else:
                spec = next(s for s in PLAIN_TABLES if s.kind == phase)
                self.copy_table(spec)
            self.ckpt.finish(phase)

    def _columns(self, spec: TableSpec) -> list[str] | None:
        src_cols = self.src_rows.table_columns(spec.name)
        dst_cols = self.dst_rows.table_columns(spec.name)
        if src_cols is None or dst_cols is None:
            return None
        if spec.common_columns:
            return [c for c in src_cols if c in dst_cols]
        return src_cols if set(src_cols) <= set(dst_cols) else None

    def copy_table(self, spec: TableSpec) -> None:
        columns = self._columns(spec)
        if columns is None:
            raise MemoryError(
                ErrorCode.CONFIGURATION_ERROR,
                f"table {spec.name} ({spec.kind}) is missing or different in one of the stores",
                operation="migrate",
            )
        batch: list[tuple[Any, ...]] = []
        for row in self.src_rows.tenant_rows(
            spec.name,
            columns,
            self.tenant_id,
            order_by=spec.key,
            json_columns=spec.json_columns,
            batch_size=self.batch_size,
        ):
            batch.append(row)
            if len(batch) >= self.batch_size:
                self._tick(
                    spec.kind,
                    self.dst_rows.upsert_rows(spec.name, columns, spec.key, batch, json_columns=spec.json_columns),
                )
                batch = []
        self._tick(
            spec.kind, self.dst_rows.upsert_rows(spec.name, columns, spec.key, batch, json_columns=spec.json_columns)
        )

    def copy_memories(self) -> None:
        source_total = sum(1 for _ in self.src_rows.tenant_rows("memories", ["id"], self.tenant_id, order_by=["id"]))
        if self.ckpt.source_memories != source_total:  # the source changed since the checkpoint: start over
            self.ckpt.memories_done, self.ckpt.source_memories = 0, source_total
        existing = dict(self.dst_rows.tenant_rows("memories", ["id", "etag"], self.tenant_id, order_by=["id"]))
        done = 0
        batch: list[MemoryEntry] = []
        for entry in self.src.iter_entries(self.tenant_id, batch_size=self.batch_size):
            done += 1
            if done <= self.ckpt.memories_done:
                continue
            batch.append(entry)
            if len(batch) >= self.batch_size:
                self._write_memories(batch, existing)
                self.ckpt.memories_done = done
                self.ckpt.save()
                batch = []
        self._write_memories(batch, existing)
        self.ckpt.memories_done = done

    def _write_memories(self, batch: Sequence[MemoryEntry], existing: dict[str, str]) -> None:
        todo = [e for e in batch if existing.get(e.id) != e.etag]
        if not todo:
            return
        stale = [e.id for e in todo if e.id in existing]  # older copies of memories changed since
        if self.reembed:
            vectors = self.target.engine.embeddings.embedder.embed([e.content for e in todo])
            todo = [
                e.model_copy(update={"embedding": [float(x) for x in v]}) for e, v in zip(todo, vectors, strict=True)
            ]
        with _only_hooks(self.dst, self.target_builtin):
            if stale:
                self.dst.delete(self.tenant_id, stale)
            self.dst.add(todo, cache_model=self.target_model)
        for e in todo:
            existing[e.id] = e.etag
        self._tick("memories", len(todo))

    def graph_mode(self) -> str:
        """copy (both stores keep a graph), rebuild (only the target), skip (only the source), none."""
        src_graph, dst_graph = _graph_capable(self.src), _graph_capable(self.dst)
        if not self.include_graph:
            return "off"
        if src_graph and dst_graph:
            return "copy"
        return "rebuild" if dst_graph else "skip" if src_graph else "none"

    def copy_graph(self) -> None:
        mode = self.graph_mode()
        if mode == "copy":
            for spec in GRAPH_SPECS:
                columns = self._columns(spec)
                if columns is None:
                    continue  # a table only one provider keeps
                rows = list(self.src_rows.tenant_rows(spec.name, columns, self.tenant_id, order_by=spec.key))
                for i in range(0, len(rows), self.batch_size):
                    self._tick(
                        "graph", self.dst_rows.upsert_rows(spec.name, columns, spec.key, rows[i : i + self.batch_size])
                    )
            self._graph_rows_replaced()
        elif mode == "rebuild":
            graph = graph_of(self.target.engine)
            graph.reindex(TenantContext(tenant_id=self.tenant_id, principal="stratamem-migrate"))

    def _graph_rows_replaced(self) -> None:
        """The graph's rows changed behind its service: its per-tenant caches must forget them."""
        graph = getattr(self.target.engine, "graph", None)
        seen: list[Any] = []
        for holder in (getattr(graph, "queries", None), getattr(graph, "store", None)):
            gens = getattr(holder, "generations", None)
            invalidate = getattr(gens, "invalidate", None)
            if callable(invalidate) and not any(g is gens for g in seen):
                seen.append(gens)
                invalidate(self.tenant_id)

    def _graph_count(self, provider: MemoryProvider) -> int:
        store = _row_store(provider)
        return sum(
            sum(1 for _ in store.tenant_rows(s.name, list(s.key), self.tenant_id, order_by=s.key))
            for s in GRAPH_SPECS
            if store.table_columns(s.name) is not None
        )

    # -- verification ---------------------------------------------------------------------------
    def verify(self) -> tuple[dict[str, KindReport], list[SearchComparison]]:
        kinds: dict[str, KindReport] = {}
        src_entries = list(self.src.iter_entries(self.tenant_id, batch_size=self.batch_size))
        dst_entries = list(self.dst.iter_entries(self.tenant_id, batch_size=self.batch_size))
        s_sum, t_sum = _digest([_entry_row(e) for e in src_entries]), _digest([_entry_row(e) for e in dst_entries])
        kinds["memories"] = KindReport(
            source_count=len(src_entries),
            target_count=len(dst_entries),
            copied=self.copied.get("memories", 0),
            source_checksum=s_sum,
            target_checksum=t_sum,
            ok=len(src_entries) == len(dst_entries) and s_sum == t_sum,
        )
        if self.reembed:
            ok = len(dst_entries) == len(src_entries) and all(e.embedding for e in dst_entries)
            kinds["vectors"] = KindReport(
                source_count=len(src_entries),
                target_count=len(dst_entries),
                ok=ok,
                note=f"embedded again with {self.target_model}: not comparable",
            )
        else:
            s_vec, t_vec = _vector_digest(src_entries), _vector_digest(dst_entries)
            kinds["vectors"] = KindReport(
                source_count=len(src_entries),
                target_count=len(dst_entries),
                source_checksum=s_vec,
                target_checksum=t_vec,
                ok=len(src_entries) == len(dst_entries) and s_vec == t_vec,
            )
        for spec in PLAIN_TABLES:
            kinds[spec.kind] = self._verify_tables([spec])
        mode = self.graph_mode()
        if mode == "copy":
            kinds["graph"] = self._verify_tables(list(GRAPH_SPECS))
        else:
            src_n = self._graph_count(self.src) if _graph_capable(self.src) else 0
            dst_n = self._graph_count(self.dst) if _graph_capable(self.dst) else 0
            note = {
                "off": "not copied (include_graph=False)",
                "rebuild": "rebuilt on the target from the active memories (the source keeps no graph)",
                "skip": f"not copied: the target provider {self.dst.name} keeps no knowledge graph",
                "none": "neither store keeps a knowledge graph",
            }[mode]
            if mode == "skip" and src_n:
                self.warnings.append(
                    f"{src_n} knowledge-graph rows of the source were not copied: the target "
                    f"provider {self.dst.name} keeps no knowledge graph"
                )
            kinds["graph"] = KindReport(
                source_count=src_n, target_count=dst_n, ok=not (mode == "skip" and src_n), note=note
            )
        return kinds, self._searches(src_entries)

    def _verify_tables(self, specs: Sequence[TableSpec]) -> KindReport:
        src_rows: list[Any] = []
        dst_rows: list[Any] = []
        for spec in specs:
            columns = self._columns(spec)
            if columns is None:
                continue
            src_rows += [
                (spec.name, r)
                for r in self.src_rows.tenant_rows(
                    spec.name, columns, self.tenant_id, order_by=spec.key, json_columns=spec.json_columns
                )
            ]
            dst_rows += [
                (spec.name, r)
                for r in self.dst_rows.tenant_rows(
                    spec.name, columns, self.tenant_id, order_by=spec.key, json_columns=spec.json_columns
                )
            ]
        s_sum, t_sum = _digest(src_rows), _digest(dst_rows)
        return KindReport(
            source_count=len(src_rows),
            target_count=len(dst_rows),
            copied=self.copied.get(specs[0].kind, 0),
            source_checksum=s_sum,
            target_checksum=t_sum,
            ok=len(src_rows) == len(dst_rows) and s_sum == t_sum,
        )

    def _searches(self, entries: Sequence[MemoryEntry]) -> list[SearchComparison]:
        active = [e for e in entries if e.status == "active"]
        if not active or self.samples <= 0:
            return []
        step = max(1, len(active) // self.samples)
        ctx = TenantContext(tenant_id=self.tenant_id, principal="stratamem-migrate")
        out: list[SearchComparison] = []
        for e in active[::step][: self.samples]:
            query = " ".join(e.content.split()[:12])[:500]
            ids = e.identifiers.model_dump(exclude_none=True)
            a = self.source.search(ctx, query, identifiers=ids, layers=[e.layer], limit=5)
            b = self.target.search(ctx, query, identifiers=ids, layers=[e.layer], limit=5)
            a_ids = [r.memory.id for r in a.results]
            b_ids = [r.memory.id for r in b.results]
            b_scores = {r.memory.id: r.score for r in b.results}
            diff = max(
                (abs(r.score - b_scores[r.memory.id]) for r in a.results if r.memory.id in b_scores), default=0.0
            )
            same = _same_ranking(
                [(r.memory.id, r.score) for r in a.results], [(r.memory.id, r.score) for r in b.results]
            )
            out.append(
                SearchComparison(
                    query=query, source_ids=a_ids, target_ids=b_ids, same=same, max_score_diff=round(diff, 9)
                )
            )
        return out


def migrate_tenant(
    source: str | os.PathLike[str],
    target: str | os.PathLike[str],
    tenant_id: str,
    *,
    embedder: str | Embedder | None = None,
    target_embedder: str | Embedder | None = None,
    checkpoint: str | os.PathLike[str] | None = None,
    batch_size: int = 500,
    samples: int = 5,
    include_graph: bool = True,
    progress: Callable[[str, int], None] | None = None,
) -> MigrationReport:
    """Copy every kind of data of ``tenant_id`` from the store at ``source`` to the store at ``target``
    and verify the copy (see the module doc).

    ``embedder`` opens the source (it must be the source's model); ``target_embedder`` (default: the
    same) opens the target: when its model differs, the memories are embedded again. ``checkpoint``:
    the progress file (default :func:`default_checkpoint`), removed when the run succeeds.
    ``progress(phase, rows)`` is called after each written batch. Raises ``MemoryError`` when a
    store cannot be opened or a write fails; re-running continues from the checkpoint.
    """
    src_loc, dst_loc = os.fspath(source), os.fspath(target)
    if batch_size < 1:
        raise MemoryError(ErrorCode.INVALID_PARAMS, "batch_size must be at least 1", operation="migrate")
    TenantContext(tenant_id=tenant_id).validate_at(datetime.now(UTC), "migrate")
    if src_loc == dst_loc:
        raise MemoryError(ErrorCode.INVALID_PARAMS, "source and target are the same store", operation="migrate")
    src_model = make_embedder(embedder) if not isinstance(embedder, Embedder) else embedder
    if target_embedder is None:
        dst_model = src_model
    else:
        dst_model = make_embedder(target_embedder) if not isinstance(target_embedder, Embedder) else target_embedder
    path = Path(checkpoint) if checkpoint is not None else default_checkpoint(src_loc, dst_loc, tenant_id)
    ckpt = _Checkpoint(
        path,
        {
            "source": _display(src_loc),
            "target": _display(dst_loc),
            "tenant": tenant_id,
            "target_model": dst_model.model_id,
        },
    )
    resumed = dict(ckpt.loaded) if ckpt.loaded else None
    with ExitStack() as stack:
        src_mem = Memory.open(open_provider(src_loc), embedder=src_model)
        stack.callback(src_mem.close)
        dst_provider = open_provider(dst_loc)
        builtin = list(dst_provider.write_hooks)  # the provider's own search structures, before features attach
        dst_mem = Memory.open(dst_provider, embedder=dst_model)
        stack.callback(dst_mem.close)
        _quiet(src_mem)
        _quiet(dst_mem)
        job = _Migration(
            src_mem,
            dst_mem,
            builtin,
            tenant_id,
            ckpt,
            batch_size=batch_size,
            samples=samples,
            include_graph=include_graph,
            progress=progress,
        )
        job.run()
        kinds, searches = job.verify()
    searches_ok = job.reembed or all(s.same for s in searches)
    report = MigrationReport(
        tenant_id=tenant_id,
        source=_display(src_loc),
        target=_display(dst_loc),
        source_model=job.source_model,
        target_model=job.target_model,
        reembedded=job.reembed,
        resumed_from=resumed,
        kinds=kinds,
        searches=searches,
        warnings=job.warnings,
        ok=all(k.ok for k in kinds.values()) and searches_ok,
    )
    ckpt.remove()
    return report
