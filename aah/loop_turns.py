"""Sharing the event loop's turns: a burst of work that comes after a quiet spell is spread.

Sixty-four sessions whose model replies land together after a quiet spell
would each run their next step (read the reply, log it, move the graph on,
send the next request) in one turn of the event loop: 60 ms and more in
which no timer fires, no heartbeat is sent and no other reply is read.
Before such a step a session awaits :func:`take_turn`.

A step that comes after the loop's thread sat idle for ``LULL`` seconds
begins a burst. While a burst lasts, the steps of a loop turn go straight
on until the turn has spent ``TURN_BUDGET`` seconds since the first of them
began; the rest wait, in order, and are let on a few per later turn, as many
as the budget fits at the cost the steps were seen to take. The burst lasts
(replies that come a while later are spread the same way) until the waiting
line has not got shorter for ``FLAT_TURNS`` turns: steps come as fast as
they go, the loop is busy for good and has no idle turns to spread them
into. All waiting go on then, and the next idle spell begins a new burst.

A loop that is never idle (every session's model answers at once) has no
bursts: its steps all go straight on, each for two clock readings. Spread
over turns, such steps cost about a fifth more CPU (their data has left the
processor's caches by the time their turn comes; perf/batch_bench.py), and
a loop that never waits has no idle turns to spread them into.
One ``TurnSharing`` serves each event loop.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections import deque
from collections.abc import Callable

__all__ = ["FLAT_TURNS", "LULL", "TURN_BUDGET", "TurnSharing", "take_turn"]

# Seconds of let-on steps a loop turn holds in a burst before the next ones
# wait for a later turn: well under the 10 ms a timer may be late.
TURN_BUDGET = 0.002
# Seconds the loop's thread sat idle (not merely without a step: a garbage
# collection is not idle) after which the next step begins a burst.
LULL = 0.005
# Turns in a row whose waiting line did not get shorter, after which a burst ends.
FLAT_TURNS = 100


class TurnSharing:
    """Lets a burst's steps on while their turn has budget left; the others wait for later turns."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        budget: float | None = None,
        *,
        clock: Callable[[], float] = time.perf_counter,
        cpu_clock: Callable[[], float] = time.thread_time,
        busy: bool = False,
    ) -> None:
        """Share ``loop``'s turns, ``budget`` s of steps a turn in a burst (``TURN_BUDGET``).

        The loop's first steps are a burst (sessions started together), unless
        ``busy``: then the first burst waits for an idle spell.
        """
        self.budget = TURN_BUDGET if budget is None else budget
        self._loop = loop
        self._clock, self._cpu_clock = clock, cpu_clock  # the loop thread's (tests move them)
        # When the last step came, and the loop thread's CPU seconds then.
        self._last = clock() if busy else -float("inf")
        self._last_cpu = cpu_clock()
        self._burst = False  # a burst is under way (see the module docstring)
        self._line = 0  # steps waiting after the last turn let some on
        self._flat = 0  # turns in a row whose line did not get shorter
        self._started: float | None = None  # when the turn's first step began; None: no turn
        self._let_on = 0  # steps let on in the turn
        self._cost = self.budget  # what a step was last seen to cost
        self._waiting: deque[asyncio.Future[None]] = deque()

    @property
    def waiting(self) -> int:
        """Steps waiting for a later turn."""
        return len(self._waiting)

    async def take_turn(self) -> None:
        """Return when this step may run: at once, or in a later turn of a burst."""
        now, cpu = self._clock(), self._cpu_clock()
        idle = (now - self._last) - (cpu - self._last_cpu)
        self._last, self._last_cpu = now, cpu
        if not self._burst:
            if idle < LULL:
                return
            self._burst, self._line, self._flat = True, 0, 0
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
            self._line = self._flat = 0
            return
        fits = max(1, int(self.budget / max(self._cost, 1e-6)))
        self._flat = self._flat + 1 if len(self._waiting) >= self._line else 0
        if self._flat >= FLAT_TURNS:
            fits, self._burst = len(self._waiting), False  # busy for good: all go on
        let_on = 0
        while self._waiting and let_on < fits:
            waiter = self._waiting.popleft()
            if not waiter.done():  # a cancelled one has left already
                waiter.set_result(None)
                let_on += 1
        self._line = len(self._waiting)
        # Those let on run in the loop's next turn: counted to it from now.
        self._begin(self._clock(), let_on)


_SHARING: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, TurnSharing] = (
    weakref.WeakKeyDictionary()
)


async def take_turn() -> None:
    """Wait, if the running loop is in a burst and its turn is spent, for a later turn."""
    loop = asyncio.get_running_loop()
    sharing = _SHARING.get(loop)
    if sharing is None:
        sharing = _SHARING[loop] = TurnSharing(loop)
    await sharing.take_turn()
