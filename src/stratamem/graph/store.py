"""Graph writes: the provider write hook, so memory and graph rows commit in one transaction.

:class:`GraphStore` is registered in ``provider.write_hooks`` of the DuckDB provider. On add, update
and delete it writes memory node, entities, memory edges and entity edges with the provider's open
transaction cursor ``tx``: the memory row and its graph commit together, and any failure (in the
extractor, in SQL, anywhere) rolls back both. Entities are de-duplicated per tenant by normalised
name + type (their id is derived from that key). Extraction can be switched off per tenant.

Every statement binds ``tenant_id`` as a parameter; no user value is formatted into SQL.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ..arrow_columns import arrow_table, string_column
from ..model import MemoryEntry
from ..providers.graph_sql import Dialect
from .extract import (
    GraphExtractor,
    KnownEntity,
    RuleBasedExtractor,
    candidate_keys,
    normalize_name,
)

#: Entity types an extractor uses when it is unsure; an existing entity's type wins over these.
GENERIC_TYPES = frozenset({"ENTITY", "CONCEPT"})
LABEL_CHARS = 80

StageListener = Callable[[str, str], None]


@dataclass
class _Plan:
    """The graph rows of a batch of memories, ready to insert."""

    nodes: list[dict[str, str]] = field(default_factory=list)
    entities: list[dict[str, str]] = field(default_factory=list)
    mentions: list[dict[str, str]] = field(default_factory=list)
    relations: list[dict[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class _Prepared:
    """A batch's extraction done before its transaction, and the dictionary it was done against."""

    keys: list[str]
    known: dict[str, KnownEntity]
    plan: _Plan


