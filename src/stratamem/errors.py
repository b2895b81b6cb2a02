"""The one exception type of stratamem, with a stable error code per failure.

Every failure a caller can see is a :class:`MemoryError` with a stable ``code``, a human message,
the ``operation`` that failed, structured ``details`` and a ``retryable`` flag. Surfaces (REST, MCP,
CLI) translate it; nothing else ever escapes the engine.
"""

from __future__ import annotations

import builtins
from enum import StrEnum
from typing import Any


class ErrorCode(StrEnum):
    INVALID_LAYER = "INVALID_LAYER"
    MISSING_IDENTIFIER = "MISSING_IDENTIFIER"
    MISSING_TENANT_CONTEXT = "MISSING_TENANT_CONTEXT"
    INVALID_TENANT_CONTEXT = "INVALID_TENANT_CONTEXT"
    #: A credential for a non-tenant endpoint (an operator token, e.g. for metrics) is missing or wrong.
    #: Tenant credentials use MISSING_TENANT_CONTEXT / INVALID_TENANT_CONTEXT.
    UNAUTHORIZED = "UNAUTHORIZED"
    FORBIDDEN = "FORBIDDEN"
    MEMORY_NOT_FOUND = "MEMORY_NOT_FOUND"
    CONTENT_TOO_LONG = "CONTENT_TOO_LONG"
    QUERY_TOO_LONG = "QUERY_TOO_LONG"
    EMBEDDING_FAILED = "EMBEDDING_FAILED"
    PROVIDER_ERROR = "PROVIDER_ERROR"
    RATE_LIMITED = "RATE_LIMITED"
    QUOTA_EXCEEDED = "QUOTA_EXCEEDED"
    POLICY_VIOLATION = "POLICY_VIOLATION"
    UNSAFE_CONTENT = "UNSAFE_CONTENT"
    CONFLICT = "CONFLICT"
    INVALID_PARAMS = "INVALID_PARAMS"
    INVALID_SCOPE_PROMOTION = "INVALID_SCOPE_PROMOTION"
    COMPACTION_FAILED = "COMPACTION_FAILED"
    CONFIGURATION_ERROR = "CONFIGURATION_ERROR"


#: Codes a caller may retry: transient failures, not bad input.
RETRYABLE_CODES: frozenset[ErrorCode] = frozenset(
    {ErrorCode.EMBEDDING_FAILED, ErrorCode.PROVIDER_ERROR, ErrorCode.RATE_LIMITED}
)


class MemoryError(builtins.Exception):
    """A coded, structured stratamem error.

    ``retryable`` defaults from the code (EMBEDDING_FAILED, PROVIDER_ERROR, RATE_LIMITED) and can be
    overridden, e.g. a provider error that will not go away by retrying.
    """

    def __init__(
        self,
        code: ErrorCode | str,
        message: str,
        *,
        operation: str = "",
        details: dict[str, Any] | None = None,
        retryable: bool | None = None,
    ) -> None:
        self.code = ErrorCode(code)
        self.message = message
        self.operation = operation
        self.details: dict[str, Any] = dict(details or {})
        self.retryable = self.code in RETRYABLE_CODES if retryable is None else retryable
        super().__init__(f"{self.code.value}: {message}")

    def with_operation(self, operation: str) -> MemoryError:
        """Fill in the operation name if the raiser did not know it."""
        if not self.operation:
            self.operation = operation
        return self

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code.value,
            "message": self.message,
            "operation": self.operation,
            "details": self.details,
            "retryable": self.retryable,
        }

    def __repr__(self) -> str:
        return f"MemoryError(code={self.code.value!r}, message={self.message!r}, operation={self.operation!r})"


#: Alias for code that prefers not to shadow the builtin name.
StratamemError = MemoryError


class TransientProviderError(builtins.Exception):
    """Raised by a provider for a failure worth retrying (lock contention, dropped connection).

    The engine retries these with exponential backoff and turns the last one into PROVIDER_ERROR.
    """


class RateLimitedError(builtins.Exception):
    """Raised by a backend (e.g. an HTTP embedder) that answered "slow down"."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after
