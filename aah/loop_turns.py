"""Sharing the event loop's turns: a burst of ready work is spread over several, when there is room.

Sixty-four sessions whose model replies land together would each run their
next step (read the reply, log it, move the graph on, send the next request)
in one turn of the event loop: 60 ms and more in which no timer fires, no
heartbeat is sent and no other reply is read. Before such a step a session
awaits :func:`take_turn`.

The steps of a loop turn go straight on until the turn has spent
``TURN_BUDGET`` seconds since the first of them began; the rest wait, in
order, and are let on a few per later turn, as many as the budget fits at
the cost the steps were seen to take.

Only while the loop has room: when its thread was busy more than
``BUSY_LIMIT`` of the last quarter second or so (``LOAD_SECONDS``), every
step goes straight on and any waiting go on at once. A loop that is never
idle (every model answers at once) gains nothing from spreading, since each
turn waits behind as much work either way, and spread steps cost it about a
fifth more CPU (their data has left the processor's caches by the time their
turn comes; perf/batch_bench.py). A step that goes straight on costs two
clock readings. One ``TurnSharing`` serves each event loop.
"""

from __future__ import annotations

import asyncio
import math
import time
import weakref
from collections import deque
from collections.abc import Callable

__all__ = ["BUSY_LIMIT", "LOAD_SECONDS", "TURN_BUDGET", "TurnSharing", "take_turn"]

# Seconds of let-on steps a loop turn holds before the next ones wait for a
# later turn. A session's step takes 1-2 ms, so a spread burst runs about one
# a turn: at 2 ms the p99 of a 10 ms timer's lateness was 8-10 ms at 64
# sessions against a 300 ms model, at 0.5 ms 5-6 ms, for 0.1-0.2 ms more CPU
# a task (perf/batch_bench.py).
TURN_BUDGET = 0.0005
# The share of its time the loop's thread may have been busy for steps to be spread.
BUSY_LIMIT = 0.8
# How far back the loop's busy share looks (the time constant of its moving average).
LOAD_SECONDS = 0.25


class TurnSharing:
    """Lets steps on while their turn has budget left; the others wait for later turns."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        budget: float | None = None,
        *,
        clock: Callable[[], float] = time.perf_counter,
        cpu_clock: Callable[[], float] = time.thread_time,
    ) -> None:
        """Share ``loop``'s turns, ``budget`` seconds of steps a turn (``TURN_BUDGET``).

        ``clock`` and ``cpu_clock`` read the wall time and the loop thread's
        CPU time (tests move fakes).
        """
        self.budget = TURN_BUDGET if budget is None else budget
        self._loop = loop
        self._clock, self._cpu_clock = clock, cpu_clock
        self._last, self._last_cpu = clock(), cpu_clock()  # at the last step
        # The loop thread's busy share lately (a moving average). It starts at
        # the limit: the first steps (sessions started together) are spread,
        # and a loop that stays busy stops spreading within a few steps.
        self.busy = BUSY_LIMIT
        self._started: float | None = None  # when the turn's first step began; None: no turn
        self._let_on = 0  # steps let on in the turn
        self._cost = self.budget  # what a step was last seen to cost
        self._waiting: deque[asyncio.Future[None]] = deque()

    @property
    def waiting(self) -> int:
        """Steps waiting for a later turn."""
        return len(self._waiting)

    def _measure(self) -> float:
        """Now, with the loop's busy share brought up to it."""
        now, cpu = self._clock(), self._cpu_clock()
        elapsed = now - self._last
        if elapsed > 0:
            weight = 1 - math.exp(-elapsed / LOAD_SECONDS)
            share = min(1.0, max(0.0, (cpu - self._last_cpu) / elapsed))
            self.busy += (share - self.busy) * weight
        self._last, self._last_cpu = now, cpu
        return now

    async def take_turn(self) -> None:
        """Return when this step may run: at once, or in a later turn."""
        now = self._measure()
        if self.busy > BUSY_LIMIT and not self._waiting:
            return
        if self._started is None:
            self._begin(now, 1)
            return
        spent = now - self._started
        if not self._waiting and spent < self.budget:
            self._let_on += 1
            return
        if not self._waiting:
            self._cost = spent / self._let_on
        waiter: asyncio.Future[None] = self._loop.create_future()
        self._waiting.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter in self._waiting:
                self._waiting.remove(waiter)
            raise

    def _begin(self, now: float, let_on: int) -> None:
        """Start a turn of ``let_on`` steps; it ends when the loop comes round to ``_next``."""
        self._started, self._let_on = now, let_on
        self._loop.call_soon(self._next)

    def _next(self) -> None:
        """A later turn: let on as many waiting steps as the budget fits (one at least)."""
        self._started = None
        if not self._waiting:
            return
        now = self._measure()
        fits = max(1, int(self.budget / max(self._cost, 1e-6)))
        if self.busy > BUSY_LIMIT:
            fits = len(self._waiting)  # no room to spread into: all go on
        let_on = 0
        while self._waiting and let_on < fits:
            waiter = self._waiting.popleft()
            if not waiter.done():  # a cancelled one has left already
                waiter.set_result(None)
                let_on += 1
        # Those let on run in the loop's next turn: counted to it from now.
        self._begin(now, let_on)


_SHARING: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, TurnSharing] = (
    weakref.WeakKeyDictionary()
)


async def take_turn() -> None:
    """Wait, if the running loop's turn is spent and it has room, for a later turn."""
    loop = asyncio.get_running_loop()
    sharing = _SHARING.get(loop)
    if sharing is None:
        sharing = _SHARING[loop] = TurnSharing(loop)
    await sharing.take_turn()
