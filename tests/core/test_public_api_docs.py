"""Every public method of ``Memory`` and ``AsyncMemory`` is documented (Google style: Args / Returns /
Raises with error codes) and annotated with a concrete return type."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any

import pytest

from stratamem.errors import ErrorCode
from stratamem.sdk import AsyncMemory, Memory

_CODES = {code.value for code in ErrorCode}


def _methods(cls: type) -> list[tuple[str, Callable[..., Any]]]:
    out = []
    for name, member in vars(cls).items():
        if name.startswith("_") or isinstance(member, property):
            continue
        fn = member.__func__ if isinstance(member, classmethod | staticmethod) else member
        if callable(fn):
            out.append((f"{cls.__name__}.{name}", fn))
    return out


METHODS = _methods(Memory) + _methods(AsyncMemory)


def test_every_public_method_is_listed() -> None:
    names = {name for name, _ in METHODS}
    assert {"Memory.add", "Memory.search", "Memory.update", "Memory.delete", "AsyncMemory.search"} <= names
    assert len(names) > 60


@pytest.mark.parametrize(("name", "fn"), METHODS, ids=[name for name, _ in METHODS])
def test_google_style_docstring(name: str, fn: Callable[..., Any]) -> None:
    doc = inspect.getdoc(fn) or ""
    assert doc, f"{name} has no docstring"
    params = [p for p in inspect.signature(fn).parameters.values() if p.name not in ("self", "cls")]
    if params:
        assert "\nArgs:\n" in doc, f"{name}: no Args section"
        args = doc.split("\nArgs:\n", 1)[1].split("\n\n", 1)[0]
        for p in params:
            assert re.search(rf"^\s+\**{p.name}:", args, re.M), f"{name}: argument {p.name} undocumented"
    assert "\nReturns:\n" in doc, f"{name}: no Returns section"
    assert "\nRaises:\n" in doc, f"{name}: no Raises section"
    raises = doc.split("\nRaises:\n", 1)[1]
    named = set(re.findall(r"``([A-Z_]+)``", raises))
    assert named <= _CODES, f"{name}: unknown error codes {named - _CODES}"
    assert named or "Nothing" in raises, f"{name}: Raises names no error code"


@pytest.mark.parametrize(("name", "fn"), METHODS, ids=[name for name, _ in METHODS])
def test_concrete_return_annotation(name: str, fn: Callable[..., Any]) -> None:
    annotation = fn.__annotations__.get("return")
    assert annotation is not None, f"{name} has no return annotation"
    assert not re.search(r"\bAny\b", str(annotation)), f"{name} returns Any"
