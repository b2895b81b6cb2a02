"""DuckDB's parameter binding looks for pandas and pyarrow on every call; when they are not
installed, the store marks them absent once, so a search or an add makes no failed import (each
one searched ``sys.path`` again). An installed library is never marked."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

#: Counts the import attempts that reach the path finders after the store is open.
_SCRIPT = """
import importlib.util, json, sys
from collections import Counter

from stratamem import Memory, TenantContext

attempts = Counter()

class Count:
    def find_spec(self, name, path=None, target=None):
        attempts[name.split(".")[0]] += 1
        return None

ctx = TenantContext(tenant_id="acme")
user = {"user_id": "u1"}
out = {}
with Memory.open(sys.argv[1], embedder="hashing") as mem:
    mem.add(ctx, "The backend runs on PostgreSQL 16", layer="user", identifiers=user)
    sys.meta_path.insert(0, Count())
    for i in range(3):
        mem.add(ctx, f"Fact {i}: the user likes green tea number {i}", layer="user", identifiers=user)
        out.setdefault("hits", []).append(
            len(mem.search(ctx, "which database do we use", identifiers=user, threshold=0.0, limit=1).results)
        )
    sys.meta_path.pop(0)
out["attempts"] = dict(attempts)
out["pandas_spec"] = importlib.util.find_spec("pandas") is not None
try:
    import pandas  # noqa: F401
    out["pandas_import"] = "ok"
except ModuleNotFoundError:
    out["pandas_import"] = "ModuleNotFoundError"
print(json.dumps(out))
"""


def _run(tmp_path: Path, extra_path: Path | None = None) -> dict[str, object]:
    env = dict(os.environ)
    if extra_path is not None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(extra_path), env.get("PYTHONPATH", "")) if p)
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(tmp_path / "store.duckdb")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_no_failed_import_per_operation_when_pandas_is_absent(tmp_path: Path) -> None:
    if importlib.util.find_spec("pandas") is not None:  # the project's environments do not install it
        pytest.skip("pandas is installed in this environment")
    out = _run(tmp_path)
    assert out["hits"] == [1, 1, 1]  # the operations worked
    attempts = out["attempts"]
    assert isinstance(attempts, dict)
    assert attempts.get("pandas", 0) == 0, attempts
    assert attempts.get("pyarrow", 0) == 0, attempts
    # Python's answers for the absent library are the same as before
    assert out["pandas_spec"] is False
    assert out["pandas_import"] == "ModuleNotFoundError"


def test_an_installed_library_is_left_alone(tmp_path: Path) -> None:
    fake = tmp_path / "site"
    (fake / "pandas").mkdir(parents=True)
    (fake / "pandas" / "__init__.py").write_text("# a stand-in package: only its presence matters here\n")
    out = _run(tmp_path, extra_path=fake)
    assert out["pandas_spec"] is True
    assert out["pandas_import"] == "ok"
