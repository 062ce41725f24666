"""Where a batch run's CPU goes, by layer, and how late its event loop wakes.

``LayerProfile`` reads a cProfile of a run and charges each function's own
time to the layer of its code (graph, model client, store writes, events,
checks, session driver, event loop); time spent in the standard library or
in C functions goes to the layer of whoever called it, up the call graph.
The cyclic garbage collector runs inside whatever allocates; ``GcMeter``
times it apart (its CPU, and each collection as a pause of the loop).

``LoopLag`` is the probe ``perf/batch_bench.py`` and ``perf/workers_bench.py``
run beside the sessions: a 10 ms sleep, again and again, and how late it
wakes. On a machine shared with other processes a late wake may be the
scheduler's doing, not the run's: each overrun is also read with the CPU
the loop's own thread spent meanwhile, and the smaller of the two is the
part of the lateness the run's own work can account for.
"""

from __future__ import annotations

import asyncio
import gc
import pstats
import time
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

# (layer, the path fragments of its code); the first layer that matches wins.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "store writes (events, checkpoints, SQLite)",
        (
            "aah/store/",
            "sqlite_utils/",
            "aah/runtime/checkpoint",
            "langgraph/checkpoint/",
            "ormsgpack",
            "sqlite3",
        ),
    ),
    (
        "model client (HTTP, JSON, messages)",
        (
            "aah/llm/",
            "aah/retries",
            "aah/runtime/awareness",
            "aiohttp/",
            "yarl/",
            "multidict/",
            "tenacity/",
        ),
    ),
    (
        "graph (LangGraph, langchain-core)",
        (
            "langgraph/",
            "langchain_core/",
            "langsmith/",
            "aah/runtime/graph",
            "aah/runtime/state",
            "aah/runtime/approval_gate",
        ),
    ),
    ("events (typed, scrubbed, JSON)", ("aah/events", "aah/secrets", "aah/storable")),
    ("checks and bounds", ("aah/tools/", "aah/bounds", "aah/runtime/budget")),
    (
        "session driver, runner, oracle human",
        ("aah/runtime/", "aah/benchmark/", "aah/desk/", "aah/event_text", "aah/prompts"),
    ),
    (
        "event loop",
        ("asyncio/", "uvloop", "selectors", "socket.py", "threading.py", "aah/loop_turns"),
    ),
)
OTHER = "other (no layer among its callers)"
# How far up the callers an unlayered function's time is traced.
_MAX_DEPTH = 12


def layer_of(filename: str) -> str | None:
    """The layer whose code ``filename`` is, or None (the standard library, a C function)."""
    return next((name for name, keys in LAYERS if any(k in filename for k in keys)), None)


def layer_seconds(stats: pstats.Stats) -> dict[str, float]:
    """Own CPU seconds by layer; an unlayered function's go to its callers' layers."""
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    memo: dict[Any, dict[str, float]] = {}
    tracing: set[Any] = set()

    def shares(func: Any, depth: int) -> dict[str, float]:
        """How ``func``'s time splits between layers (fractions that add up to 1)."""
        layer = layer_of(func[0])
        if layer is not None:
            return {layer: 1.0}
        callers = raw[func][4] if func in raw else {}
        if not callers or depth >= _MAX_DEPTH or func in tracing:
            return {OTHER: 1.0}
        if func in memo:
            return memo[func]
        tracing.add(func)
        weight = sum(entry[3] for entry in callers.values()) or 1.0
        split: dict[str, float] = {}
        for caller, entry in callers.items():
            for name, part in shares(caller, depth + 1).items():
                split[name] = split.get(name, 0.0) + part * entry[3] / weight
        tracing.discard(func)
        memo[func] = split
        return split

    totals: dict[str, float] = {}
    for func, (_, _, own, _, _) in raw.items():
        for name, part in shares(func, 0).items():
            totals[name] = totals.get(name, 0.0) + own * part
    return totals


class GcMeter:
    """CPU of the cyclic garbage collector while it is installed: each collection's length."""

    def __init__(self) -> None:
        self.pauses: list[float] = []
        self._start = 0.0

    def __enter__(self) -> GcMeter:
        gc.callbacks.append(self._note)
        return self

    def __exit__(self, *_: object) -> None:
        gc.callbacks.remove(self._note)

    def _note(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._start = time.thread_time()
        else:
            self.pauses.append(time.thread_time() - self._start)


def print_layers(
    stats: pstats.Stats, gc_meter: GcMeter, tasks: int, cpu_per_task_ms: float
) -> None:
    """The per-layer profile: each layer's share of the profiled CPU, and its ms per task.

    The shares are cProfile's (which slows Python code more than C code);
    the ms are those shares of ``cpu_per_task_ms``, the unprofiled CPU per
    task, less the collector's, which is measured apart.
    """
    totals = layer_seconds(stats)
    profiled = sum(totals.values()) or 1.0
    collector_ms = sum(gc_meter.pauses) / tasks * 1000
    rest = max(0.0, cpu_per_task_ms - collector_ms)
    print(
        f"   where aah's {cpu_per_task_ms:.1f} ms CPU per task goes (main thread, cProfile "
        "shares of the unprofiled time):"
    )
    for name, seconds in sorted(totals.items(), key=lambda item: -item[1]):
        share = seconds / profiled
        print(f"     {name:42s} {share * rest:5.2f} ms  ({share:4.0%})")
    pauses = sorted(gc_meter.pauses)
    longest = pauses[-1] * 1000 if pauses else 0.0
    print(
        f"     {'garbage collector (measured apart)':42s} {collector_ms:5.2f} ms  "
        f"({len(pauses)} collections, the longest {longest:.1f} ms)"
    )


@dataclass
class LoopLag:
    """The overruns of a 10 ms sleep on a loop, and the part its own work accounts for."""

    sleep: float = 0.010
    wall: list[float] = field(default_factory=list)
    own: list[float] = field(default_factory=list)

    async def probe(self) -> None:
        """Sleep ``sleep`` again and again, noting each overrun, until cancelled."""
        while True:
            start, cpu = time.perf_counter(), time.thread_time()
            await asyncio.sleep(self.sleep)
            late = max(0.0, time.perf_counter() - start - self.sleep)
            self.wall.append(late)
            self.own.append(min(late, time.thread_time() - cpu))

    async def around(self, main: Coroutine[Any, Any, Any]) -> Any:
        """Await ``main`` with the probe running beside it on the same loop."""
        prober = asyncio.create_task(self.probe())
        try:
            return await main
        finally:
            prober.cancel()


def percentile(values: list[float], share: float) -> float:
    """The ``share`` quantile of ``values`` (nearest rank); nan for none."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def lag_figures(values: list[float]) -> str:
    """``p50 / p99 / max`` of overruns, in ms."""
    return " / ".join(f"{percentile(values, q) * 1000:.1f}" for q in (0.5, 0.99, 1.0))
