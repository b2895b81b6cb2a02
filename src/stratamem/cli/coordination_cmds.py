"""``stratamem writer``: the single writer process of a store shared through Redis."""

from __future__ import annotations

import signal
from types import FrameType
from typing import Annotated

import typer

from ..sdk import Memory
from .common import DEFAULT_DB, DbOpt, EmbedderOpt, cli_settings, coded_errors, err_console, from_settings

RedisOpt = Annotated[
    str,
    typer.Option("--redis", callback=from_settings(lambda s: s.redis_url), help="Redis URL (env STRATAMEM_REDIS_URL)."),
]


def register(app: typer.Typer) -> None:
    @app.command()
    def writer(
        db: DbOpt = DEFAULT_DB,
        redis_url: RedisOpt = "redis://127.0.0.1:6379/0",
        queue: Annotated[str, typer.Option("--queue", help="Key prefix of the write queue.")] = "stratamem",
        lock_ttl: Annotated[float, typer.Option(help="Writer lock TTL, seconds.")] = 10.0,
        lock_timeout: Annotated[float, typer.Option(help="Give up acquiring the lock after, seconds.")] = 30.0,
        embedder: EmbedderOpt = None,
    ) -> None:
        """Own the store and execute the writes other processes queue in Redis, in FIFO order."""
        import redis  # noqa: PLC0415  redis extra

        from ..coordination import WriteCoordinator  # noqa: PLC0415  redis extra (coordination needs redis)

        client = redis.Redis.from_url(redis_url)
        settings = cli_settings()
        coord = WriteCoordinator(
            lambda: Memory.open(db, embedder=embedder, settings=settings),
            client,
            queue,
            lock_ttl=lock_ttl,
            lock_timeout=lock_timeout,
        )

        def stop(signum: int, frame: FrameType | None) -> None:
            coord.stop()

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        with coded_errors():
            coord.start()
            err_console.print(f"writer ready: queue {queue!r}, store {db}", markup=False, highlight=False)
            coord.run()
