"""Batch-run figures: concurrency efficiency and CPU per task, side by side in one run.

1. Concurrency: the under-specified setting (599 tasks) against the fake model
   with 300 ms latency at concurrency 64, and a slice at concurrency 1; prints
   tasks/s of each and the speedup (target >= 50x; ideal 64x). Meanwhile a
   probe on the same event loop sleeps 10 ms again and again: how late it
   wakes (mean, p99, max) is the event-loop lag the sessions feel (target:
   p99 under 10 ms).
2. Side by side: the 599 under-specified tasks at zero latency, concurrency
   16, done by aah and by a plain LangGraph agent on the same prompts, tool
   schemas and fake model (perf/plain_langgraph.py), in turn ``--pairs``
   times; prints CPU ms per task of each and the ratio (target: aah at most
   half of plain). Skipped, with a line saying why, without langchain-openai.
3. Cost: the whole benchmark (2,250 tasks) against the fake model at zero
   latency; prints CPU ms per task (target <= 8 ms) and, with --profile,
   where it goes.

The fake model runs in its own process; oracle human, mock HTTP.
Run: .venv/bin/python perf/batch_bench.py [--slice 8] [--pairs 3] [--skip-full] [--profile]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import pstats
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

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


def lag_line(lags: list[float]) -> str:
    """Mean, p99 and max of the probe's overruns, in ms."""
    ordered = sorted(lags)
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
    mean = sum(ordered) / len(ordered)
    return (
        f"event-loop lag of a {PROBE_SLEEP * 1000:.0f} ms sleep ({len(ordered)} samples): "
        f"mean {mean * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms, max {ordered[-1] * 1000:.1f} ms "
        "(target p99 < 10 ms)"
    )


def run(
    tasks: list[Task],
    config: ModelConfig,
    registry: Registry,
    db: Path,
    concurrency: int,
    name: str,
    lags: list[float] | None = None,
) -> tuple[float, float]:
    """Wall seconds and CPU seconds of one batch run; with ``lags``, the loop's lag too."""
    options = RunOptions(run=name, concurrency=concurrency)
    runner = BatchRunner(options, registry, config, batch_human_factory("oracle", registry))
    cpu0, wall0 = time.process_time(), time.perf_counter()
    main = runner.run(tasks, db)
    summary = run_async(main if lags is None else with_lag_probe(main, lags))
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    assert summary.errors == 0, summary.error_messages
    return wall, cpu


# Where CPU goes, by the code that spends it (first match wins).
CATEGORIES = (
    (
        "model client",
        ("aah/llm/", "/openai/", "/aiohttp/", "/yarl/", "/multidict/", "/httpx", "/anyio/"),
    ),
    ("checkpointer", ("langgraph/checkpoint", "aah/runtime/checkpoints", "ormsgpack")),
    ("graph", ("langgraph/", "langchain_core/", "aah/runtime/graph", "aah/runtime/awareness")),
    ("store", ("aah/store", "aah/events", "sqlite_utils")),
    ("tools and checks", ("aah/tools/",)),
    ("humans", ("aah/benchmark/humans", "aah/benchmark/fact_fit", "aah/runtime/humans")),
    ("session driver and runner", ("aah/runtime/", "aah/benchmark/runner")),
    ("event loop", ("asyncio/", "uvloop", "selectors", "socket")),
    ("validation (pydantic)", ("pydantic",)),
)


def category(filename: str) -> str:
    """The category of a profiled function's file ("other" if none fits)."""
    return next((name for name, keys in CATEGORIES if any(k in filename for k in keys)), "other")


def print_breakdown(stats: pstats.Stats, tasks: int) -> None:
    """CPU per task by category; C functions count for the category of their callers."""
    totals: dict[str, float] = {}
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    for (filename, _, _), (_, _, own, _, callers) in raw.items():
        if filename != "~" or not callers:
            totals[category(filename)] = totals.get(category(filename), 0.0) + own
            continue
        spent = sum(entry[2] for entry in callers.values()) or 1.0
        for (caller_file, _, _), entry in callers.items():
            share = own * entry[2] / spent
            totals[category(caller_file)] = totals.get(category(caller_file), 0.0) + share
    print("where the CPU goes (main thread, profiled, so slower than above):")
    for name, seconds in sorted(totals.items(), key=lambda item: -item[1]):
        print(f"  {name:28s} {seconds / tasks * 1000:6.2f} ms per task")


