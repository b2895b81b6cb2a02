"""HTTP clients of a running ``stratamem serve``: :class:`Client` (sync) and :class:`AsyncClient`.

They have the method names, arguments and return models of :class:`~stratamem.Memory` for what the
REST API offers, so an application moves from the embedded store to a server by changing the line
that opens it::

    mem = Memory.open("data/stratamem.duckdb")
    mem = Client("http://127.0.0.1:8080", api_key="smk_…")

* The tenant (and the principal, role and grant) come from the API key. ``ctx`` is accepted for the
  same signatures; on requests with a body its ``tenant_id`` is sent and the server refuses another
  tenant than the key's (403 FORBIDDEN).
* Errors are the SDK's :class:`~stratamem.MemoryError` with the server's code, message, operation,
  details and ``retryable`` flag. An unreachable server is PROVIDER_ERROR (retryable).
* Reads and other idempotent calls are retried (tenacity: exponential backoff with jitter) on
  connection errors, timeouts and retryable codes (RATE_LIMITED, PROVIDER_ERROR, EMBEDDING_FAILED);
  writes are retried only when the connection could not be made (the request never left).
* Not over HTTP: ``graph``, ``snapshots``, ``lifecycle``, ``hygiene``, ``policies`` (use the REST
  routes ``/v1/policies`` and ``/v1/graph/…``), ``configure_snapshots``, ``open_from_snapshot``,
  ``system_contract`` and ``process_conversation``.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from types import TracebackType
from typing import Any, Self
from urllib.parse import quote

import httpx
from pydantic import BaseModel
from tenacity import (
    AsyncRetrying,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential_jitter,
)

from .crud.skill import MemoryCrudResponse
from .erasure import ForgetUserReport
from .errors import ErrorCode, MemoryError
from .filters import parse_filter, with_tags_match
from .hygiene.gate import ProcessResult
from .hygiene.health import MemoryHealth
from .hygiene.history import EventTrends, MaintenanceRunsOutput, MemoryEventsOutput
from .layers import get_accessible_layers, parse_identifiers
from .lifecycle.feedback import FeedbackResult
from .lifecycle.maintenance import MaintenanceReport
from .lifecycle.manager import CloseSessionResult
from .lifecycle.pruning import PruneReport
from .model import (
    AddMemoryOutput,
    BulkAddOutput,
    BulkDeleteOutput,
    DeleteMemoryOutput,
    HealthCheckResult,
    Layer,
    ListMemoriesOutput,
    MemoryEntry,
    ProviderCapabilities,
    SearchMemoryOutput,
    StoreStats,
    TenantContext,
    UpdateMemoryOutput,
)
from .query import UNSET, Order, TagsMatch, TimeField, Unset

#: Codes worth another attempt of an idempotent call.
_TRANSIENT = frozenset({ErrorCode.RATE_LIMITED, ErrorCode.PROVIDER_ERROR, ErrorCode.EMBEDDING_FAILED})


@dataclass
class _Call:
    """One request and how to read its answer."""

    method: str
    path: str
    operation: str
    parse: Callable[[Any], Any]
    json: Any = None
    params: builtins.list[tuple[str, str]] = field(default_factory=builtins.list)
    headers: dict[str, str] = field(default_factory=dict)
    idempotent: bool = False
    #: 404 MEMORY_NOT_FOUND answers None (``get``).
    none_if_missing: bool = False


def _value(v: Any) -> Any:
    if isinstance(v, datetime):
        return v.isoformat()
    if isinstance(v, Layer):
        return v.value
    return v


def _body(ctx: TenantContext | None, **fields: Any) -> dict[str, Any]:
    """A camelCase JSON body without the arguments left out (None), with the ctx's tenant."""
    out: dict[str, Any] = {}
    if ctx is not None:
        out["tenantId"] = ctx.tenant_id
    for name, v in fields.items():
        if v is None:
            continue
        head, *rest = name.split("_")
        out[head + "".join(p.title() for p in rest)] = _value(v)
    return out


def _ids(identifiers: Any, operation: str) -> dict[str, Any]:
    return parse_identifiers(identifiers, operation).model_dump(by_alias=True, exclude_none=True)


def _filter(value: Any, tags_match: Any, operation: str) -> dict[str, Any] | None:
    flt = (
        with_tags_match(parse_filter(value, operation), tags_match)
        if tags_match is not None
        else parse_filter(value, operation)
    )
    return None if flt is None else flt.model_dump(by_alias=True, exclude_none=True)


def _model(cls: type[BaseModel]) -> Callable[[Any], Any]:
    return cls.model_validate


def _error(response: httpx.Response, operation: str) -> MemoryError:
    try:
        data = response.json()
    except ValueError:
        data = None
    if isinstance(data, dict) and isinstance(data.get("code"), str) and data["code"] in ErrorCode.__members__:
        return MemoryError(
            data["code"],
            str(data.get("message", "")),
            operation=str(data.get("operation") or operation),
            details=data.get("details") or {},
            retryable=data.get("retryable"),
        )
    return MemoryError(
        ErrorCode.PROVIDER_ERROR,
        f"HTTP {response.status_code} from the server: {response.text[:200]}",
        operation=operation,
        details={"status": response.status_code},
        retryable=response.status_code >= 500,
    )


def _unreachable(exc: httpx.HTTPError, url: str, operation: str) -> MemoryError:
    return MemoryError(
        ErrorCode.PROVIDER_ERROR,
        f"cannot reach the stratamem server at {url}: {type(exc).__name__}: {exc}",
        operation=operation,
        details={"url": url},
        retryable=True,
    )


