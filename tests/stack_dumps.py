"""Where a program under test is stuck: its threads' Python stacks, on request.

A test that drives a real program (an app in tmux) and waits for it in vain
can say more than "it never showed it". The program is started with
:func:`stack_dump_env` in its environment: a ``sitecustomize`` module, run at
its start, asks :mod:`faulthandler` to write every thread's stack to a file
on ``SIGUSR1`` (and its process id beside it). :func:`stacks_of` sends the
signal and reads the file.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

_SITECUSTOMIZE = """\
import faulthandler, os, signal

faulthandler.register(
    signal.SIGUSR1, file=open(os.environ["AAH_TEST_STACKS"], "w"), all_threads=True
)
with open(os.environ["AAH_TEST_STACKS"] + ".pid", "w") as pid:
    pid.write(str(os.getpid()))
"""


def stack_dump_env(folder: Path) -> dict[str, str]:
    """Environment that makes a Python program dump its stacks to ``folder`` on SIGUSR1.

    Its ``PYTHONPATH`` entry comes first; join the program's own after it.
    """
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(_SITECUSTOMIZE)
    return {"PYTHONPATH": str(folder), "AAH_TEST_STACKS": str(folder / "stacks.txt")}


def stacks_of(folder: Path, wait: float = 2.0) -> str:
    """Every thread's stack in the program started with ``stack_dump_env(folder)``."""
    path = folder / "stacks.txt"
    try:
        os.kill(int((folder / "stacks.txt.pid").read_text()), signal.SIGUSR1)
    except (OSError, ValueError) as exc:
        return f"(no stacks: {exc})"
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        text = path.read_text(errors="replace") if path.exists() else ""
        if text.strip():
            return text
        time.sleep(0.1)
    return "(no stacks: the program wrote none)"