def now_naive() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def _naive(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value


def _hash(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:24]


def entity_id(tenant_id: str, norm: str, type_: str) -> str:
    return "ent_" + _hash(tenant_id, norm, type_)


def edge_id(*parts: str) -> str:
    return "edg_" + _hash(*parts)


def label_of(content: str) -> str:
    text = " ".join(content.split())
    return text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "…"


def json_list(values: Sequence[str]) -> str:
    return json.dumps(list(values))


#: The keys of the plan rows of each table (every value a string).
_NODE_KEYS = ("t", "id", "m", "layer", "label", "ts")
_ENTITY_KEYS = ("t", "id", "name", "norm", "type", "ts")
_MENTION_KEYS = ("t", "id", "src", "tgt", "m", "ts")
_REL_KEYS = ("t", "id", "src", "tgt", "rel", "m", "ts")

# Rows travel as ONE JSON parameter unnested by DuckDB: a single statement per table whatever the
# batch size, and far cheaper than ``executemany`` or registering an Arrow table for a few rows.
# From ``ARROW_MIN_ROWS`` rows on, a registered Arrow table is cheaper (the two break even at a few
# hundred rows; for a handful of rows JSON is several times faster), so a bulk add's rows go that way.
ARROW_MIN_ROWS = 256
_JSON_ROWS = "(SELECT unnest(from_json(?, ?), recursive := true))"
_ARROW_ROWS = "stratamem_graph_rows"
_KEYS = "stratamem_graph_keys"  # the name _known's SQL reads
INSERT_NODES = (
    "INSERT INTO memory_nodes SELECT r.t, r.id, r.m, r.layer, r.label, r.ts::TIMESTAMP, r.ts::TIMESTAMP, NULL "
    "FROM {rows}"
)
UPSERT_ENTITIES = (
    "INSERT INTO entities SELECT r.t, r.id, r.name, r.norm, r.type, r.ts::TIMESTAMP, r.ts::TIMESTAMP, NULL "
    "FROM {rows} "
    "ON CONFLICT (tenant_id, entity_id) DO UPDATE SET deleted_at = NULL, updated_at = excluded.updated_at"
)
INSERT_MENTIONS = (
    "INSERT INTO memory_edges SELECT r.t, r.id, r.src, r.tgt, 'entity', 'MENTIONS', r.m, 1.0, r.ts::TIMESTAMP, NULL "
    "FROM {rows}"
)
INSERT_RELATIONS = (
    "INSERT INTO entity_edges SELECT r.t, r.id, r.src, r.tgt, r.rel, r.m, r.ts::TIMESTAMP, NULL FROM {rows}"
)


def _insert(
    tx: Any, sql: str, keys: tuple[str, ...], rows: Sequence[dict[str, str]], dialect: Dialect = "duckdb"
) -> None:
    """Insert plan rows (dicts of strings under ``keys``) with ``sql`` (a constant template)."""
    if not rows:
        return
    if dialect == "postgres":  # one JSON parameter expanded by PostgreSQL, whatever the batch size
        columns = ", ".join(f"{key} text" for key in keys)  # keys: constants of this module
        tx.execute(sql.format(rows=f"json_to_recordset(?::json) AS r({columns})"), [json.dumps(rows)])
        return
    if len(rows) < ARROW_MIN_ROWS:
        tx.execute(sql.format(rows=_JSON_ROWS + " r"), [json.dumps(rows), json.dumps([dict.fromkeys(keys, "VARCHAR")])])
        return
    table = arrow_table({key: string_column([row[key] for row in rows]) for key in keys})
    tx.register(_ARROW_ROWS, table)
    try:
        tx.execute(sql.format(rows=_ARROW_ROWS + " r"))
    finally:
        tx.unregister(_ARROW_ROWS)


#: Id lists up to this length are bound as ``col IN (?, ?, …)``; a longer one travels as one JSON
#: parameter, unnested and hash-joined (``list_contains`` would compare every row with every id).
INLINE_IDS = 64
#: Up to this many entities, whether each is still mentioned is asked by one probe per entity.
MENTION_PROBES = 16
_ONE_ID = "{column} = ?"
_IDS_INLINE = "{column} IN ({marks})"
_IDS_JOINED = "{column} IN (SELECT unnest(?::JSON::VARCHAR[]))"
_ROWS_OF = "(SELECT rowid AS rid, * FROM {table} WHERE {match} OFFSET 0)"


def _one_of(column: str, ids: Sequence[str]) -> tuple[str, list[Any]]:
    """The DuckDB predicate "``column`` is one of ``ids``" and its parameters (``column``: a constant)."""
    if len(ids) == 1:
        return _ONE_ID.format(column=column), [ids[0]]
    if len(ids) <= INLINE_IDS:
        return _IDS_INLINE.format(column=column, marks=", ".join("?" * len(ids))), list(ids)
    return _IDS_JOINED.format(column=column), [json_list(ids)]


def _rows_of(table: str, column: str, ids: Sequence[str]) -> tuple[str, list[Any]]:
    """A DuckDB subquery of the rows of ``table`` (any tenant) whose ``column`` is one of ``ids``, with
    their ``rowid`` as ``rid``, and its parameters; ``table`` and ``column`` are constants.

    ``OFFSET 0`` keeps the caller's filters (tenant, ``deleted_at``) out of this scan, so the scan
    filters on the ids alone: the selective filter runs first and the others only on the rows found
    (DuckDB would otherwise push all of them into the scan, checking the tenant on every row first),
    and an ART index on ``column`` alone could serve the scan (DuckDB scans an index only when the
    scan's filters are on that index's single column; the tenant-first composite indexes are not).
    """
    match, params = _one_of(column, ids)
    return _ROWS_OF.format(table=table, match=match), params


# The cascade statements, DuckDB first. Placeholders in braces take constants of this module or
# subqueries built from them (``_rows_of``); every value is a bound parameter.
_LIVE = " AND deleted_at IS NULL"
_MENTIONED = "SELECT DISTINCT target_id FROM {edges} WHERE tenant_id = ? AND target_kind = 'entity'"
_ROWIDS = "SELECT rid FROM {rows} WHERE tenant_id = ?{live}"
_MARK = "UPDATE {table} SET deleted_at = ? WHERE rowid IN ({rowids})"
_REMOVE = "DELETE FROM {table} WHERE rowid IN ({rowids})"
_UNMENTIONED = "SELECT rid FROM {entities} WHERE tenant_id = ?{live} AND entity_id NOT IN ({mentioned})"
_MENTIONS = "SELECT target_id FROM {mentions} WHERE tenant_id = ? AND target_kind = 'entity'{live}"
_MENTION_PROBE = (
    "(SELECT target_id FROM (SELECT * FROM memory_edges WHERE target_id = ? OFFSET 0) "
    "WHERE tenant_id = ? AND target_kind = 'entity'{live} LIMIT 1)"
)
_MARK_ENTITIES = "UPDATE entities SET deleted_at = ? WHERE rowid IN ({rowids}) RETURNING entity_id"
_REMOVE_ENTITIES = "DELETE FROM entities WHERE rowid IN ({rowids}) RETURNING entity_id"
_PG_MENTIONED = (
    "SELECT DISTINCT target_id FROM memory_edges WHERE tenant_id = ? AND target_kind = 'entity' "
    "AND list_contains(?::JSON::VARCHAR[], memory_id)"
)
_PG_ONE_OF = "list_contains(?::JSON::VARCHAR[], {column})"
_PG_MARK = "UPDATE {table} SET deleted_at = ? WHERE tenant_id = ?{live} AND ({match})"
_PG_REMOVE = "DELETE FROM {table} WHERE tenant_id = ? AND ({match})"
_PG_MARK_ENTITIES = "UPDATE entities SET deleted_at = ? WHERE {where} RETURNING entity_id"
_PG_REMOVE_ENTITIES = "DELETE FROM entities WHERE {where} RETURNING entity_id"
_PG_UNMENTIONED_WHERE = (
    "tenant_id = ?{live} AND list_contains(?::JSON::VARCHAR[], entity_id) AND entity_id NOT IN "
    "(SELECT target_id FROM memory_edges WHERE tenant_id = ? AND target_kind = 'entity'{live} "
    "AND list_contains(?::JSON::VARCHAR[], target_id))"
)


class Generations:
    """Per-store, per-tenant write counters that traversal caches key on.

    ``get``: the graph generation, bumped on every graph write (nodes, edges, entities).
    ``row_generation``: bumped whenever memory rows of the tenant change without a graph write
    (access counts, status, expiry, metadata-only updates), with a short log of the changed ids so
    a cached adjacency snapshot can forget just those rows instead of being rebuilt.
    """

    LOG_SIZE = 512

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._gen: dict[str, int] = {}
        self._rows: dict[str, int] = {}
        self._log: dict[str, deque[tuple[int, tuple[str, ...]]]] = {}

    def bump(self, tenant_id: str) -> None:
        with self._lock:
            self._gen[tenant_id] = self._gen.get(tenant_id, 0) + 1

    def get(self, tenant_id: str) -> int:
        return self._gen.get(tenant_id, 0)

    def rows_changed(self, tenant_id: str, ids: Sequence[str]) -> None:
        with self._lock:
            gen = self._rows.get(tenant_id, 0) + 1
            self._rows[tenant_id] = gen
            self._log.setdefault(tenant_id, deque(maxlen=self.LOG_SIZE)).append((gen, tuple(ids)))

    def invalidate(self, tenant_id: str) -> None:
        """Forget everything cached for the tenant (after a bulk replace such as a restore)."""
        with self._lock:
            self._gen[tenant_id] = self._gen.get(tenant_id, 0) + 1
            self._rows[tenant_id] = self._rows.get(tenant_id, 0) + 1
            self._log.pop(tenant_id, None)  # the log no longer reaches back: rows are reloaded

    def row_generation(self, tenant_id: str) -> int:
        return self._rows.get(tenant_id, 0)

    def rows_changed_since(self, tenant_id: str, gen: int) -> set[str] | None:
        """Ids changed after row generation ``gen``; None when the log no longer reaches back."""
        with self._lock:
            current = self._rows.get(tenant_id, 0)
            if current == gen:
                return set()
            log = self._log.get(tenant_id)
            if not log or log[0][0] > gen + 1:
                return None
            return {i for g, ids in log if g > gen for i in ids}


_GENERATIONS: dict[Any, Generations] = {}
_GEN_LOCK = threading.Lock()


def generations_for(store_key: Any) -> Generations:
    """One counter set per database, shared by every Memory opened on it in this process."""
    with _GEN_LOCK:
        return _GENERATIONS.setdefault(store_key, Generations())


class GraphStore:
    """The write hook plus the graph's low-level writers (all take an open cursor)."""

    def __init__(
        self,
        *,
        extractor: GraphExtractor | None = None,
        enabled_by_default: bool = True,
        generations: Generations | None = None,
        cursor: Callable[[Any], Any] | None = None,
        dialect: Dialect = "duckdb",
    ) -> None:
        #: The write hooks' ``tx`` as a cursor of the graph's SQL (``GraphBackend.graph_cursor``).
        self.cursor: Callable[[Any], Any] = cursor or (lambda tx: tx)
        self.dialect: Dialect = dialect
        self.extractor: GraphExtractor = extractor or RuleBasedExtractor()
        self.enabled_by_default = enabled_by_default
        self.generations = generations or Generations()
        self._enabled: dict[str, bool] = {}
        #: Called with (stage, tenant_id) at "node", "entities", "edges" inside the transaction:
        #: tracing hooks, and the place tests inject a failure between the inserts.
        self.stage_listeners: list[StageListener] = []

    # -- per-tenant switch ---------------------------------------------------------------------
    def enabled(self, tx: Any, tenant_id: str) -> bool:
        cached = self._enabled.get(tenant_id)
        if cached is not None:
            return cached
        row = tx.execute("SELECT enabled FROM graph_settings WHERE tenant_id = ?", [tenant_id]).fetchone()
        value = bool(row[0]) if row else self.enabled_by_default
        self._enabled[tenant_id] = value
        return value

    def set_enabled(self, tx: Any, tenant_id: str, enabled: bool) -> None:
        tx.execute(
            "INSERT INTO graph_settings VALUES (?, ?, ?) ON CONFLICT (tenant_id) DO UPDATE SET "
            "enabled = excluded.enabled, updated_at = excluded.updated_at",
            [tenant_id, enabled, now_naive()],
        )
        self._enabled.pop(tenant_id, None)

    def forget_setting(self, tenant_id: str) -> None:
        self._enabled.pop(tenant_id, None)

    def _stage(self, stage: str, tenant_id: str) -> None:
        for listener in self.stage_listeners:
            listener(stage, tenant_id)

    # -- WriteHook -----------------------------------------------------------------------------
    def after_add(self, tx: Any, entries: Sequence[MemoryEntry]) -> None:
        tx = self.cursor(tx)
        for tenant in {e.tenant_id for e in entries}:
            self.generations.rows_changed(tenant, [e.id for e in entries if e.tenant_id == tenant])
        todo = [e for e in entries if e.status == "active" and self.enabled(tx, e.tenant_id)]
        if todo:
            self.index_entries(tx, todo)

    def after_update(self, tx: Any, entry: MemoryEntry, previous: MemoryEntry) -> None:
        tx = self.cursor(tx)
        tenant = entry.tenant_id
        self.generations.rows_changed(tenant, [entry.id])
        if entry.status != "active":
            if previous.status == "active":
                self.soft_delete(tx, tenant, [entry.id], _naive(entry.deleted_at) or now_naive())
            return
        if previous.status != "active":
            self.hard_delete(tx, tenant, [entry.id])
            if self.enabled(tx, tenant):
                self.index_memory(tx, entry)
            return
        if entry.content_hash != previous.content_hash or entry.content != previous.content:
            self.hard_delete(tx, tenant, [entry.id])
            if self.enabled(tx, tenant):
                self.index_memory(tx, entry)

    def after_delete(self, tx: Any, tenant_id: str, ids: Sequence[str]) -> None:
        tx = self.cursor(tx)
        self.generations.rows_changed(tenant_id, ids)
        self.hard_delete(tx, tenant_id, ids)

    # -- indexing ------------------------------------------------------------------------------
    def known_entities(self, tx: Any, tenant_id: str, text: str) -> dict[str, KnownEntity]:
        """The tenant's dictionary, restricted to names that occur in ``text``."""
        return self._known(tx, tenant_id, candidate_keys(text))

    def _known(self, tx: Any, tenant_id: str, keys: Sequence[str]) -> dict[str, KnownEntity]:
        """The tenant's live entities whose normalised name is one of ``keys`` (oldest spelling wins)."""
        if not keys:
            return {}
        if self.dialect == "postgres":
            rows = tx.execute(
                "SELECT e.norm_name, e.name, e.type FROM entities e "
                "WHERE e.tenant_id = ? AND e.deleted_at IS NULL "
                "AND e.norm_name = ANY(ARRAY(SELECT json_array_elements_text(?::json))) ORDER BY e.created_at",
                [tenant_id, json_list(sorted(set(keys)))],
            ).fetchall()
            return self._known_rows(rows)
        # A hash join with the keys (list_contains would scan the key list per row), handed over as
        # an Arrow table: a batch of 1000 memories has ~23k keys, and parsing them from one JSON
        # parameter took about twice as long.
        tx.register(_KEYS, arrow_table({"k": string_column(keys)}))
        try:
            rows = tx.execute(
                "SELECT e.norm_name, e.name, e.type FROM entities e "
                "JOIN (SELECT DISTINCT k FROM stratamem_graph_keys) q ON e.norm_name = q.k "
                "WHERE e.tenant_id = ? AND e.deleted_at IS NULL ORDER BY e.created_at",
                [tenant_id],
            ).fetchall()
        finally:
            tx.unregister(_KEYS)
        return self._known_rows(rows)

    @staticmethod
    def _known_rows(rows: Sequence[Any]) -> dict[str, KnownEntity]:
        known: dict[str, KnownEntity] = {}
        for norm, name, type_ in rows:
            known.setdefault(norm, KnownEntity(name=name, type=type_))
        return known

    def index_memory(self, tx: Any, entry: MemoryEntry) -> None:
        self.index_entries(tx, [entry])

    def index_entries(self, tx: Any, entries: Sequence[MemoryEntry]) -> None:
        """Extract and write the graph of these memories (one tenant) with batched statements."""
        if not entries:
            return
        tenant = entries[0].tenant_id
        if any(e.tenant_id != tenant for e in entries):
            for e in entries:
                self.index_entries(tx, [e])
            return
        known = self.known_entities(tx, tenant, "\n".join(e.content for e in entries))
        self._write(tx, tenant, self._plan(tenant, entries, known))

    # -- PreparingWriteHook: extraction ahead of the transaction -------------------------------
    def prepare_add(self, reader: Any, entries: Sequence[MemoryEntry]) -> _Prepared | None:
        """Extract the graph of a one-tenant batch of active memories before its transaction, from the
        dictionary as ``reader`` sees it (the engine does this while the batch is being embedded)."""
        if not entries or reader is None:  # no read handle (PostgreSQL): all of it in the transaction
            return None
        reader = self.cursor(reader)
        tenant = entries[0].tenant_id
        if any(e.tenant_id != tenant or e.status != "active" for e in entries):
            return None
        if self._enabled.get(tenant) is False:  # only a cached answer: reading it here could cache a stale one
            return None
        keys = candidate_keys("\n".join(e.content for e in entries))
        known = self._known(reader, tenant, keys)
        return _Prepared(keys=keys, known=known, plan=self._plan(tenant, entries, dict(known)))

    def after_add_prepared(
        self, tx: Any, entries: Sequence[MemoryEntry], prepared: _Prepared, *, unchanged: bool = False
    ) -> None:
        """``after_add`` with the extraction done ahead; it is redone here if the dictionary changed
        since (another writer added or removed one of the batch's names). ``unchanged`` (nothing was
        committed since the dictionary was read) spares reading it again."""
        tx = self.cursor(tx)
        tenant = entries[0].tenant_id
        self.generations.rows_changed(tenant, [e.id for e in entries])
        if not self.enabled(tx, tenant):
            return
        known = prepared.known if unchanged else self._known(tx, tenant, prepared.keys)
        plan = prepared.plan if known == prepared.known else self._plan(tenant, entries, known)
        self._write(tx, tenant, plan)

    def _plan(self, tenant: str, entries: Sequence[MemoryEntry], known: dict[str, KnownEntity]) -> _Plan:
        """The graph rows of these memories (one tenant), extracted against ``known`` (updated in place
        with the batch's new names, so later memories of the batch see them)."""
        now = str(now_naive())  # "YYYY-MM-DD HH:MM:SS[.ffffff]", cast to TIMESTAMP in SQL
        plan = _Plan()
        entity_rows: dict[str, dict[str, str]] = {}
        mention_rows: dict[str, dict[str, str]] = {}
        rel_rows: dict[str, dict[str, str]] = {}
        for entry in entries:
            result = self.extractor.extract(entry.content, known)
            plan.nodes.append(
                {
                    "t": tenant,
                    "id": entry.id,
                    "m": entry.id,
                    "layer": entry.layer.value,
                    "label": label_of(entry.content),
                    "ts": now,
                }
            )
            ids: dict[str, str] = {}
            for ent in result.entities:
                norm = ent.norm
                type_ = ent.type.upper()
                kn = known.get(norm)
                if kn is not None and (type_ in GENERIC_TYPES or kn.type not in GENERIC_TYPES):
                    type_ = kn.type
                eid = entity_id(tenant, norm, type_)
                ids[norm] = eid
                name = kn.name if kn is not None else ent.name
                entity_rows.setdefault(
                    eid, {"t": tenant, "id": eid, "name": name, "norm": norm, "type": type_, "ts": now}
                )
                if kn is None:  # later memories of the batch see it in the dictionary
                    known[norm] = KnownEntity(name=name, type=type_)
            for eid in ids.values():
                mid = edge_id(entry.id, eid, "MENTIONS")
                mention_rows[mid] = {"t": tenant, "id": mid, "src": entry.id, "tgt": eid, "m": entry.id, "ts": now}
            for rel in result.relations:
                src, tgt = ids.get(normalize_name(rel.source)), ids.get(normalize_name(rel.target))
                if src and tgt and src != tgt:
                    rid = edge_id(entry.id, src, tgt, rel.type)
                    rel_rows[rid] = {
                        "t": tenant,
                        "id": rid,
                        "src": src,
                        "tgt": tgt,
                        "rel": rel.type,
                        "m": entry.id,
                        "ts": now,
                    }
        plan.entities = list(entity_rows.values())
        plan.mentions = list(mention_rows.values())
        plan.relations = list(rel_rows.values())
        return plan

    def _write(self, tx: Any, tenant: str, plan: _Plan) -> None:
        self._stage("node", tenant)
        _insert(tx, INSERT_NODES, _NODE_KEYS, plan.nodes, self.dialect)
        self._stage("entities", tenant)
        _insert(tx, UPSERT_ENTITIES, _ENTITY_KEYS, plan.entities, self.dialect)
        self._stage("edges", tenant)
        _insert(tx, INSERT_MENTIONS, _MENTION_KEYS, plan.mentions, self.dialect)
        _insert(tx, INSERT_RELATIONS, _REL_KEYS, plan.relations, self.dialect)
        self.generations.bump(tenant)

    # -- cascades (deleting a memory removes the graph rows only it supported) -------------------
    # On DuckDB every statement finds the rows of the given ids through ``_rows_of`` (a scan filtered
    # on the ids alone, then the tenant and deletion checks on the few rows found) and changes them by
    # ``rowid``; on PostgreSQL the same statements filter with ``= ANY`` (``list_contains`` translated)
    # and the tenant's B-tree indexes. Either way the statements select only the rows of the ids,
    # the entities they mentioned and those entities' relations: no tenant-wide set (every live
    # mention, every deleted entity) is built. Without an index on the id column DuckDB still reads
    # that one column of the whole table.
    def _mentioned(self, tx: Any, tenant_id: str, ids: Sequence[str]) -> list[str]:
        """Entities the memories ``ids`` mention (through live or soft-deleted edges)."""
        if self.dialect == "postgres":
            return [r[0] for r in tx.execute(_PG_MENTIONED, [tenant_id, json_list(ids)]).fetchall()]
        edges, params = _rows_of("memory_edges", "memory_id", ids)
        return [r[0] for r in tx.execute(_MENTIONED.format(edges=edges), [*params, tenant_id]).fetchall()]

    def _change(
        self, tx: Any, change: str, table: str, columns: Sequence[str], tenant_id: str, ids: Sequence[str], at: Any
    ) -> None:
        """Soft-delete (``change="mark"``: live rows only, ``deleted_at = at``) or delete (``"remove"``)
        the tenant's rows of ``table`` whose ``columns`` (any of them) hold one of ``ids``."""
        live = _LIVE if change == "mark" else ""
        if self.dialect == "postgres":
            match = " OR ".join(_PG_ONE_OF.format(column=col) for col in columns)
            params: list[Any] = [tenant_id, *[json_list(ids)] * len(columns)]
            if change == "mark":
                tx.execute(_PG_MARK.format(table=table, live=live, match=match), [at, *params])
            else:
                tx.execute(_PG_REMOVE.format(table=table, match=match), params)
            return
        parts: list[str] = []
        params = []
        for col in columns:
            rows, rows_params = _rows_of(table, col, ids)
            parts.append(_ROWIDS.format(rows=rows, live=live))
            params += [*rows_params, tenant_id]
        rowids = " UNION ALL ".join(parts)
        if change == "mark":
            tx.execute(_MARK.format(table=table, rowids=rowids), [at, *params])
        else:
            tx.execute(_REMOVE.format(table=table, rowids=rowids), params)

    def _drop_unmentioned(self, tx: Any, change: str, tenant_id: str, entities: Sequence[str], at: Any) -> list[str]:
        """Of ``entities``, soft-delete (``"mark"``) the live ones no live edge mentions any more, or
        delete (``"remove"``) those no edge mentions at all; returns the ids changed."""
        live = _LIVE if change == "mark" else ""
        if self.dialect == "postgres":
            ents_json = json_list(entities)
            where = _PG_UNMENTIONED_WHERE.format(live=live)
            sql = (_PG_MARK_ENTITIES if change == "mark" else _PG_REMOVE_ENTITIES).format(where=where)
            params: list[Any] = [tenant_id, ents_json, tenant_id, ents_json]
        else:
            found, found_params = _rows_of("entities", "entity_id", entities)
            if len(entities) <= MENTION_PROBES:
                # one probe per entity that stops at its first mention: a name many memories mention
                # is settled after a few rows instead of reading all its mentions
                probe = _MENTION_PROBE.format(live=live)
                mentioned = " UNION ALL ".join([probe] * len(entities))
                mention_params = [value for entity in entities for value in (entity, tenant_id)]
            else:
                mentions, mention_params = _rows_of("memory_edges", "target_id", entities)
                mentioned = _MENTIONS.format(mentions=mentions, live=live)
                mention_params = [*mention_params, tenant_id]
            rowids = _UNMENTIONED.format(entities=found, mentioned=mentioned, live=live)
            sql = (_MARK_ENTITIES if change == "mark" else _REMOVE_ENTITIES).format(rowids=rowids)
            params = [*found_params, tenant_id, *mention_params]
        return [r[0] for r in tx.execute(sql, [at, *params] if change == "mark" else params).fetchall()]

    def hard_delete(self, tx: Any, tenant_id: str, ids: Sequence[str]) -> None:
        """Remove the memories' nodes, every edge touching or derived from them, and entities left
        without any mention (with their edges)."""
        if not ids:
            return
        entities = self._mentioned(tx, tenant_id, ids)
        self._change(tx, "remove", "entity_edges", ("memory_id",), tenant_id, ids, None)
        self._change(tx, "remove", "memory_edges", ("memory_id", "source_id", "target_id"), tenant_id, ids, None)
        self._change(tx, "remove", "memory_nodes", ("node_id",), tenant_id, ids, None)
        if entities:
            orphans = self._drop_unmentioned(tx, "remove", tenant_id, entities, None)
            if orphans:
                self._change(tx, "remove", "entity_edges", ("source_id", "target_id"), tenant_id, orphans, None)
        self.generations.bump(tenant_id)

    def soft_delete(self, tx: Any, tenant_id: str, ids: Sequence[str], at: datetime) -> None:
        """Mark the same rows a hard delete would remove with ``deleted_at`` (purged later): the
        memories' nodes and edges, the entities no live edge mentions any more, and those entities'
        relations. Relations of entities deleted in an earlier call are not read again: they were
        marked in that call (a relation is only written between live entities)."""
        if not ids:
            return
        entities = self._mentioned(tx, tenant_id, ids)
        self._change(tx, "mark", "entity_edges", ("memory_id",), tenant_id, ids, at)
        self._change(tx, "mark", "memory_edges", ("memory_id", "source_id", "target_id"), tenant_id, ids, at)
        self._change(tx, "mark", "memory_nodes", ("node_id",), tenant_id, ids, at)
        if entities:
            gone = self._drop_unmentioned(tx, "mark", tenant_id, entities, at)
            if gone:
                self._change(tx, "mark", "entity_edges", ("source_id", "target_id"), tenant_id, gone, at)
        self.generations.bump(tenant_id)
