"""Waiting out another process's hold on the store, by trying again.

Some holds cannot be waited on by the database itself: SQLite's switch to
WAL ignores its busy timeout, and a PostgreSQL process waiting inside an
advisory lock would deadlock an index build (see ``postgres.setting_up``).
Those are tried again, 10 ms apart at first, twice as long each time, up
to 0.2 s.
"""

from __future__ import annotations

import time
from collections.abc import Callable

_FIRST_PAUSE_S = 0.01
_LONGEST_PAUSE_S = 0.2


def tried_until(attempt: Callable[[], bool], seconds: float) -> bool:
    """Call ``attempt`` until it returns True; False if it has not within ``seconds``."""
    deadline = time.monotonic() + seconds
    pause = _FIRST_PAUSE_S
    while not attempt():
        if time.monotonic() > deadline:
            return False
        time.sleep(pause)
        pause = min(pause * 2, _LONGEST_PAUSE_S)
    return True
