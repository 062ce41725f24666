"""``--ray`` against ``--workers``: CPU per task, tasks/s and the time to the first task.

When2Call questions against the fake model at zero latency (one turn each),
concurrency 8 in all, two workers: forked processes (``--workers 2``) and
Ray actors on a local cluster of 2 CPUs (``--ray``), in turn, ``--repeat``
times each, both on the same throwaway PostgreSQL (a new database per run).

- CPU per task: the driver's (this process: it also runs the fake model
  server, the same in both) plus the workers' (forked: their CPU once
  joined; Ray: every process of the cluster, raylet and GCS included,
  sampled when the last task ends), over the tasks.
- Time to the first task: from the call to the first chat request reaching
  the fake model. The first Ray run of the process also joins the cluster
  (``ray.init``), which a command line pays once; it is shown apart.

Needs Ray (``pip install 'aah[ray]'``) and PostgreSQL (initdb, pg_ctl).
Run: PYTHONPATH=.:tests .venv/bin/python perf/ray_bench.py [--tasks 300] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from postgres_cluster import SUPERUSER_PASSWORD, _start  # noqa: E402
from test_ray import _ours, local_cluster  # noqa: E402

from aah.benchmark import RunOptions  # noqa: E402
from aah.benchmark.when2call import When2CallRunner, load_when2call  # noqa: E402
from aah.data.locate import find_data_dir  # noqa: E402
from aah.db_url import parse_location  # noqa: E402
from aah.llm import ModelConfig  # noqa: E402
from aah.runtime import run_async  # noqa: E402
from aah.testing import FakeLLMServer  # noqa: E402

ANSWERS = {
    "rules": [
        {"when": {"has_tools": False}, "reply": "IDK: maybe."},
        {"when": {"has_tools": True}, "reply": "Done: no call needed."},
    ]
}
TICKS = os.sysconf("SC_CLK_TCK")


class Clocked(FakeLLMServer):
    """The fake model, noting when the first request of a run arrives."""

    first: float | None = None

    def _answer(self, body: dict[str, Any]) -> Any:
        if self.first is None:
            self.first = time.perf_counter()
        return super()._answer(body)


def cluster_cpu(folder: str) -> dict[int, float]:
    """CPU seconds of each process of the Ray cluster in ``folder``."""
    seconds = {}
    for pid in _ours(folder):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        seconds[pid] = (int(fields[11]) + int(fields[12])) / TICKS
    return seconds


def own_cpu() -> float:
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def one_run(
    mode: str, questions: list[Any], url: str, llm: Clocked, address: str, folder: str
) -> dict[str, float]:
    config = ModelConfig(model="fake", base_url=llm.base_url, api_key="k", retries=0)
    ray = {"ray": address} if mode == "ray" else {}
    options = RunOptions(run="p", concurrency=8, workers=2, **ray)
    runner = When2CallRunner(options, config)
    db = parse_location(url)
    ended: list[int] = []
    at_end: dict[int, float] = {}
    before = cluster_cpu(folder) if mode == "ray" else {}

    def on_done(task_id: str, outcome: Any) -> None:
        ended.append(1)
        if len(ended) == len(questions) and mode == "ray":
            at_end.update(cluster_cpu(folder))

    llm.first = None
    cpu, started = own_cpu(), time.perf_counter()
    summary = run_async(runner.run(questions, db, on_done))
    wall = time.perf_counter() - started
    cpu = own_cpu() - cpu
    assert summary.finished + summary.stopped.total() == len(questions), summary.error_messages
    if mode == "ray":
        cpu += sum(at_end.values()) - sum(before.get(pid, 0.0) for pid in at_end)
    assert llm.first is not None
    return {
        "CPU s": cpu,
        "tasks/s": len(questions) / wall,
        "ms CPU a task": 1000 * cpu / len(questions),
        "s to first task": llm.first - started,
    }


def spread(values: list[float]) -> str:
    return f"{min(values):.2f} / {statistics.median(values):.2f} / {max(values):.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    everything = load_when2call(find_data_dir())
    if not 8 <= args.tasks <= len(everything):
        parser.error(f"--tasks: from 8 to {len(everything)} (the When2Call questions)")
    questions = everything[: args.tasks]
    small = everything[: args.tasks // 4]
    servers = _start()
    server = next(servers)
    results: dict[str, list[dict[str, float]]] = {"workers": [], "ray": []}
    smaller: dict[str, list[dict[str, float]]] = {"workers": [], "ray": []}
    try:
        with local_cluster() as (address, folder), Clocked(ANSWERS) as llm:
            for _ in range(args.repeat + 1):
                for mode in ("workers", "ray"):
                    url = server.url(server.create_database(), password=SUPERUSER_PASSWORD)
                    results[mode].append(one_run(mode, questions, url, llm, address, folder))
                    url = server.url(server.create_database(), password=SUPERUSER_PASSWORD)
                    smaller[mode].append(one_run(mode, small, url, llm, address, folder))
            import ray

            ray.shutdown()
    finally:
        servers.close()
    print(f"{len(questions)} When2Call tasks, zero-latency fake model, concurrency 8, 2 workers;")
    print(f"min / median / max of {args.repeat} runs each, interleaved, after one warm-up each")
    for mode in ("workers", "ray"):
        runs = results[mode][1:]
        for key in ("tasks/s", "ms CPU a task", "s to first task"):
            print(f"  {mode:8} {key:16} {spread([r[key] for r in runs])}")
    first = results["ray"][0]["s to first task"]
    print(f"  ray      first run, joining the cluster too: {first:.2f} s to first task")
    # What a task costs beyond a run's fixed cost (starting workers or actors):
    # the CPU of the big run less the small one's, over the tasks between them.
    extra = len(questions) - len(small)
    marginal = {}
    for mode in ("workers", "ray"):
        pairs = zip(results[mode][1:], smaller[mode][1:], strict=True)
        each = [1000 * (big["CPU s"] - little["CPU s"]) / extra for big, little in pairs]
        fixed = [
            big["CPU s"] - statistics.median(each) * len(questions) / 1000
            for big in results[mode][1:]
        ]
        marginal[mode] = statistics.median(each)
        print(f"  {mode:8} ms CPU a task beyond the fixed cost {spread(each)}")
        print(f"  {mode:8} fixed CPU s of a run (start-up)     {spread(fixed)}")
    overhead = marginal["ray"] - marginal["workers"]
    print(f"  Ray's overhead a task against --workers (median): {overhead:.2f} ms CPU")


if __name__ == "__main__":
    main()
