"""Metadata filters: compiled once into a predicate.

Filters run inside providers *before* the top-k cut, so a filtered search still returns up to
``limit`` results. Every provider uses this one implementation, so behaviour cannot drift.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ValidationError

from .errors import ErrorCode, MemoryError
from .model import MetadataFilter

Predicate = Callable[[Mapping[str, Any]], bool]

_OPS = ("eq", "ne", "contains", "in", "gt", "gte", "lt", "lte", "exists")
_RESERVED = {
    "tags",
    "tagsMatch",
    "tags_match",
    "sourceType",
    "source_type",
    "hasKnowledgePointer",
    "has_knowledge_pointer",
    "custom",
}
_MISSING = object()
#: Entry times are columns, not metadata: a filter on them would silently match nothing, so it is refused.
_TIME_FIELDS = {"createdAt", "created_at", "updatedAt", "updated_at"}


def parse_filter(value: MetadataFilter | Mapping[str, Any] | None, operation: str = "") -> MetadataFilter | None:
    """Accept a model or a dict. Top-level keys other than the reserved ones are custom fields."""
    if value is None or isinstance(value, MetadataFilter):
        return value
    if not isinstance(value, Mapping):
        raise MemoryError(ErrorCode.INVALID_PARAMS, "filter must be an object", operation=operation)
    data = dict(value)
    timed = (
        sorted(_TIME_FIELDS & {*data, *(data.get("custom") or {})})
        if isinstance(data.get("custom") or {}, Mapping)
        else []
    )
    if timed:
        raise MemoryError(
            ErrorCode.INVALID_PARAMS,
            f"filter on {timed[0]} is not supported: entry times are not metadata; use since/until "
            "(with time_field created or updated)",
            operation=operation,
            details={"field": f"filter.{timed[0]}"},
            retryable=False,
        )
    extra = {k: data.pop(k) for k in list(data) if k not in _RESERVED}
    if extra:
        custom = dict(data.get("custom") or {})
        custom.update(extra)
        data["custom"] = custom
    if isinstance(data.get("tags"), str):
        data["tags"] = [data["tags"]]
    try:
        flt = MetadataFilter.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise MemoryError(
            ErrorCode.INVALID_PARAMS,
            f"invalid filter: {'.'.join(str(p) for p in err.get('loc', ()))}: {err.get('msg')}",
            operation=operation,
        ) from None
    for field, cond in (flt.custom or {}).items():
        if isinstance(cond, Mapping) and cond and all(str(k) in _OPS for k in cond):
            continue
        if isinstance(cond, Mapping) and any(str(k) in _OPS for k in cond):
            bad = [k for k in cond if k not in _OPS]
            raise MemoryError(
                ErrorCode.INVALID_PARAMS,
                f"unknown filter operator(s) {bad} on field '{field}'; valid: {', '.join(_OPS)}",
                operation=operation,
            )
    return flt


def with_tags_match(flt: MetadataFilter | None, tags_match: str | None) -> MetadataFilter | None:
    """The filter with ``tags_match`` set when the caller gave one as its own argument."""
    if tags_match is None:
        return flt
    return (flt or MetadataFilter()).model_copy(update={"tags_match": tags_match})


def _lookup(metadata: Mapping[str, Any], path: str) -> Any:
    if path in metadata:
        return metadata[path]
    cur: Any = metadata
    for part in path.split("."):
        if isinstance(cur, Mapping) and part in cur:
            cur = cur[part]
        else:
            return _MISSING
    return cur


def _compare(op: str, actual: Any, expected: Any) -> bool:
    if op == "exists":
        return (actual is not _MISSING) == bool(expected)
    if actual is _MISSING:
        return op == "ne"
    if op == "eq":
        return bool(actual == expected)
    if op == "ne":
        return bool(actual != expected)
    if op == "contains":
        if isinstance(actual, str):
            return isinstance(expected, str) and expected.lower() in actual.lower()
        if isinstance(actual, list | tuple | set):
            return expected in actual
        if isinstance(actual, Mapping):
            return expected in actual
        return False
    if op == "in":
        return isinstance(expected, list | tuple | set) and actual in expected
    try:
        if op == "gt":
            return bool(actual > expected)
        if op == "gte":
            return bool(actual >= expected)
        if op == "lt":
            return bool(actual < expected)
        if op == "lte":
            return bool(actual <= expected)
    except TypeError:  # comparing a number with a string etc.: simply no match
        return False
    return False


def compile_filter(flt: MetadataFilter | None) -> Predicate | None:
    """Turn a filter into ``predicate(metadata) -> bool``; None when it filters nothing."""
    if flt is None:
        return None
    checks: list[Predicate] = []
    if flt.tags:
        wanted = {str(t) for t in flt.tags}

        if flt.tags_match == "all":

            def has_tag(md: Mapping[str, Any]) -> bool:
                tags = md.get("tags")
                return isinstance(tags, list) and wanted <= {str(t) for t in tags}
        else:

            def has_tag(md: Mapping[str, Any]) -> bool:
                tags = md.get("tags")
                return isinstance(tags, list) and any(str(t) in wanted for t in tags)

        checks.append(has_tag)
    if flt.source_type is not None:
        src_type = flt.source_type

        def source_is(md: Mapping[str, Any]) -> bool:
            src = md.get("source")
            return isinstance(src, Mapping) and src.get("type") == src_type

        checks.append(source_is)
    if flt.has_knowledge_pointer is not None:
        want_kp = flt.has_knowledge_pointer
        checks.append(lambda md: (md.get("knowledgePointer") is not None) == want_kp)
    for field, cond in (flt.custom or {}).items():
        if isinstance(cond, Mapping) and cond and all(str(k) in _OPS for k in cond):
            ops = [(str(k), v) for k, v in cond.items()]
        else:
            ops = [("eq", cond)]

        def field_ok(md: Mapping[str, Any], _f: str = field, _ops: list[tuple[str, Any]] = ops) -> bool:
            actual = _lookup(md, _f)
            return all(_compare(op, actual, exp) for op, exp in _ops)

        checks.append(field_ok)
    if not checks:
        return None
    return lambda md: all(check(md) for check in checks)
