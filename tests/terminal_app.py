"""``aah tui`` in a real terminal (tmux) of a given size, driven by keys as a person would.

Each app gets a tmux server of its own, named after the test's folder and
this process (two test runs on one machine never share one). A wait that
times out says what the terminal showed and where the app's threads were
(:mod:`stack_dumps`).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from stack_dumps import stack_dump_env, stacks_of

TMUX = shutil.which("tmux")
ROOT = Path(__file__).resolve().parent.parent


class TerminalApp:
    """``aah tui ARGS`` with ``env`` in a ``size`` terminal; a context manager that ends it."""

    def __init__(
        self,
        folder: Path,
        env: dict[str, str],
        args: str,
        size: tuple[int, int] = (80, 24),
        name: str = "aah-test",
    ) -> None:
        self.socket = f"{name}-{folder.name}-{os.getpid()}"
        self._stacks = folder / "stacks"
        dumps = stack_dump_env(self._stacks)
        full = {
            **dumps,
            **env,
            "TERM": "xterm-256color",
            # This checkout's aah, whatever the interpreter has installed.
            "PYTHONPATH": os.pathsep.join(
                [dumps["PYTHONPATH"], str(ROOT), os.environ.get("PYTHONPATH", "")]
            ),
        }
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in full.items())
        command = f"env {exports} {shlex.quote(sys.executable)} -m aah tui {args}"
        width, height = size
        self.tmux(
            "-f", os.devnull, "new-session", "-d", "-x", str(width), "-y", str(height), command
        )
        self.tmux("set-option", "-g", "status", "off")  # every row is the app's

    def tmux(self, *args: str) -> str:
        """Run a tmux command on this app's server; what it printed."""
        done = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=10
        )
        return done.stdout

    def capture(self) -> str:
        """What the terminal shows now."""
        return self.tmux("capture-pane", "-p")

    def wait_until(self, condition: Callable[[str], bool], seconds: float = 60) -> str:
        """What the terminal shows once ``condition`` holds of it; AssertionError after ``seconds``."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            shown = self.capture()
            if condition(shown):
                return shown
            time.sleep(0.2)
        raise AssertionError(
            f"the terminal never showed it:\n{self.capture()}\n"
            f"the app's threads then:\n{stacks_of(self._stacks)}"
        )

    def close(self) -> None:
        """End the app and its terminal."""
        self.tmux("kill-server")

    def __enter__(self) -> TerminalApp:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
