"""A task's work clock: a timeout that stops while the session waits for a person.

A task timeout bounds what a machine does (model calls, tool calls), never
how long a person takes to answer. The runner gives each session a
``WorkClock`` (through a context variable, so a channel deep inside the
session finds it) and :func:`within_work_time` enforces the limit on the
clock's working seconds only; a channel that waits for a person wraps the
wait in :func:`waiting_for_person`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

T = TypeVar("T")


class WorkClock:
    """Seconds of work since the start, not counting the waits for a person."""

    def __init__(self) -> None:
        """Start counting now."""
        self._started = time.monotonic()
        self._waited = 0.0
        self._waiting_since: float | None = None
        self._depth = 0
        self.changed = asyncio.Event()

    @property
    def waiting(self) -> bool:
        """Whether the session is waiting for a person right now."""
        return self._depth > 0

    def worked(self) -> float:
        """Seconds since the start, less the time spent waiting for a person."""
        now = time.monotonic()
        waiting = now - self._waiting_since if self._waiting_since is not None else 0.0
        return now - self._started - self._waited - waiting

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Stop the clock for the duration of the block (blocks may nest)."""
        if self._depth == 0:
            self._waiting_since = time.monotonic()
            self.changed.set()
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
            if self._depth == 0 and self._waiting_since is not None:
                self._waited += time.monotonic() - self._waiting_since
                self._waiting_since = None
                self.changed.set()


_log = logging.getLogger(__name__)

_CURRENT: ContextVar[WorkClock | None] = ContextVar("aah_work_clock", default=None)


@contextmanager
def waiting_for_person() -> Iterator[None]:
    """Stop the current session's work clock, if it has one, while a person answers."""
    clock = _CURRENT.get()
    if clock is None:
        yield
        return
    with clock.paused():
        yield


async def within_work_time(work: Coroutine[Any, Any, T], limit: float) -> T:
    """Run ``work`` and cancel it once it has worked ``limit`` seconds.

    Time inside :func:`waiting_for_person` does not count.

    Raises:
        TimeoutError: ``work`` worked ``limit`` seconds without ending.
    """
    clock = WorkClock()
    token = _CURRENT.set(clock)
    try:
        task = asyncio.ensure_future(work)  # the task copies the context: it sees the clock
    finally:
        _CURRENT.reset(token)
    try:
        while True:
            clock.changed.clear()
            left = None if clock.waiting else limit - clock.worked()
            if left is not None and left <= 0:
                task.cancel()
                try:
                    await task
                except asyncio.CancelledError:
                    pass
                raise TimeoutError(f"worked {limit:.0f} s")
            changed = asyncio.ensure_future(clock.changed.wait())
            try:
                await asyncio.wait({task, changed}, timeout=left, return_when="FIRST_COMPLETED")
            finally:
                changed.cancel()
            if task.done():
                return task.result()
    except asyncio.CancelledError:
        task.cancel()
        # The work ends before its caller does: what it does as it stops
        # (storing its held events) neither outlives the event loop nor
        # fails unheard. Its failure is the cancelled caller's to drop.
        await asyncio.wait({task})
        if not task.cancelled() and task.exception() is not None:
            _log.debug("work failed as it was cancelled", exc_info=task.exception())
        raise
