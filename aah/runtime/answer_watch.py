"""One watcher per runner process that wakes parked sessions when they can go on.

A batch session whose question waits for a person is parked (``Parked``): it
keeps only its checkpoint and its pending request in the store, and the
runner keeps one small entry here. The watcher looks at the store every
``poll_seconds`` (one pragma while nothing changes; on PostgreSQL sooner, as
soon as the store NOTIFYs, see ``pause``) and calls an entry's
``wake`` once its request is answered, declined or expired, its session
ended elsewhere, or its deadline passed (the resumed session then finds the
deadline and lets the fallback answer). Ten thousand waiting sessions cost
one timer, not ten thousand pollers.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from aah.store import RequestWatch

Wake = Callable[[], None]


class AnswerWatcher:
    """Parked sessions' requests, and what to call when each one can go on.

    Use from the event loop's thread only.

    Args:
        db: The session database the requests are in.
        poll_seconds: How often :meth:`check` should be called (the runner's loop).
    """

    def __init__(self, db: Path, poll_seconds: float = 0.5) -> None:
        self.poll_seconds = poll_seconds
        self._watch = RequestWatch(db)
        self._wake: dict[str, Wake] = {}
        self._deadlines: list[tuple[float, str]] = []

    def __len__(self) -> int:
        """How many parked sessions wait."""
        return len(self._wake)

    def watch(self, request_id: str, deadline: datetime | None, wake: Wake) -> None:
        """Call ``wake`` once, when ``request_id`` no longer waits or ``deadline`` passes."""
        self._wake[request_id] = wake
        self._watch.add([request_id])
        if deadline is not None:
            heapq.heappush(self._deadlines, (deadline.timestamp(), request_id))

    async def pause(self) -> None:
        """Wait ``poll_seconds``, or less: until the store may have news (PostgreSQL's NOTIFY)."""
        fd = self._watch.fileno()
        if fd is None:
            await asyncio.sleep(self.poll_seconds)
            return
        loop = asyncio.get_running_loop()
        news = asyncio.Event()
        loop.add_reader(fd, news.set)
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(news.wait(), self.poll_seconds)
        finally:
            loop.remove_reader(fd)

    def check(self, now: float | None = None) -> int:
        """Wake every parked session that can go on now; return how many were woken."""
        ready = set(self._watch.ready())
        now = time.time() if now is None else now
        while self._deadlines and self._deadlines[0][0] <= now:
            ready.add(heapq.heappop(self._deadlines)[1])
        ready &= self._wake.keys()
        if not ready:
            return 0
        self._watch.discard(ready)
        for request_id in sorted(ready):
            self._wake.pop(request_id)()
        return len(ready)

    def close(self) -> None:
        """Forget every parked session and close the watch's connection."""
        self._wake.clear()
        self._deadlines.clear()
        self._watch.close()
