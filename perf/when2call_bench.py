"""When2Call run throughput: the 300 questions at concurrency 64, fake model at 300 ms.

Each question is one session with one model turn (its calls answered, then
the session ends), so the ideal is 64 / 0.3 s = 213 tasks/s; the figure
printed is the measured tasks/s of the run (first turns labelled by the
rules afterwards, timed apart). The fake model runs in its own process and
answers by the tools offered: no tools, a refusal; tools, an ``ask_human``
question (Aah on).

Run: .venv/bin/python perf/when2call_bench.py [--concurrency 64] [--latency-ms 300]
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
from aah.benchmark.when2call import (
    When2CallRunner,
    label_run_with_rules,
    load_when2call,
    run_scores,
)
from aah.data import find_data_dir
from aah.llm import ModelConfig
from aah.runtime import run_async
from aah.store import SessionStore

AGENT = {
    "rules": [
        {"when": {"has_tools": False}, "reply": "I'm sorry, but I cannot do that."},
        {
            "when": {"tool_offered": "ask_human"},
            "reply": {
                "tool_calls": [{"name": "ask_human", "arguments": {"question": "Which one?"}}]
            },
        },
        {"reply": "Which one do you mean?"},
    ]
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
    args = parser.parse_args()
    tasks = load_when2call(find_data_dir())
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
            options = RunOptions(run="perf", concurrency=args.concurrency)
            runner = When2CallRunner(options, config)
            db = tmp / "aah.db"
            started = time.perf_counter()
            summary = run_async(runner.run(tasks, db))
            wall = time.perf_counter() - started
        finally:
            server.terminate()
            server.wait()
        with SessionStore(db) as store:
            labelled_at = time.perf_counter()
            label_run_with_rules(store, "perf", tasks)
            label_seconds = time.perf_counter() - labelled_at
            [scores] = run_scores(store, "perf")
    ideal = args.concurrency / (args.latency_ms / 1000) if args.latency_ms else float("inf")
    print(
        f"when2call: {len(tasks)} questions, concurrency {args.concurrency}, "
        f"model latency {args.latency_ms} ms"
    )
    print(f"  finished {summary.finished}, errors {summary.errors}, wall {wall:.2f} s")
    print(f"  tasks/s: {summary.tasks_per_second:.1f} (ideal {ideal:.0f})")
    print(
        f"  labelling by the rules: {label_seconds:.2f} s; accuracy {scores.matrix.accuracy.value}"
    )


if __name__ == "__main__":
    main()
