"""Workers watched: a heartbeat from each worker's event loop, and a bound on its silence.

A worker that dies is noticed at once (its process or actor ends); one that
hangs (stopped with SIGSTOP, or its event loop blocked for good) is not, and
would hold its tasks for ever. So each worker sends a message at least every
``beat_seconds`` (the ``activity`` line the progress display reads), and the
parent treats a worker it has not heard from for ``bound`` seconds
(``AAH_WORKER_TIMEOUT``, 60 by default) as lost: it ends the process (SIGKILL,
which a stopped process cannot ignore, or ``ray.kill`` for an actor) and hands
its tasks over once, as after a death.

The heartbeat comes from the worker's event loop, not from a thread beside
it. A thread would prove only that the process lives; the loop's beat proves
that the loop turns, and a worker whose loop is blocked runs none of its
sessions, so its tasks are better off elsewhere. Long legitimate work keeps
beating: a slow model call or an MCP tool call awaits with the loop free, and
an HTTP tool call runs in a thread. Work done on the loop itself (a BFCL API
class's method, building a task's request) holds the beat only while it
runs, and is taken for a hang only when it holds the loop past the bound.

The parent's own loop may be held up too (a slow hook, a stall of the
machine): time during which it did not look counts against no worker. A
worker has at least :data:`START_SECONDS` to say its first word (a spawned
worker imports aah, a Ray actor is placed and started). Time is a parameter
(``clock``), so the tests move it instead of sleeping.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import NamedTuple

from aah.bounds import OutOfBounds, check_seconds

# The default bound on a worker's silence, in seconds (AAH_WORKER_TIMEOUT).
DEFAULT_WORKER_TIMEOUT = 60.0
# The shortest bound: below it a busy machine's pauses would look like hangs.
MIN_WORKER_TIMEOUT = 1.0
# The time a worker has to say its first word, when the bound is shorter.
START_SECONDS = 60.0
# How often a worker beats at most (its activity line), and when the
# progress line starts to name a silent worker (both shorter under a short bound).
BEAT_SECONDS = 1.0
SHOW_SILENT_SECONDS = 5.0


def check_worker_timeout(value: object, what: str = "AAH_WORKER_TIMEOUT") -> float:
    """A bound on a worker's silence: a number of seconds, at least ``MIN_WORKER_TIMEOUT``.

    Raises:
        OutOfBounds: anything else; the message names ``what`` and the bounds.
    """
    seconds = check_seconds(value, what)
    if seconds < MIN_WORKER_TIMEOUT:
        raise OutOfBounds(
            f"{what} must be at least {MIN_WORKER_TIMEOUT:g} second(s): a shorter bound takes "
            f"a busy worker for a hung one; got {seconds:g}"
        )
    return seconds


class Silent(NamedTuple):
    """A worker not heard from for ``seconds``."""

    number: int
    seconds: float


class Heartbeats:
    """When the parent last heard from each worker, and which have been silent too long."""

    def __init__(self, bound: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.bound = check_worker_timeout(bound, "the workers' silence bound")
        self.clock = clock
        self.every = min(BEAT_SECONDS, self.bound / 4)  # the workers' beat, and the parent's look
        self.show_after = min(SHOW_SILENT_SECONDS, self.bound / 2)
        self.heard: dict[int, float] = {}
        self.spoken: set[int] = set()
        self.looked = clock()

    def started(self, number: int) -> None:
        """Worker ``number`` was started now: its silence counts from here."""
        self.heard[number] = self.clock()

    def heard_from(self, number: int) -> None:
        """A message came from worker ``number`` just now."""
        if number in self.heard:
            self.heard[number] = self.clock()
            self.spoken.add(number)

    def forget(self, number: int) -> None:
        """Worker ``number`` is gone: it is watched no more."""
        self.heard.pop(number, None)

    def past_bound(self) -> list[Silent]:
        """The workers silent past the bound (the parent looks every ``every`` seconds)."""
        now = self.clock()
        late = now - self.looked - self.every
        if late > self.every:
            # The parent itself was held up: that time is no worker's silence.
            for number, heard in self.heard.items():
                self.heard[number] = min(now, heard + late)
        self.looked = now
        return [
            Silent(number, now - heard)
            for number, heard in sorted(self.heard.items())
            if now - heard > self._bound_for(number)
        ]

    def describe(self) -> str:
        """The workers silent a while, for the progress line (``worker 2 silent 7 s``), or ``""``.

        Only silences of ``show_after`` seconds or more, so the usual line stays short.
        """
        now = self.clock()
        return " · ".join(
            f"worker {number + 1} silent {now - heard:.0f} s"
            for number, heard in sorted(list(self.heard.items()))
            if now - heard >= self.show_after
        )

    def lost_text(self, seconds: float) -> str:
        """How a worker silent for ``seconds`` ended, for the warning and the run's error."""
        return (
            f"silent for {seconds:.1f} s, past AAH_WORKER_TIMEOUT={self.bound:g} s: "
            "taken for hung and killed"
        )

    def _bound_for(self, number: int) -> float:
        return self.bound if number in self.spoken else max(self.bound, START_SECONDS)
