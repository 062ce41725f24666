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

The commands take turns, so a change in the machine's load reaches them
all. Their bytecode is compiled by the warm-up into a cache of their own
(``PYTHONPYCACHEPREFIX``), as an installed aah has it: a tree run with
``PYTHONDONTWRITEBYTECODE`` would compile every changed module each time.
The fake model serves from this process, so its CPU is not counted.

The cyclic garbage collector is a fixed cost as well as the imports: it
would walk the growing heap ~30 times while a bench run's ~1,400 modules
load, and the interpreter's exit runs full collections over the ~150,000
objects left (~70 ms each). ``aah.cli`` freezes both sets (``gc.freeze``),
so they show here only if that breaks.

Then the bench run once more under ``python -X importtime``: where its
imports spend their time, by top-level package and by the aah module that
pulled each one in (`import_profile`); ``--importtime`` does the same for
every command. ``--against DIR`` times another aah package beside this one
(``git archive REV aah | tar -x -C DIR``), the two taking turns.

Budget: every command but the floor under 1 s.
Run: .venv/bin/python perf/startup.py [--repeat 5] [--importtime] [--only bench]
[--against DIR]
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
from typing import TYPE_CHECKING, Any, NamedTuple

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
BENCH_LABEL = "aah bench run --limit 1"


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


class Imported(NamedTuple):
    """One module's line of ``python -X importtime``."""

    depth: int  # 0: imported by no module being imported (start-up, a function body)
    name: str
    self_us: int  # its own body, without the modules it imported


def read_importtime(stderr: str) -> list[Imported]:
    """The ``-X importtime`` lines of ``stderr``, parents first (as imported, not as printed)."""
    found = []
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        own, _, name = line.removeprefix("import time:").split("|")
        depth = (len(name) - len(name.lstrip(" ")) - 1) // 2
        found.append(Imported(depth, name.strip(), int(own)))
    return found[::-1]


class Share(NamedTuple):
    """What one owner's imports cost, and what most of it was."""

    owner: str
    us: int
    parts: list[tuple[str, int]]  # (top-level package or aah module, microseconds), largest first


def import_shares(modules: Sequence[Imported]) -> tuple[list[Share], list[Share]]:
    """Import self-time summed by top-level package, and by the aah module that pulled it.

    A module's time goes to its innermost importer inside aah (itself, for an
    aah module): so ``aah.llm.transport`` owns aiohttp. Modules no aah module
    imported (the interpreter's start-up, a function body's import while the
    command runs) go to ``(no aah importer)``.
    """
    by_package: dict[str, dict[str, int]] = {}
    by_owner: dict[str, dict[str, int]] = {}
    stack: list[str] = []
    for module in modules:
        del stack[module.depth :]
        stack.append(module.name)
        package = module.name.partition(".")[0]
        part = module.name if package == "aah" else package
        owner = next((name for name in reversed(stack) if name.startswith("aah.")), None)
        owner = owner or ("aah" if module.name == "aah" else "(no aah importer)")
        for table, key, detail in ((by_package, package, module.name), (by_owner, owner, part)):
            row = table.setdefault(key, {})
            row[detail] = row.get(detail, 0) + module.self_us

    def shares(table: dict[str, dict[str, int]]) -> list[Share]:
        rows = [
            Share(key, sum(parts.values()), sorted(parts.items(), key=lambda kv: -kv[1]))
            for key, parts in table.items()
        ]
        return sorted(rows, key=lambda row: -row.us)

    return shares(by_package), shares(by_owner)


def share_table(title: str, rows: Sequence[Share], total_us: int, floor_ms: float) -> list[str]:
    """Rows of at least ``floor_ms`` with their share of ``total_us``, the rest summed."""
    shown = [row for row in rows if row.us >= floor_ms * 1000]
    rest = sum(row.us for row in rows[len(shown) :])
    lines = [f"  {title:36} {'ms':>6} {'share':>6} {'so far':>6}  mostly"]
    running = 0
    for row in shown:
        running += row.us
        mostly = ", ".join(f"{name} {us / 1000:.0f}" for name, us in row.parts[:3] if us >= 1000)
        lines.append(
            f"  {row.owner:36} {row.us / 1000:6.0f} {row.us / total_us:6.1%} "
            f"{running / total_us:6.1%}  {mostly}"
        )
    others = f"{len(rows) - len(shown)} others, each under {floor_ms:.0f} ms"
    lines.append(f"  {others:36} {rest / 1000:6.0f} {rest / total_us:6.1%}")
    return lines


