"""BFCL run throughput and scoring time: the single-turn set against the fake model.

Every single-turn item (all 13 categories, Java and JavaScript included:
3,641 items) is one session of one model turn at concurrency 64
against the fake model answering after 300 ms, so the ideal is 64 / 0.3 s =
213 items/s; the figure printed is the run's measured items/s. The fake model
answers every item with one call (a name no item offers, so each call is
recorded, refused by the call checks, and scored as a wrong call) or, for a
share of the items (those asking a question), with a malformed call: both readings and the AST check
all have work to do. Scoring is timed apart: checking every turn and storing
its grade, then reading the figures back; the target is under 5 s.

With ``--multi-turn`` it runs the 800 multi-turn entries instead (every
turn of each, BFCL's own APIs from the pinned wheel): the fake model plays
each entry's ground truth (``aah.testing.bfcl_script``), so every turn's
calls run, its state is logged and its checks run. Printed: entries/s and
model requests/s against the ideal (64 / 0.3 s = 213 requests/s), and the
share of the runner's CPU spent at turn ends (the checks and the state
snapshots).

Run: .venv/bin/python perf/bfcl_bench.py [--concurrency 64] [--latency-ms 300] [--limit N]
     [--multi-turn]
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pydantic import SecretStr

from aah.benchmark import RunOptions
from aah.benchmark.bfcl import (
    CATEGORIES,
    MULTI_TURN_CATEGORIES,
    BfclRunner,
    BfclTurnExecutor,
    bfcl_run_scores,
    bfcl_source,
    choose_items,
    load_bfcl,
    load_multi_turn,
    score_bfcl_run,
    score_multi_turn_run,
)
from aah.data import find_data_dir
from aah.llm import ModelConfig
from aah.runtime import run_async
from aah.store import SessionStore

# Requests with a question mark get a malformed call; the others a well-formed one.
AGENT = {
    "rules": [
        {
            "when": {"last_message_contains": "?"},
            "reply": {"tool_calls": [{"name": "lookup", "arguments": '{"query": "x'}]},
        },
        {"reply": {"tool_calls": [{"name": "lookup", "arguments": {"query": "x"}}]}},
    ],
}
# The fake server in a process of its own, so its work is not counted as the runner's.
SERVE = (
    "import json, sys, time\n"
    "from aah.testing.fake_llm import FakeLLMServer\n"
    "script = json.load(open(sys.argv[1]))\n"
    "with FakeLLMServer(script, port=int(sys.argv[2]), latency_ms=int(sys.argv[3])) as s:\n"
    "    print(s.base_url, flush=True)\n"
    "    time.sleep(3600)\n"
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency-ms", type=int, default=300)
    parser.add_argument("--limit", type=int, default=None, help="At most N items per category.")
    parser.add_argument("--multi-turn", action="store_true", help="The multi-turn entries.")
    args = parser.parse_args()
    if args.multi_turn:
        multi_turn(args)
        return
    loaded_at = time.perf_counter()
    tasks = choose_items(load_bfcl(bfcl_source(find_data_dir()), CATEGORIES), args.limit, [])
    load_seconds = time.perf_counter() - loaded_at
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        script = tmp / "agent.json"
        script.write_text(json.dumps(AGENT))
        port = free_port()
        server = subprocess.Popen(
            [sys.executable, "-c", SERVE, str(script), str(port), str(args.latency_ms)],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert server.stdout is not None
            base_url = server.stdout.readline().strip()
            config = ModelConfig(
                base_url=base_url, model="fake-model", api_key=SecretStr("x"), retries=0
            )
            options = RunOptions(run="perf", aah=False, concurrency=args.concurrency)
            runner = BfclRunner(options, config)
            db = tmp / "aah.db"
            started = time.perf_counter()
            summary = run_async(runner.run(tasks, db, categories=CATEGORIES))
            wall = time.perf_counter() - started
        finally:
            server.terminate()
            server.wait()
        with SessionStore(db) as store:
            scored_at = time.perf_counter()
            scored = score_bfcl_run(store, "perf", tasks)
            check_seconds = time.perf_counter() - scored_at
            read_at = time.perf_counter()
            [scores] = bfcl_run_scores(store, "perf", "fake-model")
            read_seconds = time.perf_counter() - read_at
    ideal = args.concurrency / (args.latency_ms / 1000) if args.latency_ms else float("inf")
    print(
        f"bfcl: {len(tasks)} items (loaded in {load_seconds:.2f} s), concurrency "
        f"{args.concurrency}, model latency {args.latency_ms} ms"
    )
    print(f"  finished {summary.finished}, errors {summary.errors}, wall {wall:.2f} s")
    print(
        f"  items/s: {summary.tasks_per_second:.1f} (ideal {ideal:.0f}, "
        f"{summary.tasks_per_second / ideal:.0%} of it)"
    )
    total = check_seconds + read_seconds
    print(
        f"  scoring: {scored} turns checked and stored in {check_seconds:.2f} s, figures read "
        f"in {read_seconds:.2f} s: {total:.2f} s ({'under' if total < 5 else 'OVER'} 5 s)"
    )
    irr = scores.figures.get("irrelevance_gap")
    print(f"  irrelevance gap: {irr.value if irr else None}")


def serve(
    script: dict[str, object], tmp: Path, latency_ms: int
) -> tuple[subprocess.Popen[str], str]:
    """The fake model in a process of its own, playing ``script``; its process and URL."""
    path = tmp / "agent.json"
    path.write_text(json.dumps(script))
    server = subprocess.Popen(
        [sys.executable, "-c", SERVE, str(path), str(free_port()), str(latency_ms)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    return server, server.stdout.readline().strip()


def multi_turn(args: argparse.Namespace) -> None:
    """The multi-turn set: entries/s, requests/s, and the CPU share of the turn ends."""
    from aah.testing.bfcl_script import ground_truth_script

    tasks = choose_items(
        list(load_multi_turn(bfcl_source(find_data_dir()), MULTI_TURN_CATEGORIES)), args.limit, []
    )
    at_turn_ends = 0.0
    turn_ends = 0
    plain = BfclTurnExecutor.turn_ended

    def timed(self: BfclTurnExecutor, turn: int, messages: object) -> object:
        nonlocal at_turn_ends, turn_ends
        started = time.process_time()
        try:
            return plain(self, turn, messages)  # type: ignore[arg-type]
        finally:
            at_turn_ends += time.process_time() - started
            turn_ends += 1

    BfclTurnExecutor.turn_ended = timed  # type: ignore[method-assign,assignment]
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        server, base_url = serve(ground_truth_script(tasks), tmp, args.latency_ms)
        try:
            config = ModelConfig(
                base_url=base_url, model="fake-model", api_key=SecretStr("x"), retries=0
            )
            options = RunOptions(run="perf", aah=False, concurrency=args.concurrency)
            runner = BfclRunner(options, config)
            db = tmp / "aah.db"
            cpu_at, started = time.process_time(), time.perf_counter()
            summary = run_async(runner.run(tasks, db, categories=MULTI_TURN_CATEGORIES))
            wall, cpu = time.perf_counter() - started, time.process_time() - cpu_at
        finally:
            server.terminate()
            server.wait()
        with SessionStore(db) as store:
            with store.queries() as queries:
                requests = sum(s.agent_calls for s in queries.session_summaries(["perf"]))
            scored_at = time.perf_counter()
            score_multi_turn_run(store, "perf", tasks)
            score_seconds = time.perf_counter() - scored_at
            [scores] = bfcl_run_scores(store, "perf", "fake-model")
    ideal = args.concurrency / (args.latency_ms / 1000) if args.latency_ms else float("inf")
    per_entry = requests / max(1, len(tasks))
    print(
        f"bfcl multi-turn: {len(tasks)} entries, {requests} model requests "
        f"({per_entry:.1f} an entry), concurrency {args.concurrency}, "
        f"model latency {args.latency_ms} ms"
    )
    print(
        f"  finished {summary.finished}, stopped {summary.stopped.total()}, "
        f"errors {summary.errors}, wall {wall:.2f} s"
    )
    print(
        f"  entries/s: {len(tasks) / wall:.2f} (ideal {ideal / per_entry:.2f}); requests/s: "
        f"{requests / wall:.1f} (ideal {ideal:.0f}, {requests / wall / ideal:.0%} of it)"
    )
    print(
        f"  runner CPU {cpu:.1f} s ({cpu / len(tasks) * 1000:.1f} ms an entry); turn ends "
        f"(checks + state): {at_turn_ends:.1f} s over {turn_ends} turns, "
        f"{at_turn_ends / cpu:.0%} of it"
    )
    accuracy = scores.figures.get("mt_accuracy")
    print(
        f"  scored in {score_seconds:.2f} s; ground-truth player's accuracy: "
        f"{accuracy.value:.1%} of {accuracy.n}"
        if accuracy
        else "  no accuracy figure"
    )


if __name__ == "__main__":
    main()
