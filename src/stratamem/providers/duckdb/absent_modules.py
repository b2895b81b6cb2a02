"""Tell Python once that the optional data-frame libraries DuckDB looks for are not installed.

DuckDB's Python client checks every bound parameter against pandas (and some results against
pyarrow) by importing them. When they are not installed, which is the default install of
stratamem, each check is a failed import, and Python does not remember a failed import: every one
searches ``sys.path`` again (a few file-system calls per path entry). A search binds about ten
parameters and an add about sixty, so these failed imports were a visible share of the CPU of
both (benchmarks/RESULTS.md, "Failed imports in DuckDB's parameter binding").

:func:`mark_absent` records each such library that is not installed as ``None`` in
``sys.modules``, Python's documented way of saying "this module cannot be imported": an import of
it then fails at once with ``ModuleNotFoundError``, and ``importlib.util.find_spec`` returns None,
the same answers as before, without the search. A library that is installed is never touched.
Installing one of them into the running process afterwards needs a restart of that process.
"""

from __future__ import annotations

import importlib.util
import sys

#: The optional libraries DuckDB's Python client imports to inspect parameters and results.
OPTIONAL = ("pandas", "pyarrow")


def mark_absent(names: tuple[str, ...] = OPTIONAL) -> list[str]:
    """Mark each of ``names`` that is neither imported nor installed as absent; returns those marked."""
    marked = []
    for name in names:
        if name in sys.modules:  # imported already, or marked
            continue
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):  # a broken installation: leave Python's own behaviour
            found = True
        if not found:
            sys.modules[name] = None  # type: ignore[assignment]
            marked.append(name)
    return marked