def _retry_predicate(call: _Call) -> Callable[[BaseException], bool]:
    def transient(exc: BaseException) -> bool:
        if isinstance(exc, httpx.ConnectError):  # nothing was sent: safe for every call
            return True
        if not call.idempotent:
            return False
        if isinstance(exc, httpx.TransportError):
            return True
        return isinstance(exc, MemoryError) and exc.retryable and exc.code in _TRANSIENT

    return transient


def _read(call: _Call, response: httpx.Response) -> Any:
    if response.status_code >= 400:
        err = _error(response, call.operation)
        if call.none_if_missing and err.code == ErrorCode.MEMORY_NOT_FOUND:
            return None
        raise err
    return call.parse(response.json())


class _Calls:
    """The requests of the SDK methods; shared by the sync and the async client."""

    @staticmethod
    def add(
        ctx: TenantContext | None,
        content: Any,
        layer: Any,
        identifiers: Any,
        metadata: Any,
        tier: Any,
        expires_at: Any,
        importance: Any,
        provenance: Any,
        supersedes: Any,
    ) -> _Call:
        prov = (
            provenance.model_dump(by_alias=True, exclude_none=True, mode="json")
            if isinstance(provenance, BaseModel)
            else provenance
        )
        return _Call(
            "POST",
            "/v1/memories",
            "add",
            _model(AddMemoryOutput),
            json=_body(
                ctx,
                content=content,
                layer=layer,
                identifiers=_ids(identifiers, "add"),
                metadata=metadata,
                tier=tier,
                expires_at=expires_at,
                importance=importance,
                provenance=prov,
                supersedes=builtins.list(supersedes) if supersedes is not None else None,
            ),
        )

    @staticmethod
    def search(
        ctx: TenantContext | None,
        query: Any,
        identifiers: Any,
        layers: Any,
        limit: Any,
        threshold: Any,
        filter: Any,
        **options: Any,
    ) -> _Call:
        if options.pop("expand_graph", False):
            raise MemoryError(
                ErrorCode.INVALID_PARAMS,
                "expand_graph is not offered by the REST search; use the graph routes (/v1/graph/…)",
                operation="search",
                details={"field": "expand_graph"},
            )
        tags_match = options.pop("tags_match", None)
        if options.get("include_superseded") is False:
            options.pop("include_superseded")
        if options.get("include_narrower") is False:
            options.pop("include_narrower")
        return _Call(
            "POST",
            "/v1/memories/search",
            "search",
            _model(SearchMemoryOutput),
            idempotent=True,
            json=_body(
                ctx,
                query=query,
                identifiers=_ids(identifiers, "search"),
                layers=[_value(x) for x in layers] if layers is not None else None,
                limit=limit,
                threshold=threshold,
                filter=_filter(filter, None, "search"),
                tags_match=tags_match,
                **options,
            ),
        )

    @staticmethod
    def get(memory_id: Any) -> _Call:
        return _Call(
            "GET",
            f"/v1/memories/{quote(str(memory_id), safe='')}",
            "get",
            _model(MemoryEntry),
            idempotent=True,
            none_if_missing=True,
        )

    @staticmethod
    def update(
        ctx: TenantContext | None,
        memory_id: Any,
        content: Any,
        metadata: Any,
        if_match: Any,
        expires_at: Any,
        tier: Any,
    ) -> _Call:
        body = _body(ctx, content=content, metadata=metadata, tier=tier)
        if expires_at is not UNSET:
            body["expiresAt"] = _value(expires_at)
        headers = {"If-Match": f'"{if_match}"'} if if_match is not None else {}
        return _Call(
            "PATCH",
            f"/v1/memories/{quote(str(memory_id), safe='')}",
            "update",
            _model(UpdateMemoryOutput),
            json=body,
            headers=headers,
        )

    @staticmethod
    def delete(memory_id: Any, if_match: Any) -> _Call:
        headers = {"If-Match": f'"{if_match}"'} if if_match is not None else {}
        return _Call(
            "DELETE",
            f"/v1/memories/{quote(str(memory_id), safe='')}",
            "delete",
            _model(DeleteMemoryOutput),
            headers=headers,
            idempotent=True,
        )

    @staticmethod
    def list(layer: Any, identifiers: Any, cursor: Any, limit: Any, filter: Any, **options: Any) -> _Call:
        params: builtins.list[tuple[str, str]] = [(k, str(v)) for k, v in _ids(identifiers, "list").items()]
        flt = _filter(filter, None, "list")
        pairs = {
            "layer": layer,
            "cursor": cursor,
            "limit": limit,
            "filter": json.dumps(flt) if flt else None,
            **options,
        }
        for name, v in _body(None, **pairs).items():
            if isinstance(v, bool):
                if v:
                    params.append((name, "true"))
            else:
                params.append((name, str(v)))
        return _Call("GET", "/v1/memories", "list", _model(ListMemoriesOutput), params=params, idempotent=True)


class _Base:
    def __init__(self, base_url: str, api_key: str | None, *, timeout: float, retries: int) -> None:
        self.base_url = base_url.rstrip("/")
        self.retries = max(1, retries)
        self._headers = {"X-API-Key": api_key} if api_key else {}
        self._timeout = httpx.Timeout(timeout)

    def _attempts(self, call: _Call) -> dict[str, Any]:
        return {
            "stop": stop_after_attempt(self.retries),
            "wait": wait_exponential_jitter(multiplier=0.2, max=5.0, jitter=0.2),
            "retry": retry_if_exception(_retry_predicate(call)),
            "reraise": True,
        }

    @staticmethod
    def get_accessible_layers(identifiers: Any) -> builtins.list[Layer]:
        return get_accessible_layers(identifiers)


