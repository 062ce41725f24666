"""Running a coroutine to completion, on uvloop where it is installed.

A batch run spends a large share of its CPU in the event loop itself: each
session makes hundreds of loop iterations for its model calls and graph steps.
uvloop does that work in C (about 15% less CPU per task in
perf/batch_bench.py); without it, plain asyncio serves the same.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def run_async(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)``, on uvloop when available."""
    with asyncio.Runner(loop_factory=_loop_factory()) as runner:
        return runner.run(main)