def side_by_side(tasks: list[Task], registry: Registry, tmp: Path, pairs: int) -> None:
    """CPU per task of aah and of a plain LangGraph agent on the same tasks, in turn."""
    if not plain_available():
        print(f"side by side skipped: {INSTALL_HINT}")
        return
    ours: list[float] = []
    plain: list[float] = []
    with fake_model(tmp, 0) as config:
        measure_plain(tasks[:5], registry, config, 1)  # imports and connections, not counted
        for pair in range(pairs):
            _, cpu = run(tasks, config, registry, tmp / f"side-{pair}.db", 16, f"side-{pair}")
            ours.append(cpu / len(tasks) * 1000)
            _, cpu, _ = measure_plain(tasks, registry, config, 16)
            plain.append(cpu / len(tasks) * 1000)
    ratios = sorted(o / p for o, p in zip(ours, plain, strict=True))

    def spread(values: list[float]) -> str:
        ordered = sorted(values)
        return f"{ordered[0]:.1f} / {ordered[len(ordered) // 2]:.1f} / {ordered[-1]:.1f}"

    print(
        f"side by side, {len(tasks)} tasks at zero latency, concurrency 16, {pairs} pairs "
        f"(min / median / max): aah {spread(ours)} ms CPU per task, plain LangGraph "
        f"{spread(plain)} ms; aah / plain {ratios[0]:.2f} / {ratios[len(ratios) // 2]:.2f} / "
        f"{ratios[-1]:.2f} (target <= 0.5)"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--slice", type=int, default=8, help="Tasks run at concurrency 1.")
    parser.add_argument("--pairs", type=int, default=1, help="aah / plain LangGraph pairs.")
    parser.add_argument("--skip-full", action="store_true", help="Skip the 2,250-task run.")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    data = find_data_dir(None, need_benchmark=True)
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        build_registry(data, tmp / "registry.db")
        registry = Registry(tmp / "registry.db")
        under = load_tasks(data, ["underspecified"])
        with fake_model(tmp, 300) as config:
            wall1, _ = run(under[: args.slice], config, registry, tmp / "c1.db", 1, "c1")
            server0 = process_cpu_seconds(SERVER_PIDS[0])
            lags: list[float] = []
            wall64, cpu64 = run(under, config, registry, tmp / "c64.db", 64, "c64", lags)
            server_cpu = process_cpu_seconds(SERVER_PIDS[0]) - server0
        rate1, rate64 = args.slice / wall1, len(under) / wall64
        print(f"concurrency 1: {args.slice} tasks in {wall1:.1f} s = {rate1:.2f} tasks/s")
        print(
            f"concurrency 64: {len(under)} tasks in {wall64:.1f} s = {rate64:.2f} tasks/s "
            f"({cpu64 / len(under) * 1000:.1f} ms CPU per task in aah, "
            f"{server_cpu / len(under) * 1000:.1f} ms in the fake model server, "
            f"on {os.cpu_count()} cores)"
        )
        print(f"speedup: {rate64 / rate1:.1f}x (target >= 50x, ideal 64x)")
        print(lag_line(lags))
        side_by_side(under, registry, tmp, args.pairs)
        if args.skip_full:
            return
        everything = load_tasks(data)
        with fake_model(tmp, 0) as config:
            profiler = cProfile.Profile() if args.profile else None
            if profiler:
                profiler.enable()
            wall, cpu = run(everything, config, registry, tmp / "all.db", 16, "all")
            if profiler:
                profiler.disable()
        print(
            f"whole benchmark: {len(everything)} tasks in {wall:.1f} s, "
            f"{cpu / len(everything) * 1000:.1f} ms CPU per task (target <= 8 ms)"
        )
        if profiler:
            print_breakdown(pstats.Stats(profiler), len(everything))


if __name__ == "__main__":
    main()