class Client(_Base):
    """A :class:`~stratamem.Memory` over HTTP (see the module documentation)."""

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8080",
        api_key: str | None = None,
        *,
        timeout: float = 30.0,
        retries: int = 3,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        super().__init__(base_url, api_key, timeout=timeout, retries=retries)
        self._http = httpx.Client(
            base_url=self.base_url, headers=self._headers, timeout=self._timeout, transport=transport
        )

    def _send(self, call: _Call) -> Any:
        def once() -> Any:
            response = self._http.request(
                call.method, call.path, json=call.json, params=tuple(call.params), headers=call.headers
            )
            return _read(call, response)

        try:
            for attempt in Retrying(**self._attempts(call)):
                with attempt:
                    return once()
        except httpx.HTTPError as exc:
            raise _unreachable(exc, self.base_url, call.operation) from exc
        raise AssertionError("unreachable")  # pragma: no cover - Retrying either returns or raises

    def _post(
        self, path: str, operation: str, parse: Callable[[Any], Any], body: dict[str, Any], *, idempotent: bool = False
    ) -> Any:
        return self._send(_Call("POST", path, operation, parse, json=body, idempotent=idempotent))

    # -- operations ------------------------------------------------------------------------
    def add(
        self,
        ctx: TenantContext | None = None,
        content: str | None = None,
        *,
        layer: str | Layer | None = None,
        identifiers: Any = None,
        metadata: dict[str, Any] | None = None,
        tier: str | None = None,
        expires_at: datetime | str | None = None,
        importance: float | None = None,
        provenance: Any = None,
        supersedes: Sequence[str] | None = None,
    ) -> AddMemoryOutput:
        out: AddMemoryOutput = self._send(
            _Calls.add(ctx, content, layer, identifiers, metadata, tier, expires_at, importance, provenance, supersedes)
        )
        return out

    def search(
        self,
        ctx: TenantContext | None = None,
        query: str | None = None,
        *,
        identifiers: Any = None,
        layers: Sequence[str | Layer] | None = None,
        limit: int | None = None,
        threshold: float | None = None,
        filter: Any = None,
        expand_graph: bool = False,
        hybrid_weight: float | None = None,
        recency_boost: float | None = None,
        importance_boost: float | None = None,
        include_superseded: bool = False,
        as_of: datetime | str | None = None,
        order: Order | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        time_field: TimeField | None = None,
        tags_match: TagsMatch | None = None,
        include_narrower: bool = False,
    ) -> SearchMemoryOutput:
        out: SearchMemoryOutput = self._send(
            _Calls.search(
                ctx,
                query,
                identifiers,
                layers,
                limit,
                threshold,
                filter,
                expand_graph=expand_graph,
                hybrid_weight=hybrid_weight,
                recency_boost=recency_boost,
                importance_boost=importance_boost,
                include_superseded=include_superseded,
                as_of=as_of,
                order=order,
                since=since,
                until=until,
                time_field=time_field,
                tags_match=tags_match,
                include_narrower=include_narrower,
            )
        )
        return out

    def get(self, ctx: TenantContext | None = None, memory_id: str | None = None) -> MemoryEntry | None:
        out: MemoryEntry | None = self._send(_Calls.get(memory_id))
        return out

    def update(
        self,
        ctx: TenantContext | None = None,
        memory_id: str | None = None,
        *,
        content: str | None = None,
        metadata: dict[str, Any] | None = None,
        if_match: str | None = None,
        expires_at: datetime | str | Unset | None = UNSET,
        tier: str | None = None,
        record_conflict: bool = True,
    ) -> UpdateMemoryOutput:
        """``record_conflict`` is the server's choice over HTTP (a mismatch stores nothing)."""
        out: UpdateMemoryOutput = self._send(
            _Calls.update(ctx, memory_id, content, metadata, if_match, expires_at, tier)
        )
        return out

    def delete(
        self, ctx: TenantContext | None = None, memory_id: str | None = None, *, if_match: str | None = None
    ) -> DeleteMemoryOutput:
        out: DeleteMemoryOutput = self._send(_Calls.delete(memory_id, if_match))
        return out

    def list(
        self,
        ctx: TenantContext | None = None,
        layer: str | Layer | None = None,
        *,
        identifiers: Any = None,
        cursor: str | None = None,
        limit: int | None = None,
        filter: Any = None,
        include_superseded: bool = False,
        as_of: datetime | str | None = None,
        order: Order | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        time_field: TimeField | None = None,
        tags_match: TagsMatch | None = None,
        include_narrower: bool = False,
        expires_before: datetime | str | None = None,
    ) -> ListMemoriesOutput:
        out: ListMemoriesOutput = self._send(
            _Calls.list(
                layer,
                identifiers,
                cursor,
                limit,
                filter,
                include_superseded=include_superseded,
                as_of=as_of,
                order=order,
                since=since,
                until=until,
                time_field=time_field,
                tags_match=tags_match,
                include_narrower=include_narrower,
                expires_before=expires_before,
            )
        )
        return out

    def bulk_add(self, ctx: TenantContext | None = None, items: Sequence[Any] = ()) -> BulkAddOutput:
        body = _body(ctx, items=[_item(i) for i in items])
        out: BulkAddOutput = self._post("/v1/memories/bulk", "bulk_add", _model(BulkAddOutput), body)
        return out

    def bulk_delete(self, ctx: TenantContext | None = None, ids: Sequence[str] = ()) -> BulkDeleteOutput:
        out: BulkDeleteOutput = self._post(
            "/v1/memories/bulk-delete",
            "bulk_delete",
            _model(BulkDeleteOutput),
            _body(ctx, ids=builtins.list(ids)),
            idempotent=True,
        )
        return out

    def stats(self, ctx: TenantContext | None = None) -> StoreStats:
        out: StoreStats = self._send(_Call("GET", "/v1/stats", "stats", _model(StoreStats), idempotent=True))
        return out

    def export(self, ctx: TenantContext | None = None, *, include_embeddings: bool = False) -> Iterator[MemoryEntry]:
        """The tenant's memories, streamed from ``GET /v1/export`` (NDJSON)."""
        params = {"includeEmbeddings": "true"} if include_embeddings else None
        try:
            with self._http.stream("GET", "/v1/export", params=params) as response:
                if response.status_code >= 400:
                    response.read()
                    raise _error(response, "export")
                for line in response.iter_lines():
                    if line.strip():
                        yield MemoryEntry.model_validate_json(line)
        except httpx.HTTPError as exc:
            raise _unreachable(exc, self.base_url, "export") from exc

    def generate_embedding(self, text: str) -> builtins.list[float]:
        out: dict[str, Any] = self._post("/v1/embeddings", "generate_embedding", dict, {"text": text}, idempotent=True)
        return [float(x) for x in out["embedding"]]

    def health_check(self) -> HealthCheckResult:
        out: HealthCheckResult = self._send(
            _Call("GET", "/health", "health_check", _model(HealthCheckResult), idempotent=True)
        )
        return out

    def capabilities(self) -> ProviderCapabilities:
        out: ProviderCapabilities = self._send(
            _Call("GET", "/v1/capabilities", "capabilities", _model(ProviderCapabilities), idempotent=True)
        )
        return out

    # -- lifecycle ---------------------------------------------------------------------------
    def close_session(
        self,
        ctx: TenantContext | None,
        user_id: str,
        session_id: str,
        *,
        project_id: str | None = None,
        agent_id: str | None = None,
    ) -> CloseSessionResult:
        out: CloseSessionResult = self._post(
            f"/v1/sessions/{quote(str(session_id), safe='')}/close",
            "close_session",
            _model(CloseSessionResult),
            _body(ctx, user_id=user_id, project_id=project_id, agent_id=agent_id),
        )
        return out

    def promote(
        self,
        ctx: TenantContext | None,
        source_id: str,
        target_layer: str | Layer,
        *,
        identifiers: Any = None,
        delete_original: bool = False,
        content: str | None = None,
        tags: builtins.list[str] | None = None,
    ) -> MemoryEntry:
        out: MemoryEntry = self._post(
            f"/v1/memories/{quote(str(source_id), safe='')}/promote",
            "promote",
            _model(MemoryEntry),
            _body(
                ctx,
                target_layer=target_layer,
                identifiers=_ids(identifiers, "promote"),
                delete_original=delete_original,
                content=content,
                tags=tags,
            ),
        )
        return out

    def compact(
        self,
        ctx: TenantContext | None,
        source_ids: Sequence[str],
        callback: Callable[..., Any],
        *,
        delete_sources: bool = False,
        target_layer: str | Layer | None = None,
        tags: builtins.list[str] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> MemoryEntry:
        """Reads the sources, runs ``callback(entries)`` here for the summary, and sends it."""
        entries = [self.get(ctx, i) for i in source_ids]
        content = _summary(source_ids, entries, callback)
        out: MemoryEntry = self._post(
            "/v1/memories/compact",
            "compact",
            _model(MemoryEntry),
            _body(
                ctx,
                source_ids=builtins.list(source_ids),
                content=content,
                delete_sources=delete_sources,
                target_layer=target_layer,
                tags=tags,
                metadata=metadata,
            ),
        )
        return out

    def delete_by_scope(self, ctx: TenantContext | None, layer: str | Layer, identifiers: Any) -> int:
        out: dict[str, Any] = self._post(
            "/v1/memories/delete-by-scope",
            "delete_by_scope",
            dict,
            _body(ctx, layer=layer, identifiers=_ids(identifiers, "delete_by_scope")),
            idempotent=True,
        )
        return int(out["deleted"])

    def soft_delete(self, ctx: TenantContext | None, ids: Sequence[str]) -> builtins.list[str]:
        out: dict[str, Any] = self._post(
            "/v1/memories/soft-delete", "soft_delete", dict, _body(ctx, ids=builtins.list(ids)), idempotent=True
        )
        return [str(i) for i in out["ids"]]

    def restore(self, ctx: TenantContext | None, ids: Sequence[str]) -> builtins.list[str]:
        out: dict[str, Any] = self._post(
            "/v1/memories/restore", "restore", dict, _body(ctx, ids=builtins.list(ids)), idempotent=True
        )
        return [str(i) for i in out["ids"]]

    def feedback(self, ctx: TenantContext | None, memory_ids: Sequence[str], reward: float) -> FeedbackResult:
        out: FeedbackResult = self._post(
            "/v1/feedback",
            "feedback",
            _model(FeedbackResult),
            _body(ctx, memory_ids=builtins.list(memory_ids), reward=reward),
        )
        return out

    def prune(self, ctx: TenantContext | None, *, dry_run: bool = True) -> PruneReport:
        out: PruneReport = self._post("/v1/prune", "prune", _model(PruneReport), _body(ctx, dry_run=dry_run))
        return out

    def conflicts(
        self,
        ctx: TenantContext | None,
        *,
        memory_id: str | None = None,
        layer: str | Layer | None = None,
        identifiers: Any = None,
        cursor: str | None = None,
        limit: int | None = None,
    ) -> ListMemoriesOutput:
        out: ListMemoriesOutput = self._send(_conflicts(memory_id, layer, identifiers, cursor, limit))
        return out

    def maintain(self, *, tenants: Sequence[str] | None = None) -> MaintenanceReport:
        """Maintenance of the key's tenant (an admin key); ``tenants`` is not used over HTTP."""
        out: MaintenanceReport = self._post("/v1/maintenance", "maintain", _model(MaintenanceReport), {})
        return out

    def crud(self, ctx: TenantContext | None, request: Any) -> MemoryCrudResponse:
        body = request.model_dump(mode="json", exclude_none=True) if isinstance(request, BaseModel) else request
        out: MemoryCrudResponse = self._post("/v1/crud", "crud", _model(MemoryCrudResponse), body)
        return out

    # -- write gate and governance -----------------------------------------------------------------
    def process(
        self,
        ctx: TenantContext | None = None,
        text: str | None = None,
        *,
        intent: str = "none",
        identifiers: Any = None,
        recent_messages: Sequence[str] | None = None,
        layer: str | Layer | None = None,
    ) -> ProcessResult:
        out: ProcessResult = self._post(
            "/v1/process",
            "process",
            _model(ProcessResult),
            _body(
                ctx,
                text=text,
                intent=intent,
                identifiers=_ids(identifiers, "process"),
                recent_messages=builtins.list(recent_messages) if recent_messages is not None else None,
                layer=layer,
            ),
        )
        return out

    def remember(
        self,
        ctx: TenantContext | None = None,
        text: str | None = None,
        *,
        identifiers: Any = None,
        layer: str | Layer | None = None,
    ) -> ProcessResult:
        out: ProcessResult = self._post(
            "/v1/remember",
            "remember",
            _model(ProcessResult),
            _body(ctx, text=text, identifiers=_ids(identifiers, "remember"), layer=layer),
        )
        return out

    def forget(
        self,
        ctx: TenantContext | None = None,
        text: str | None = None,
        *,
        identifiers: Any = None,
        layer: str | Layer | None = None,
    ) -> ProcessResult:
        out: ProcessResult = self._post(
            "/v1/forget",
            "forget",
            _model(ProcessResult),
            _body(ctx, text=text, identifiers=_ids(identifiers, "forget"), layer=layer),
        )
        return out

    def forget_user(self, ctx: TenantContext | None = None, user_id: str | None = None) -> ForgetUserReport:
        out: ForgetUserReport = self._send(
            _Call(
                "DELETE",
                f"/v1/admin/users/{quote(str(user_id), safe='')}",
                "forget_user",
                _model(ForgetUserReport),
                idempotent=True,
            )
        )
        return out

    def health(self, ctx: TenantContext | None = None, *, since: datetime | None = None) -> MemoryHealth:
        params = [("since", since.isoformat())] if since is not None else []
        out: MemoryHealth = self._send(
            _Call("GET", "/v1/health-report", "health", _model(MemoryHealth), params=params, idempotent=True)
        )
        return out

    def memory_events(
        self,
        ctx: TenantContext | None = None,
        memory_id: str | None = None,
        *,
        limit: int = 50,
        events: Sequence[str] | None = None,
    ) -> MemoryEventsOutput:
        path = f"/v1/memories/{quote(str(memory_id), safe='')}/events"
        out: MemoryEventsOutput = self._send(
            _Call(
                "GET",
                path,
                "memory_events",
                _model(MemoryEventsOutput),
                params=[("limit", str(limit)), *(("event", str(e)) for e in events or ())],
                idempotent=True,
            )
        )
        return out

    def event_trends(self, ctx: TenantContext | None = None, *, days: int = 14) -> EventTrends:
        out: EventTrends = self._send(
            _Call(
                "GET",
                "/v1/health-report/trends",
                "event_trends",
                _model(EventTrends),
                params=[("days", str(days))],
                idempotent=True,
            )
        )
        return out

    def maintenance_runs(self, ctx: TenantContext | None = None, *, limit: int = 20) -> MaintenanceRunsOutput:
        out: MaintenanceRunsOutput = self._send(
            _Call(
                "GET",
                "/v1/maintenance/runs",
                "maintenance_runs",
                _model(MaintenanceRunsOutput),
                params=[("limit", str(limit))],
                idempotent=True,
            )
        )
        return out

    # -- connection --------------------------------------------------------------------------
    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _item(item: Any) -> dict[str, Any]:
    """One bulk item (a dict in SDK or camelCase names, or an AddMemoryInput) as a JSON body item."""
    data = item.model_dump(exclude_none=True) if isinstance(item, BaseModel) else dict(item)
    fields = {k: v for k, v in data.items() if k not in ("tenant_id", "tenantId")}
    if "identifiers" in fields:
        fields["identifiers"] = _ids(fields["identifiers"], "bulk_add")
    return _body(None, **{_snake(k): v for k, v in fields.items()})


def _summary(source_ids: Sequence[str], entries: Sequence[MemoryEntry | None], callback: Callable[..., Any]) -> str:
    """The compaction summary: ``callback(entries)`` run by the caller on the sources it read."""
    missing = [i for i, e in zip(source_ids, entries, strict=True) if e is None]
    if missing:
        raise MemoryError(
            ErrorCode.MEMORY_NOT_FOUND,
            f"no memory with id {missing[0]!r}",
            operation="compact",
            details={"ids": missing},
            retryable=False,
        )
    content = callback([e for e in entries if e is not None])
    if not isinstance(content, str) or not content.strip():
        raise MemoryError(
            ErrorCode.COMPACTION_FAILED,
            "the compaction callback must return the summary text",
            operation="compact",
            retryable=False,
        )
    return content


def _conflicts(memory_id: Any, layer: Any, identifiers: Any, cursor: Any, limit: Any) -> _Call:
    if layer is not None or identifiers is not None:
        raise MemoryError(
            ErrorCode.INVALID_PARAMS,
            "the REST conflicts route takes no layer or identifiers",
            operation="conflicts",
            details={"field": "layer" if layer is not None else "identifiers"},
            retryable=False,
        )
    params = [(k, str(v)) for k, v in _body(None, memory_id=memory_id, cursor=cursor, limit=limit).items()]
    return _Call("GET", "/v1/conflicts", "conflicts", _model(ListMemoriesOutput), params=params, idempotent=True)


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name)


