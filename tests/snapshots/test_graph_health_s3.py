"""``/health/graph`` checks the snapshot bucket when snapshots are configured (real SeaweedFS)."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from fastapi import FastAPI
from fastapi.testclient import TestClient

from stratamem import Memory, TenantContext
from stratamem.persistence import S3Settings, S3Store
from stratamem.server import http_errors
from stratamem.server.graph_routes import graph_router


def _client(mem: Memory) -> TestClient:
    app = FastAPI()
    http_errors.install(app)
    app.include_router(graph_router(lambda: mem, lambda: TenantContext(tenant_id="acme")))
    return TestClient(app)


def test_health_graph_reports_the_snapshot_bucket(
    open_mem: Callable[..., Memory], s3: S3Store, s3_settings: S3Settings
) -> None:
    mem = open_mem()
    with _client(mem) as c:
        plain = c.get("/health/graph")
        assert plain.status_code == 200 and "snapshots_s3" not in plain.json()["components"]
        mem.configure_snapshots(s3_settings)
        ok = c.get("/health/graph")
        assert ok.status_code == 200, ok.text
        assert ok.json()["components"]["snapshots_s3"]["status"] == "healthy"
        missing = s3_settings.model_copy(update={"bucket": f"absent-{uuid.uuid4().hex[:12]}", "create_bucket": False})
        mem.configure_snapshots(missing)
        bad = c.get("/health/graph")
        assert bad.status_code == 503 and bad.json()["status"] == "unhealthy"
        component = bad.json()["components"]["snapshots_s3"]
        assert component["status"] == "unhealthy" and missing.bucket in component["message"]
