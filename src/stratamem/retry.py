"""Retry policy for transient failures (bounded attempts with backoff), built on tenacity.

Retried: :class:`TransientProviderError`, :class:`RateLimitedError` (waiting ``Retry-After`` when
given) and retryable EMBEDDING_FAILED/PROVIDER_ERROR. After the last attempt the caller sees
PROVIDER_ERROR / RATE_LIMITED / the embedder's error, marked retryable.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from .errors import ErrorCode, MemoryError, RateLimitedError, TransientProviderError

T = TypeVar("T")


@dataclass(frozen=True)
class RetryConfig:
    max_attempts: int = 3
    initial_delay: float = 0.05
    max_delay: float = 30.0
    multiplier: float = 2.0


def _is_retryable(exc: BaseException) -> bool:
    if isinstance(exc, TransientProviderError | RateLimitedError):
        return True
    return (
        isinstance(exc, MemoryError)
        and exc.retryable
        and exc.code
        in (
            ErrorCode.EMBEDDING_FAILED,
            ErrorCode.PROVIDER_ERROR,
        )
    )


def call_with_retry(fn: Callable[[], T], operation: str, config: RetryConfig) -> T:
    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, RateLimitedError) and exc.retry_after is not None:
            return min(exc.retry_after, config.max_delay)
        return float(min(config.initial_delay * config.multiplier ** (state.attempt_number - 1), config.max_delay))

    # The first attempt runs without tenacity: nearly every call succeeds at once, and a Retrying
    # builds several objects per call (a search makes two such calls). A failure is replayed as the
    # Retrying's own first attempt, so the waits, the attempt count and what is raised are unchanged.
    first: list[BaseException] = []
    try:
        return fn()
    except BaseException as exc:  # replayed below, outside this handler (no implicit chaining)
        first.append(exc)

    def replay() -> T:
        if first:
            raise first.pop()
        return fn()

    retrying = Retrying(
        stop=stop_after_attempt(max(1, config.max_attempts)),
        wait=wait,
        retry=retry_if_exception(_is_retryable),
        reraise=True,
    )
    try:
        return retrying(replay)
    except TransientProviderError as exc:
        raise MemoryError(
            ErrorCode.PROVIDER_ERROR,
            f"storage failed after {config.max_attempts} attempts: {exc}",
            operation=operation,
            details={"attempts": config.max_attempts},
            retryable=True,
        ) from exc
    except RateLimitedError as exc:
        details: dict[str, object] = {"attempts": config.max_attempts}
        if exc.retry_after is not None:
            details["retry_after"] = exc.retry_after
        raise MemoryError(ErrorCode.RATE_LIMITED, str(exc), operation=operation, details=details) from exc
    except MemoryError as exc:
        exc.with_operation(operation)
        raise
