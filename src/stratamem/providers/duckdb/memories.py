"""Memories: add, get, update, delete, list, search (index or SQL scan) and iteration."""

from __future__ import annotations

import builtins
import json
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

from arro3.core import Table

from ...embeddings.base import Vector
from ...filters import Predicate
from ...model import MemoryEntry
from ...retrieval.centering import Centroid, mean_of_unit_rows
from ...retrieval.duckdb_lexical import lexical_scores_sql
from ...retrieval.lexical import gate_sql, query_terms
from ...retrieval.search_index import (
    Change,
)
from ..base import (
    ACTIVE,
    ListPage,
    ListQuery,
    PreparedAdd,
    Scope,
    ScoredEntry,
    SearchPage,
    SearchQuery,
    ThreadTurn,
    aware_utc,
    place_keys,
    provenance_json,
    provenance_time,
    to_naive_utc,
)
from .database import _scope_sql, _text_list, _vector_literal
from .index import SearchIndexMixin
from .rows import _COLUMNS, _INSERT_COLUMNS, _N_COLS, by_ids


def _time_column(query: ListQuery) -> str:
    return "updated_at" if query.time_field == "updated_at" else "created_at"


class MemoriesMixin(SearchIndexMixin):
    """The core operations on ``memories``."""

    def add(
        self, entries: Sequence[MemoryEntry], *, cache_model: str | None = None, prepared: PreparedAdd | None = None
    ) -> None:
        self.add_replacing(entries, (), cache_model=cache_model, prepared=prepared)

    def add_replacing(
        self,
        entries: Sequence[MemoryEntry],
        replacements: Sequence[tuple[MemoryEntry, MemoryEntry]],
        *,
        cache_model: str | None = None,
        prepared: PreparedAdd | None = None,
    ) -> builtins.list[bool]:
        if not entries and not replacements:
            return []
        batch: Table | None = None
        if entries:  # built before the write lock is taken
            ready = prepared is not None and prepared.rows is not None and prepared.matches(entries)
            columns = prepared.rows if ready and prepared is not None else self._prepare_rows(entries)
            batch = self._arrow_batch(columns, entries)
        # New rows, and replacements that leave the access statistics as stored: the logged accesses
        # need not be folded first (the fold scans ``memories``; the next write that rewrites stored
        # rows whole, or a read, folds them).
        with self.transaction(settle=False) as cur:
            if batch is not None:
                self._insert_in(cur, batch, entries, cache_model, prepared)
            return [self._update_in(cur, new, previous, validity_only=True) for new, previous in replacements]

    def _insert_in(
        self,
        cur: Any,
        batch: Table,
        entries: Sequence[MemoryEntry],
        cache_model: str | None,
        prepared: PreparedAdd | None,
    ) -> None:
        """The rows of :meth:`add` (``batch``, their Arrow table), their cache entries and the write
        hooks, in the transaction of ``cur``."""
        cur.register("stratamem_batch", batch)
        try:
            cur.execute(f"INSERT INTO memories ({_INSERT_COLUMNS}) SELECT {_INSERT_COLUMNS} FROM stratamem_batch")
            # The store's own model needs no copy: cache_get reads its vectors from ``memories``
            # (1000 rows: ~1.5 MB of WAL and an insert less per add; a 100k store's file
            # 0.81 GB instead of 1.31).
            # DISTINCT ON only where the batch repeats a content (it is not free on large batches).
            if cache_model is not None and cache_model != self.db.model:
                repeats = len({e.content_hash for e in entries}) < len(entries)
                cur.execute(
                    "INSERT OR IGNORE INTO embedding_cache SELECT "
                    + ("DISTINCT ON (content_hash) " if repeats else "")
                    + "tenant_id, ?, content_hash, embedding, created_at FROM stratamem_batch",
                    [cache_model],
                )
        finally:
            cur.unregister("stratamem_batch")
        known = self.db.known_hashes
        for tenant_id in dict.fromkeys(e.tenant_id for e in entries):
            stored = [e.content_hash for e in entries if e.tenant_id == tenant_id and e.content_hash]
            known.add("memories", tenant_id, self.db.model, stored)
            if cache_model is not None and cache_model != self.db.model:
                known.add("embedding_cache", tenant_id, cache_model, stored)
        self._run_add_hooks(cur, entries, prepared)
        for tenant_id in dict.fromkeys(e.tenant_id for e in entries):
            self._stage(Change("upsert", tenant_id, entries=[e for e in entries if e.tenant_id == tenant_id]))

    def get(
        self,
        tenant_id: str,
        memory_id: str,
        now: datetime,
        *,
        include_embedding: bool = False,
        statuses: tuple[str, ...] = ACTIVE,
    ) -> MemoryEntry | None:
        where, params = by_ids(tenant_id, [memory_id])
        with self._read() as cur:
            row = cur.execute(
                f"{self._select(include_embedding)} WHERE {where} "
                "AND list_contains(?::JSON::VARCHAR[], status) AND (expires_at IS NULL OR expires_at > ?)",
                [*params, _text_list(statuses), to_naive_utc(now)],
            ).fetchone()
        return self._entry(row, include_embedding) if row else None

    def update(self, entry: MemoryEntry, previous: MemoryEntry) -> bool:
        with self.transaction() as cur:
            return self._update_in(cur, entry, previous)

    def _update_in(self, cur: Any, entry: MemoryEntry, previous: MemoryEntry, *, validity_only: bool = False) -> bool:
        """:meth:`update` in the write transaction of ``cur``. ``validity_only`` (a replacement of
        :meth:`add_replacing`): only the row's status, provenance, version, etag, update and
        deletion times become ``entry``'s, the rest stays as stored; the access statistics are not
        rewritten, so accesses logged since the row was read still count when the log is folded."""
        where, params = by_ids(entry.tenant_id, [entry.id])
        row = cur.execute(f"SELECT version FROM memories WHERE {where}", params).fetchone()
        if row is None or int(row[0]) != previous.version:
            return False
        if validity_only:
            cur.execute(
                "UPDATE memories SET status = ?, provenance = ?, version = ?, etag = ?, updated_at = ?, "
                f"deleted_at = ? WHERE {where}",
                [
                    entry.status,
                    provenance_json(entry),
                    entry.version,
                    entry.etag,
                    to_naive_utc(entry.updated_at),
                    to_naive_utc(entry.deleted_at),
                    *params,
                ],
            )
        else:
            values = self._row_values(entry.model_copy(update={"embedding": entry.embedding or [0.0]}))
            values[20] = _vector_literal(values[20])
            set_embedding = entry.embedding is not None
            dims = int(self.db.dims or 0)
            cur.execute(
                "UPDATE memories SET layer = ?, scope = ?, content = ?, content_hash = ?, identifiers = ?, "
                "metadata = ?, provenance = ?, tier = ?, status = ?, version = ?, etag = ?, importance = ?, "
                "access_count = ?, created_at = ?, updated_at = ?, expires_at = ?, last_accessed_at = ?, "
                "deleted_at = ?" + (f", embedding = ?::FLOAT[{dims}]" if set_embedding else "") + f" WHERE {where}",
                [*values[2:20], *([values[20]] if set_embedding else []), *params],
            )
            if entry.content_hash:
                self.db.known_hashes.add("memories", entry.tenant_id, self.db.model, [entry.content_hash])
        for hook in self.write_hooks:
            hook.after_update(cur, entry, previous)
        self._stage(Change("upsert", entry.tenant_id, entries=[entry], previous=[previous]))
        return True

    def delete(self, tenant_id: str, ids: Sequence[str]) -> builtins.list[str]:
        if not ids:
            return []
        with self.transaction() as cur:
            found = cur.execute(
                "SELECT id, content_hash FROM memories WHERE tenant_id = ? AND list_contains(?::JSON::VARCHAR[], id)",
                [tenant_id, _text_list(ids)],
            ).fetchall()
            existing = [r[0] for r in found]
            if not existing:
                return []
            cur.execute(
                "DELETE FROM memories WHERE tenant_id = ? AND list_contains(?::JSON::VARCHAR[], id)",
                [tenant_id, _text_list(existing)],
            )
            # Forget cached vectors of content no longer stored by this tenant.
            cur.execute(
                "DELETE FROM embedding_cache WHERE tenant_id = ? AND list_contains(?::JSON::VARCHAR[], content_hash) "
                "AND content_hash NOT IN (SELECT content_hash FROM memories WHERE tenant_id = ?)",
                [tenant_id, _text_list(sorted({r[1] for r in found})), tenant_id],
            )
            for hook in self.write_hooks:
                hook.after_delete(cur, tenant_id, existing)
            self._stage(Change("delete", tenant_id, ids=existing))
        return existing

    def thread_turns(
        self,
        tenant_id: str,
        scope: Scope,
        places: Sequence[tuple[str, int]],
        vector: Vector,
        now: datetime,
        *,
        statuses: tuple[str, ...] = ACTIVE,
        predicate: Predicate | None = None,
    ) -> builtins.list[ThreadTurn]:
        """See ``Provider.thread_turns``: the scope's live rows at these places, the columns of a
        ``ThreadTurn`` only (and the metadata when filtered)."""
        wanted = set(places)
        if not wanted:
            return []
        dims = int(self.db.dims or 0)
        thread_sql = "coalesce(json_extract_string(provenance, '$.thread_id'), '')"
        position_sql = "json_extract_string(provenance, '$.position')"
        # Like the search it serves, this read does not wait for the queued bookkeeping appends
        # (access statistics, events): content, status and expiry are written in transactions.
        with self._read(appends=False) as cur:
            rows = cur.execute(
                f"SELECT id, {thread_sql}, {position_sql}, content, least(1.0, greatest(0.0, "
                f"(1 + array_cosine_similarity(embedding, ?::FLOAT[{dims}])) / 2)), created_at, updated_at, "
                "json_extract_string(provenance, '$.valid_to'), json_extract_string(provenance, '$.occurred_at')"
                + (", metadata" if predicate is not None else "")
                + " FROM memories WHERE tenant_id = ? AND layer = ? AND scope = ? AND embedding IS NOT NULL "
                "AND list_contains(?::JSON::VARCHAR[], status) AND (expires_at IS NULL OR expires_at > ?) "
                f"AND list_contains(?::JSON::VARCHAR[], {thread_sql} || chr(31) || {position_sql})",
                [
                    _vector_literal(vector),
                    tenant_id,
                    scope.layer.value,
                    scope.key,
                    _text_list(statuses),
                    to_naive_utc(now),
                    _text_list(place_keys(wanted)),
                ],
            ).fetchall()
        turns = [
            ThreadTurn(
                id=r[0],
                thread=r[1],
                position=int(r[2]),
                content=r[3],
                score=float(r[4]),
                created_at=aware_utc(r[5]),
                updated_at=aware_utc(r[6]),
                valid_to=provenance_time(r[7]),
                occurred_at=provenance_time(r[8]),
            )
            for r in rows
            if predicate is None or predicate(json.loads(r[9]))
        ]
        return [t for t in turns if t.place in wanted]

    def scope_entries(
        self,
        tenant_id: str,
        scope: Scope,
        ids: Sequence[str],
        now: datetime,
        *,
        statuses: tuple[str, ...] = ACTIVE,
    ) -> builtins.list[MemoryEntry]:
        """See ``Provider.scope_entries``: one select by ids, not waiting for the bookkeeping appends;
        scope, status and expiry are checked on the few rows found (each bound parameter costs the
        Python binding a probe, and the select of the tenant's ids alone scans less)."""
        if not ids:
            return []
        with self._read(appends=False) as cur:
            rows = cur.execute(
                f"SELECT {_COLUMNS}, scope FROM memories WHERE tenant_id = ? AND list_contains(?::JSON::VARCHAR[], id)",
                [tenant_id, _text_list(ids)],
            ).fetchall()
        cutoff = to_naive_utc(now)
        by_id = {
            r[1]: self._entry(r, False)
            for r in rows
            if r[2] == scope.layer.value
            and r[_N_COLS] == scope.key
            and r[9] in statuses
            and (r[16] is None or cutoff is None or r[16] > cutoff)
        }
        return [by_id[i] for i in dict.fromkeys(ids) if i in by_id]

    def _where(self, query: ListQuery) -> tuple[str, list[Any]]:
        sql = " WHERE tenant_id = ? AND list_contains(?::JSON::VARCHAR[], status)"
        params: builtins.list[Any] = [query.tenant_id, _text_list(query.statuses)]
        if not query.include_expired:
            sql += " AND (expires_at IS NULL OR expires_at > ?)"
            params.append(to_naive_utc(query.now))
        if query.since is not None:  # the column name comes from a fixed pair (ListQuery.time_field)
            sql += f" AND {_time_column(query)} >= ?"
            params.append(to_naive_utc(query.since))
        if query.until is not None:
            sql += f" AND {_time_column(query)} < ?"
            params.append(to_naive_utc(query.until))
        if query.expires_before is not None:
            sql += " AND expires_at IS NOT NULL AND expires_at < ?"
            params.append(to_naive_utc(query.expires_before))
        scope_sql, scope_params = _scope_sql(query.scope)
        return sql + scope_sql, params + scope_params

    def list(self, query: ListQuery) -> ListPage:
        where, params = self._where(query)
        after_sql, after_params = "", []
        cmp, direction = ("<", " DESC") if query.descending else (">", "")
        order = f" ORDER BY created_at{direction}, id{direction}"
        if query.after is not None:
            ts, last_id = query.after
            after_sql = f" AND (created_at {cmp} ? OR (created_at = ? AND id {cmp} ?))"
            after_params = [to_naive_utc(ts), to_naive_utc(ts), last_id]
        with self._read() as cur:
            if query.predicate is None:
                total = int(cur.execute(f"SELECT count(*) FROM memories{where}", params).fetchone()[0])
                rows = cur.execute(
                    f"{self._select(False)}{where}{after_sql}{order} LIMIT ?",
                    [*params, *after_params, query.limit + 1],
                ).fetchall()
                entries = [self._entry(r, False) for r in rows]
                return ListPage(entries=entries[: query.limit], total=total, has_more=len(entries) > query.limit)
            # Filtered: evaluate the predicate over the scope (metadata only), then fetch the page.
            cur.execute(f"SELECT id, created_at, metadata FROM memories{where}{order}", params)
            matching: builtins.list[tuple[datetime, str]] = []
            while batch := cur.fetchmany(self._read_batch):
                matching += [(r[1], r[0]) for r in batch if query.predicate(json.loads(r[2]))]
            start = 0
            if query.after is not None:
                pos = (to_naive_utc(query.after[0]), query.after[1])
                start = next(
                    (i for i, m in enumerate(matching) if (m < pos if query.descending else m > pos)), len(matching)
                )
            page_ids = [m[1] for m in matching[start : start + query.limit]]
            entries = self._fetch_ids(cur, query.tenant_id, page_ids, False)
            return ListPage(entries=entries, total=len(matching), has_more=start + query.limit < len(matching))

    def _scored_sql(self, query: SearchQuery) -> tuple[str, builtins.list[Any]]:
        """Every live row of the scope with its ``score`` (dense, or fused with BM25; see base.py)."""
        dims = int(self.db.dims or 0)
        dense_sql = f"least(1.0, greatest(0.0, (1 + array_cosine_similarity(embedding, ?::FLOAT[{dims}])) / 2))"
        where = (
            "tenant_id = ? AND layer = ? AND scope = ? AND list_contains(?::JSON::VARCHAR[], status) "
            "AND (expires_at IS NULL OR expires_at > ?)"
        )
        params: builtins.list[Any] = [
            _vector_literal(query.vector),
            query.tenant_id,
            query.scope.layer.value,
            query.scope.key,
            _text_list(query.statuses),
            to_naive_utc(query.now),
        ]
        terms = query_terms(query.text) if query.lexical_weight > 0 else []
        if not terms:
            return f"SELECT *, {dense_sql} AS score FROM memories WHERE {where}", params
        sql = (
            f"SELECT m.*, m.dense + ? * coalesce(l.lex, 0) * (1 - m.dense) * {gate_sql('m.dense')} AS score FROM "
            f"(SELECT *, {dense_sql} AS dense FROM memories WHERE {where}) m "
            f"LEFT JOIN {lexical_scores_sql()} l ON m.id = l.id"
        )
        return sql, [
            float(query.lexical_weight),
            *params,
            _text_list(terms),
            query.tenant_id,
            query.scope.layer.value,
            query.scope.key,
        ]

    def search(self, query: SearchQuery) -> SearchPage:
        index = self.search_index
        if index is not None and query.statuses == ACTIVE:  # the index mirrors current memories only
            tenant_id, layer, scope = query.tenant_id, query.scope.layer.value, query.scope.key
            return index.search((tenant_id, layer, scope), lambda: self._load_partition(tenant_id, layer, scope), query)
        return self._search_sql(query)

    def scope_centroid(self, tenant_id: str, scope: Scope, now: datetime) -> Centroid | None:
        index = self.search_index
        layer, key = scope.layer.value, scope.key
        if index is not None:  # kept by the partition, recomputed when enough rows changed
            return index.centroid((tenant_id, layer, key), lambda: self._load_partition(tenant_id, layer, key))
        with self._read() as cur:
            rows = cur.execute(
                "SELECT embedding FROM memories WHERE tenant_id = ? AND layer = ? AND scope = ? "
                "AND status = 'active' AND embedding IS NOT NULL AND (expires_at IS NULL OR expires_at > ?)",
                [tenant_id, layer, key, to_naive_utc(now)],
            ).fetchall()
        return mean_of_unit_rows([r[0] for r in rows]) if rows else None

    def _search_sql(self, query: SearchQuery) -> SearchPage:
        """The search as one SQL scan of the scope (no in-process index)."""
        scored, params = self._scored_sql(query)
        emb = ", embedding" if query.include_embedding else ""
        with self._read() as cur:
            if query.predicate is None:
                # One pass: rank, cut, and return the full rows of the top ``limit``.
                rows = cur.execute(
                    f"SELECT {_COLUMNS}{emb}, score, count(*) OVER () AS total FROM ({scored}) WHERE score >= ? "
                    "ORDER BY score DESC, id LIMIT ?",
                    [*params, query.min_score, query.limit],
                ).fetchall()
                width = _N_COLS + (1 if query.include_embedding else 0)
                hits = [
                    ScoredEntry(
                        entry=self._entry(r, query.include_embedding), score=min(1.0, max(0.0, float(r[width])))
                    )
                    for r in rows
                ]
                return SearchPage(hits=hits, total=int(rows[0][width + 1]) if rows else 0)
            # Filtered: rank with metadata only, apply the predicate before the cut, then fetch the rows.
            cur.execute(
                f"SELECT id, score, metadata FROM ({scored}) WHERE score >= ? ORDER BY score DESC, id",
                [*params, query.min_score],
            )
            ranked: builtins.list[tuple[str, float]] = []
            total = 0
            while batch := cur.fetchmany(self._read_batch):
                for r in batch:
                    if query.predicate(json.loads(r[2])):
                        total += 1
                        if len(ranked) < query.limit:
                            ranked.append((r[0], float(r[1])))
            entries = self._fetch_ids(cur, query.tenant_id, [r[0] for r in ranked], query.include_embedding)
        scores = dict(ranked)
        return SearchPage(
            hits=[ScoredEntry(entry=e, score=min(1.0, max(0.0, scores[e.id]))) for e in entries], total=total
        )

    def count_by_layer(self, tenant_id: str, now: datetime) -> dict[str, int]:
        with self._read() as cur:
            rows = cur.execute(
                "SELECT layer, count(*) FROM memories WHERE tenant_id = ? AND status = 'active' "
                "AND (expires_at IS NULL OR expires_at > ?) GROUP BY layer ORDER BY layer",
                [tenant_id, to_naive_utc(now)],
            ).fetchall()
        return {r[0]: int(r[1]) for r in rows}

    def count_live_by_layer(self, now: datetime) -> dict[str, int]:
        """One query over every tenant. Counts do not depend on the queued bookkeeping appends or the
        access log, so the read neither writes those first nor waits for the write lock to fold the
        log: a metrics scrape stays fast while adds hold the lock."""
        with self._read(appends=False) as cur:
            rows = cur.execute(
                "SELECT layer, count(*) FROM memories WHERE status = 'active' "
                "AND (expires_at IS NULL OR expires_at > ?) GROUP BY layer ORDER BY layer",
                [to_naive_utc(now)],
            ).fetchall()
        return {r[0]: int(r[1]) for r in rows}

    def iter_entries(self, tenant_id: str, *, batch_size: int = 500) -> Iterator[MemoryEntry]:
        after: tuple[Any, str] | None = None
        while True:
            with self._read() as cur:
                if after is None:
                    rows = cur.execute(
                        f"{self._select(True)} WHERE tenant_id = ? ORDER BY created_at, id LIMIT ?",
                        [tenant_id, batch_size],
                    ).fetchall()
                else:
                    rows = cur.execute(
                        f"{self._select(True)} WHERE tenant_id = ? AND (created_at > ? OR (created_at = ? AND id > ?)) "
                        "ORDER BY created_at, id LIMIT ?",
                        [tenant_id, after[0], after[0], after[1], batch_size],
                    ).fetchall()
            if not rows:
                return
            for r in rows:
                yield self._entry(r, True)
            after = (rows[-1][14], rows[-1][1])

    def tenants(self) -> builtins.list[str]:
        with self._read() as cur:
            return [r[0] for r in cur.execute("SELECT DISTINCT tenant_id FROM memories ORDER BY 1").fetchall()]