def import_profile(
    args: Sequence[str], env: Mapping[str, str], status: int = 0, floor_ms: float = 20
) -> str:
    """Where the imports of one run of ``args`` spend their time (``python -X importtime``).

    Two tables, each row at least ``floor_ms``: by top-level package, and by
    the aah module whose import pulled the time in. ``-X importtime`` itself
    slows imports, so its milliseconds run above the plain run's CPU; read the
    shares. It sees only imports by the ``import`` statement (``__import__``):
    a module loaded with ``importlib.import_module`` (pydantic's lazy names,
    for one) counts in its importer's own time.
    """
    process = subprocess.Popen(
        [sys.executable, "-X", "importtime", "-m", "aah", *args],
        env=dict(env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    stderr = process.stderr.read() if process.stderr else ""
    _, wait_status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(wait_status) != status:
        raise SystemExit(f"aah {' '.join(args)} -X importtime failed: {stderr[-2000:]}")
    modules = read_importtime(stderr)
    total = sum(module.self_us for module in modules)
    packages, owners = import_shares(modules)
    cpu = usage.ru_utime + usage.ru_stime
    head = (
        f"  imports: {len(modules)} modules, {total / 1e6:.3f} s of import time"
        f" in a process of {cpu:.3f} s CPU under -X importtime"
    )
    return "\n".join(
        [
            head,
            *share_table("top-level package", packages, total, floor_ms),
            *share_table("aah module that pulled it in", owners, total, floor_ms),
        ]
    )


class Tree(NamedTuple):
    """One aah package to time: this checkout's, or another put first on ``PYTHONPATH``."""

    suffix: str  # after each command's label
    env: dict[str, str]
    folder: Path  # its databases


def main() -> None:
    """Print the start-up CPU of each command, then where the bench run's imports go."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="Counted runs per command.")
    parser.add_argument(
        "--importtime", action="store_true", help="Profile every command's imports, not one."
    )
    parser.add_argument("--only", default="", help="Time only the commands whose label holds it.")
    parser.add_argument(
        "--against",
        type=Path,
        help="A folder holding another aah package (git archive REV aah | tar -x -C DIR)"
        " to time interleaved with this one.",
    )
    options = parser.parse_args()

    data = find_data_dir(None, need_benchmark=True)
    llm = FirstRequestClock(AGENT)
    with tempfile.TemporaryDirectory() as folder, llm:
        tmp = Path(folder)
        registry = tmp / "registry.db"
        build_registry(data, registry)
        skip = ("AAH_", "OPENAI_", "PYTHONDONTWRITEBYTECODE")
        env = {k: v for k, v in os.environ.items() if not k.startswith(skip)}
        env.update(
            {
                # Bytecode as an installed aah has it: compiled by the warm-up, then read.
                "PYTHONPYCACHEPREFIX": str(tmp / "pycache"),
                # aah from the installed path or PYTHONPATH, never the current folder.
                "PYTHONSAFEPATH": "1",
                "AAH_REGISTRY": str(registry),
                "AAH_DATA_DIR": str(data),
                "AAH_BASE_URL": llm.base_url,
                "AAH_MODEL": "fake-model",
                "AAH_API_KEY": "x",
                "NO_COLOR": "1",
            }
        )
        trees = [Tree("", env, tmp / "this")]
        if options.against:
            other = {**env, "PYTHONPATH": str(options.against.resolve())}
            trees.append(Tree(f" [{options.against}]", other, tmp / "against"))
        bench = ["bench", "run", "--setting", "underspecified", "--limit", "1"]
        for tree in trees:
            tree.folder.mkdir()
            SessionStore(tree.folder / "empty.db").close()  # no sessions, not a missing file
            bench_db = str(tree.folder / "bench.db")
            cpu_seconds([*bench, "--db", bench_db, "--run", "graded"], tree.env)
        # Label, arguments ("{n}" becomes a fresh run name: a bench run that
        # resumed would do nothing; "{folder}" the tree's databases) and the
        # exit status the command must give.
        commands: list[tuple[str, list[str], int]] = [
            ("aah --version", ["--version"], 0),
            # Builds the report's inputs, then stops: "no runs in ...".
            ("aah report (empty db)", ["report", "--db", "{folder}/empty.db"], 2),
            # Its one session was graded by the warm-up run: nothing is sent.
            (
                "aah grade (nothing to grade)",
                ["grade", "--run", "graded", "--db", "{folder}/bench.db"],
                0,
            ),
            (BENCH_LABEL, [*bench, "--db", "{folder}/bench.db", "--run", "startup-{n}"], 0),
            # The runs the bench runs left: one session each.
            ("aah report (1-session runs)", ["report", "--db", "{folder}/bench.db"], 0),
        ]
        commands = [command for command in commands if options.only in command[0]]
        count = 0

        def arguments(template: Sequence[str], tree: Tree) -> list[str]:
            nonlocal count
            count += 1
            return [arg.format(n=count, folder=tree.folder) for arg in template]

        print(f"CPU seconds (user + system) per process, {options.repeat} runs after a warm-up,")
        print("the commands taking turns")
        print("load average before: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
        figures: dict[str, list[float]] = {}
        for index in range(options.repeat + 1):
            for label, template, status in commands:
                for tree in trees:
                    llm.watch(None)  # a command that talks to no model notes nothing
                    clock = llm if "bench" in template else None
                    seconds = cpu_seconds(arguments(template, tree), tree.env, status, clock)
                    if index:  # the first round warms the disk cache
                        figures.setdefault(label + tree.suffix, []).append(seconds)
                        if llm.first is not None:
                            key = f"{label}, before the first task{tree.suffix}"
                            figures.setdefault(key, []).append(llm.first)
        print(f"{'command':56} {'min':>6} {'median':>6} {'max':>6}")
        for row_label, values in figures.items():
            low, mid, high = min(values), statistics.median(values), max(values)
            over = not row_label.startswith("aah --version") and mid >= BUDGET_SECONDS
            mark = "  over budget" if over else ""
            print(f"{row_label:56} {low:6.3f} {mid:6.3f} {high:6.3f}{mark}")
        print("load average after: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
        for label, template, status in commands:
            if label == BENCH_LABEL or options.importtime:
                for tree in trees:
                    print(f"\nImport profile of {label}{tree.suffix} (python -X importtime)")
                    print(import_profile(arguments(template, tree), tree.env, status))


if __name__ == "__main__":
    main()
