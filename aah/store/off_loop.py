"""Awaiting a blocking store call on a thread, from async code.

A server's store and its checkpointer wait for the network on threads of
their own, so that the event loop goes on. A caller cancelled meanwhile
(a task timeout) cannot stop the call already running in its thread; it
waits for it, so that whatever the caller writes next comes after it, as
it would had the call run inline.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import Executor
from contextlib import suppress
from typing import Any, TypeVar

_T = TypeVar("_T")
# How long a cancelled caller waits for its call already running (a write
# takes milliseconds; a server that went away, up to the connection timeout).
CANCELLED_CALL_WAIT_S = 15.0


async def on_thread(
    executor: Executor, call: Callable[..., _T], /, *args: Any, **kwargs: Any
) -> _T:
    """``call(*args, **kwargs)`` run by ``executor``, awaited without holding the loop up.

    Cancelled while the call runs, it waits for the call's end (up to
    ``CANCELLED_CALL_WAIT_S``), then raises ``CancelledError``.
    """
    running = executor.submit(call, *args, **kwargs)
    try:
        return await asyncio.wrap_future(running)
    except asyncio.CancelledError:
        with suppress(Exception):
            running.result(timeout=CANCELLED_CALL_WAIT_S)
        raise
