"""Fixtures for the server surfaces: a Memory on a real DuckDB file, keys, TestClient, live servers."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from mcp.client.stdio import StdioServerParameters

from stratamem import Memory
from stratamem.server.app import create_app
from stratamem.server.keys import create_key
from stratamem.server.settings import ServerSettings

SRC = str(Path(__file__).resolve().parents[2] / "src")


@pytest.fixture()
def server_mem(open_mem: Callable[..., Memory]) -> Memory:
    return open_mem()


@pytest.fixture()
def make_key(server_mem: Memory) -> Callable[..., str]:
    def make(tenant: str = "acme", role: str = "writer", **identifiers: str) -> str:
        return create_key(server_mem.engine.provider, tenant, role, identifiers=identifiers).key

    return make


@pytest.fixture()
def make_client(server_mem: Memory) -> Iterator[Callable[..., TestClient]]:
    clients: list[TestClient] = []

    def make(**settings: object) -> TestClient:
        settings.setdefault("mcp_enabled", False)
        client = TestClient(create_app(server_mem, ServerSettings(**settings)))  # type: ignore[arg-type]
        client.__enter__()
        clients.append(client)
        return client

    yield make
    for c in clients:
        c.__exit__(None, None, None)


@pytest.fixture()
def client(make_client: Callable[..., TestClient]) -> TestClient:
    return make_client()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cli_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    env["STRATAMEM_EMBEDDER"] = "hashing"
    return env


def _alice_mcp_args(db: Path, *extra: str) -> list[str]:
    return ["-m", "stratamem", "mcp", "--db", str(db), "--tenant", "acme", "--user-id", "alice", *extra]


def alice_mcp(db: Path, *extra: str, env: dict[str, str] | None = None) -> StdioServerParameters:
    """``stratamem mcp`` over stdio on ``db`` for user ``alice`` of tenant ``acme``."""
    return StdioServerParameters(
        command=sys.executable, args=_alice_mcp_args(db, *extra), env=cli_env() if env is None else env
    )


def alice_mcp_exit(db: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``stratamem mcp`` for ``alice`` with stdin closed at once (a client that leaves at the start)."""
    return subprocess.run(
        [sys.executable, *_alice_mcp_args(db)],
        env=cli_env() if env is None else env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "stratamem", *args],
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


class LiveServer:
    def __init__(self, db: Path, *extra_args: str) -> None:
        self.db = db
        self.extra_args = extra_args
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[str] | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "stratamem",
                "serve",
                "--db",
                str(self.db),
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--log-level",
                "warning",
                *self.extra_args,
            ],
            env=cli_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                out = self.proc.stdout.read() if self.proc.stdout else ""
                raise RuntimeError(f"server exited early: {out}")
            try:
                if httpx.get(self.url + "/ready", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise RuntimeError("server did not become ready")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture()
def live_db(tmp_path: Path) -> Path:
    return tmp_path / "live.duckdb"


@pytest.fixture()
def live_server(live_db: Path) -> Iterator[Callable[[], LiveServer]]:
    servers: list[LiveServer] = []

    def start() -> LiveServer:
        srv = LiveServer(live_db)
        srv.start()
        servers.append(srv)
        return srv

    yield start
    for srv in servers:
        srv.stop()


def cli_key(db: Path, tenant: str, role: str = "writer", *extra: str) -> str:
    res = run_cli("keys", "create", "--db", str(db), "--tenant", tenant, "--role", role, *extra)
    assert res.returncode == 0, res.stderr
    return res.stdout.split()[-1]
