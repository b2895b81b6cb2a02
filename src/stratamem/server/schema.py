"""API-key storage of the server feature: the record type and DuckDB migration 2.

Both live with the storage (:mod:`stratamem.keys_model`, :mod:`stratamem.providers.duckdb.schema`),
which reads and writes keys without importing the server; they are re-exported here under their
former names.
"""

from __future__ import annotations

from ..keys_model import ApiKeyRecord
from ..providers.duckdb.schema import API_KEYS_MIGRATION as MIGRATION

__all__ = ["MIGRATION", "ApiKeyRecord"]
