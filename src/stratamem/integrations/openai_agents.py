"""OpenAI Agents SDK session backed by stratamem: ``StratamemSession`` implements ``agents.memory.SessionABC``.

Mapping: one session object is one stratamem ``session``-layer scope (``user_id`` + ``session_id``) of
one tenant. Each conversation item is one memory: its content is the item's text (so the session is
searchable like any memory), its metadata keeps the item itself (``oa_item``) and its position
(``oa_seq``, which orders the history). Only these items are read, popped or cleared: other memories
of the same session scope (e.g. written by the write gate) are left alone. ``close_session`` and the
lifecycle (promotion, TTL) apply to the items as to any session memory.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

from agents.items import TResponseInputItem
from agents.memory import SessionABC
from agents.memory.session_settings import SessionSettings, resolve_session_limit

from ..model import Layer, MemoryEntry, TenantContext
from ..sdk import Memory

_ITEM, _SEQ = "oa_item", "oa_seq"


def _text(item: Mapping[str, Any]) -> str:
    """The readable text of a Responses input item; the item as JSON when it has none."""
    content = item.get("content")
    if isinstance(content, str) and content.strip():
        return content
    if isinstance(content, list):
        parts = [str(p.get("text", "")) for p in content if isinstance(p, Mapping)]
        text = " ".join(p for p in parts if p.strip())
        if text:
            return text
    return json.dumps(item, sort_keys=True, default=str)


class StratamemSession(SessionABC):
    """Conversation history of an OpenAI Agents SDK run, kept as stratamem session memories."""

    def __init__(
        self,
        memory: Memory,
        ctx: TenantContext,
        user_id: str,
        session_id: str,
        *,
        session_settings: SessionSettings | None = None,
    ) -> None:
        self.memory = memory
        self.ctx = ctx
        self.session_id = session_id
        self.identifiers = {"user_id": user_id, "session_id": session_id}
        self.session_settings = session_settings
        self._lock = asyncio.Lock()

    def _entries(self) -> list[MemoryEntry]:
        """Every item of the session, oldest first."""
        out: list[MemoryEntry] = []
        cursor: str | None = None
        while True:
            page = self.memory.list(
                self.ctx,
                Layer.SESSION,
                identifiers=self.identifiers,
                cursor=cursor,
                limit=self.memory.engine.config.max_list_limit,
                filter={_SEQ: {"exists": True}},
            )
            out.extend(page.memories)
            cursor = page.next_cursor
            if cursor is None:
                return sorted(out, key=lambda e: int(e.metadata[_SEQ]))

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        session_limit = resolve_session_limit(limit, self.session_settings)
        entries = await asyncio.to_thread(self._entries)
        if session_limit is not None:
            entries = entries[-session_limit:] if session_limit > 0 else []
        return [e.metadata[_ITEM] for e in entries]

    def _add(self, items: list[TResponseInputItem]) -> None:
        entries = self._entries()
        start = int(entries[-1].metadata[_SEQ]) + 1 if entries else 0
        batch = [
            {
                "content": _text(dict(item)),
                "layer": Layer.SESSION.value,
                "identifiers": self.identifiers,
                "metadata": {_ITEM: dict(item), _SEQ: start + n},
            }
            for n, item in enumerate(items)
        ]
        self.memory.bulk_add(self.ctx, batch)  # all or nothing; raises MemoryError on a refused item

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        if not items:
            return
        async with self._lock:  # sequence numbers are read, then written
            await asyncio.to_thread(self._add, items)

    async def pop_item(self) -> TResponseInputItem | None:
        async with self._lock:
            entries = await asyncio.to_thread(self._entries)
            if not entries:
                return None
            last = entries[-1]
            await asyncio.to_thread(self.memory.delete, self.ctx, last.id)
            item: TResponseInputItem = last.metadata[_ITEM]
            return item

    async def clear_session(self) -> None:
        async with self._lock:
            entries = await asyncio.to_thread(self._entries)
            if entries:
                await asyncio.to_thread(self.memory.bulk_delete, self.ctx, [e.id for e in entries])
