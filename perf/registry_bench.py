"""Registry figures: build time, cold `aah tools search` process time, search latency.

Run: .venv/bin/python perf/registry_bench.py [--data DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from aah.data.locate import find_data_dir
from aah.tools.registry.build import build_registry
from aah.tools.registry.read import Registry

QUERIES = [
    "weather forecast",
    "cryptocurrency price",
    "random joke",
    "book by isbn",
    "uk parliament member",
    "convert currency",
    "nba team stats",
    "air quality",
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=None)
    args = parser.parse_args()
    data = find_data_dir(args.data)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "registry.db"
        builds = []
        for _ in range(3):
            started = time.perf_counter()
            report = build_registry(data, path)
            builds.append(time.perf_counter() - started)
        print(
            f"registry build: {report.endpoints} endpoints, "
            f"median {statistics.median(builds):.2f} s "
            f"(min {min(builds):.2f}, max {max(builds):.2f})"
        )

        started = time.perf_counter()
        registry = Registry(path)
        registry.search("warm up", 1)
        print(f"open registry: {(time.perf_counter() - started) * 1000:.1f} ms")
        latencies = []
        for _ in range(50):
            for query in QUERIES:
                t0 = time.perf_counter()
                registry.search(query, 10)
                latencies.append((time.perf_counter() - t0) * 1000)
        latencies.sort()
        p95 = latencies[int(len(latencies) * 0.95)]
        print(
            f"search latency (k=10, {len(latencies)} queries): median "
            f"{statistics.median(latencies):.3f} ms, p95 {p95:.3f} ms (target < 1 ms)"
        )

        env = {**os.environ, "AAH_REGISTRY": str(path)}
        command = [sys.executable, "-m", "aah", "tools", "search", "weather forecast", "--json"]
        runs = []
        for _ in range(5):
            t0 = time.perf_counter()
            subprocess.run(command, env=env, check=True, capture_output=True)
            runs.append(time.perf_counter() - t0)
        baseline = []
        for _ in range(5):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], check=True)
            baseline.append(time.perf_counter() - t0)
        print(
            f"cold `aah tools search` process: median {statistics.median(runs):.2f} s "
            f"(bare python: {statistics.median(baseline):.2f} s, "
            f"ratio {statistics.median(runs) / statistics.median(baseline):.1f}x)"
        )


if __name__ == "__main__":
    main()
