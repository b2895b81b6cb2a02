"""AutoGen memory backed by stratamem: ``StratamemMemory`` implements ``autogen_core.memory.Memory``.

Mapping:

* one object serves one tenant (its :class:`TenantContext`) and one scope (``layer`` + ``identifiers``);
  a ``MemoryContent`` whose metadata names another ``layer`` is stored there (with the same
  identifiers).
* text, markdown and JSON contents are stored (JSON as its serialisation; the MIME type is kept in the
  metadata as ``mime_type`` and restored by :meth:`query`); images and bytes are refused.
* :meth:`query` is a semantic search over the layers the identifiers reach; each result carries
  ``id``, ``layer`` and ``score`` in its metadata.
* :meth:`update_context` searches with the newest user message and adds one ``SystemMessage``: the
  layer-labelled block of :func:`stratamem.agent.loop.format_context`, within ``max_tokens``.
* :meth:`clear` deletes the memories of the object's own scope only.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

from autogen_core import CancellationToken
from autogen_core.memory import Memory as AutogenMemory
from autogen_core.memory import MemoryContent, MemoryMimeType, MemoryQueryResult, UpdateContextResult
from autogen_core.model_context import ChatCompletionContext
from autogen_core.models import SystemMessage, UserMessage

from ..agent.loop import format_context
from ..model import Layer, MemoryEntry, SearchResult, TenantContext
from ..sdk import Memory

_TEXT_TYPES = {MemoryMimeType.TEXT.value, MemoryMimeType.MARKDOWN.value, MemoryMimeType.JSON.value}


def _mime(value: MemoryMimeType | str) -> str:
    return value.value if isinstance(value, MemoryMimeType) else str(value)


class StratamemMemory(AutogenMemory):
    """``autogen_core.memory.Memory`` on a stratamem :class:`Memory` (see the module docstring)."""

    def __init__(
        self,
        memory: Memory,
        ctx: TenantContext,
        identifiers: Mapping[str, str],
        layer: str | Layer = Layer.USER,
        *,
        k: int = 5,
        score_threshold: float = 0.0,
        max_tokens: int = 500,
        name: str = "stratamem",
        close_memory: bool = False,
    ) -> None:
        self.memory = memory
        self.ctx = ctx
        self.identifiers = dict(identifiers)
        self.layer = layer
        self.k = k
        self.score_threshold = score_threshold
        self.max_tokens = max_tokens
        self.name = name
        self._close_memory = close_memory

    async def add(self, content: MemoryContent, cancellation_token: CancellationToken | None = None) -> None:
        mime = _mime(content.mime_type)
        if mime not in _TEXT_TYPES:
            raise ValueError(f"stratamem stores text, markdown and JSON memories, not {mime}")
        text = content.content if isinstance(content.content, str) else json.dumps(content.content, sort_keys=True)
        metadata = dict(content.metadata or {})
        layer = metadata.pop("layer", None) or self.layer
        metadata["mime_type"] = mime
        await asyncio.to_thread(
            self.memory.add, self.ctx, text, layer=layer, identifiers=self.identifiers, metadata=metadata
        )

    def _content(self, entry: MemoryEntry, score: float | None) -> MemoryContent:
        metadata = dict(entry.metadata)
        mime = str(metadata.pop("mime_type", MemoryMimeType.TEXT.value))
        body: Any = entry.content
        if mime == MemoryMimeType.JSON.value:
            body = json.loads(entry.content)
        metadata.update(id=entry.id, layer=entry.layer.value, score=score)
        return MemoryContent(content=body, mime_type=mime, metadata=metadata)

    async def _search(self, text: str) -> list[SearchResult]:
        if not text.strip():
            return []
        found = await asyncio.to_thread(
            lambda: self.memory.search(
                self.ctx, text, identifiers=self.identifiers, layers=None, limit=self.k, threshold=self.score_threshold
            )
        )
        return found.results

    async def query(
        self, query: str | MemoryContent, cancellation_token: CancellationToken | None = None, **kwargs: Any
    ) -> MemoryQueryResult:
        text = query if isinstance(query, str) else str(query.content)
        results = await self._search(text)
        return MemoryQueryResult(results=[self._content(r.memory, r.score) for r in results])

    async def update_context(self, model_context: ChatCompletionContext) -> UpdateContextResult:
        messages = await model_context.get_messages()
        last_user = next((m for m in reversed(messages) if isinstance(m, UserMessage)), None)
        if last_user is None:
            return UpdateContextResult(memories=MemoryQueryResult(results=[]))
        content = last_user.content
        text = content if isinstance(content, str) else " ".join(p for p in content if isinstance(p, str))
        results = await self._search(text)
        block = format_context(results, self.max_tokens)
        if block:
            await model_context.add_message(SystemMessage(content=block))
        return UpdateContextResult(
            memories=MemoryQueryResult(results=[self._content(r.memory, r.score) for r in results])
        )

    async def clear(self) -> None:
        await asyncio.to_thread(self.memory.delete_by_scope, self.ctx, self.layer, self.identifiers)

    async def close(self) -> None:
        if self._close_memory:
            await asyncio.to_thread(self.memory.close)
