"""Running a coroutine to completion, on uvloop where it is installed.

A batch run spends a large share of its CPU in the event loop itself: each
session makes hundreds of loop iterations for its model calls and graph steps.
uvloop does that work in C (about 15% less CPU per task in
perf/batch_bench.py); without it, plain asyncio serves the same.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

T = TypeVar("T")

# Collect the youngest generation after 10,000 net allocations, not 700.
BATCH_GC_THRESHOLDS = (10_000, 20, 50)


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


@contextmanager
def fewer_gc_pauses() -> Iterator[None]:
    """Run the cyclic garbage collector less often while many sessions run.

    Sessions allocate many short-lived objects (messages, events, graph
    steps), so at Python's default thresholds the collector ran about 1,900
    times over the whole benchmark and took over a tenth of its CPU
    (perf/batch_bench.py). Freezing what lives for the whole run (modules,
    the registry, the compiled graph) keeps full collections from scanning
    it, and a higher first threshold makes collections rarer; memory grows
    by at most the cyclic garbage of a few thousand allocations.
    """
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(*BATCH_GC_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()
