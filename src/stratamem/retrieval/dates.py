"""The time a question names: "in January 2022", "on 1 May, 2022", "May 1 2022", "2022-05-01".

Search ranks the memories of that time higher (``retrieval/context.py``, step 4): a question that
names a date asks what happened or was said then. A month is the window from its first day to the
first day of the next; a day is the window from that day to a week after it, since what happened
on a day is often told in the days after ("I watched it last night"). Only dates with a year count:
"in May" alone could be any year, and a bare year is too wide to tell memories apart. English month
names (full or three-letter) and ISO dates; the first date of the question is taken. A memory
that names a date in the window is of that time too, whenever it was written (:func:`mentions`).
"""

from __future__ import annotations

import calendar
import re
from datetime import UTC, datetime, timedelta

#: How long after a named day a memory still counts as being of that day.
DAY_WINDOW = timedelta(days=7)

_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
_MONTHS |= {name.lower(): i for i, name in enumerate(calendar.month_abbr) if name} | {"sept": 9}
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_PATTERNS = [
    re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b", re.IGNORECASE),  # 1 May, 2022
    re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b", re.IGNORECASE),  # May 1, 2022
    re.compile(rf"\b{_MONTH},?\s+{_YEAR}\b", re.IGNORECASE),  # May 2022
    re.compile(r"\b(?P<year>(?:19|20)\d\d)-(?P<month>[01]\d)(?:-(?P<day>[0-3]\d))?\b"),  # 2022-05(-01)
]


def named_window(query: str) -> tuple[datetime, datetime] | None:
    """The window of the first date with a year that ``query`` names (aware UTC, end excluded), or
    None when it names none."""
    found = _dated(query)
    return min(found, key=lambda item: item[0])[1] if found else None


def mentions(text: str, window: tuple[datetime, datetime]) -> bool:
    """Whether ``text`` names a date with a year whose window meets ``window``: a memory about that
    time ("The launch is on 3 May 2027"), whenever it was written."""
    start, end = window
    return any(s < end and start < e for _, (s, e) in _dated(text))


def _dated(text: str) -> list[tuple[int, tuple[datetime, datetime]]]:
    """Every date with a year in ``text``, with where it starts (a date that a more specific
    pattern read is read once: "1 May 2022" is a day, not also a month)."""
    found: list[tuple[int, tuple[datetime, datetime]]] = []
    taken: list[tuple[int, int]] = []
    for pattern in _PATTERNS:
        for match in pattern.finditer(text):
            if any(a < match.end() and match.start() < b for a, b in taken):
                continue
            window = _window(match)
            if window is not None:
                found.append((match.start(), window))
                taken.append(match.span())
    return found


def _window(match: re.Match[str]) -> tuple[datetime, datetime] | None:
    month_text = match.group("month").lower().rstrip(".")
    month = int(month_text) if month_text.isdigit() else _MONTHS.get(month_text)
    year = int(match.group("year"))
    day_text = match.groupdict().get("day")
    if month is None or not 1 <= month <= 12:
        return None
    if day_text is None:
        start = datetime(year, month, 1, tzinfo=UTC)
        return start, datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC)
    day = int(day_text)
    if not 1 <= day <= calendar.monthrange(year, month)[1]:
        return None
    start = datetime(year, month, day, tzinfo=UTC)
    return start, start + DAY_WINDOW
