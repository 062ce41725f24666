"""Per-call cost of the HTTP executors, side by side, against a local server.

Usage: python perf/executor_overhead.py [calls]

Every figure is microseconds per call for the same small JSON endpoint on
127.0.0.1, measured in one run: a bare ``requests.Session.get`` (the floor),
a live ``HttpExecutor`` call, a replayed call answered by requests-cache from
SQLite, a mock call and an injected fault.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from http_server import LocalServer, make_spec  # noqa: E402

from aah.tools.http.modes import make_executor  # noqa: E402
from aah.tools.spec import ParameterSpec, ParamLocation, ResponseSketch  # noqa: E402

SKETCH = ResponseSketch(
    kind="template", content={"city": "string", "temp": "float", "hours": [{"h": "int"}]}
)


def per_call_us(
    actions: dict[str, Callable[[], object]], calls: int, rounds: int = 7
) -> dict[str, float]:
    """Median over ``rounds`` of each action's mean time per call, in µs.

    The actions take turns within every round, so a load spike on a shared
    machine hits all of them instead of skewing one.
    """
    for action in actions.values():
        for _ in range(min(calls, 50)):
            action()
    runs: dict[str, list[float]] = {name: [] for name in actions}
    for _ in range(rounds):
        for name, action in actions.items():
            started = time.perf_counter()
            for _ in range(calls):
                action()
            runs[name].append((time.perf_counter() - started) / calls * 1e6)
    return {name: statistics.median(times) for name, times in runs.items()}


def main(calls: int) -> None:
    with LocalServer() as server, tempfile.TemporaryDirectory() as folder:
        param = ParameterSpec(name="q", location=ParamLocation.QUERY)
        spec = make_spec(server.url("/json"), params=[param], response=SKETCH)
        args = {"q": "oslo"}
        cache = Path(folder) / "http_cache.sqlite"

        bare = requests.Session()
        live = make_executor("live", timeout=5)
        recorder = make_executor("record", cache_path=cache, timeout=5)
        assert recorder.call(spec, args).ok
        recorder.close()
        replay = make_executor("replay", cache_path=cache)
        assert replay.call(spec, args).from_cache
        mock = make_executor("mock")
        fault = make_executor("fault", fault_plan="*=500")

        url = server.url("/json?q=oslo")
        figures = per_call_us(
            {
                "bare requests.Session.get (floor)": lambda: bare.get(url),
                "live HttpExecutor.call": lambda: live.call(spec, args),
                "replay hit (requests-cache, SQLite)": lambda: replay.call(spec, args),
                "mock (template sketch)": lambda: mock.call(spec, args),
                "fault (*=500)": lambda: fault.call(spec, args),
            },
            calls,
        )
        for executor in (live, replay, mock, fault):
            executor.close()
        bare.close()

    floor = figures["bare requests.Session.get (floor)"]
    print(f"{calls} calls per round, median of 7 interleaved rounds, server on 127.0.0.1")
    print(f"{'executor':<38}{'µs/call':>10}{'vs bare get':>14}")
    for name, micros in figures.items():
        print(f"{name:<38}{micros:>10.1f}{micros / floor:>13.2f}x")
    overhead = figures["live HttpExecutor.call"] - floor
    print(f"executor overhead on a live call: {overhead:.1f} µs")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 300)