class AsyncClient(_Base):
    """:class:`Client` with coroutine methods (``httpx.AsyncClient``)."""

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8080",
        api_key: str | None = None,
        *,
        timeout: float = 30.0,
        retries: int = 3,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(base_url, api_key, timeout=timeout, retries=retries)
        self._http = httpx.AsyncClient(
            base_url=self.base_url, headers=self._headers, timeout=self._timeout, transport=transport
        )

    async def _send(self, call: _Call) -> Any:
        try:
            async for attempt in AsyncRetrying(**self._attempts(call)):
                with attempt:
                    response = await self._http.request(
                        call.method, call.path, json=call.json, params=tuple(call.params), headers=call.headers
                    )
                    return _read(call, response)
        except httpx.HTTPError as exc:
            raise _unreachable(exc, self.base_url, call.operation) from exc
        raise AssertionError("unreachable")  # pragma: no cover - AsyncRetrying either returns or raises

    async def _post(
        self, path: str, operation: str, parse: Callable[[Any], Any], body: dict[str, Any], *, idempotent: bool = False
    ) -> Any:
        return await self._send(_Call("POST", path, operation, parse, json=body, idempotent=idempotent))

    async def add(
        self,
        ctx: TenantContext | None = None,
        content: str | None = None,
        *,
        layer: str | Layer | None = None,
        identifiers: Any = None,
        metadata: dict[str, Any] | None = None,
        tier: str | None = None,
        expires_at: datetime | str | None = None,
        importance: float | None = None,
        provenance: Any = None,
        supersedes: Sequence[str] | None = None,
    ) -> AddMemoryOutput:
        out: AddMemoryOutput = await self._send(
            _Calls.add(ctx, content, layer, identifiers, metadata, tier, expires_at, importance, provenance, supersedes)
        )
        return out

    async def search(
        self,
        ctx: TenantContext | None = None,
        query: str | None = None,
        *,
        identifiers: Any = None,
        layers: Sequence[str | Layer] | None = None,
        limit: int | None = None,
        threshold: float | None = None,
        filter: Any = None,
        expand_graph: bool = False,
        hybrid_weight: float | None = None,
        recency_boost: float | None = None,
        importance_boost: float | None = None,
        include_superseded: bool = False,
        as_of: datetime | str | None = None,
        order: Order | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        time_field: TimeField | None = None,
        tags_match: TagsMatch | None = None,
        include_narrower: bool = False,
    ) -> SearchMemoryOutput:
        out: SearchMemoryOutput = await self._send(
            _Calls.search(
                ctx,
                query,
                identifiers,
                layers,
                limit,
                threshold,
                filter,
                expand_graph=expand_graph,
                hybrid_weight=hybrid_weight,
                recency_boost=recency_boost,
                importance_boost=importance_boost,
                include_superseded=include_superseded,
                as_of=as_of,
                order=order,
                since=since,
                until=until,
                time_field=time_field,
                tags_match=tags_match,
                include_narrower=include_narrower,
            )
        )
        return out

    async def get(self, ctx: TenantContext | None = None, memory_id: str | None = None) -> MemoryEntry | None:
        out: MemoryEntry | None = await self._send(_Calls.get(memory_id))
        return out

    async def update(
        self,
        ctx: TenantContext | None = None,
        memory_id: str | None = None,
        *,
        content: str | None = None,
        metadata: dict[str, Any] | None = None,
        if_match: str | None = None,
        expires_at: datetime | str | Unset | None = UNSET,
        tier: str | None = None,
        record_conflict: bool = True,
    ) -> UpdateMemoryOutput:
        out: UpdateMemoryOutput = await self._send(
            _Calls.update(ctx, memory_id, content, metadata, if_match, expires_at, tier)
        )
        return out

    async def delete(
        self, ctx: TenantContext | None = None, memory_id: str | None = None, *, if_match: str | None = None
    ) -> DeleteMemoryOutput:
        out: DeleteMemoryOutput = await self._send(_Calls.delete(memory_id, if_match))
        return out

    async def list(
        self,
        ctx: TenantContext | None = None,
        layer: str | Layer | None = None,
        *,
        identifiers: Any = None,
        cursor: str | None = None,
        limit: int | None = None,
        filter: Any = None,
        include_superseded: bool = False,
        as_of: datetime | str | None = None,
        order: Order | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        time_field: TimeField | None = None,
        tags_match: TagsMatch | None = None,
        include_narrower: bool = False,
        expires_before: datetime | str | None = None,
    ) -> ListMemoriesOutput:
        out: ListMemoriesOutput = await self._send(
            _Calls.list(
                layer,
                identifiers,
                cursor,
                limit,
                filter,
                include_superseded=include_superseded,
                as_of=as_of,
                order=order,
                since=since,
                until=until,
                time_field=time_field,
                tags_match=tags_match,
                include_narrower=include_narrower,
                expires_before=expires_before,
            )
        )
        return out

    async def bulk_add(self, ctx: TenantContext | None = None, items: Sequence[Any] = ()) -> BulkAddOutput:
        out: BulkAddOutput = await self._post(
            "/v1/memories/bulk", "bulk_add", _model(BulkAddOutput), _body(ctx, items=[_item(i) for i in items])
        )
        return out

    async def bulk_delete(self, ctx: TenantContext | None = None, ids: Sequence[str] = ()) -> BulkDeleteOutput:
        out: BulkDeleteOutput = await self._post(
            "/v1/memories/bulk-delete",
            "bulk_delete",
            _model(BulkDeleteOutput),
            _body(ctx, ids=builtins.list(ids)),
            idempotent=True,
        )
        return out

    async def stats(self, ctx: TenantContext | None = None) -> StoreStats:
        out: StoreStats = await self._send(_Call("GET", "/v1/stats", "stats", _model(StoreStats), idempotent=True))
        return out

    async def export(
        self, ctx: TenantContext | None = None, *, include_embeddings: bool = False
    ) -> AsyncIterator[MemoryEntry]:
        params = {"includeEmbeddings": "true"} if include_embeddings else None
        try:
            async with self._http.stream("GET", "/v1/export", params=params) as response:
                if response.status_code >= 400:
                    await response.aread()
                    raise _error(response, "export")
                async for line in response.aiter_lines():
                    if line.strip():
                        yield MemoryEntry.model_validate_json(line)
        except httpx.HTTPError as exc:
            raise _unreachable(exc, self.base_url, "export") from exc

    async def generate_embedding(self, text: str) -> builtins.list[float]:
        out: dict[str, Any] = await self._post(
            "/v1/embeddings", "generate_embedding", dict, {"text": text}, idempotent=True
        )
        return [float(x) for x in out["embedding"]]

    async def health_check(self) -> HealthCheckResult:
        out: HealthCheckResult = await self._send(
            _Call("GET", "/health", "health_check", _model(HealthCheckResult), idempotent=True)
        )
        return out

    async def capabilities(self) -> ProviderCapabilities:
        out: ProviderCapabilities = await self._send(
            _Call("GET", "/v1/capabilities", "capabilities", _model(ProviderCapabilities), idempotent=True)
        )
        return out

    async def remember(
        self,
        ctx: TenantContext | None = None,
        text: str | None = None,
        *,
        identifiers: Any = None,
        layer: str | Layer | None = None,
    ) -> ProcessResult:
        out: ProcessResult = await self._post(
            "/v1/remember",
            "remember",
            _model(ProcessResult),
            _body(ctx, text=text, identifiers=_ids(identifiers, "remember"), layer=layer),
        )
        return out

    async def forget(
        self,
        ctx: TenantContext | None = None,
        text: str | None = None,
        *,
        identifiers: Any = None,
        layer: str | Layer | None = None,
    ) -> ProcessResult:
        out: ProcessResult = await self._post(
            "/v1/forget",
            "forget",
            _model(ProcessResult),
            _body(ctx, text=text, identifiers=_ids(identifiers, "forget"), layer=layer),
        )
        return out

    async def process(
        self,
        ctx: TenantContext | None = None,
        text: str | None = None,
        *,
        intent: str = "none",
        identifiers: Any = None,
        recent_messages: Sequence[str] | None = None,
        layer: str | Layer | None = None,
    ) -> ProcessResult:
        out: ProcessResult = await self._post(
            "/v1/process",
            "process",
            _model(ProcessResult),
            _body(
                ctx,
                text=text,
                intent=intent,
                identifiers=_ids(identifiers, "process"),
                recent_messages=builtins.list(recent_messages) if recent_messages is not None else None,
                layer=layer,
            ),
        )
        return out

    async def close_session(
        self,
        ctx: TenantContext | None,
        user_id: str,
        session_id: str,
        *,
        project_id: str | None = None,
        agent_id: str | None = None,
    ) -> CloseSessionResult:
        out: CloseSessionResult = await self._post(
            f"/v1/sessions/{quote(str(session_id), safe='')}/close",
            "close_session",
            _model(CloseSessionResult),
            _body(ctx, user_id=user_id, project_id=project_id, agent_id=agent_id),
        )
        return out

    async def promote(
        self,
        ctx: TenantContext | None,
        source_id: str,
        target_layer: str | Layer,
        *,
        identifiers: Any = None,
        delete_original: bool = False,
        content: str | None = None,
        tags: builtins.list[str] | None = None,
    ) -> MemoryEntry:
        out: MemoryEntry = await self._post(
            f"/v1/memories/{quote(str(source_id), safe='')}/promote",
            "promote",
            _model(MemoryEntry),
            _body(
                ctx,
                target_layer=target_layer,
                identifiers=_ids(identifiers, "promote"),
                delete_original=delete_original,
                content=content,
                tags=tags,
            ),
        )
        return out

    async def compact(
        self,
        ctx: TenantContext | None,
        source_ids: Sequence[str],
        callback: Callable[..., Any],
        *,
        delete_sources: bool = False,
        target_layer: str | Layer | None = None,
        tags: builtins.list[str] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> MemoryEntry:
        entries = [await self.get(ctx, i) for i in source_ids]
        content = _summary(source_ids, entries, callback)
        out: MemoryEntry = await self._post(
            "/v1/memories/compact",
            "compact",
            _model(MemoryEntry),
            _body(
                ctx,
                source_ids=builtins.list(source_ids),
                content=content,
                delete_sources=delete_sources,
                target_layer=target_layer,
                tags=tags,
                metadata=metadata,
            ),
        )
        return out

    async def delete_by_scope(self, ctx: TenantContext | None, layer: str | Layer, identifiers: Any) -> int:
        out: dict[str, Any] = await self._post(
            "/v1/memories/delete-by-scope",
            "delete_by_scope",
            dict,
            _body(ctx, layer=layer, identifiers=_ids(identifiers, "delete_by_scope")),
            idempotent=True,
        )
        return int(out["deleted"])

    async def soft_delete(self, ctx: TenantContext | None, ids: Sequence[str]) -> builtins.list[str]:
        out: dict[str, Any] = await self._post(
            "/v1/memories/soft-delete", "soft_delete", dict, _body(ctx, ids=builtins.list(ids)), idempotent=True
        )
        return [str(i) for i in out["ids"]]

    async def restore(self, ctx: TenantContext | None, ids: Sequence[str]) -> builtins.list[str]:
        out: dict[str, Any] = await self._post(
            "/v1/memories/restore", "restore", dict, _body(ctx, ids=builtins.list(ids)), idempotent=True
        )
        return [str(i) for i in out["ids"]]

    async def feedback(self, ctx: TenantContext | None, memory_ids: Sequence[str], reward: float) -> FeedbackResult:
        out: FeedbackResult = await self._post(
            "/v1/feedback",
            "feedback",
            _model(FeedbackResult),
            _body(ctx, memory_ids=builtins.list(memory_ids), reward=reward),
        )
        return out

    async def prune(self, ctx: TenantContext | None, *, dry_run: bool = True) -> PruneReport:
        out: PruneReport = await self._post("/v1/prune", "prune", _model(PruneReport), _body(ctx, dry_run=dry_run))
        return out

    async def conflicts(
        self,
        ctx: TenantContext | None,
        *,
        memory_id: str | None = None,
        layer: str | Layer | None = None,
        identifiers: Any = None,
        cursor: str | None = None,
        limit: int | None = None,
    ) -> ListMemoriesOutput:
        out: ListMemoriesOutput = await self._send(_conflicts(memory_id, layer, identifiers, cursor, limit))
        return out

    async def maintain(self, *, tenants: Sequence[str] | None = None) -> MaintenanceReport:
        out: MaintenanceReport = await self._post("/v1/maintenance", "maintain", _model(MaintenanceReport), {})
        return out

    async def crud(self, ctx: TenantContext | None, request: Any) -> MemoryCrudResponse:
        body = request.model_dump(mode="json", exclude_none=True) if isinstance(request, BaseModel) else request
        out: MemoryCrudResponse = await self._post("/v1/crud", "crud", _model(MemoryCrudResponse), body)
        return out

    async def forget_user(self, ctx: TenantContext | None = None, user_id: str | None = None) -> ForgetUserReport:
        out: ForgetUserReport = await self._send(
            _Call(
                "DELETE",
                f"/v1/admin/users/{quote(str(user_id), safe='')}",
                "forget_user",
                _model(ForgetUserReport),
                idempotent=True,
            )
        )
        return out

    async def health(self, ctx: TenantContext | None = None, *, since: datetime | None = None) -> MemoryHealth:
        params = [("since", since.isoformat())] if since is not None else []
        out: MemoryHealth = await self._send(
            _Call("GET", "/v1/health-report", "health", _model(MemoryHealth), params=params, idempotent=True)
        )
        return out

    async def memory_events(
        self,
        ctx: TenantContext | None = None,
        memory_id: str | None = None,
        *,
        limit: int = 50,
        events: Sequence[str] | None = None,
    ) -> MemoryEventsOutput:
        path = f"/v1/memories/{quote(str(memory_id), safe='')}/events"
        out: MemoryEventsOutput = await self._send(
            _Call(
                "GET",
                path,
                "memory_events",
                _model(MemoryEventsOutput),
                params=[("limit", str(limit)), *(("event", str(e)) for e in events or ())],
                idempotent=True,
            )
        )
        return out

    async def event_trends(self, ctx: TenantContext | None = None, *, days: int = 14) -> EventTrends:
        out: EventTrends = await self._send(
            _Call(
                "GET",
                "/v1/health-report/trends",
                "event_trends",
                _model(EventTrends),
                params=[("days", str(days))],
                idempotent=True,
            )
        )
        return out

    async def maintenance_runs(self, ctx: TenantContext | None = None, *, limit: int = 20) -> MaintenanceRunsOutput:
        out: MaintenanceRunsOutput = await self._send(
            _Call(
                "GET",
                "/v1/maintenance/runs",
                "maintenance_runs",
                _model(MaintenanceRunsOutput),
                params=[("limit", str(limit))],
                idempotent=True,
            )
        )
        return out

    async def close(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()
