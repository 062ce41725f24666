"""A model server as a child process: start it, wait until it answers, stop it.

The server runs in its own session, so the Ctrl-C a terminal sends reaches
only aah, which then asks the server to stop once (SIGINT, the signal uvicorn
and vLLM shut down cleanly on), waits, and kills it only if it hangs. Its
output goes to a log file whose last line explains a failed start.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from aah.errors import AahError

POLL_SECONDS = 0.2
STOP_GRACE_SECONDS = 15.0
LOOPBACK = "127.0.0.1"
# Signals that mean the server crashed (rather than was stopped).
_CRASH_SIGNALS = frozenset(
    {signal.SIGSEGV, signal.SIGILL, signal.SIGBUS, signal.SIGFPE, signal.SIGABRT}
)


def free_port(host: str = LOOPBACK) -> int:
    """A TCP port nothing listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def physical_cores() -> int:
    """Cores to give a CPU inference server: one thread per physical core.

    Hyper-threads share a core's arithmetic units, so a thread on each slows
    matrix work down; /proc/cpuinfo pairs each logical CPU with its core.
    """
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        text = ""
    cores: set[tuple[str, str]] = set()
    package = core = ""
    for line in text.splitlines() + [""]:
        key, _, value = (part.strip() for part in line.partition(":"))
        if key == "physical id":
            package = value
        elif key == "core id":
            core = value
        elif not key and core:
            cores.add((package, core))
            package = core = ""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(len(cores) or usable or 1, usable or 1))


@dataclass(frozen=True)
class ServedModel:
    """Where a started server answers, as the settings aah reads.

    Attributes:
        base_url: The OpenAI-compatible base URL, ending in ``/v1``.
        model: The model id the server answers to.
        max_connections: Requests the server takes at once, if it is limited.
    """

    base_url: str
    model: str
    max_connections: int | None = None

    def settings(self) -> dict[str, str]:
        """The ``AAH_*`` environment variables that point aah at this server."""
        values = {"AAH_BASE_URL": self.base_url, "AAH_MODEL": self.model}
        if self.max_connections is not None:
            values["AAH_MAX_CONNECTIONS"] = str(self.max_connections)
        return values

    def env_lines(self) -> list[str]:
        """``export NAME=value`` lines for a shell."""
        return [f"export {name}={value}" for name, value in self.settings().items()]

    def write_env_file(self, path: Path) -> None:
        """Write ``NAME=value`` lines that both shells and dotenv readers accept.

        Raises:
            AahError: the file cannot be written.
        """
        text = "".join(f"{name}={value}\n" for name, value in self.settings().items())
        try:
            path.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise AahError(f"cannot write {path}: {exc.strerror}; pass another --env-file") from exc


def _stop_with_parent() -> Callable[[], None] | None:
    """What the child runs before the server: a SIGTERM when aah dies, even by SIGKILL.

    The server runs in its own session (Ctrl-C reaches only aah), so without
    this a killed aah would leave it running, holding its port, its memory
    and its CPU. Linux only (its parent-death signal); elsewhere the child
    is stopped by aah's own exit alone. The C function is found here, in
    aah: the child between fork and exec may import nothing.
    """
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    prctl = ctypes.CDLL(None, use_errno=True).prctl
    pr_set_pdeathsig = 1
    parent = os.getpid()

    def set_signal() -> None:
        prctl(pr_set_pdeathsig, signal.SIGTERM)
        if os.getppid() != parent:  # aah died before the line above: stop now
            os.kill(os.getpid(), signal.SIGTERM)

    return set_signal


