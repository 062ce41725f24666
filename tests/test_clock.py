"""The clock code reads time from, and the fake one tests move."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta, timezone

import pytest

from aah.clock import SYSTEM_CLOCK, FakeClock


def test_a_fake_clock_moves_both_readings_only_when_told() -> None:
    start = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    clock = FakeClock(start)
    assert clock.now() == start and clock.monotonic() == 0
    clock.advance(90.5)
    assert clock.now() == start + timedelta(seconds=90.5)
    assert clock.monotonic() == 90.5
    clock.advance(0)
    assert clock.monotonic() == 90.5


def test_a_fake_clock_reads_in_utc_whatever_zone_it_starts_in() -> None:
    start = datetime(2026, 1, 2, 12, 0, tzinfo=timezone(timedelta(hours=2)))
    assert FakeClock(start).now() == start and FakeClock(start).now().tzinfo == UTC


def test_the_system_clock_is_aware_and_goes_forward() -> None:
    now = SYSTEM_CLOCK.now()
    assert now.tzinfo == UTC
    first = SYSTEM_CLOCK.monotonic()
    assert SYSTEM_CLOCK.monotonic() >= first


@pytest.mark.parametrize("seconds", [-1, -0.001, -math.inf])
def test_a_fake_clock_never_goes_back(seconds: float) -> None:
    clock = FakeClock()
    with pytest.raises(ValueError, match="a clock only moves forward"):
        clock.advance(seconds)
    assert clock.monotonic() == 0


@pytest.mark.parametrize("seconds", [math.nan, math.inf])
def test_a_fake_clock_refuses_a_step_that_is_not_a_finite_number(seconds: float) -> None:
    clock = FakeClock()
    with pytest.raises(ValueError, match="finite"):
        clock.advance(seconds)
    assert clock.monotonic() == 0


def test_a_fake_clock_starts_at_an_aware_time() -> None:
    with pytest.raises(ValueError, match="aware time"):
        FakeClock(datetime(2026, 1, 2))  # noqa: DTZ001 - the naive time refused
