"""`stratamem mcp` over stdio with observation on: a real MCP client session, the metrics served on a
port with the server's names, and the cross-tenant attempt in the audit file; off without the options."""

from __future__ import annotations

import asyncio
import json
import re
import socket
from pathlib import Path

import httpx
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from stratamem import Memory, TenantContext
from stratamem.telemetry.audit import AuditLog

from .conftest import alice_mcp, cli_env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _value(text: str, name: str, labels: str) -> float:
    m = re.search(rf"^{re.escape(name)}\{{{re.escape(labels)}\}} ([0-9.e+-]+)$", text, re.M)
    assert m, f"{name}{{{labels}}} not exposed"
    return float(m.group(1))


def _params(db: Path, *extra: str) -> StdioServerParameters:
    env = {
        k: v
        for k, v in cli_env().items()
        if k not in ("STRATAMEM_OBSERVE", "STRATAMEM_METRICS_PORT", "STRATAMEM_AUDIT_LOG")
    }
    return alice_mcp(db, *extra, env=env)


def test_mcp_stdio_observed_serves_metrics_and_audits(tmp_path: Path) -> None:
    db = tmp_path / "mcp.duckdb"
    with Memory.open(db, embedder="hashing") as mem:  # a memory of another tenant in the same store
        other = mem.add(
            TenantContext(tenant_id="globex"), "globex roadmap", layer="user", identifiers={"user_id": "alice"}
        ).memory.id
    port, audit_file = _free_port(), tmp_path / "audit.jsonl"
    params = _params(db, "--metrics-port", str(port), "--audit-log", str(audit_file))
    errlog = (tmp_path / "stderr.txt").open("w")

    async def main() -> str:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            created = await session.call_tool(
                "createMemory", {"content": "User prefers dark mode", "category": "preference"}
            )
            assert not created.is_error
            await session.call_tool("searchMemory", {"query": "dark mode"})
            gone = await session.call_tool("deleteMemory", {"id": other})  # acme names globex's id
            assert json.loads(gone.content[0].text)["deleted"] is False  # type: ignore[union-attr]
            async with httpx.AsyncClient() as client:
                r = await client.get(f"http://127.0.0.1:{port}/metrics", timeout=10)
            assert r.status_code == 200
            return r.text

    text = asyncio.run(asyncio.wait_for(main(), 120))
    errlog.close()
    assert f"metrics at http://127.0.0.1:{port}/metrics" in (tmp_path / "stderr.txt").read_text()
    assert _value(text, "memory_operations_total", 'op="add"') == 1
    assert _value(text, "memory_operations_total", 'op="search"') == 1
    assert _value(text, "memory_storage_size", 'layer="user"') == 2  # all tenants of the store
    assert "memory_operations_latency_bucket{" in text
    records = AuditLog.read_file(audit_file)
    cross = [r for r in records if r.cross_tenant]
    assert cross and {r.tenant_id for r in cross} == {"acme"} and all(r.memory_ids == [other] for r in cross)
    assert ("add", "ok") in [(r.action, r.outcome) for r in records]
    assert "globex roadmap" not in audit_file.read_text()


def test_mcp_stdio_is_not_observed_by_default(tmp_path: Path) -> None:
    db, audit_file = tmp_path / "plain.duckdb", tmp_path / "audit.jsonl"
    with Memory.open(db, embedder="hashing") as mem:
        other = mem.add(
            TenantContext(tenant_id="globex"), "globex roadmap", layer="user", identifiers={"user_id": "alice"}
        ).memory.id
    params = _params(db)
    assert params.env is not None
    params.env["STRATAMEM_AUDIT_LOG"] = str(audit_file)  # names the file; does not turn observation on
    errlog = (tmp_path / "stderr.txt").open("w")

    async def main() -> None:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            assert not (await session.call_tool("createMemory", {"content": "a fact", "category": "fact"})).is_error
            assert not (await session.call_tool("deleteMemory", {"id": other})).is_error

    asyncio.run(asyncio.wait_for(main(), 120))
    errlog.close()
    assert "metrics at" not in (tmp_path / "stderr.txt").read_text()  # no endpoint was started
    # neither the write nor the cross-tenant attempt was audited: no observer was attached
    assert not audit_file.exists() or not [
        r for r in AuditLog.read_file(audit_file) if r.action in {"add", "get", "delete"}
    ]
