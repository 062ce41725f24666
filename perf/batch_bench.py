"""Batch-run figures: concurrency, loop lag, CPU per task beside plain LangGraph, where it goes.

1. Concurrency: the under-specified setting (599 tasks) against the fake model
   with 300 ms latency at concurrency 64, and a slice at concurrency 1; prints
   tasks/s of each and the speedup (target >= 50x; ideal 64x). Meanwhile a
   probe on the same event loop sleeps 10 ms again and again: how late it
   wakes (p50 / p99 / max) is the event-loop lag the sessions feel (target:
   p99 under 10 ms), with the part the run's own work accounts for (the
   loop thread's CPU meanwhile; on a busy machine the rest is the
   scheduler's) and the garbage collector's pauses.
2. Side by side: the 599 under-specified tasks at zero latency, at
   concurrency 16 and 64, done by aah and by a plain LangGraph agent on the
   same prompts, tool schemas and fake model (perf/plain_langgraph.py),
   interleaved ``--pairs`` times; prints CPU ms per task of each (min /
   median / max) and the ratio (target: aah at most half of plain). Skipped,
   with a line saying why, without langchain-openai.
3. Where aah's CPU goes: the same tasks at concurrency 16, once timed and
   once under cProfile, by layer (graph, model client, store writes, events,
   checks, session driver, event loop; perf/cpu_layers.py), and the garbage
   collector measured apart.
4. Cost: the whole benchmark (2,250 tasks) against the fake model at zero
   latency; prints CPU ms per task (target <= 8 ms). ``--skip-full`` skips it.

The fake model runs in its own process; oracle human, mock HTTP.
Run: .venv/bin/python perf/batch_bench.py [--slice 8] [--pairs 3] [--lag-runs 3] [--skip-full]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import pstats
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from cpu_layers import GcMeter, LoopLag, lag_figures, percentile, print_layers
from plain_langgraph import INSTALL_HINT, measure_plain, plain_available
from pydantic import SecretStr

from aah.benchmark import RunOptions
from aah.benchmark.failtalms import BatchRunner, batch_human_factory
from aah.benchmark.failtalms.dataset import Task, load_tasks
from aah.data.locate import find_data_dir
from aah.llm.config import ModelConfig
from aah.runtime.loop import run_async
from aah.tools.registry.build import build_registry
from aah.tools.registry.read import Registry

AGENT = {
    "rules": [
        {"when": {"has_tools": False}, "reply": "IDK: a detail may be missing."},
        {"when": {"last_tool_name": "ask_human"}, "reply": "Done: here is the answer."},
        {
            "when": {"has_tools": True},
            "reply": {
                "tool_calls": [
                    {"name": "ask_human", "arguments": {"question": "Which one do you mean?"}}
                ]
            },
        },
    ]
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


SERVER_PIDS: list[int] = []


@contextmanager
def fake_model(tmp: Path, latency_ms: int) -> Iterator[ModelConfig]:
    script = tmp / f"agent-{latency_ms}.json"
    script.write_text(json.dumps(AGENT))
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "aah",
            "fake-llm",
            "--script",
            str(script),
            "--port",
            str(port),
            "--latency-ms",
            str(latency_ms),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        server.stdout.readline()
        SERVER_PIDS[:] = [server.pid]
        yield ModelConfig(
            base_url=f"http://127.0.0.1:{port}/v1",
            model="fake-model",
            api_key=SecretStr("x"),
            retries=0,
        )
    finally:
        server.terminate()
        server.wait()


PROBE_SLEEP = 0.010


async def with_lag_probe(main: Coroutine[Any, Any, Any], lags: list[float]) -> Any:
    """Await ``main`` while a probe on the same loop notes how late each 10 ms sleep wakes."""

    async def probe() -> None:
        while True:
            start = time.perf_counter()
            await asyncio.sleep(PROBE_SLEEP)
            lags.append(time.perf_counter() - start - PROBE_SLEEP)

    prober = asyncio.create_task(probe())
    try:
        return await main
    finally:
        prober.cancel()


def lag_line(lag: LoopLag, collector: GcMeter) -> str:
    """The probe's overruns (p50 / p99 / max, ms), its own-work part, the collector's pauses."""
    pauses = sorted(collector.pauses)
    longest = pauses[-1] * 1000 if pauses else 0.0
    return (
        f"event-loop lag of a {lag.sleep * 1000:.0f} ms sleep at concurrency 64, one process "
        f"({len(lag.wall)} samples), p50 / p99 / max: {lag_figures(lag.wall)} ms (target p99 < "
        f"10 ms); the part the loop's own work accounts for {lag_figures(lag.own)} ms; "
        f"garbage collector {len(pauses)} pauses, the longest {longest:.1f} ms; load average "
        "{:.1f}".format(os.getloadavg()[0])
    )


def run(
    tasks: list[Task],
    config: ModelConfig,
    registry: Registry,
    db: Path,
    concurrency: int,
    name: str,
    lags: list[float] | LoopLag | None = None,
) -> tuple[float, float]:
    """Wall seconds and CPU seconds of one batch run; with ``lags``, the loop's lag too."""
    options = RunOptions(run=name, concurrency=concurrency)
    runner = BatchRunner(options, registry, config, batch_human_factory("oracle", registry))
    cpu0, wall0 = time.process_time(), time.perf_counter()
    main = runner.run(tasks, db)
    if isinstance(lags, LoopLag):
        main = lags.around(main)
    elif lags is not None:
        main = with_lag_probe(main, lags)
    summary = run_async(main)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    assert summary.errors == 0, summary.error_messages
    return wall, cpu


def spread(values: list[float], digits: int = 1) -> str:
    """``min / median / max``."""
    ordered = sorted(values)
    return " / ".join(
        f"{v:.{digits}f}" for v in (ordered[0], statistics.median(ordered), ordered[-1])
    )


