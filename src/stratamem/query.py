"""The query model shared by ``search`` and ``list``: order, time window, tag matching, narrower scopes.

* ``order``: ``relevance`` (search only: best match first), ``newest`` or ``oldest`` (by ``created_at``).
* ``since`` / ``until``: a window on ``time_field`` (``created`` or ``updated``); ``since`` is
  inclusive, ``until`` exclusive; ISO 8601 strings or datetimes (UTC when no offset is given).
* ``tags_match``: ``any`` (a memory with at least one of the filter's tags) or ``all`` (every tag).
* ``include_narrower``: a layer plus the narrower layers of the same principal whose identifiers
  are given: ``user`` adds ``session`` when ``session_id`` is given and ``agent`` when ``agent_id``
  is given. Nothing is discovered implicitly: a narrower scope is read only when its identifiers
  are part of the query.

The checks are pure functions; each answers INVALID_PARAMS naming the argument.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, Literal

from .errors import ErrorCode, MemoryError
from .layers import REQUIRED_IDENTIFIERS
from .model import Layer, LayerIdentifiers, MemoryEntry

if TYPE_CHECKING:
    from .providers.base import ThreadTurn

Order = Literal["relevance", "newest", "oldest"]
TimeField = Literal["created", "updated"]
TagsMatch = Literal["any", "all"]

ORDERS: Final = ("relevance", "newest", "oldest")
TIME_FIELDS: Final = ("created", "updated")
TAG_MATCHES: Final = ("any", "all")


class _Unset(enum.Enum):
    UNSET = "UNSET"

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


#: "Not given" for arguments where ``None`` means something (``update(expires_at=None)`` clears the expiry).
UNSET: Final = _Unset.UNSET
Unset = Literal[_Unset.UNSET]


def _invalid(field: str, message: str, operation: str) -> MemoryError:
    return MemoryError(
        ErrorCode.INVALID_PARAMS, f"{field} {message}", operation=operation, details={"field": field}, retryable=False
    )


def _choice(value: Any, field: str, choices: tuple[str, ...], operation: str) -> str:
    if not isinstance(value, str) or value.strip().lower() not in choices:
        raise _invalid(field, f"must be one of {', '.join(choices)} (got {value!r})", operation)
    return value.strip().lower()


def parse_time(value: Any, field: str, operation: str) -> datetime | None:
    """A datetime or an ISO 8601 string (``Z`` accepted; UTC when no offset is given)."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise _invalid(field, "must be an ISO 8601 date-time", operation) from None
    if not isinstance(value, datetime):
        raise _invalid(field, "must be a date-time", operation)
    return value if value.tzinfo else value.replace(tzinfo=UTC)


@dataclass(frozen=True)
class QueryOptions:
    """The checked query-model arguments of one ``search`` or ``list`` call."""

    order: str
    since: datetime | None = None
    until: datetime | None = None
    time_field: str = "created"
    tags_match: str | None = None
    include_narrower: bool = False

    @property
    def windowed(self) -> bool:
        return self.since is not None or self.until is not None

    @property
    def column(self) -> str:
        """The entry attribute (and column) the window applies to."""
        return "updated_at" if self.time_field == "updated" else "created_at"

    def in_window(self, entry: MemoryEntry | ThreadTurn) -> bool:
        value: datetime = getattr(entry, self.column)
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return (self.since is None or value >= self.since) and (self.until is None or value < self.until)

    def key(self) -> list[Any]:
        """The part of a list cursor's fingerprint that these options contribute."""
        return [self.order, self.since, self.until, self.time_field, self.tags_match, self.include_narrower]


def parse_options(
    operation: str,
    *,
    order: Any,
    since: Any,
    until: Any,
    time_field: Any,
    tags_match: Any,
    include_narrower: Any,
    default_order: str,
    allow_relevance: bool,
) -> QueryOptions:
    choices = ORDERS if allow_relevance else ORDERS[1:]
    checked_order = _choice(default_order if order is None else order, "order", choices, operation)
    start = parse_time(since, "since", operation)
    end = parse_time(until, "until", operation)
    if start is not None and end is not None and end <= start:
        raise _invalid("until", "must be later than since", operation)
    field = _choice("created" if time_field is None else time_field, "time_field", TIME_FIELDS, operation)
    match = None if tags_match is None else _choice(tags_match, "tags_match", TAG_MATCHES, operation)
    if not isinstance(include_narrower, bool):
        raise _invalid("include_narrower", "must be true or false", operation)
    return QueryOptions(
        order=checked_order,
        since=start,
        until=end,
        time_field=field,
        tags_match=match,
        include_narrower=include_narrower,
    )


def narrower_layers(layer: Layer, identifiers: LayerIdentifiers) -> list[Layer]:
    """The layers narrower than ``layer`` for the same principal whose identifiers are all given:
    their required identifiers strictly contain ``layer``'s (``user`` → ``session``, ``agent``)."""
    base = set(REQUIRED_IDENTIFIERS[layer])
    return [
        other
        for other, needed in REQUIRED_IDENTIFIERS.items()
        if base < set(needed) and all(getattr(identifiers, name) is not None for name in needed)
    ]
