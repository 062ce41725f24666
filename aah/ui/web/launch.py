"""Launching batch runs from the web app, as child processes of ``aah bench run``.

A launched run is ``python -m aah bench run ... --human queue --db <the app's
db>``: its questions land in the queue the page shows. It runs in its own
process, so the page stays responsive and a run outlives a page reload; its
output goes to a log file beside the database, which the page tails.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from aah.scoring import SETTINGS

SETTING_CHOICES: tuple[str, ...] = (*SETTINGS, "all")
LAUNCH_HEADERS = ["run", "pid", "status", "started", "log"]
_RUN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
# A model name is passed as one argument (no shell), but one that starts
# with "-" would still read as a flag.
_MODEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,127}")
_LOG_TAIL_CHARS = 4_000


@dataclass(frozen=True)
class LaunchRequest:
    """What to run: the admin's choices on the launch page."""

    run: str
    setting: str
    limit: int | None = None
    model: str | None = None
    aah: bool = True

    def check(self) -> None:
        """Raise ``ValueError`` with a one-line fix if a choice is not usable."""
        if not _RUN_NAME.fullmatch(self.run):
            raise ValueError(
                "name the run with letters, digits, . _ - (at most 64, starting with a letter "
                "or digit)"
            )
        if self.setting not in SETTING_CHOICES:
            raise ValueError(f"pick a setting among {', '.join(SETTING_CHOICES)}")
        if self.limit is not None and self.limit < 1:
            raise ValueError("set the limit to 1 or more tasks per setting, or leave it empty")
        if self.model is not None and not _MODEL_NAME.fullmatch(self.model):
            raise ValueError("type a model name like gpt-4o-mini, or leave it empty for AAH_MODEL")


def bench_command(db: Path, request: LaunchRequest, python: str = sys.executable) -> list[str]:
    """The ``aah bench run`` command line for ``request``, answering through the queue."""
    command = [python, "-m", "aah", "bench", "run", "--run", request.run]
    command += ["--setting", request.setting, "--human", "queue", "--db", str(db)]
    command.append("--aah" if request.aah else "--no-aah")
    if request.limit is not None:
        command += ["--limit", str(request.limit)]
    if request.model:
        command += ["--model", request.model]
    return command


@dataclass
class LaunchedRun:
    """A run this app started, with its process and log."""

    request: LaunchRequest
    process: subprocess.Popen[bytes]
    log: Path
    started: datetime = field(default_factory=lambda: datetime.now(UTC))

    @property
    def status(self) -> str:
        """``running``, ``finished`` (exit 0), or ``exited N``."""
        code = self.process.poll()
        if code is None:
            return "running"
        return "finished" if code == 0 else f"exited {code}"


class RunLauncher:
    """Starts ``aah bench run`` processes on one database and keeps track of them."""

    def __init__(self, db: Path, python: str = sys.executable) -> None:
        """Launch runs on ``db`` with the interpreter ``python``."""
        self.db = db
        self.python = python
        self.launched: list[LaunchedRun] = []

    @property
    def log_dir(self) -> Path:
        """Where the runs' logs go: ``web-runs/`` beside the database."""
        return self.db.parent / "web-runs"

    def launch(self, request: LaunchRequest, extra_args: Sequence[str] = ()) -> LaunchedRun:
        """Start the run ``request`` describes; its output goes to a log file.

        Raises:
            ValueError: A choice is not usable (the message says which).
        """
        request.check()
        self.log_dir.mkdir(parents=True, exist_ok=True)
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
        log = self.log_dir / f"{request.run}-{stamp}.log"
        command = [*bench_command(self.db, request, self.python), *extra_args]
        with log.open("wb") as sink:
            # A new session, so that stopping the page (Ctrl-C) leaves runs going.
            process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        launched = LaunchedRun(request, process, log)
        self.launched.append(launched)
        return launched

    def find(self, pid: int) -> LaunchedRun | None:
        """The run this launcher started with process id ``pid``."""
        return next((run for run in self.launched if run.process.pid == pid), None)

    def stop(self, pid: int) -> bool:
        """Ask a run this launcher started to stop; False if it is not ours or has ended."""
        launched = self.find(pid)
        if launched is None or launched.process.poll() is not None:
            return False
        launched.process.terminate()
        return True

    def rows(self) -> list[list[str]]:
        """One table row per launched run, newest first."""
        return [
            [
                run.request.run,
                str(run.process.pid),
                run.status,
                run.started.strftime("%H:%M:%S"),
                str(run.log),
            ]
            for run in reversed(self.launched)
        ]


def log_tail(path: Path, limit: int = _LOG_TAIL_CHARS) -> str:
    """The end of a run's log, as text (the progress bar's redraws collapsed)."""
    try:
        data = path.read_bytes()[-limit:]
    except OSError:
        return ""
    # Rich redraws its bar with carriage returns: keep the last state of each line.
    lines = [line.rsplit("\r", 1)[-1] for line in data.decode("utf-8", "replace").split("\n")]
    return "\n".join(lines).strip()
