"""Where a program under test is stuck: its threads' Python stacks, on request.

A test that drives a real program (an app in tmux) and waits for it in vain
can say more than "it never showed it". The program is started with
:func:`stack_dump_env` in its environment: a ``sitecustomize`` module, run at
its start, asks :mod:`faulthandler` to write every thread's stack to a file
on ``SIGUSR1``, and writes the process id beside it. Only the first Python
process that starts with it does so: the program, not those it starts.
:func:`stacks_of` sends the signal and reads the file.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

_SITECUSTOMIZE = """\
import faulthandler, os, signal

_folder = os.environ["AAH_TEST_STACKS"]
try:
    _pid = os.open(os.path.join(_folder, "pid"), os.O_WRONLY | os.O_CREAT | os.O_EXCL)
except FileExistsError:
    pass  # a process the program started
else:
    os.write(_pid, str(os.getpid()).encode())
    os.close(_pid)
    faulthandler.register(
        signal.SIGUSR1, file=open(os.path.join(_folder, "stacks.txt"), "w"), all_threads=True
    )
"""


def stack_dump_env(folder: Path) -> dict[str, str]:
    """Environment that makes a Python program dump its stacks into ``folder`` on SIGUSR1.

    Its ``PYTHONPATH`` entry comes first; join the program's own after it.
    """
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(_SITECUSTOMIZE)
    return {"PYTHONPATH": str(folder), "AAH_TEST_STACKS": str(folder)}


def stacks_of(folder: Path, wait: float = 2.0) -> str:
    """Every thread's stack in the program started with ``stack_dump_env(folder)``."""
    path = folder / "stacks.txt"
    try:
        os.kill(int((folder / "pid").read_text()), signal.SIGUSR1)
    except (OSError, ValueError) as exc:
        return f"(no stacks: {exc})"
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        text = path.read_text(errors="replace") if path.exists() else ""
        if text.strip():
            return text
        time.sleep(0.1)
    return "(no stacks: the program wrote none)"
