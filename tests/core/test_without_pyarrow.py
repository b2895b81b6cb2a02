"""The embedded store needs no pyarrow: a subprocess where importing it fails adds, searches, lists,
builds the graph, exports and reloads its search index from a real DuckDB file (Arrow data goes
through ``arro3-core`` and DuckDB's Arrow PyCapsule interface)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

#: Prepended to every script: importing pyarrow (or any of its modules) raises ImportError.
BLOCK_PYARROW = """
import sys

class _NoPyarrow:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "pyarrow":
            raise ImportError(f"{name} is blocked by the test")
        return None

sys.meta_path.insert(0, _NoPyarrow())
"""

_SCRIPT = """
import json
from stratamem import Memory, MemoryConfig, TenantContext

path = sys.argv[1]
ctx = TenantContext(tenant_id="acme")
user = {"user_id": "u1"}
items = [
    {"content": f"fact {i}: the user likes topic {i} and green tea", "layer": "user", "identifiers": user,
     "metadata": {"tags": [f"t{i % 3}"]}}
    for i in range(2500)
]
out = {}
# a low ANN threshold: the partition (2500 rows) is served by the HNSW index too
config = MemoryConfig(ann_threshold=1000)
with Memory.open(path, embedder="hashing", config=config) as mem:
    for start in range(0, len(items), 500):
        mem.bulk_add(ctx, items[start : start + 500])
    mem.add(ctx, "Alice works at Acme in Paris", layer="user", identifiers=user)
    hit = mem.search(ctx, "fact 42: the user likes topic 42 and green tea", identifiers=user)
    out["first"] = hit.results[0].memory.content
    out["listed"] = len(mem.list(ctx, "user", identifiers=user, limit=50).memories)
    out["entities"] = mem.graph.stats(ctx).entities
    out["exported"] = sum(1 for _ in mem.export(ctx))
with Memory.open(path, embedder="hashing", config=config) as mem:  # the index reloads from the table
    hit = mem.search(ctx, "topic 7 and green tea", identifiers=user, limit=3)
    out["reloaded"] = [r.memory.content for r in hit.results]
    out["keyword"] = mem.search(ctx, "Alice Paris", identifiers=user, limit=1).results[0].memory.content
out["pyarrow"] = sorted(m for m in sys.modules if m.split(".")[0] == "pyarrow")
print(json.dumps(out))
"""


def run_without_pyarrow(script: str, *args: str) -> dict[str, object]:
    """Run ``script`` (which prints one JSON object) with pyarrow blocked; return what it printed."""
    done = subprocess.run(
        [sys.executable, "-c", BLOCK_PYARROW + script, *args], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-4000:]
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_the_embedded_store_runs_with_pyarrow_blocked(tmp_path: Path) -> None:
    out = run_without_pyarrow(_SCRIPT, str(tmp_path / "m.duckdb"))
    assert out["first"] == "fact 42: the user likes topic 42 and green tea"
    assert out["listed"] == 50
    assert isinstance(out["entities"], int) and out["entities"] > 0
    assert out["exported"] == 2501
    reloaded = out["reloaded"]
    assert isinstance(reloaded, list) and reloaded[0] == "fact 7: the user likes topic 7 and green tea"
    assert out["keyword"] == "Alice works at Acme in Paris"
    assert out["pyarrow"] == []


def test_the_blocker_blocks() -> None:
    code = (
        "try:\n    import pyarrow.parquet\n    print('{\"blocked\": false}')\n"
        "except ImportError:\n    print('{\"blocked\": true}')\n"
    )
    assert run_without_pyarrow(code) == {"blocked": True}
