"""Shared fixtures.

Services: a test that needs one asks for it through :func:`require_service`; when it is missing the
test skips with the reason, except under ``CI=true`` where the run fails instead.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from stratamem import Memory, TenantContext
from stratamem.embeddings import Embedder, HashingEmbedder

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")

#: ``scripts/services.sh`` (and the scripts it calls) write ``KEY=VALUE`` lines here, e.g.
#: ``STRATAMEM_TEST_PG_URL``; the environment wins over the file.
SERVICES_ENV = Path(__file__).resolve().parent.parent / ".services.env"


def _load_services_env(path: Path = SERVICES_ENV) -> None:
    if not path.is_file():
        return
    for line in path.read_text(encoding="utf-8").splitlines():
        key, sep, value = line.strip().partition("=")
        if sep and key and not key.startswith("#"):
            os.environ.setdefault(key.strip(), value.strip())


_load_services_env()


def require_service(name: str, available: bool, reason: str) -> None:
    """Skip (locally) or fail (CI=true) when a service the test needs is not reachable."""
    if available:
        return
    if IN_CI:
        pytest.fail(f"{name} is required under CI=true but unavailable: {reason}", pytrace=False)
    pytest.skip(f"{name} unavailable: {reason}")


@pytest.fixture(scope="session")
def minilm() -> Embedder:
    """The real default embedder (all-MiniLM-L6-v2 on ONNX Runtime), loaded once per test session.

    Built from the installed weights into the user cache on first use, as a user's first run does.
    """
    from stratamem.embeddings.onnx import OnnxEmbedder

    emb = OnnxEmbedder()
    emb.warm_up()
    return emb


@pytest.fixture(scope="session")
def torch_minilm() -> Embedder:
    """The same model on sentence-transformers + torch (the optional extra); skipped without torch."""
    pytest.importorskip("sentence_transformers", reason="the sentence-transformers extra (torch) is not installed")
    from stratamem.embeddings.local import SentenceTransformerEmbedder

    emb = SentenceTransformerEmbedder()
    emb.warm_up()
    return emb


@pytest.fixture()
def hashing() -> Embedder:
    return HashingEmbedder(384)


@pytest.fixture()
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "store.duckdb"


@pytest.fixture()
def open_mem(db_path: Path) -> Iterator[Callable[..., Memory]]:
    """Factory for Memory objects on a real DuckDB file (hashing embedder unless given)."""
    opened: list[Memory] = []

    def factory(location: str | Path | None = None, **kwargs: object) -> Memory:
        kwargs.setdefault("embedder", "hashing")
        mem = Memory.open(location if location is not None else db_path, **kwargs)  # type: ignore[arg-type]
        opened.append(mem)
        return mem

    yield factory
    for mem in opened:
        mem.close()


@pytest.fixture()
def mem(open_mem: Callable[..., Memory]) -> Memory:
    return open_mem()


@pytest.fixture()
def acme() -> TenantContext:
    return TenantContext(tenant_id="acme", principal="u1")


@pytest.fixture()
def globex() -> TenantContext:
    return TenantContext(tenant_id="globex", principal="u9")
