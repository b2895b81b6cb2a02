"""Snapshots need no pyarrow: push (Parquet export, row counts) and pull into a file store (the
search index built from the snapshot's files) in a subprocess where importing pyarrow fails."""

from __future__ import annotations

from pathlib import Path

from stratamem.persistence import S3Settings, S3Store

from ..core.test_without_pyarrow import run_without_pyarrow

_SCRIPT = """
import json
from stratamem import Memory, TenantContext
from stratamem.persistence import S3Settings

source, target, raw = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
settings = S3Settings(**raw)
ctx = TenantContext(tenant_id="acme")
user = {"user_id": "u1"}
items = [
    {"content": f"fact {i}: the user likes topic {i} and green tea", "layer": "user", "identifiers": user}
    for i in range(2500)  # above PREBUILD_MIN_ROWS: the pull builds the partition from the files
]
out = {}
with Memory.open(source, embedder="hashing") as mem:
    for start in range(0, len(items), 500):
        mem.bulk_add(ctx, items[start : start + 500])
    out["pushed"] = mem.configure_snapshots(settings).push(ctx)[0].tables["memories"]
with Memory.open(target, embedder="hashing") as mem:
    mem.configure_snapshots(settings).pull(ctx)
    hit = mem.search(ctx, "fact 9: the user likes topic 9 and green tea", identifiers=user, limit=1)
    out["first"] = hit.results[0].memory.content
    out["restored"] = sum(1 for _ in mem.export(ctx))
out["pyarrow"] = sorted(m for m in sys.modules if m.split(".")[0] == "pyarrow")
print(json.dumps(out))
"""


def test_push_and_pull_with_pyarrow_blocked(s3_settings: S3Settings, s3: S3Store, tmp_path: Path) -> None:
    raw = s3_settings.model_dump_json(include={"endpoint_url", "bucket", "access_key_id", "secret_access_key"})
    out = run_without_pyarrow(_SCRIPT, str(tmp_path / "source.duckdb"), str(tmp_path / "target.duckdb"), raw)
    assert out == {
        "pushed": 2500,
        "first": "fact 9: the user likes topic 9 and green tea",
        "restored": 2500,
        "pyarrow": [],
    }