class ServerProcess:
    """One model server child process and its log file.

    Use as a context manager: the server is stopped when the block ends,
    however it ends.
    """

    def __init__(
        self,
        command: Sequence[str],
        *,
        name: str,
        log_path: Path | None = None,
        env: Mapping[str, str] | None = None,
        crash_hint: str = "",
    ) -> None:
        """Prepare to run ``command``; ``name`` is how messages call the server.

        ``crash_hint`` is added to the message when the server dies of a
        crash (a signal such as SIGSEGV or SIGILL): what to do about it.
        """
        self.command = list(command)
        self.name = name
        self.crash_hint = crash_hint
        self.log_path = log_path or _new_log_file(name)
        self.env = dict(env) if env is not None else None
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        """The child's process id once started."""
        return self._process.pid if self._process is not None else None

    def start(self) -> ServerProcess:
        """Start the child with its output in the log file; returns ``self``.

        Raises:
            AahError: the program cannot be run.
        """
        with self.log_path.open("ab") as log:
            try:
                self._process = subprocess.Popen(
                    self.command,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=self.env,
                    start_new_session=True,
                    preexec_fn=_stop_with_parent(),
                )
            except OSError as exc:
                raise AahError(
                    f"cannot start the {self.name} ({self.command[0]}: {exc.strerror}); "
                    "check that it is installed"
                ) from exc
        return self

    def running(self) -> bool:
        """Whether the child has been started and has not exited."""
        return self._process is not None and self._process.poll() is None

    def wait_ready(self, url: str, timeout: float) -> float:
        """Seconds until ``url`` answers 200; the server must stay up meanwhile.

        Raises:
            AahError: the server exited, or did not answer within ``timeout``.
        """
        started = time.monotonic()
        while True:
            if not self.running():
                code = self._process.returncode if self._process is not None else None
                raise AahError(
                    f"the {self.name} exited ({self.describe_status(code)}) before it "
                    f"answered: {self.last_log_line()} (log: {self.log_path})"
                )
            if answers_ok(url):
                return time.monotonic() - started
            if time.monotonic() - started > timeout:
                self.stop()
                raise AahError(
                    f"the {self.name} did not answer at {url} within {timeout:g} s: "
                    f"{self.last_log_line()} (log: {self.log_path}); raise --timeout"
                )
            time.sleep(POLL_SECONDS)

    def stop(self, grace: float = STOP_GRACE_SECONDS) -> int | None:
        """Ask the server to stop (SIGINT), wait up to ``grace`` s, then kill it.

        A server finishes the request it is serving before it exits, so a
        long reply in progress can use the grace period. Returns the exit
        status (``None`` when it was never started).
        """
        process = self._process
        if process is None:
            return None
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        return process.returncode

    def wait(self) -> int:
        """Block until the child exits on its own; its exit status."""
        if self._process is None:
            raise AahError(f"the {self.name} was never started")
        return self._process.wait()

    def describe_status(self, code: int | None) -> str:
        """``status N``, or the signal that killed the server and, on a crash, the hint."""
        if code is None or code >= 0:
            return f"status {code}"
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        crashed = -code in _CRASH_SIGNALS
        hint = f"; {self.crash_hint}" if crashed and self.crash_hint else ""
        return f"status {code}: {'crashed with ' if crashed else 'killed by '}{name}{hint}"

    def last_log_line(self) -> str:
        """The last non-empty line the server wrote, or a note that it wrote none."""
        try:
            with self.log_path.open("rb") as log:
                log.seek(0, os.SEEK_END)
                log.seek(max(0, log.tell() - 8192))
                tail = log.read().decode("utf-8", "replace")
        except OSError:
            return "no log"
        lines = [line.strip() for line in tail.splitlines() if line.strip()]
        return lines[-1][:300] if lines else "it wrote nothing"

    def __enter__(self) -> ServerProcess:
        """Start the server for a ``with`` block."""
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Stop the server when the block ends."""
        self.stop()


def _new_log_file(name: str) -> Path:
    handle, path = tempfile.mkstemp(prefix=f"aah-{name.replace(' ', '-')}-", suffix=".log")
    os.close(handle)
    return Path(path)


def answers_ok(url: str, timeout: float = 2.0) -> bool:
    """Whether a GET of ``url`` answers 200 now."""
    # Imported here: urllib.request costs a tenth of a second of every
    # command's start-up (this module sits in the command table).
    import urllib.error
    import urllib.request

    # A proxy set for the user's other traffic must not sit between aah and a
    # server it started on this machine.
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with direct.open(url, timeout=timeout) as response:
            return int(response.status) == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False
