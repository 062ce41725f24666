"""Running a coroutine to completion, on uvloop where it is installed.

A batch run spends a large share of its CPU in the event loop itself: each
session makes hundreds of loop iterations for its model calls and graph steps.
uvloop does that work in C (about 15% less CPU per task in
perf/batch_bench.py); without it, plain asyncio serves the same.
"""

from __future__ import annotations

import asyncio
import gc
import os
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager, contextmanager
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


def worker_count(concurrency: int) -> int:
    """Worker threads for ``concurrency`` sessions at once.

    Two a session: a step may run several tool calls at once, and a store
    write or a queue poll may wait beside them. Never fewer than Python's
    own default (threads start only when needed, so extra ones cost nothing).
    """
    return max(2 * concurrency, min(32, (os.cpu_count() or 1) + 4))


@asynccontextmanager
async def worker_threads(concurrency: int) -> AsyncIterator[ThreadPoolExecutor]:
    """Make the running loop's default executor a pool sized for ``concurrency``.

    Blocking work (tool calls over ``requests``, store writes, queue polls)
    goes through ``asyncio.to_thread``, whose default pool has
    ``min(32, cores + 4)`` threads: on a small machine, 64 sessions would
    queue behind 6 threads. At exit an unstarted pool of the default size
    takes its place, so the loop stays usable, and this one is shut down
    without waiting: a call a timed-out session left behind ends on its own.
    """
    loop = asyncio.get_running_loop()
    pool = ThreadPoolExecutor(worker_count(concurrency), thread_name_prefix="aah-worker")
    loop.set_default_executor(pool)
    try:
        yield pool
    finally:
        loop.set_default_executor(ThreadPoolExecutor())
        pool.shutdown(wait=False, cancel_futures=True)
