"""Trace export figures: CPU per task with export on, off and absent; memory with the receiver down.

1. Side by side: the under-specified setting (599 tasks, each asks the oracle
   a question) against the fake model at zero latency, concurrency 16, in
   three child processes in turn (each round starting with another),
   ``--rounds`` times: export off (the SDK installed, no variable set),
   export on (OTLP/HTTP to a receiver in this process, which answers 200 to
   every batch), and the extra absent (the child cannot import
   ``opentelemetry`` at all, and checks that nothing tried). Prints CPU ms
   per task of each (min / median / max; the child's every thread, the
   exporter's too) and the ratios (targets: on / off at most 1.15, absent /
   off 1.00).
2. Receiver down: a 2,000-task run exporting to a closed port on 127.0.0.1;
   prints its peak memory against the same run with export off (the bounded
   queue keeps memory flat), the spans dropped, and its wall time against
   the same run exporting to a receiver that is up (a dead receiver must not
   slow the run) and with export off.

The fake model runs in its own process; oracle human, mock HTTP.
Run: .venv/bin/python perf/otel_bench.py [--rounds 3] [--down-tasks 2000] [--skip-side]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

PERF = Path(__file__).resolve().parent
MODES = ("off", "on", "absent")
CONCURRENCY = 16


class _Receiver(BaseHTTPRequestHandler):
    """An OTLP/HTTP receiver that takes every batch (and counts the bytes)."""

    received = 0

    def do_POST(self) -> None:  # noqa: N802 - the handler's name
        length = int(self.headers.get("Content-Length") or 0)
        _Receiver.received += len(self.rfile.read(length))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def receiver() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def child(mode: str, tasks: int, data: str, registry: str, base_url: str, db: str) -> None:
    """One batch run in this process; prints a JSON line of its figures."""
    if mode == "absent":

        class _NoOtel:
            def find_spec(self, name: str, *args: Any) -> None:
                if name.split(".")[0] == "opentelemetry":
                    raise ImportError(f"{name} is absent (perf/otel_bench.py)")

        sys.meta_path.insert(0, _NoOtel())  # type: ignore[arg-type]
    from pydantic import SecretStr

    from aah.benchmark import RunOptions
    from aah.benchmark.failtalms import BatchRunner, batch_human_factory
    from aah.benchmark.failtalms.dataset import load_tasks
    from aah.llm.config import ModelConfig
    from aah.runtime.loop import run_async
    from aah.tools.registry.read import Registry

    chosen = load_tasks(Path(data), ["underspecified"] if tasks <= 599 else None)[:tasks]
    config = ModelConfig(base_url=base_url, model="fake-model", api_key=SecretStr("x"), retries=0)
    options = RunOptions(run=f"otel-{mode}", concurrency=CONCURRENCY)
    runner = BatchRunner(
        options,
        Registry(Path(registry)),
        config,
        batch_human_factory("oracle", Registry(Path(registry))),
    )
    cpu0, wall0 = time.process_time(), time.perf_counter()
    summary = run_async(runner.run(chosen, Path(db)))
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    assert summary.errors == 0, summary.error_messages
    # What only exporting loads (langsmith, under LangGraph, imports the SDK's
    # TracerProvider by itself whenever the SDK is installed).
    shown = ("aah.telemetry.live", "opentelemetry.sdk.trace.export", "opentelemetry.exporter")
    loaded = sorted(m for m in sys.modules if m.startswith(shown))
    anything = sorted(m for m in sys.modules if m.startswith("opentelemetry"))
    dropped = 0
    if mode in ("on", "down"):
        from aah.telemetry import default_sink

        exporter = default_sink().exporter
        dropped = exporter.dropped if exporter is not None else 0
    print(
        json.dumps(
            {
                "cpu_ms_per_task": cpu / len(chosen) * 1000,
                "wall_s": wall,
                "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                "exporting_modules": len(loaded),
                "otel_modules": len(anything),
                "dropped": dropped,
                "tasks": len(chosen),
            }
        )
    )


def run_child(
    mode: str, tasks: int, tmp: Path, data: Path, model: str, endpoint: str | None
) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "AAH_OTEL"))}
    if endpoint is not None:
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = endpoint
    db = tmp / f"{mode}-{time.monotonic_ns()}.db"
    command = [sys.executable, __file__, "--child", mode, str(tasks), str(data)]
    command += [str(tmp / "registry.db"), model, str(db)]
    out = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"the {mode} child failed: {out.stderr[-2000:]}")
    figures: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return figures


def spread(values: list[float]) -> str:
    ordered = sorted(values)
    return f"{ordered[0]:.2f} / {ordered[len(ordered) // 2]:.2f} / {ordered[-1]:.2f}"


def side_by_side(
    args: argparse.Namespace, tmp: Path, data: Path, model: str, endpoint: str
) -> None:
    """CPU per task with export off, on and absent, in turn; prints the figures."""
    cpu: dict[str, list[float]] = {mode: [] for mode in MODES}
    run_child("off", 20, tmp, data, model, None)  # caches warm, not counted
    for round_ in range(args.rounds):
        # Each round starts with another mode: no mode always runs first (or last).
        for mode in MODES[round_ % 3 :] + MODES[: round_ % 3]:
            figures = run_child(
                mode, args.tasks, tmp, data, model, endpoint if mode == "on" else None
            )
            if mode != "on":
                assert figures["exporting_modules"] == 0, f"{mode} loaded the exporter"
            if mode == "absent":
                assert figures["otel_modules"] == 0, "absent imported OpenTelemetry"
            cpu[mode].append(figures["cpu_ms_per_task"])
    on_off = sorted(o / f for o, f in zip(cpu["on"], cpu["off"], strict=True))
    absent_off = sorted(a / f for a, f in zip(cpu["absent"], cpu["off"], strict=True))
    print(
        f"{args.tasks} under-specified tasks at zero latency, concurrency {CONCURRENCY}, "
        f"{args.rounds} rounds (min / median / max ms CPU per task): "
        f"off {spread(cpu['off'])}, on {spread(cpu['on'])}, absent {spread(cpu['absent'])}"
    )
    print(
        f"export on / off {spread(on_off)} (target <= 1.15); "
        f"extra absent / off {spread(absent_off)} (target 1.00, no import); "
        f"the receiver took {_Receiver.received / 1e6:.1f} MB"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tasks", type=int, default=599, help="Tasks per side-by-side run.")
    parser.add_argument("--down-tasks", type=int, default=2000)
    parser.add_argument("--skip-down", action="store_true")
    parser.add_argument("--skip-side", action="store_true", help="Only the receiver-down run.")
    parser.add_argument("--child", nargs=6, metavar=("MODE", "N", "DATA", "REG", "URL", "DB"))
    args = parser.parse_args()
    if args.child:
        mode, tasks, data, registry, url, db = args.child
        child(mode, int(tasks), data, registry, url, db)
        return
    sys.path.insert(0, str(PERF))
    from batch_bench import fake_model

    from aah.data.locate import find_data_dir
    from aah.tools.registry.build import build_registry

    data = find_data_dir(None, need_benchmark=True)
    with tempfile.TemporaryDirectory() as name, receiver() as endpoint:
        tmp = Path(name)
        build_registry(data, tmp / "registry.db")
        with fake_model(tmp, 0) as config:
            model = str(config.base_url)
            if not args.skip_side:
                side_by_side(args, tmp, data, model, endpoint)
            if args.skip_down:
                return
            down = f"http://127.0.0.1:{closed_port()}"
            off = run_child("off", args.down_tasks, tmp, data, model, None)
            up = run_child("on", args.down_tasks, tmp, data, model, endpoint)
            dead = run_child("down", args.down_tasks, tmp, data, model, down)
            print(
                f"receiver down, {dead['tasks']} tasks: peak memory {dead['max_rss_mb']:.0f} MB "
                f"against {off['max_rss_mb']:.0f} MB with export off "
                f"(+{dead['max_rss_mb'] - off['max_rss_mb']:.0f} MB; the queue holds 2,048 spans), "
                f"{dead['dropped']} spans dropped; wall {dead['wall_s']:.1f} s against "
                f"{up['wall_s']:.1f} s exporting to a receiver that is up and "
                f"{off['wall_s']:.1f} s with export off"
            )


if __name__ == "__main__":
    main()