SIDE_BY_SIDE_CONCURRENCY = (16, 64)


def side_by_side(tasks: list[Task], registry: Registry, tmp: Path, pairs: int) -> list[float]:
    """CPU per task of aah and of a plain LangGraph agent on the same tasks, interleaved.

    Returns aah's CPU ms per task of each run at concurrency 16.
    """
    ours: dict[int, list[float]] = {c: [] for c in SIDE_BY_SIDE_CONCURRENCY}
    plain: dict[int, list[float]] = {c: [] for c in SIDE_BY_SIDE_CONCURRENCY}
    with_plain = plain_available()
    with fake_model(tmp, 0) as config:
        run(tasks[:20], config, registry, tmp / "side-warm.db", 8, "warm")  # caches, connections
        if with_plain:
            measure_plain(tasks[:5], registry, config, 1)  # imports and connections, not counted
        for pair in range(pairs):
            for concurrency in SIDE_BY_SIDE_CONCURRENCY:
                name = f"side-{pair}-{concurrency}"
                _, cpu = run(tasks, config, registry, tmp / f"{name}.db", concurrency, name)
                ours[concurrency].append(cpu / len(tasks) * 1000)
                if with_plain:
                    _, cpu, _ = measure_plain(tasks, registry, config, concurrency)
                    plain[concurrency].append(cpu / len(tasks) * 1000)
    print(
        f"side by side, {len(tasks)} tasks at zero latency, {pairs} interleaved pairs "
        "(min / median / max):"
    )
    if not with_plain:
        print(f"   plain LangGraph skipped: {INSTALL_HINT}")
    for concurrency in SIDE_BY_SIDE_CONCURRENCY:
        line = f"   concurrency {concurrency:2d}: aah {spread(ours[concurrency])} ms CPU per task"
        if with_plain:
            ratios = [o / p for o, p in zip(ours[concurrency], plain[concurrency], strict=True)]
            line += (
                f", plain LangGraph {spread(plain[concurrency])} ms; aah / plain "
                f"{spread(ratios, 2)} (target <= 0.5)"
            )
        print(line)
    return ours[16]


def layers(tasks: list[Task], registry: Registry, tmp: Path, cpu_ms: float) -> None:
    """aah's CPU per task by layer: a run under cProfile, scaled to ``cpu_ms``; the GC apart."""
    with fake_model(tmp, 0) as config:
        run(tasks[:20], config, registry, tmp / "layers-warm.db", 8, "warm")
        with GcMeter() as collector:
            run(tasks, config, registry, tmp / "layers-gc.db", 16, "layers-gc")
        profiler = cProfile.Profile()
        profiler.enable()
        run(tasks, config, registry, tmp / "layers.db", 16, "layers")
        profiler.disable()
    print_layers(pstats.Stats(profiler), collector, len(tasks), cpu_ms)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--slice", type=int, default=8, help="Tasks run at concurrency 1.")
    parser.add_argument("--pairs", type=int, default=3, help="aah / plain LangGraph pairs.")
    parser.add_argument("--skip-full", action="store_true", help="Skip the 2,250-task run.")
    parser.add_argument(
        "--lag-runs", type=int, default=3, help="Runs at concurrency 64 against the 300 ms model."
    )
    args = parser.parse_args()
    data = find_data_dir(None, need_benchmark=True)
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        build_registry(data, tmp / "registry.db")
        registry = Registry(tmp / "registry.db")
        under = load_tasks(data, ["underspecified"])
        with fake_model(tmp, 300) as config:
            wall1, _ = run(under[: args.slice], config, registry, tmp / "c1.db", 1, "c1")
            lag_lines, p99s = [], []
            for index in range(args.lag_runs):
                server0 = process_cpu_seconds(SERVER_PIDS[0])
                lag = LoopLag(PROBE_SLEEP)
                with GcMeter() as collector:
                    wall64, cpu64 = run(
                        under, config, registry, tmp / f"c64-{index}.db", 64, f"c64-{index}", lag
                    )
                server_cpu = process_cpu_seconds(SERVER_PIDS[0]) - server0
                lag_lines.append(lag_line(lag, collector))
                p99s.append(percentile(lag.wall, 0.99) * 1000)
        rate1, rate64 = args.slice / wall1, len(under) / wall64
        print(f"concurrency 1: {args.slice} tasks in {wall1:.1f} s = {rate1:.2f} tasks/s")
        print(
            f"concurrency 64: {len(under)} tasks in {wall64:.1f} s = {rate64:.2f} tasks/s "
            f"({cpu64 / len(under) * 1000:.1f} ms CPU per task in aah, "
            f"{server_cpu / len(under) * 1000:.1f} ms in the fake model server, "
            f"on {os.cpu_count()} cores)"
        )
        print(f"speedup: {rate64 / rate1:.1f}x (target >= 50x, ideal 64x)")
        for line in lag_lines:
            print(line)
        print(
            f"event-loop lag p99 over {len(p99s)} runs, min / median / max: {spread(p99s)} ms "
            "(target < 10 ms)"
        )
        ours16 = side_by_side(under, registry, tmp, args.pairs)
        layers(under, registry, tmp, statistics.median(ours16))
        if args.skip_full:
            return
        everything = load_tasks(data)
        with fake_model(tmp, 0) as config:
            wall, cpu = run(everything, config, registry, tmp / "all.db", 16, "all")
        print(
            f"whole benchmark: {len(everything)} tasks in {wall:.1f} s, "
            f"{cpu / len(everything) * 1000:.1f} ms CPU per task (target <= 8 ms)"
        )


if __name__ == "__main__":
    main()
