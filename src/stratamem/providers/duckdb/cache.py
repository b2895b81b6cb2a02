"""The embedding cache: vectors by content hash, from stored memories and ``embedding_cache``."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np

from ...arrow_columns import arrow_column, arrow_table, string_column, vector_column
from ...embeddings.base import Vector
from .connection import DuckDBConnection
from .database import _text_list


class EmbeddingCacheMixin(DuckDBConnection):
    """Cached vectors of the store."""

    # ---------------------------------------------------------------------------- embedding cache
    def cache_get(self, tenant_id: str, model_id: str, hashes: Sequence[str]) -> dict[str, Vector]:
        """Cached vectors: for the store's own model, those of the tenant's stored memories (soft-deleted
        ones included; purged rows are gone) and then ``embedding_cache``; for another model, the cache."""
        if not hashes:
            return {}
        # (table, condition on its alias c, parameters): constants only, the tenant id is bound
        sources = [("embedding_cache", "c.tenant_id = ? AND c.model = ?", [tenant_id, model_id])]
        if model_id == self.db.model:
            sources.insert(0, ("memories", "c.tenant_id = ?", [tenant_id]))
        rows: builtins.list[tuple[str, Any]] = []
        with self._read(appends=False) as cur:
            wanted = builtins.list(dict.fromkeys(hashes))
            for table, where, params in sources:
                if not wanted:
                    break

                def load(table: str = table, where: str = where, params: builtins.list[str] = params) -> Any:
                    return (
                        r[0]
                        for r in cur.execute(
                            f"SELECT DISTINCT c.content_hash FROM {table} c WHERE {where}", params
                        ).fetchall()
                    )

                # only the hashes this table may hold (database.KnownHashes): new texts skip the scan
                maybe = self.db.known_hashes.maybe_present((table, tenant_id, model_id), wanted, load)
                if not maybe:
                    continue
                if len(maybe) == 1:
                    found = cur.execute(
                        f"SELECT c.content_hash, c.embedding FROM {table} c WHERE {where} "
                        "AND c.content_hash = ? LIMIT 1",
                        [*params, maybe[0]],
                    ).fetchall()
                else:
                    # A hash join with the wanted hashes (list_contains scans the list per row). It
                    # reads every row of the tenant, so it first finds the hashes present reading only
                    # that column, and the vectors (1.5 kB a row) only when some are: a batch of new
                    # texts then never reads the stored vectors at all.
                    join = (
                        f"FROM {table} c JOIN (SELECT DISTINCT unnest(?::JSON::VARCHAR[]) AS h) q "
                        f"ON c.content_hash = q.h WHERE {where}"
                    )
                    present = [
                        r[0]
                        for r in cur.execute(
                            f"SELECT DISTINCT c.content_hash {join}", [_text_list(maybe), *params]
                        ).fetchall()
                    ]
                    found = (
                        cur.execute(
                            f"SELECT DISTINCT ON (c.content_hash) c.content_hash, c.embedding {join}",
                            [_text_list(present), *params],
                        ).fetchall()
                        if present
                        else []
                    )
                rows += found
                done = {r[0] for r in found}
                wanted = [h for h in wanted if h not in done]
        return {r[0]: np.asarray(r[1], dtype=np.float32) for r in rows}

    def cache_put(self, tenant_id: str, model_id: str, items: dict[str, Vector]) -> None:
        if not items:
            return
        now = datetime.now(UTC).replace(tzinfo=None)
        dims = int(self.db.dims or 0)
        flat = np.concatenate([np.asarray(v, dtype=np.float32).reshape(-1) for v in items.values()])
        batch = arrow_table(
            {
                "tenant_id": string_column([tenant_id] * len(items)),
                "model": string_column([model_id] * len(items)),
                "content_hash": string_column(list(items)),
                "embedding": vector_column(flat, dims),
                "created_at": arrow_column([now] * len(items), "ts"),
            }
        )
        with self.transaction() as cur:
            cur.register("stratamem_cache_batch", batch)
            try:
                cur.execute(
                    "INSERT OR IGNORE INTO embedding_cache SELECT tenant_id, model, content_hash, embedding, "
                    "created_at FROM stratamem_cache_batch"
                )
            finally:
                cur.unregister("stratamem_cache_batch")
            self.db.known_hashes.add("embedding_cache", tenant_id, model_id, items)
