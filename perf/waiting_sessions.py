"""Many sessions waiting for a person at once: the runner's memory and idle CPU, side by side.

For each N (default 2,000 and 10,000) a batch runner process starts N
sessions that all ask a question first (fake model in its own process,
``--human queue``), and this script, as the annotators' side, measures:

- the runner's memory per waiting session (RSS once all N wait, less its
  RSS after a one-task warm-up that loads every module);
- the runner's CPU while all N wait and nobody answers (% of one core);
- the time to list the pending questions: the full records, the light
  listing of them all (no face reads it whole), and the page of 50 the
  web page and terminal app show;
- the time to answer them all through the queue API (one by one, as
  annotators would), and the time until every session has finished.

Both ways a runner can wait are measured in the same sitting: ``park`` (a
waiting session is a checkpoint plus a pending request, one watcher per
process) and ``poll`` (one coroutine per session polling the store), the
latter at the smaller N only unless ``--poll-at`` says otherwise.

Targets (issue 12): at most 20 KB of runner memory per waiting session, idle
CPU under 2% of a core at 10,000 waiting, listing 10,000 pending questions in
under 100 ms.

Run: .venv/bin/python perf/waiting_sessions.py [--sessions 2000 10000] [--idle-seconds 10]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from batch_bench import fake_model, process_cpu_seconds
from pydantic import SecretStr

from aah.benchmark import RunOptions
from aah.benchmark.failtalms import BatchRunner, batch_human_factory
from aah.benchmark.failtalms.dataset import load_tasks
from aah.data.locate import find_data_dir
from aah.llm.config import ModelConfig
from aah.runtime import QueueHuman, run_async
from aah.store import SessionStore
from aah.tools.registry.build import build_registry
from aah.tools.registry.read import Registry


def rss_kb(pid: int) -> int:
    """Resident memory of a process in KiB (Linux /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


def child(args: argparse.Namespace) -> None:
    """The runner: a warm-up task, its baseline RSS on stdout, then N waiting sessions."""
    data = find_data_dir(None, need_benchmark=True)
    registry = Registry(Path(args.registry))
    config = ModelConfig(
        base_url=args.base_url, model="fake-model", api_key=SecretStr("x"), retries=0
    )
    base = load_tasks(data, ["underspecified"])
    count = args.sessions[0]
    tasks = [base[i % len(base)].model_copy(update={"id": f"w{i}"}) for i in range(count)]
    db = Path(args.db)
    warm = BatchRunner(
        RunOptions(run="warm-up"), registry, config, batch_human_factory("oracle", registry)
    )
    run_async(warm.run(base[:1], db))
    gc.collect()
    print(json.dumps({"baseline_kb": rss_kb(os.getpid())}), flush=True)
    park = args.mode == "park"
    # A polling session holds its concurrency slot while it waits: for all N
    # to wait at once it needs N slots; a parked one gives its slot back.
    runner = BatchRunner(
        RunOptions(run="wait", concurrency=64 if park else count),
        registry,
        config,
        lambda task, runtime: QueueHuman(runtime.store, park=park),
    )
    summary = run_async(runner.run(tasks, db))
    print(json.dumps({"finished": summary.finished, "errors": summary.errors}), flush=True)


def timed(work: Any, repeats: int = 5) -> tuple[float, float, float]:
    """Min, median and max milliseconds of ``work()`` over ``repeats`` calls."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        work()
        times.append((time.perf_counter() - started) * 1000)
    return min(times), statistics.median(times), max(times)


def measure(n: int, mode: str, tmp: Path, config: ModelConfig, idle: float) -> dict[str, Any]:
    """One runner with ``n`` waiting sessions in ``mode``; the figures."""
    db = tmp / f"{mode}-{n}.db"
    runner = subprocess.Popen(
        [sys.executable, __file__, "--child", "--mode", mode, "--sessions", str(n)]
        + ["--db", str(db), "--registry", str(tmp / "registry.db"), "--base-url", config.base_url],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert runner.stdout is not None
    baseline = json.loads(runner.stdout.readline())["baseline_kb"]
    started = time.perf_counter()
    store = SessionStore(db)
    while len(store.humans.pending_human_requests()) < n:
        if runner.poll() is not None:
            raise SystemExit(f"the runner stopped early (exit {runner.returncode})")
        time.sleep(0.5)
    all_waiting = time.perf_counter() - started
    time.sleep(2)  # the last sessions settle into waiting
    rss = rss_kb(runner.pid)
    cpu0, wall0 = process_cpu_seconds(runner.pid), time.perf_counter()
    time.sleep(idle)
    idle_cpu = (process_cpu_seconds(runner.pid) - cpu0) / (time.perf_counter() - wall0)
    figures: dict[str, Any] = {
        "n": n,
        "mode": mode,
        "all_waiting_s": all_waiting,
        "kb_per_session": (rss - baseline) / n,
        "idle_cpu_pct": idle_cpu * 100,
        "list_full_ms": timed(store.humans.pending_human_requests),
    }
    listing = getattr(store, "queue_listing", None)
    if listing is not None:
        figures["list_light_ms"] = timed(listing)
        # What a face reads: the queue page's first 50 entries and the total.
        figures["list_page_ms"] = timed(lambda: listing(None, limit=50))
    pending = store.humans.pending_human_requests()
    started = time.perf_counter()
    for request in pending:
        store.humans.answer_human_request(request.id, "perf", "Lisbon", seconds=1.0)
    answered = time.perf_counter()
    figures["answer_ms_each"] = (answered - started) * 1000 / len(pending)
    runner.wait()
    figures["finish_after_answers_s"] = time.perf_counter() - answered
    assert runner.stdout is not None
    result = json.loads(runner.stdout.readline())
    figures["finished"], figures["errors"] = result["finished"], result["errors"]
    store.close()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, nargs="+", default=[2000, 10000])
    parser.add_argument("--poll-at", type=int, nargs="*", default=None, help="N for poll mode.")
    parser.add_argument("--idle-seconds", type=float, default=10.0)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--mode", choices=["park", "poll"], default="park", help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    parser.add_argument("--registry", help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    poll_at = args.poll_at if args.poll_at is not None else [min(args.sessions)]
    data = find_data_dir(None, need_benchmark=True)
    rows = []
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        build_registry(data, tmp / "registry.db")
        with fake_model(tmp, 0) as config:
            for n in args.sessions:
                for mode in ["park", "poll"] if n in poll_at else ["park"]:
                    figures = measure(n, mode, tmp, config, args.idle_seconds)
                    rows.append(figures)
                    print(json.dumps(figures), flush=True)
    print()
    print(
        f"{'N':>6} {'mode':5} {'KB/session':>10} {'idle CPU':>9} {'list full ms':>16}"
        f" {'list light ms':>16} {'page of 50 ms':>14} {'answer ms':>9} {'finish s':>8}"
        f" {'ended':>6}"
    )
    for r in rows:
        full = "/".join(f"{v:.0f}" for v in r["list_full_ms"])
        light = "/".join(f"{v:.1f}" for v in r.get("list_light_ms", ())) or "-"
        page = "/".join(f"{v:.1f}" for v in r.get("list_page_ms", ())) or "-"
        print(
            f"{r['n']:>6} {r['mode']:5} {r['kb_per_session']:>10.1f} {r['idle_cpu_pct']:>8.1f}%"
            f" {full:>16} {light:>16} {page:>14} {r['answer_ms_each']:>9.2f}"
            f" {r['finish_after_answers_s']:>8.1f} {r['finished']:>6}"
        )
    for mode in ("park", "poll"):
        pair = sorted((r["n"], r["kb_per_session"] * r["n"]) for r in rows if r["mode"] == mode)
        if len(pair) >= 2:
            (n0, kb0), (n1, kb1) = pair[0], pair[-1]
            print(
                f"{mode}: each waiting session beyond the first {n0:,} adds "
                f"{(kb1 - kb0) / (n1 - n0):.1f} KB (the rest is caches bounded by the tools)"
            )
    print("(list times: min/median/max of 5; targets: <= 20 KB/session, idle CPU < 2% at 10,000,")
    print(" listing 10,000 pending questions < 100 ms)")


if __name__ == "__main__":
    main()
