"""Write-contention alert: contended attempts on a real Redis lock above the threshold log one
warning and set ``stratamem_coord_contention_alert{lock}``; it clears when the window empties."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
import redis
from prometheus_client import REGISTRY

from stratamem.coordination import RedisLock, contention


@pytest.fixture()
def low_threshold() -> Iterator[contention.ContentionAlert]:
    before = contention.alert
    yield contention.configure(3, window_s=60)
    contention.alert = before


def _gauge(name: str) -> float | None:
    return REGISTRY.get_sample_value("stratamem_coord_contention_alert", {"lock": name})


def test_contention_above_threshold_warns_once_and_sets_the_gauge(
    rclient: redis.Redis, prefix: str, low_threshold: contention.ContentionAlert, caplog: pytest.LogCaptureFixture
) -> None:
    name = f"{prefix}:writer"
    holder = RedisLock(rclient, name, ttl=5, timeout=1)
    holder.acquire()
    other = RedisLock(rclient, name, ttl=5, timeout=1)
    with caplog.at_level(logging.WARNING, logger="stratamem.coordination"):
        for _ in range(3):
            assert other.try_acquire() is False
        assert _gauge(name) == 0
        for _ in range(3):
            assert other.try_acquire() is False
    assert _gauge(name) == 1
    warnings = [r for r in caplog.records if "write contention" in r.getMessage()]
    assert len(warnings) == 1 and name in warnings[0].getMessage()
    holder.release()
    assert low_threshold.observe(name, now=10**9) is False  # the window has emptied
    assert _gauge(name) == 0


def test_threshold_zero_turns_the_alert_off() -> None:
    off = contention.ContentionAlert(0, 60)
    assert not any(off.observe("x", now=float(i)) for i in range(100))
