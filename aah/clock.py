"""Time as a parameter: the wall clock and the monotonic clock behind one small interface.

Code that reads the time to decide something (a claim's lease, a
question's deadline, an undo's grace period) takes a ``Clock``, the
system's by default, so that a test moves a ``FakeClock`` instead of
sleeping. It lives at the top of the package, below every other part
(the store reads it as the desk and the runtime do).
"""

from __future__ import annotations

import math
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Protocol

__all__ = ["SYSTEM_CLOCK", "Clock", "FakeClock", "SystemClock"]


class Clock(Protocol):
    """Where code reads the time from."""

    def now(self) -> datetime:
        """The wall time, timezone-aware in UTC."""
        ...

    def monotonic(self) -> float:
        """Seconds that only go forward, for measuring how long something took."""
        ...


class SystemClock:
    """The machine's clocks."""

    def now(self) -> datetime:
        """The wall time, timezone-aware in UTC."""
        return datetime.now(UTC)

    def monotonic(self) -> float:
        """``time.monotonic()``."""
        return time.monotonic()


SYSTEM_CLOCK: Clock = SystemClock()


class FakeClock:
    """A clock that moves only when told to (``advance``), for tests.

    Both readings move together: ``advance(5)`` puts the wall time and the
    monotonic seconds 5 seconds later. Safe to read from several threads.

    Args:
        start: The wall time to start at (aware); now by default, so that
            rows written on it sort among rows written on the real clock.
    """

    def __init__(self, start: datetime | None = None) -> None:
        start = start or datetime.now(UTC)
        if start.tzinfo is None:
            raise ValueError("a fake clock starts at an aware time: pass tzinfo=UTC")
        self._start = start.astimezone(UTC)
        self._elapsed = 0.0
        self._lock = threading.Lock()

    def now(self) -> datetime:
        """The fake wall time, in UTC."""
        with self._lock:
            return self._start + timedelta(seconds=self._elapsed)

    def monotonic(self) -> float:
        """Seconds advanced since the clock was made."""
        with self._lock:
            return self._elapsed

    def advance(self, seconds: float) -> None:
        """Move both readings ``seconds`` forward.

        Raises:
            ValueError: ``seconds`` is negative (time does not go back), or
                not a finite number.
        """
        if seconds < 0:
            raise ValueError(f"a clock only moves forward, not by {seconds!r} s")
        if not math.isfinite(seconds):
            raise ValueError(f"move a clock by a finite number of seconds, not {seconds!r}")
        with self._lock:
            self._elapsed += seconds
