"""Worker processes (``--workers``): throughput, event-loop lag and start-up, side by side.

1. Zero latency: the under-specified setting (599 tasks) against the fake
   model at zero latency, concurrency 64, one process and two workers in
   turn, ``--repeat`` times each; tasks/s (min / median / max) and the
   ratio (target >= 1.7x on a 2-core machine), with the CPU per task of aah
   (parent and workers) and of the fake model server, which runs in its own
   process on the same cores.
2. 300 ms model, 640 tasks (320 under-specified tasks, two epochs): one
   process at concurrency 64, two workers at 32 each (64 in all), two
   workers at 64 each (128 in all), in turn; tasks/s against the ideal
   (the concurrency over one task's time alone, measured at concurrency 1),
   and the event-loop lag of each process that runs sessions: how late a
   10 ms sleep wakes on its loop, p50 / p99 / max of each loop, and the part
   the loop's own work accounts for (perf/cpu_layers.py; target p99 under
   10 ms).
3. Start-up: ``aah bench run --limit 1 --no-probe`` as a whole process, with
   ``--workers 1`` and ``--workers 2``: the CPU of the command and its
   workers when the first chat request reaches the fake model (before the
   first task could talk to a model), and of the whole command.

Oracle human, mock HTTP. Run: .venv/bin/python perf/workers_bench.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from batch_bench import AGENT, SERVER_PIDS, fake_model, process_cpu_seconds
from cpu_layers import LoopLag, lag_figures, percentile

from aah.benchmark import RunOptions, epoch_tasks, run_manifest
from aah.benchmark.failtalms import BatchRunner, batch_human_factory
from aah.benchmark.failtalms.dataset import Task, load_tasks
from aah.benchmark.workers import run_in_workers
from aah.data.locate import find_data_dir
from aah.llm.config import ModelConfig
from aah.runtime.loop import run_async
from aah.testing import FakeLLMServer
from aah.tools.registry.build import build_registry
from aah.tools.registry.read import Registry


def cpu_now() -> float:
    """CPU seconds of this process and of its children that ended (the workers)."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def spread(values: list[float], digits: int = 1) -> str:
    """``min / median / max``."""
    ordered = sorted(values)
    return " / ".join(
        f"{v:.{digits}f}" for v in (ordered[0], statistics.median(ordered), ordered[-1])
    )


def lag_probe(folder: Path) -> Callable[[], Coroutine[Any, Any, None]]:
    """A probe for each worker's loop: its 10 ms sleeps' overruns, written to ``folder``."""

    async def probe() -> None:
        lag = LoopLag()
        try:
            await lag.probe()
        finally:
            path = folder / f"lag-{os.getpid()}.json"
            path.write_text(json.dumps({"wall": lag.wall, "own": lag.own}))

    return probe


class Bench:
    """The tasks, registry and a scratch folder; one method per kind of run."""

    def __init__(self, tmp: Path, data: Path) -> None:
        self.tmp, self.count = tmp, 0
        build_registry(data, tmp / "registry.db")
        self.registry = Registry(tmp / "registry.db")
        self.under = load_tasks(data, ["underspecified"])

    def run(
        self,
        tasks: list[Task],
        config: ModelConfig,
        concurrency: int,
        workers: int,
        epochs: int = 1,
        lags: bool = False,
        name: str | None = None,
    ) -> tuple[float, float, list[LoopLag]]:
        """Wall seconds, aah CPU seconds, and each session loop's lags (when asked)."""
        self.count += 1
        name = name or f"r{self.count}"
        db = self.tmp / f"{name}.db"
        options = RunOptions(run=name, concurrency=concurrency, workers=workers, epochs=epochs)
        runner = BatchRunner(
            options, self.registry, config, batch_human_factory("oracle", self.registry)
        )
        folder = self.tmp / f"{name}-lags"
        folder.mkdir()
        loop_lag = LoopLag()
        if workers == 1:
            main: Coroutine[Any, Any, Any] = runner.run(tasks, db)
            if lags:
                main = loop_lag.around(main)
        else:
            settings = sorted({task.setting for task in tasks})
            main = run_in_workers(
                epoch_tasks(tasks, epochs),
                db=db,
                model=config,
                options=options,
                manifest=run_manifest(options, config, self.registry.registry_hash, settings),
                request_for=runner.request_for,
                probe=lag_probe(folder) if lags else None,
            )
        cpu0, wall0 = cpu_now(), time.perf_counter()
        summary = run_async(main)
        wall, cpu = time.perf_counter() - wall0, cpu_now() - cpu0
        assert summary.errors == 0, summary.error_messages
        per_loop = [loop_lag] if workers == 1 else [
            LoopLag(**json.loads(path.read_text())) for path in sorted(folder.glob("lag-*.json"))
        ]  # fmt: skip
        return wall, cpu, per_loop if lags else []


