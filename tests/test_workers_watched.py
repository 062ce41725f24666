"""Workers watched: a worker that hangs (SIGSTOP, a blocked loop) is taken for lost; a slow one is not.

The runs are real: worker processes on SQLite and PostgreSQL against the fake
model, with ``AAH_WORKER_TIMEOUT=2`` so that a hang is noticed in seconds.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import signal
import struct
import threading
import time
from collections import Counter
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from runtime_support import fake_config
from test_workers import (
    AGENT,
    HeldModel,
    Item,
    NotingRunner,
    _noting,
    _pid_file,
    _plain_request,
    assert_each_task_ended_once,
)

from aah.benchmark import RunOptions
from aah.benchmark.failtalms import choose_tasks
from aah.benchmark.failtalms.dataset import Task, load_tasks
from aah.benchmark.worker_watch import START_SECONDS, Heartbeats, check_worker_timeout
from aah.benchmark.workers import _Worker, run_in_workers
from aah.bounds import MAX_WAIT_SECONDS
from aah.config import get_settings
from aah.errors import AahError
from aah.runtime import Activity, Runtime, SessionRequest
from aah.testing.fake_llm import FakeLLMServer
from aah.tools.registry.read import Registry

BOUND = 2.0


@pytest.fixture
def short_bound(monkeypatch: pytest.MonkeyPatch) -> float:
    """Workers silent for 2 s are taken for hung."""
    monkeypatch.setenv("AAH_WORKER_TIMEOUT", str(BOUND))
    return BOUND


class Watching:
    """Samples the progress line (``Activity.describe``) every 50 ms while a run goes on."""

    def __init__(self, activity: Activity) -> None:
        self.activity, self.lines = activity, set[str]()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self.done.wait(0.05):
            self.lines.add(self.activity.describe())

    def __enter__(self) -> Watching:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        self.thread.join()


def _lost_warnings(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if "handed to the others" in r.getMessage()]


def _gone(pid: int) -> bool:
    return not Path(f"/proc/{pid}").exists()


def _stop_when(
    ready: threading.Event, pid_file: Path, then: threading.Event, run_over: threading.Event
) -> list[tuple[int, float]]:
    """SIGSTOP the process that built ``pid_file``'s task once ``ready``: its pid and when.

    Should the run not notice within 30 s, the process is let go on (SIGCONT)
    so that the test fails on its checks rather than hanging.
    """
    stopped: list[tuple[int, float]] = []

    def stop() -> None:
        assert ready.wait(60)
        pid = int(pid_file.read_text())
        os.kill(pid, signal.SIGSTOP)
        stopped.append((pid, time.time()))
        then.set()
        if not run_over.wait(30) and not _gone(pid):
            os.kill(pid, signal.SIGCONT)

    threading.Thread(target=stop, daemon=True).start()
    return stopped


def test_a_stopped_worker_is_taken_for_lost_within_the_bound_and_its_task_ends_once_elsewhere(
    shared_data: Path,
    shared_registry: Path,
    tmp_path: Path,
    store_location: Path,
    short_bound: float,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The worker is stopped while its model call is out: its process lives, says nothing.
    caplog.set_level(logging.WARNING, logger="aah.benchmark.workers")
    tasks = choose_tasks(load_tasks(shared_data), 2, [])
    held = tasks[3]
    marker = held.query[:40]
    assert sum(marker in t.query for t in tasks) == 1
    llm = HeldModel(AGENT, marker)
    activity, run_over = Activity(), threading.Event()
    with llm, Watching(activity) as watching:
        stopped = _stop_when(llm.arrived, _pid_file(tmp_path, held.id), llm.release, run_over)
        runner = _noting(tmp_path, shared_registry, llm, concurrency=4)
        try:
            summary = asyncio.run(runner.run(tasks, store_location, activity=activity))
        finally:
            run_over.set()
    (pid, stopped_at), *_ = stopped
    # The stopped process was killed and reaped; its task ran again in the other worker.
    assert _gone(pid)
    assert int(_pid_file(tmp_path, held.id).read_text()) not in (pid, os.getpid())
    assert (summary.finished, summary.errors) == (len(tasks), 0), summary.error_messages
    assert_each_task_ended_once(store_location, "k", tasks)
    (warning,) = _lost_warnings(caplog)
    said = warning.getMessage()
    assert "silent for" in said and "AAH_WORKER_TIMEOUT=2 s" in said, said
    assert warning.created - stopped_at < short_bound + 2.0, said  # noticed within the bound
    # The progress line named the silent worker, the one the warning names.
    number = re.search(r"worker aah-worker-(\d+) ended", said)
    assert number is not None, said
    silent = [line for line in watching.lines if "silent" in line]
    assert silent and all(f"worker {number[1]} silent" in line for line in silent), silent


class SlowModel(FakeLLMServer):
    """The fake model, answering the first request that names ``marker`` after ``seconds``."""

    def __init__(self, script: Any, marker: str, seconds: float) -> None:
        super().__init__(script)
        self.marker, self.seconds, self.slept = marker, seconds, threading.Event()

    def _answer(self, body: dict[str, Any]) -> Any:
        if self.marker in str(body.get("messages")) and not self.slept.is_set():
            self.slept.set()
            time.sleep(self.seconds)
        return super()._answer(body)


def test_a_worker_waiting_on_a_slow_model_call_is_not_taken_for_lost(
    shared_data: Path,
    shared_registry: Path,
    tmp_path: Path,
    short_bound: float,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A model call of 2.5 times the bound: the worker's loop is free, so it beats on.
    caplog.set_level(logging.WARNING, logger="aah.benchmark.workers")
    tasks = choose_tasks(load_tasks(shared_data, ["perfect"]), 4, [])
    slow = tasks[1]
    activity = Activity()
    llm = SlowModel(AGENT, slow.query[:40], 2.5 * short_bound)
    with llm, Watching(activity) as seen:
        runner = _noting(tmp_path, shared_registry, llm, concurrency=2)
        summary = asyncio.run(runner.run(tasks, tmp_path / "s.db", activity=activity))
    assert llm.slept.is_set()
    assert (summary.finished, summary.errors) == (len(tasks), 0), summary.error_messages
    assert not _lost_warnings(caplog)
    assert not [line for line in seen.lines if "silent" in line]
    assert_each_task_ended_once(tmp_path / "s.db", "k", tasks)


class BlockingRunner(NotingRunner):
    """Blocks the event loop of the first worker that builds ``blocked``'s session (for 60 s).

    Its process lives and its threads run: only a heartbeat from the loop stops.
    """

    blocked: str

    def request_for(self, task: Task, runtime: Runtime) -> SessionRequest:
        mark = self.folder / "blocked.pid"
        if task.id == self.blocked and not mark.exists():
            mark.write_text(str(os.getpid()))
            time.sleep(60)
        return super().request_for(task, runtime)


def test_a_worker_whose_event_loop_is_blocked_is_taken_for_lost(
    shared_data: Path,
    shared_registry: Path,
    tmp_path: Path,
    short_bound: float,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="aah.benchmark.workers")
    tasks = choose_tasks(load_tasks(shared_data, ["perfect"]), 6, [])
    with FakeLLMServer(AGENT) as llm:
        options = RunOptions(run="k", workers=2, concurrency=4)
        runner = BlockingRunner(options, Registry(shared_registry), fake_config(llm))
        runner.folder, runner.blocked = tmp_path, tasks[2].id
        started = time.monotonic()
        summary = asyncio.run(runner.run(tasks, tmp_path / "b.db"))
    blocked = int((tmp_path / "blocked.pid").read_text())
    assert time.monotonic() - started < 30  # not the 60 s the loop was blocked for
    assert _gone(blocked)
    assert int(_pid_file(tmp_path, tasks[2].id).read_text()) not in (blocked, os.getpid())
    assert (summary.finished, summary.errors) == (len(tasks), 0), summary.error_messages
    (warning,) = _lost_warnings(caplog)
    assert "silent for" in warning.getMessage()
    assert_each_task_ended_once(tmp_path / "b.db", "k", tasks)


# -- the bound and the clock -----------------------------------------------------------


class FakeTime:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def passes(self, seconds: float, looks: Callable[[], Any] | None = None) -> None:
        """Move time on by ``seconds``, the parent looking every quarter second (``looks``)."""
        steps = round(seconds / 0.25)
        for _ in range(steps):
            self.now += 0.25
            if looks is not None:
                looks()


def test_a_worker_heard_from_is_never_past_the_bound_and_a_silent_one_is_once_past_it() -> None:
    clock = FakeTime()
    watch = Heartbeats(2.0, clock=clock)
    assert (watch.every, watch.show_after) == (0.5, 1.0)
    for number in (0, 1):
        watch.started(number)
        watch.heard_from(number)
    found: list[Any] = []
    for _ in range(20):  # 5 s: worker 0 beats, worker 1 says nothing
        clock.now += 0.25
        watch.heard_from(0)
        found += watch.past_bound()
    assert [n for n, _ in found][:1] == [1] and {n for n, _ in found} == {1}
    assert 2.0 < found[0].seconds <= 2.25
    assert watch.describe() == "worker 2 silent 5 s"
    watch.forget(1)
    assert watch.past_bound() == [] and watch.describe() == ""


def test_the_progress_line_names_only_workers_silent_a_while() -> None:
    clock = FakeTime()
    watch = Heartbeats(60.0, clock=clock)
    assert (watch.every, watch.show_after) == (1.0, 5.0)
    watch.started(0)
    watch.started(1)
    clock.now += 4
    watch.heard_from(0)
    activity = Activity(running=2, clock=clock, quiet=watch.describe)
    assert "silent" not in activity.describe()
    clock.now += 3
    assert activity.describe() == "2 running · worker 2 silent 7 s"
    assert Activity(quiet=watch.describe, clock=clock).describe() == "worker 2 silent 7 s"


def test_a_worker_not_yet_heard_from_has_the_start_time() -> None:
    clock = FakeTime()
    watch = Heartbeats(2.0, clock=clock)
    watch.started(0)
    found: list[Any] = []
    clock.passes(START_SECONDS, lambda: found.extend(watch.past_bound()))
    assert found == []
    clock.passes(0.25, lambda: found.extend(watch.past_bound()))
    assert [n for n, _ in found] == [0]


def test_time_the_parent_was_held_up_counts_against_no_worker() -> None:
    clock = FakeTime()
    watch = Heartbeats(2.0, clock=clock)
    watch.started(0)
    watch.heard_from(0)
    clock.now += 10  # the parent's own loop did not look for 10 s
    assert watch.past_bound() == []
    found: list[Any] = []
    clock.passes(1.25, lambda: found.extend(watch.past_bound()))  # then it looks, hearing nothing
    assert found == []
    clock.passes(0.5, lambda: found.extend(watch.past_bound()))
    assert [n for n, _ in found] == [0]


@pytest.mark.parametrize("value", [0, 0.5, -1, float("nan"), float("inf"), 1e18, "abc", True])
def test_a_bad_worker_timeout_is_refused_in_one_line(value: Any) -> None:
    with pytest.raises(AahError) as raised:
        check_worker_timeout(value)
    assert "\n" not in str(raised.value) and "AAH_WORKER_TIMEOUT" in str(raised.value)


def test_the_worker_timeout_setting_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    assert get_settings().worker_timeout == 60.0
    monkeypatch.setenv("AAH_WORKER_TIMEOUT", "2.5")
    assert check_worker_timeout(get_settings().worker_timeout) == 2.5
    for bad in ("0.5", "nan", "1e18", "soon", str(MAX_WAIT_SECONDS * 2)):
        monkeypatch.setenv("AAH_WORKER_TIMEOUT", bad)
        with pytest.raises(AahError) as raised:
            get_settings()
        message = str(raised.value)
        assert message.startswith("AAH_WORKER_TIMEOUT") and "\n" not in message, message
        assert message.endswith("fix or unset it")


async def _garble_once(folder: Path) -> None:
    """A probe: the first worker to run it writes a frame of junk into its pipe, then goes on."""
    try:
        os.close(os.open(folder / "garbled.pid", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return
    (folder / "garbled.pid").write_text(str(os.getpid()))
    await asyncio.sleep(0.3)  # it holds tasks by now
    # The worker's own object: its serve() is the loop's main task.
    (serving,) = [t for t in asyncio.all_tasks() if t.get_coro().__qualname__ == "_Worker.serve"]
    worker = serving.get_coro().cr_frame.f_locals["self"]
    assert isinstance(worker, _Worker)
    os.write(worker.conn.fileno(), struct.pack("!i", 5) + b"junk!")


def test_a_worker_that_writes_junk_into_its_pipe_is_lost_and_its_tasks_end_elsewhere(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="aah.benchmark.workers")
    items = [Item(id=f"t{n}", query=f"task {n}") for n in range(8)]
    handed: list[tuple[int, str]] = []
    with FakeLLMServer({"rules": [{"reply": "Done."}]}, latency_ms=200) as llm:
        summary = asyncio.run(
            run_in_workers(
                items,
                db=tmp_path / "g.db",
                model=fake_config(llm),
                options=RunOptions(run="h", concurrency=4, workers=2),
                manifest={},
                request_for=_plain_request,
                on_handout=lambda number, task_id: handed.append((number, task_id)),
                probe=partial(_garble_once, tmp_path),
            )
        )
    garbler = int((tmp_path / "garbled.pid").read_text())
    assert _gone(garbler)
    (warning,) = _lost_warnings(caplog)
    assert "a message was refused: it is no pickle" in warning.getMessage()
    assert (summary.finished, summary.errors) == (len(items), 0), summary.error_messages
    # Each task was handed out once, and those the junk writer held once more.
    counts = Counter(task_id for _, task_id in handed)
    assert set(counts) == {i.id for i in items} and set(counts.values()) <= {1, 2}
    assert sum(counts.values()) > len(items)
