"""LangGraph long-term memory store backed by stratamem: ``StratamemStore(BaseStore)``.

Mapping (one store object serves one tenant):

* **tenant** — the store's :class:`TenantContext`; it never comes from a namespace, so a graph can
  only reach its own tenant's memories.
* **layer / identifiers** — where new items are written: the ``scope(namespace)`` callable when given
  (e.g. :func:`layer_scope`, which reads ``("user", "alice", ...)`` as layer ``user`` with
  ``user_id=alice``), otherwise the store's fixed ``layer`` and ``identifiers``. Reads (get, search
  without a query, list_namespaces) look across the whole tenant, so they find an item wherever its
  namespace put it; a semantic search (``query=``) runs in ``scope(namespace_prefix)``.
* **namespace / key / value** — kept in the memory's metadata (``lg_namespace``, ``lg_prefixes``,
  ``lg_key``, ``lg_value``); the memory's content is the text that is embedded: the values of the
  put's ``index`` fields, else the value's ``content``/``text``/``memory`` string, else the value as
  JSON.
* **TTL** — ``ttl`` minutes become the memory's ``expires_at`` (expired items are never returned);
  reads with ``refresh_ttl`` push ``expires_at`` forward again.

A put on an existing key replaces the item (delete, then add: ``created_at`` restarts, as in
LangGraph's own stores); ``value=None`` deletes it. Reads without a query scan the tenant's
LangGraph items page by page, so they cost time linear in that count. A semantic search returns at
most ``max_search_limit`` (the store's config) results counted from the first, offset included.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime, timedelta
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)

from ..config import MemoryConfig
from ..layers import REQUIRED_IDENTIFIERS
from ..model import Layer, MemoryEntry, TenantContext
from ..sdk import Memory

Scope = tuple[str | Layer, dict[str, str]]
_NS, _PREFIXES, _KEY, _VALUE, _TTL = "lg_namespace", "lg_prefixes", "lg_key", "lg_value", "lg_ttl"
_OPERATORS = {"$eq": "eq", "$ne": "ne", "$gt": "gt", "$gte": "gte", "$lt": "lt", "$lte": "lte"}
_TEXT_FIELDS = ("content", "text", "memory")


def layer_scope(default: Scope) -> Callable[[tuple[str, ...]], Scope]:
    """A ``scope`` callable: ``(layer, id, ...)`` for a single-identifier layer (``user``, ``project``,
    ``team``, ``org``, ``company``) maps to that layer with that identifier; any other namespace to
    ``default``."""

    def scope(namespace: tuple[str, ...]) -> Scope:
        if len(namespace) >= 2:
            try:
                layer = Layer(namespace[0])
            except ValueError:
                return default
            required = REQUIRED_IDENTIFIERS[layer]
            if len(required) == 1:
                return layer, {required[0]: namespace[1]}
        return default

    return scope


def _join(namespace: tuple[str, ...]) -> str:
    return ".".join(namespace)


def _check_labels(namespace: tuple[str, ...]) -> None:
    for label in namespace:
        if not isinstance(label, str) or not label or "." in label or "\x00" in label:
            raise InvalidNamespaceError(f"invalid namespace label {label!r} in {namespace}")


def _flatten(filter: Mapping[str, Any], path: str) -> Iterator[tuple[str, Any]]:
    """LangGraph value filters as stratamem custom metadata filters on ``lg_value.<field>``."""
    for field, wanted in filter.items():
        where = f"{path}.{field}"
        if isinstance(wanted, Mapping) and any(str(k).startswith("$") for k in wanted):
            ops = {}
            for op, operand in wanted.items():
                if op not in _OPERATORS:
                    raise ValueError(f"unsupported filter operator {op!r}; supported: {', '.join(_OPERATORS)}")
                ops[_OPERATORS[op]] = operand
            yield where, ops
        elif isinstance(wanted, Mapping):
            yield from _flatten(wanted, where)
        else:
            yield where, {"eq": wanted}


def _text(value: Mapping[str, Any], index: list[str] | None) -> str:
    if index:
        parts = [_field(value, path) for path in index]
        text = " ".join(str(p) for p in parts if p is not None and p != "")
        if text.strip():
            return text
    for field in _TEXT_FIELDS:
        if isinstance(value.get(field), str) and value[field].strip():
            return str(value[field])
    return json.dumps(value, sort_keys=True, default=str)


def _field(value: Mapping[str, Any], path: str) -> Any:
    cur: Any = value
    for part in path.split("."):
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(part)
    return cur


def _matches(namespace: tuple[str, ...], condition: MatchCondition) -> bool:
    path = tuple(condition.path)
    if len(path) > len(namespace):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[len(namespace) - len(path) :]
    return all(want == "*" or want == got for want, got in zip(path, part, strict=True))


class StratamemStore(BaseStore):
    """LangGraph ``BaseStore`` on a stratamem :class:`Memory` (see the module docstring for the mapping).

    >>> store = StratamemStore(Memory.open("data/agent.duckdb"), TenantContext(tenant_id="acme", principal="graph"),
    ...                        identifiers={"user_id": "alice"})  # doctest: +SKIP
    >>> store.put(("memories", "alice"), "food", {"content": "Alice likes pizza"})  # doctest: +SKIP
    >>> store.search(("memories",), query="what does alice eat")  # doctest: +SKIP
    """

    supports_ttl = True

    def __init__(
        self,
        memory: Memory,
        ctx: TenantContext,
        identifiers: Mapping[str, str] | None = None,
        layer: str | Layer = Layer.USER,
        *,
        scope: Callable[[tuple[str, ...]], Scope] | None = None,
        ttl: TTLConfig | None = None,
    ) -> None:
        self.memory = memory
        self.ctx = ctx
        self._default: Scope = (layer, dict(identifiers or {}))
        self._scope = scope or (lambda _ns: self._default)
        self.ttl_config = ttl

    # -- BaseStore --------------------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                _check_labels(op.namespace)
                results.append(self._get(op))
            elif isinstance(op, PutOp):
                if not op.namespace or op.namespace[0] == "langgraph":
                    raise InvalidNamespaceError(
                        f"a namespace must be non-empty and not start with 'langgraph': {op.namespace}"
                    )
                _check_labels(op.namespace)
                self._put(op)
                results.append(None)
            elif isinstance(op, SearchOp):
                _check_labels(op.namespace_prefix)
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            else:
                raise ValueError(f"unknown store operation {type(op).__name__}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))

    # -- operations -------------------------------------------------------------------------
    @property
    def _config(self) -> MemoryConfig:
        return self.memory.engine.config

    def _scan(self, filter: dict[str, Any]) -> Iterator[MemoryEntry]:
        """Every LangGraph item of the tenant matching a stratamem metadata filter, page by page."""
        cursor: str | None = None
        while True:
            page = self.memory.list(
                self.ctx, cursor=cursor, limit=self._config.max_list_limit, filter={_KEY: {"exists": True}, **filter}
            )
            yield from page.memories
            cursor = page.next_cursor
            if cursor is None:
                return

    def _find(self, namespace: tuple[str, ...], key: str) -> MemoryEntry | None:
        return next(self._scan({_NS: _join(namespace), _KEY: key}), None)

    @staticmethod
    def _item(entry: MemoryEntry, score: float | None = None) -> SearchItem:
        """The LangGraph item of a stored memory (a ``SearchItem`` is an ``Item`` with a score)."""
        md = entry.metadata
        return SearchItem(
            namespace=tuple(str(md[_NS]).split(".")),
            key=str(md[_KEY]),
            value=dict(md[_VALUE]),
            created_at=entry.created_at,
            updated_at=entry.updated_at,
            score=score,
        )

    def _refresh(self, entry: MemoryEntry, refresh: bool) -> None:
        minutes = entry.metadata.get(_TTL)
        if refresh and minutes is not None and (self.ttl_config or {}).get("refresh_on_read", True):
            self.memory.update(self.ctx, entry.id, expires_at=self.memory.engine.now() + timedelta(minutes=minutes))

    def _get(self, op: GetOp) -> Item | None:
        entry = self._find(op.namespace, op.key)
        if entry is None:
            return None
        self._refresh(entry, op.refresh_ttl)
        item = self._item(entry)
        return Item(
            value=item.value,
            key=item.key,
            namespace=item.namespace,
            created_at=item.created_at,
            updated_at=item.updated_at,
        )

    def _put(self, op: PutOp) -> None:
        existing = self._find(op.namespace, op.key)
        if existing is not None:
            self.memory.delete(self.ctx, existing.id)
        if op.value is None:
            return
        ttl = op.ttl  # BaseStore.put has already applied ttl_config["default_ttl"]; None: no expiry
        expires_at: datetime | None = None
        if ttl is not None:
            expires_at = self.memory.engine.now() + timedelta(minutes=ttl)
        layer, identifiers = self._scope(op.namespace)
        metadata = {
            _NS: _join(op.namespace),
            _PREFIXES: [_join(op.namespace[:n]) for n in range(1, len(op.namespace) + 1)],
            _KEY: op.key,
            _VALUE: dict(op.value),
            **({_TTL: ttl} if ttl is not None else {}),
        }
        index = op.index if isinstance(op.index, list) else None
        self.memory.add(
            self.ctx,
            _text(op.value, index),
            layer=layer,
            identifiers=identifiers,
            metadata=metadata,
            expires_at=expires_at,
        )

    def _search(self, op: SearchOp) -> list[SearchItem]:
        flt: dict[str, Any] = dict(_flatten(op.filter or {}, _VALUE))
        if op.namespace_prefix:
            flt[_PREFIXES] = {"contains": _join(op.namespace_prefix)}
        if op.query:
            layer, identifiers = self._scope(op.namespace_prefix)
            found = self.memory.search(
                self.ctx,
                op.query,
                identifiers=identifiers,
                layers=[layer],
                limit=min(op.offset + op.limit, self._config.max_search_limit),
                threshold=0.0,
                filter={_KEY: {"exists": True}, **flt},
            )
            hits = [(r.memory, r.score) for r in found.results][op.offset : op.offset + op.limit]
            return [self._hit(entry, score, op.refresh_ttl) for entry, score in hits]
        entries = sorted(self._scan(flt), key=lambda e: (e.updated_at, e.id), reverse=True)
        return [self._hit(entry, None, op.refresh_ttl) for entry in entries[op.offset : op.offset + op.limit]]

    def _hit(self, entry: MemoryEntry, score: float | None, refresh: bool) -> SearchItem:
        self._refresh(entry, refresh)
        return self._item(entry, score)

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        namespaces = {tuple(str(e.metadata[_NS]).split(".")) for e in self._scan({})}
        for condition in op.match_conditions or ():
            _check_labels(tuple(label for label in condition.path if label != "*"))
            namespaces = {ns for ns in namespaces if _matches(ns, condition)}
        if op.max_depth is not None:
            namespaces = {ns[: op.max_depth] for ns in namespaces}
        return sorted(namespaces)[op.offset : op.offset + op.limit]
