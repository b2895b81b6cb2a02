"""Framework adapters need their framework package (an optional extra): skip locally without it, fail
under ``CI=true`` (the test extras include every adapter's extra)."""

from __future__ import annotations

import importlib
from types import ModuleType

import pytest

from ..conftest import IN_CI


def need(module: str, extra: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        reason = f"{module} is not installed (pip install 'stratamem[{extra}]'): {exc}"
        if IN_CI:
            pytest.fail(f"required under CI=true: {reason}", pytrace=False)
        pytest.skip(reason, allow_module_level=True)
