"""A full disk in the middle of a batch run: one line, and a rerun that loses and doubles nothing.

The disk fills for real: a small tmpfs (root only), or a file-size limit
(``RLIMIT_FSIZE``) on the command's process, which any user can set. Both
end the run with one ``error:`` line naming the file; once there is room
again, rerunning the same command finishes every task, and each task's
events are those of a run that never met a full disk.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from aah.events import FinalAnswerEvent
from aah.store import SessionStore
from aah.testing.fake_llm import FakeLLMServer
from aah.tools.registry.build import build_registry

RUN = "full"
TASKS = 80  # 16 of each of the five settings
# An agent that asks one question, then answers: several steps and checkpoints a task.
AGENT = {
    "rules": [
        {"when": {"has_tools": False}, "reply": "IDK: I may need more details."},
        {"when": {"last_tool_name": "ask_human"}, "reply": "Done: here it is."},
        {
            "when": {"has_tools": True},
            "reply": {"tool_calls": [{"name": "ask_human", "arguments": {"question": "Which?"}}]},
        },
    ]
}


@pytest.fixture(scope="module")
def registry(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("registry") / "registry.db"
    build_registry(shared_data, path)
    return path


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(AGENT) as server:
        yield server


@pytest.fixture(scope="module")
def bench(
    registry: Path, shared_data: Path, llm: FakeLLMServer
) -> Callable[..., subprocess.CompletedProcess[str]]:
    """``aah bench run`` of the 80 tasks into a database, optionally under a file-size limit."""

    def run(db: Path, file_size_limit: int | None = None) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AAH_", "OPENAI_"))}
        env |= {
            "AAH_REGISTRY": str(registry),
            "AAH_BASE_URL": llm.base_url,
            "AAH_MODEL": "fake-model",
            "AAH_DATA_DIR": str(shared_data),
            "AAH_LLM_RETRIES": "0",
            "COLUMNS": "200",
        }
        command = [sys.executable, "-m", "aah", "bench", "run", "--run", RUN, "--setting", "all"]
        command += ["--limit", str(TASKS // 5), "--concurrency", "4", "--db", str(db)]
        limit = None if file_size_limit is None else _file_size_limit(file_size_limit)
        return subprocess.run(
            command, env=env, capture_output=True, text=True, timeout=300, preexec_fn=limit
        )

    return run


def _file_size_limit(size: int) -> Callable[[], None]:
    def limit() -> None:
        # A write past the limit then fails with EFBIG instead of killing the process.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    return limit


def events_by_task(db: Path) -> dict[str, list[str]]:
    """Each task's event kinds in order, checking that their seqs run 1, 2, 3... without gaps."""
    with SessionStore(db) as store:
        sessions = store.list_sessions(run=RUN)
        assert len(sessions) == len({s.task_id for s in sessions}), "a task was run twice"
        found = {}
        for session in sessions:
            events = store.events(session.id)
            assert [e.seq for e in events] == list(range(1, len(events) + 1)), session.task_id
            assert session.status == "finished", (session.task_id, session.status)
            found[str(session.task_id)] = [e.kind for e in events]
    return found


@pytest.fixture(scope="module")
def clean_run(
    bench: Callable[..., subprocess.CompletedProcess[str]], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, list[str]]:
    """What each task logs in a run with room enough."""
    db = tmp_path_factory.mktemp("clean") / "aah.db"
    result = bench(db)
    assert result.returncode == 0, result.stderr
    found = events_by_task(db)
    assert len(found) == TASKS
    return found


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A folder on an 8 MB tmpfs of its own, unmounted afterwards."""
    folder = tmp_path / "disk"
    folder.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


def assert_full_disk_line(result: subprocess.CompletedProcess[str], db: Path, said: str) -> None:
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 2, (result.stdout[-1000:], result.stderr)
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: ") and str(db) in line and said in line, line
    assert "free some space" in line, line


def finished(db: Path) -> int:
    """How many of the run's tasks are finished."""
    with SessionStore(db) as store:
        return sum(s.status == "finished" for s in store.list_sessions(run=RUN))


def test_a_full_tmpfs_stops_the_run_with_one_line_and_a_rerun_finishes_it(
    bench: Callable[..., subprocess.CompletedProcess[str]],
    clean_run: dict[str, list[str]],
    small_disk: Path,
) -> None:
    db = small_disk / "aah.db"
    filler = small_disk / "filler"
    filler.write_bytes(bytes(6 * 2**20))  # leaves 2 MB, less than the run's -wal file needs
    first = bench(db)
    assert_full_disk_line(first, db, "is full")
    filler.unlink()  # the user frees space
    assert 0 < finished(db) < TASKS, "the disk did not fill in the middle of the run"
    again = bench(db)
    assert again.returncode == 0, again.stderr
    assert events_by_task(db) == clean_run


# The -wal file grows past either limit. At the smaller one the checkpoint
# that would save a session's first steps often fails while a smaller write
# after it still fits: those steps must not be logged without it, or the
# rerun, starting the session over, logs them twice.
@pytest.mark.parametrize("file_size_limit", [900 * 2**10, 2 * 2**20], ids=["900k", "2m"])
def test_a_file_size_limit_stops_the_run_with_one_line_and_a_rerun_finishes_it(
    bench: Callable[..., subprocess.CompletedProcess[str]],
    clean_run: dict[str, list[str]],
    tmp_path: Path,
    file_size_limit: int,
) -> None:
    db = tmp_path / "aah.db"
    first = bench(db, file_size_limit=file_size_limit)
    assert_full_disk_line(first, db, "disk I/O error")
    assert 0 < finished(db) < TASKS, "the limit was not met in the middle of the run"
    again = bench(db)
    assert again.returncode == 0, again.stderr
    assert events_by_task(db) == clean_run


def test_grading_past_a_file_size_limit_is_one_line_and_a_rerun_grades_each_session_once(
    tmp_path: Path,
) -> None:
    db = tmp_path / "aah.db"
    with SessionStore(db) as store:
        store.create_run("g", {"model": "agent-model"})
        for index in range(40):
            session = store.open_session(f"Weather in town {index}?", run="g", task_id=str(index))
            store.append_event(FinalAnswerEvent(session_id=session.id, text="It is 21."))
            store.finish_session(session.id, "finished", "It is 21.")
    grade = ["grade", "--run", "g", "--votes", "1", "--concurrency", "2", "--db", str(db)]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AAH_", "OPENAI_"))}
    with FakeLLMServer(["Pass"]) as grader:
        env |= {"AAH_BASE_URL": grader.base_url, "AAH_MODEL": "fake-model", "COLUMNS": "200"}
        # The -wal file starts empty: 100 kB holds a few verdicts, not forty.
        first = subprocess.run(
            [sys.executable, "-m", "aah", *grade],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            preexec_fn=_file_size_limit(100_000),
        )
        assert_full_disk_line(first, db, "disk I/O error")
        again = subprocess.run(
            [sys.executable, "-m", "aah", *grade], env=env, capture_output=True, text=True
        )
    assert again.returncode == 0, again.stderr
    with SessionStore(db) as store:
        grades = [len(store.grades(s.id)) for s in store.list_sessions(run="g")]
    assert grades == [1] * 40
