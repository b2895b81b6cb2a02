"""Server settings: :class:`stratamem.settings.ServerSettings`, re-exported where the server reads it."""

from __future__ import annotations

from ..settings import Interval, ServerSettings

__all__ = ["Interval", "ServerSettings"]
