"""Report figures: ``aah report`` over 10,000 sessions, in process and as a cold command.

The sessions come from ``metrics_bench.fill`` (about 9 events each, grades,
some human questions), written straight into a fresh store in a few batched
transactions. Task ids are then renamed ``<setting>-<k>`` so that, where the
benchmark data is found, most sessions get their needed endpoints and IAC is
scored as in a real run.

Timed: ``build_report``; rendering it as JSON and as HTML (three charts); and
a fresh ``python -m aah report --format json`` process (start, imports, build,
JSON). Target: under 2 s each.

Run: .venv/bin/python perf/report_bench.py [--sessions N] [--repeat R]
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from metrics_bench import fill

from aah.report.build import build_report, render_json
from aah.report.html import render_html
from aah.store.sessions import SessionStore

T = TypeVar("T")
TARGET_MS = 2000

# ``python -m aah report`` once the command is mounted; until then the same
# start-up (the whole CLI imported) with the command added to it.
COLD_CODE = """
import sys
from aah.cli import app, main
from aah.cli.report import report
if not any(c.name == "report" for c in app.registered_commands):
    app.command("report")(report)
sys.argv = ["aah", *sys.argv[1:]]
main()
"""


def real_task_ids(path: Path) -> None:
    """Rename each run's sessions per setting ``<setting>-1``, ``<setting>-2``..."""
    with sqlite3.connect(path) as conn:
        conn.execute(
            "UPDATE sessions SET task_id = setting || '-' || n FROM ("
            " SELECT id AS sid, row_number() OVER (PARTITION BY run, setting ORDER BY id) AS n"
            " FROM sessions) WHERE id = sid"
        )
    conn.close()


def timed(action: Callable[[], T], repeat: int) -> tuple[T, list[float]]:
    """The last result of ``action`` and its wall times in seconds."""
    times: list[float] = []
    result: T | None = None
    for _ in range(repeat):
        started = time.perf_counter()
        result = action()
        times.append(time.perf_counter() - started)
    assert result is not None
    return result, times


def cold_process(*args: str) -> float:
    """Wall time of a fresh ``aah`` process run with ``args``."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", COLD_CODE, *args], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def show(label: str, times: list[float]) -> None:
    median = statistics.median(times) * 1000
    verdict = "ok" if median < TARGET_MS else "OVER TARGET"
    print(
        f"{label}: median {median:.0f} ms (min {min(times) * 1000:.0f}, "
        f"max {max(times) * 1000:.0f}) [{verdict}, target < {TARGET_MS} ms]"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        started = time.perf_counter()
        n_events = fill(path, args.sessions)
        real_task_ids(path)
        print(
            f"generated {args.sessions} sessions, {n_events} events "
            f"in {time.perf_counter() - started:.2f} s"
        )
        with SessionStore(path) as store:
            report, builds = timed(lambda: build_report(store), args.repeat)
            text, jsons = timed(lambda: render_json(report), args.repeat)
            page, pages = timed(lambda: render_html(report), args.repeat)
        iac = [e.tasks for e in report.error_patterns]
        print(f"{len(report.cells)} cells, {len(report.runs)} runs, IAC tasks per run {iac}")
        print(f"JSON {len(text) / 1000:.0f} kB, HTML {len(page) / 1000:.0f} kB")
        show("build_report", builds)
        show("render_json", jsons)
        show("render_html (3 charts)", pages)
        show("build + json", [b + j for b, j in zip(builds, jsons, strict=True)])
        show("build + html", [b + h for b, h in zip(builds, pages, strict=True)])
        command = ["report", "--format", "json", "--db", str(path)]
        show("cold `aah report --format json`", [cold_process(*command) for _ in range(3)])
        # The floor every command pays: Python, the whole CLI's imports, Typer.
        show("cold `aah --help` (start-up floor)", [cold_process("--help") for _ in range(3)])


if __name__ == "__main__":
    main()
