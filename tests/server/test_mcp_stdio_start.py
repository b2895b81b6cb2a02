"""``stratamem mcp`` answers the MCP handshake before the engine is loaded: the store and the model
open in a background thread (``mcp.stdio.OpeningStore``), a tool call waits for them, a store that
cannot open answers every tool call with its error, and a client that leaves early gets a clean exit."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from mcp import ClientSession
from mcp.client.stdio import stdio_client

from stratamem import Memory, TenantContext
from stratamem.embeddings.base import Embedder
from stratamem.errors import ErrorCode, MemoryError
from stratamem.mcp.stdio import OpeningStore

from .conftest import alice_mcp, alice_mcp_exit, cli_env

#: What the handshake must not wait for: the engine, the HTTP server, the HTTP client.
HEAVY = ("stratamem.sdk", "stratamem.engine", "stratamem.providers", "numpy", "duckdb", "onnxruntime", "fastapi")


def test_the_mcp_command_starts_without_the_engine() -> None:
    """Resolving ``stratamem mcp`` and loading its server imports none of the engine's modules."""
    code = (
        "import sys\n"
        "from stratamem.cli import app_for\n"
        "import typer\n"
        "typer.main.get_command(app_for(['mcp']))\n"
        "import stratamem.mcp.stdio\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=cli_env(), capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def _bad_store(tmp_path: Path) -> Path:
    db = tmp_path / "not-a-store.duckdb"
    db.write_text("not a DuckDB file\n")
    return db


def test_a_store_that_cannot_open_answers_every_tool_call(tmp_path: Path) -> None:
    db = _bad_store(tmp_path)
    params = alice_mcp(db)

    async def main() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            names = {t.name for t in (await session.list_tools()).tools}
            assert {"searchMemory", "createMemory"} <= names
            for tool, args in (
                ("searchMemory", {"query": "port"}),
                ("createMemory", {"content": "The API runs on port 8080", "category": "fact"}),
                ("listMemory", {}),
            ):
                res = await session.call_tool(tool, args)
                assert res.is_error, tool
                text = res.content[0].text  # type: ignore[union-attr]
                assert text.startswith("PROVIDER_ERROR: cannot open DuckDB file"), text
                assert res.structured_content is not None
                assert res.structured_content["code"] == "PROVIDER_ERROR"

    asyncio.run(asyncio.wait_for(main(), 120))
    assert db.read_text() == "not a DuckDB file\n"  # left as it was


def test_a_store_that_cannot_open_is_reported_and_exits_2(tmp_path: Path) -> None:
    db = _bad_store(tmp_path)
    out = alice_mcp_exit(db)
    assert out.returncode == 2, out.stderr
    assert out.stderr.count("error PROVIDER_ERROR: cannot open DuckDB file") == 1, out.stderr


@pytest.mark.model
def test_a_client_that_leaves_during_the_start_gets_a_clean_exit(tmp_path: Path, minilm: Embedder) -> None:
    """stdin closed at once: the server exits while the model may still be loading; it waits for the
    loading thread instead of tearing the runtime down under it (that aborted the process)."""
    db = tmp_path / "early.duckdb"
    env = cli_env()
    env["STRATAMEM_EMBEDDER"] = "onnx"
    for _ in range(2):
        out = alice_mcp_exit(db, env)
        assert out.returncode == 0, out.stderr
        assert "terminate called" not in out.stderr


def test_a_call_waits_for_the_store_while_it_opens(tmp_path: Path) -> None:
    release = threading.Event()
    prepared: list[Memory] = []

    def open_store() -> Memory:
        release.wait(30)
        return Memory.open(tmp_path / "s.duckdb", embedder="hashing")

    store = OpeningStore(open_store, prepared.append).start()
    got: list[Memory] = []
    caller = threading.Thread(target=lambda: got.append(store()))
    caller.start()
    caller.join(0.3)
    assert caller.is_alive() and not got  # still opening: the call waits
    release.set()
    caller.join(30)
    assert len(got) == 1
    ctx = TenantContext(tenant_id="acme")
    got[0].add(ctx, "The API runs on port 8080", layer="user", identifiers={"user_id": "alice"})
    assert store() is got[0]
    store.close()
    assert prepared == got  # prepared once, in the opening thread, with the opened store
    with Memory.open(tmp_path / "s.duckdb", embedder="hashing") as again:  # closed: the file is free
        assert again.list(ctx, "user", identifiers={"user_id": "alice"}).total_count == 1


def test_a_failure_after_the_store_opened_does_not_fail_the_calls(tmp_path: Path) -> None:
    def prepare(_mem: Memory) -> None:
        raise RuntimeError("model went missing")

    store = OpeningStore(lambda: Memory.open(tmp_path / "s.duckdb", embedder="hashing"), prepare).start()
    try:
        assert store().list(TenantContext(tenant_id="acme")).total_count == 0
        assert store.error is None
    finally:
        store.close()


def test_an_unexpected_failure_to_open_becomes_a_coded_error() -> None:
    def broken() -> Memory:
        raise OSError("disk on fire")

    store = OpeningStore(broken).start()
    with pytest.raises(MemoryError) as info:
        store()
    assert info.value.code is ErrorCode.PROVIDER_ERROR
    assert "disk on fire" in info.value.message
    assert store.error is info.value
    store.close()
