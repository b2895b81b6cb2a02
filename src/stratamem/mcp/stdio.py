"""The MCP server over stdio (``stratamem mcp``): one client, one tenant and one set of identifiers.

A client starts the server and waits for its answer to ``initialize`` before it lists the tools.
Importing the engine (numpy, DuckDB, the embedder), opening the store and loading the model take
longer than the SDK takes to answer, so the store opens in a background thread while the handshake
is answered: :class:`OpeningStore`. A tool call waits for the store if it is still opening. A store
that fails to open is reported once on stderr (``error CODE: message``, like every command), every
tool call answers with that error, and the command exits with status 2 when the client leaves.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..errors import ErrorCode, MemoryError
from .server import Binding, build_mcp_server

if TYPE_CHECKING:
    from ..sdk import Memory

_log = logging.getLogger("stratamem.mcp")


class OpeningStore:
    """A store opened in a background thread; calling it waits for the store and returns it.

    Args:
        open_store: Opens the store (raises ``MemoryError`` when it cannot).
        on_open: Runs in the same thread once the store is open and tool calls may use it (e.g.
            loading the embedding model, so the first search does not pay for it); a failure there
            is logged, and the first call that needs the model reports it.
    """

    def __init__(self, open_store: Callable[[], Memory], on_open: Callable[[Memory], None] | None = None) -> None:
        self._open = open_store
        self._on_open = on_open
        self._memory: Memory | None = None
        self.error: MemoryError | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="stratamem-open-store", daemon=True)

    def start(self) -> OpeningStore:
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            self._memory = self._open()
        except MemoryError as exc:
            self.error = exc
        except Exception as exc:  # any failure to open becomes the answer of every tool call
            _log.debug("opening the store failed", exc_info=True)
            self.error = MemoryError(
                ErrorCode.PROVIDER_ERROR, f"cannot open the store: {exc}", operation="mcp", retryable=False
            )
        finally:
            self._ready.set()
        if self.error is not None:
            print(f"error {self.error.code.value}: {self.error.message}", file=sys.stderr, flush=True)
            return
        if self._on_open is not None and self._memory is not None:
            try:
                self._on_open(self._memory)
            except Exception:
                _log.warning("preparing the store after it opened failed", exc_info=True)

    def __call__(self) -> Memory:
        self._ready.wait()
        if self.error is not None:
            raise self.error
        assert self._memory is not None  # set before _ready unless error is
        return self._memory

    def close(self) -> None:
        """Wait for the background thread (a store half opened must not be torn down by the
        interpreter's exit), then close the store."""
        self._thread.join()
        if self._memory is not None:
            self._memory.close()
            self._memory = None


def run_stdio(store: Callable[[], Memory], binding: Binding) -> None:
    """Serve MCP over stdin/stdout until the client closes stdin."""
    build_mcp_server(store, lambda _ctx: binding).run("stdio")