def two_runs_at_once(bench: Bench, tasks: list[Task], config: ModelConfig) -> tuple[float, float]:
    """Wall and CPU seconds of two separate one-process runs (half the tasks each) at once.

    No workers, no shared store: what two processes on this machine reach at
    best, the ceiling the workers are measured against.
    """
    context = multiprocessing.get_context("fork")
    bench.count += 1
    name = f"apart{bench.count}"
    runs = [
        context.Process(
            target=bench.run, args=(tasks[half::2], config, 32, 1, 1, False, f"{name}-{half}")
        )
        for half in (0, 1)
    ]
    cpu0, wall0 = cpu_now(), time.perf_counter()
    for run in runs:
        run.start()
    for run in runs:
        run.join()
        assert run.exitcode == 0
    return time.perf_counter() - wall0, cpu_now() - cpu0


SETUPS_0 = ("one process", "--workers 2", "2 runs apart")


def zero_latency(bench: Bench, repeat: int) -> None:
    tasks = bench.under
    rates: dict[str, list[float]] = {label: [] for label in SETUPS_0}
    cpus: dict[str, list[float]] = {label: [] for label in SETUPS_0}
    servers: dict[str, list[float]] = {label: [] for label in SETUPS_0}
    with fake_model(bench.tmp, 0) as config:
        bench.run(tasks[:20], config, 8, 1)  # connections and caches warm, not counted
        for _ in range(repeat):
            for label in SETUPS_0:
                server0 = process_cpu_seconds(SERVER_PIDS[0])
                if label == "2 runs apart":
                    wall, cpu = two_runs_at_once(bench, tasks, config)
                else:
                    wall, cpu, _ = bench.run(tasks, config, 64, 1 if label == "one process" else 2)
                server = process_cpu_seconds(SERVER_PIDS[0]) - server0
                rates[label].append(len(tasks) / wall)
                cpus[label].append(cpu / len(tasks) * 1000)
                servers[label].append(server / len(tasks) * 1000)
    print(
        f"1. zero latency, {len(tasks)} tasks, concurrency 64 in all, {repeat} runs each, "
        f"interleaved (min / median / max), on {os.cpu_count()} cores:"
    )
    for label in SETUPS_0:
        print(
            f"   {label:13} {spread(rates[label])} tasks/s; aah {spread(cpus[label])} ms CPU "
            f"a task; fake model server {spread(servers[label])} ms CPU a task"
        )
    one = rates["one process"]
    for label in SETUPS_0[1:]:
        ratios = [other / base for base, other in zip(one, rates[label], strict=True)]
        print(f"   {label} / one process: {spread(ratios, 2)}x (target for --workers 2: >= 1.7x)")


