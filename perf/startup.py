"""Start-up CPU of the commands a user runs most, as whole processes.

Each command runs as its own ``python -m aah`` process (``--repeat`` times
after one warm-up) and the CPU seconds (user + system) the kernel accounts to
it are printed as min / median / max. The commands do almost no work, so the
figure is their fixed cost: imports, settings, opening the store.

- ``aah --version``: the floor (interpreter, Typer, aah's command table).
- ``aah report`` on an empty database (it stops at "no runs"), and on the
  one-session runs the bench runs below leave.
- ``aah grade`` of a run with nothing to grade.
- ``aah bench run --limit 1`` of one setting: one task (a few ms of its own)
  against the fake model at zero latency, so nearly all of it is the cost
  before the first task.
- ``aah bench run --limit 1, before the first task``: the same command's CPU
  read from ``/proc`` when its first chat request reaches the fake model, that
  is everything it spent before its first task could talk to a model.

The fake model serves from this process, so its CPU is not counted.
Budget: every command but the floor under 1 s.
Run: .venv/bin/python perf/startup.py [--repeat 5] [--importtime]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aah.data.locate import find_data_dir
from aah.store import SessionStore
from aah.testing import FakeLLMServer
from aah.tools.registry import build_registry

if TYPE_CHECKING:
    from aah.testing.fake_llm_script import Reply, ScriptedError

# The agent asks once, then answers: one task in a few model calls.
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

BUDGET_SECONDS = 1.0


def proc_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a running process has spent so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class FirstRequestClock(FakeLLMServer):
    """The fake model, noting the CPU its client process had spent at its first chat request."""

    def __init__(self, script: Any) -> None:
        """Serve ``script``; nothing is watched until `watch` names a process."""
        super().__init__(script)
        self.pid: int | None = None
        self.first: float | None = None

    def watch(self, pid: int | None) -> None:
        """Note ``pid``'s CPU at its first chat request (None: watch nothing)."""
        self.pid, self.first = pid, None

    def _answer(self, body: dict[str, Any]) -> list[Reply] | ScriptedError:
        # The client waits for this answer, so its CPU stands still meanwhile.
        if self.pid is not None and self.first is None:
            self.first = proc_cpu_seconds(self.pid)
        return super()._answer(body)


def cpu_seconds(
    args: Sequence[str],
    env: Mapping[str, str],
    status: int = 0,
    clock: FirstRequestClock | None = None,
) -> float:
    """User + system CPU seconds of one ``python -m aah`` process that exits with ``status``.

    With ``clock``, the process is watched for its first chat request.
    """
    process = subprocess.Popen(
        [sys.executable, "-m", "aah", *args],
        env=dict(env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    if clock is not None:
        clock.watch(process.pid)
    _, wait_status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(wait_status)
    stderr = process.stderr.read().decode() if process.stderr else ""
    # An unexpected error would time only the way out, not the command.
    if process.returncode != status:
        raise SystemExit(f"aah {' '.join(args)} failed ({process.returncode}): {stderr}")
    return usage.ru_utime + usage.ru_stime


def import_report(args: Sequence[str], env: Mapping[str, str], top: int = 12) -> str:
    """The modules that cost most to import in one run of ``args`` (``-X importtime``)."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "aah", *args],
        env=dict(env),
        capture_output=True,
        text=True,
    )
    rows: list[tuple[int, str]] = []
    for line in result.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        _, cumulative, name = line.removeprefix("import time:").split("|")
        if not name.startswith("  "):  # top-level imports only: cumulative is theirs alone
            rows.append((int(cumulative), name.strip()))
    rows.sort(reverse=True)
    total = sum(us for us, _ in rows)
    lines = [f"  {us / 1e6:6.3f} s  {name}" for us, name in rows[:top]]
    return "\n".join([f"  {total / 1e6:6.3f} s  all imports", *lines])


def main() -> None:
    """Print the start-up CPU of each command."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="Counted runs per command.")
    parser.add_argument("--importtime", action="store_true", help="Also show the top imports.")
    options = parser.parse_args()

    data = find_data_dir(None, need_benchmark=True)
    llm = FirstRequestClock(AGENT)
    with tempfile.TemporaryDirectory() as folder, llm:
        tmp = Path(folder)
        registry = tmp / "registry.db"
        build_registry(data, registry)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AAH_", "OPENAI_"))}
        env.update(
            {
                "AAH_REGISTRY": str(registry),
                "AAH_DATA_DIR": str(data),
                "AAH_BASE_URL": llm.base_url,
                "AAH_MODEL": "fake-model",
                "AAH_API_KEY": "x",
                "NO_COLOR": "1",
            }
        )
        db = str(tmp / "empty.db")
        SessionStore(db).close()  # a database with no sessions, not a missing one
        bench_db = str(tmp / "bench.db")
        bench = ["bench", "run", "--setting", "underspecified", "--limit", "1", "--db", bench_db]
        cpu_seconds([*bench, "--run", "graded"], env)
        # Label, arguments ("{n}" becomes a fresh run name: a bench run that
        # resumed would do nothing) and the exit status the command must give.
        commands: list[tuple[str, list[str], int]] = [
            ("aah --version", ["--version"], 0),
            # Builds the report's inputs, then stops: "no runs in ...".
            ("aah report (empty db)", ["report", "--db", db], 2),
            # Its one session was graded by the warm-up run: nothing is sent.
            ("aah grade (nothing to grade)", ["grade", "--run", "graded", "--db", bench_db], 0),
            (
                "aah bench run --limit 1",
                [*bench, "--run", "startup-{n}"],
                0,
            ),
            # The runs the bench runs above left: one session each.
            ("aah report (1-session runs)", ["report", "--db", bench_db], 0),
        ]
        print(f"CPU seconds (user + system) per process, {options.repeat} runs after a warm-up")
        print("load average before: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
        print(f"{'command':48} {'min':>6} {'median':>6} {'max':>6}")
        count = 0
        for label, template, status in commands:
            figures, firsts = [], []
            for index in range(options.repeat + 1):
                count += 1
                args = [arg.format(n=count) for arg in template]
                llm.watch(None)  # a command that talks to no model notes nothing
                seconds = cpu_seconds(args, env, status, llm if "bench" in template else None)
                if index:  # the first run warms the disk cache
                    figures.append(seconds)
                    if llm.first is not None:
                        firsts.append(llm.first)
            rows = [(label, figures)]
            if firsts:
                rows.append((f"{label}, before the first task", firsts))
            for row_label, values in rows:
                low, mid, high = min(values), statistics.median(values), max(values)
                over = label != "aah --version" and mid >= BUDGET_SECONDS
                mark = "  over budget" if over else ""
                print(f"{row_label:48} {low:6.3f} {mid:6.3f} {high:6.3f}{mark}")
            if options.importtime:
                count += 1
                print(import_report([arg.format(n=count) for arg in template], env))
        print("load average after: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))


if __name__ == "__main__":
    main()
