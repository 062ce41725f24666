"""What a process's sessions are doing right now, for progress displays.

A batch run stores a session's steps only when it pauses or ends, so a long
progress bar would otherwise show nothing between tasks. ``Activity`` is
updated as steps happen, whether or not they are stored yet: how many
sessions are running, how many model requests are out, when the last step
ended. Reading it costs nothing; it is never stored.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class Activity:
    """Live counts of one runtime's work.

    Attributes:
        running: Sessions started and not ended (waiting ones parked aside).
        last_step: When the last step of any session ended (``clock`` time), if one has.
        requests_out: Model requests sent and not answered yet.
        clock: The time source (monotonic seconds).
        quiet: What watches the run's workers says of those silent a while
            (``worker 2 silent 7 s``); empty when none is.
    """

    running: int = 0
    last_step: float | None = None
    requests_out: Callable[[], int] = lambda: 0
    clock: Callable[[], float] = field(default=time.monotonic, repr=False)
    quiet: Callable[[], str] = field(default=lambda: "", repr=False)

    def session_started(self) -> None:
        """Count one more running session."""
        self.running += 1

    def session_ended(self) -> None:
        """Count one session less."""
        self.running = max(0, self.running - 1)

    def stepped(self) -> None:
        """Note that a step just ended."""
        self.last_step = self.clock()

    def describe(self) -> str:
        """One line such as ``3 running · 2 model calls out · last step 4 s ago``; empty if idle.

        Workers silent a while are named last (``worker 2 silent 7 s``), idle or not.
        """
        quiet = self.quiet()
        if not self.running:
            return quiet
        parts = [f"{self.running} running"]
        out = self.requests_out()
        if out:
            parts.append(f"{out} model call{'s' if out != 1 else ''} out")
        if self.last_step is not None:
            parts.append(f"last step {self.clock() - self.last_step:.0f} s ago")
        return " · ".join([*parts, quiet] if quiet else parts)
