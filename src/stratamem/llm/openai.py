"""OpenAI-compatible chat-completions client (OpenAI, Ollama, vLLM, LM Studio …).

``POST {base_url}/chat/completions`` with ``response_format={"type": "json_object"}`` and
temperature 0; the reply's JSON is validated against the expected pydantic model. Every failure is
a :class:`~stratamem.errors.MemoryError`: unreachable / HTTP 5xx → PROVIDER_ERROR (retryable),
429 → RATE_LIMITED, 401/403/404 → CONFIGURATION_ERROR, an unparsable reply → PROVIDER_ERROR.

Configuration: ``STRATAMEM_LLM_URL`` (e.g. ``http://localhost:11434/v1``), ``STRATAMEM_LLM_MODEL``
and ``STRATAMEM_LLM_API_KEY`` (optional for local servers).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import httpx
from pydantic import ValidationError

from ..errors import ErrorCode, MemoryError
from ..hygiene.prompts import DEFAULT_PROMPTS
from ..settings import Settings
from .base import Classification, DecisionContext, FormattedMemory, GraphExtraction, M, Summary, WriteDecision


def _retry_after(response: httpx.Response) -> float | None:
    try:
        return max(0.0, float(response.headers.get("retry-after", "")))
    except ValueError:
        return None


def _extract_json(text: str) -> Any:
    """The JSON object in a reply (tolerates ```json fences and leading prose)."""
    text = text.strip()
    if text.startswith("```"):
        text = text.strip("`")
        text = text[text.find("\n") + 1 :] if "\n" in text else text
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        raise ValueError("no JSON object in the reply")
    return json.loads(text[start : end + 1])


class OpenAIChatLLM:
    name = "openai"

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_tokens: int = 300,
        json_mode: bool = True,
    ) -> None:
        if not base_url or not model:
            raise MemoryError(
                ErrorCode.CONFIGURATION_ERROR, "an LLM needs a base URL and a model name", operation="llm"
            )
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.max_tokens = max_tokens
        self.json_mode = json_mode
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(timeout=timeout, headers=headers)

    @classmethod
    def from_env(cls, settings: Settings | None = None) -> OpenAIChatLLM:
        settings = settings or Settings()
        url = settings.llm_url or ""
        model = settings.llm_model or ""
        if not url or not model:
            raise MemoryError(
                ErrorCode.CONFIGURATION_ERROR,
                "set STRATAMEM_LLM_URL and STRATAMEM_LLM_MODEL to use an HTTP LLM",
                operation="llm",
            )
        return cls(url, model, api_key=settings.llm_api_key or None)

    # ------------------------------------------------------------------ transport
    def chat(self, messages: list[dict[str, str]]) -> str:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": 0,
            "max_tokens": self.max_tokens,
        }
        if self.json_mode:
            body["response_format"] = {"type": "json_object"}
        try:
            response = self._client.post(f"{self.base_url}/chat/completions", json=body)
        except httpx.HTTPError as exc:
            raise MemoryError(
                ErrorCode.PROVIDER_ERROR,
                f"LLM endpoint unreachable: {type(exc).__name__}",
                operation="llm",
                retryable=True,
            ) from exc
        status = response.status_code
        if status == 429:
            retry_after = _retry_after(response)
            raise MemoryError(
                ErrorCode.RATE_LIMITED,
                "LLM endpoint rate limited the request",
                operation="llm",
                details={"retry_after": retry_after} if retry_after is not None else {},
            )
        if status in (401, 403, 404):
            raise MemoryError(
                ErrorCode.CONFIGURATION_ERROR,
                f"LLM endpoint refused the request (HTTP {status}); check URL, model and key",
                operation="llm",
                details={"status": status},
            )
        if status >= 400:
            raise MemoryError(
                ErrorCode.PROVIDER_ERROR,
                f"LLM endpoint answered HTTP {status}",
                operation="llm",
                details={"status": status},
                retryable=status >= 500,
            )
        try:
            payload = response.json()
            content = payload["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise MemoryError(
                ErrorCode.PROVIDER_ERROR, "LLM endpoint returned a malformed body", operation="llm"
            ) from exc
        if not isinstance(content, str):
            raise MemoryError(ErrorCode.PROVIDER_ERROR, "LLM reply has no text content", operation="llm")
        return content

    def complete_json(self, system: str, user: str, schema: type[M]) -> M:
        reply = self.chat([{"role": "system", "content": system}, {"role": "user", "content": user}])
        try:
            return schema.model_validate(_extract_json(reply))
        except (ValueError, ValidationError) as exc:
            raise MemoryError(
                ErrorCode.PROVIDER_ERROR,
                f"LLM reply does not match the expected {schema.__name__} schema",
                operation="llm",
                details={"schema": schema.__name__},
            ) from exc

    # ------------------------------------------------------------------ protocol
    def decide(self, text: str, context: DecisionContext, *, system: str | None = None) -> WriteDecision:
        parts = []
        if context.recent_messages:
            parts.append("Recent messages:\n" + "\n".join(f"- {m}" for m in context.recent_messages[-5:]))
        if context.existing_memories:
            parts.append("Known memories:\n" + "\n".join(f"- {m}" for m in context.existing_memories[:5]))
        parts.append(f"Intent: {context.user_intent}\nMessage:\n{text}")
        return self.complete_json(system or DEFAULT_PROMPTS.system("write_decision"), "\n\n".join(parts), WriteDecision)

    def format(self, text: str, *, system: str | None = None) -> FormattedMemory:
        return self.complete_json(
            system or DEFAULT_PROMPTS.system("format_memory"), f"Format this as a memory:\n\n{text}", FormattedMemory
        )

    def classify(self, text: str) -> Classification:
        return self.complete_json(
            "Classify the memory as preference, fact, context or instruction. "
            'Answer with a JSON object {"category": "<category>"}.',
            text,
            Classification,
        )

    def summarize(self, texts: Sequence[str], *, system: str | None = None) -> Summary:
        listing = "\n".join(f"- {t}" for t in texts)
        return self.complete_json(system or DEFAULT_PROMPTS.system("summarize"), listing, Summary)

    def extract_graph(
        self, text: str, *, known_entities: Sequence[str], relation_types: Sequence[str]
    ) -> GraphExtraction:
        """Entities and typed relations of ``text`` (the knowledge graph's ``LLMGraphExtractor`` hook)."""
        parts = [f"Relation types: {', '.join(relation_types)}"]
        if known_entities:
            # the tenant's dictionary can be large: the names the text could mean are enough
            parts.append("Known entities: " + ", ".join(list(known_entities)[:50]))
        parts.append(f"Text:\n{text}")
        return self.complete_json(DEFAULT_PROMPTS.extract_graph, "\n\n".join(parts), GraphExtraction)

    def close(self) -> None:
        self._client.close()