def latency_300(bench: Bench, repeat: int) -> None:
    tasks = bench.under[:320]
    setups = (("one process at 64", 64, 1), ("2 workers x 32", 64, 2), ("2 workers x 64", 128, 2))
    rates: dict[str, list[float]] = {label: [] for label, _, _ in setups}
    loops: dict[str, list[LoopLag]] = {label: [] for label, _, _ in setups}
    with fake_model(bench.tmp, 300) as config:
        wall1, _, _ = bench.run(tasks[:8], config, 1, 1)
        alone = wall1 / 8  # one task's time with nothing else running
        for _ in range(repeat):
            for label, concurrency, workers in setups:
                wall, _, per_loop = bench.run(tasks, config, concurrency, workers, 2, lags=True)
                rates[label].append(2 * len(tasks) / wall)
                loops[label] += per_loop
    print(
        f"2. 300 ms model, {2 * len(tasks)} tasks ({len(tasks)} x 2 epochs), one task alone "
        f"{alone:.2f} s, {repeat} runs each, interleaved (min / median / max); load average "
        "{:.1f}:".format(os.getloadavg()[0])
    )
    for label, concurrency, _ in setups:
        ideal = concurrency / alone
        shares = [rate / ideal for rate in rates[label]]
        p99s = [percentile(lag.wall, 0.99) * 1000 for lag in loops[label]]
        own = [percentile(lag.own, 0.99) * 1000 for lag in loops[label]]
        print(
            f"   {label:18} {spread(rates[label])} tasks/s = {spread(shares, 2)} of the ideal "
            f"{ideal:.1f}; event-loop lag p99 per session loop {spread(p99s)} ms, its own "
            f"work's part {spread(own)} ms (target < 10 ms)"
        )
        for index, lag in enumerate(loops[label]):
            print(
                f"      loop {index + 1}: p50 / p99 / max {lag_figures(lag.wall)} ms; own work's "
                f"part {lag_figures(lag.own)} ms"
            )


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds of a running process and of its children now running (Linux ``/proc``)."""
    total = process_cpu_seconds(pid)
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return total + sum(process_cpu_seconds(int(child)) for child in children)


class FirstRequest(FakeLLMServer):
    """The fake model, noting its client's CPU (workers included) at the first chat request."""

    pid: int | None = None
    first: float | None = None

    def _answer(self, body: dict[str, Any]) -> Any:
        if self.pid is not None and self.first is None:
            self.first = tree_cpu_seconds(self.pid)
        return super()._answer(body)


def startup(bench: Bench, data: Path, repeat: int) -> None:
    llm = FirstRequest(AGENT)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AAH_", "OPENAI_"))}
    firsts: dict[str, list[float]] = {"1": [], "2": []}
    wholes: dict[str, list[float]] = {"1": [], "2": []}
    with llm:
        env.update(
            {
                "AAH_REGISTRY": str(bench.tmp / "registry.db"),
                "AAH_DATA_DIR": str(data),
                "AAH_BASE_URL": llm.base_url,
                "AAH_MODEL": "fake-model",
                "AAH_API_KEY": "x",
                "NO_COLOR": "1",
            }
        )
        for index in range(repeat + 1):
            for workers in ("1", "2"):
                command = [
                    sys.executable, "-m", "aah", "bench", "run", "--setting", "underspecified",
                    "--limit", "1", "--no-probe", "--db", str(bench.tmp / "startup.db"),
                    "--run", f"s{index}-{workers}", "--workers", workers, "--concurrency", "2",
                ]  # fmt: skip
                process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL)
                llm.pid, llm.first = process.pid, None
                _, status, usage = os.wait4(process.pid, 0)
                assert os.waitstatus_to_exitcode(status) == 0, command
                if index and llm.first is not None:  # the first round warms the disk cache
                    firsts[workers].append(llm.first)
                    wholes[workers].append(usage.ru_utime + usage.ru_stime)
    print(
        f"3. start-up of `aah bench run --limit 1 --no-probe`, CPU seconds, {repeat} runs each "
        "(min / median / max; target before the first task < 1 s):"
    )
    for workers in ("1", "2"):
        print(
            f"   --workers {workers}: before the first task {spread(firsts[workers], 3)}; "
            f"whole command {spread(wholes[workers], 3)}"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3, help="Runs of each setup.")
    parser.add_argument("--skip", default="", help="Parts to skip, e.g. 2,3.")
    args = parser.parse_args()
    skip = set(args.skip.split(","))
    data = find_data_dir(None, need_benchmark=True)
    print("load average before: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    with tempfile.TemporaryDirectory() as name:
        bench = Bench(Path(name), data)
        if "1" not in skip:
            zero_latency(bench, args.repeat)
        if "2" not in skip:
            latency_300(bench, args.repeat)
        if "3" not in skip:
            startup(bench, data, args.repeat)


if __name__ == "__main__":
    main()
