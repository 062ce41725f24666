"""Damaged session databases through the command line: one line naming the file and the fix.

Every kind of damage in ``damaged_databases.DAMAGES`` meets every command
that opens the store. A command either works (only where SQLite can still
read the file) or prints one ``error:`` line that names the file and what to
do, exits 2, and leaves the file as it was.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from damaged_databases import DAMAGES, Damage, restore_modes, run_as

from aah.events import FinalAnswerEvent, ModelCallEvent
from aah.store import SessionStore
from aah.testing.fake_llm import FakeLLMServer

RUN = "r"
# What an error line tells the user to do; each one says at least one of these.
ADVICE = (
    "aah db check",
    "restore it from a backup",
    "pass another --db",
    "pass a --db",
    "pass the session database",
    "pass a file's path",
    "give this user permission",
    "is not readable",  # the command line's own check of a path option
    "upgrade aah",
    "decompress",
    "run a session first",
)

COMMANDS: dict[str, list[str]] = {
    "sessions-list": ["sessions", "list"],
    "report": ["report"],
    "run": ["run", "What is 2 + 2?", "--awareness", "none", "--no-aah"],
    "grade": ["grade", "--run", RUN, "--votes", "1"],
}


@pytest.fixture(scope="module")
def healthy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A session database with a graded run of 60 sessions, checkpointed into one file."""
    path = tmp_path_factory.mktemp("healthy") / "aah.db"
    with SessionStore(path) as store:
        store.create_run(RUN, {"model": "fake-model"})
        for index in range(60):
            session = store.open_session(
                f"question {index}: " + "x" * 300, run=RUN, task_id=str(index)
            )
            for _ in range(4):
                store.append_event(ModelCallEvent(session_id=session.id, model="fake-model"))
            store.append_event(FinalAnswerEvent(session_id=session.id, text="y" * 400))
            store.finish_session(session.id, "finished", "y" * 400)
    _checkpoint(path)
    return path


def _checkpoint(path: Path) -> None:
    import sqlite3

    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("PRAGMA journal_mode = DELETE")  # the copies are of one file, no -wal beside
    conn.close()


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer({"rules": [{"reply": "Pass"}]}) as server:
        yield server


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[Path]:
    """The folder the damaged file goes in; pytest may remove it afterwards."""
    yield tmp_path
    restore_modes(tmp_path)


def aah_as(
    damage: Damage, *args: str, env: dict[str, str], home: Path
) -> subprocess.CompletedProcess[str]:
    """``aah ARGS`` in a subprocess, one that file modes apply to where the damage is in them."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("AAH_", "OPENAI_"))}
    full_env.update({"COLUMNS": "200", "NO_COLOR": "1", "HOME": str(home), **env})
    return subprocess.run(
        [sys.executable, "-m", "aah", *args],
        input="",
        text=True,
        capture_output=True,
        env=full_env,
        timeout=60,
        preexec_fn=run_as() if damage.unprivileged else None,
        cwd=home,
    )


def fingerprint(path: Path) -> str | None:
    """The bytes of a regular file, hashed (None for anything else)."""
    if path.is_symlink() or not path.is_file():
        return None
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except PermissionError:
        return None


def assert_one_error_line(result: subprocess.CompletedProcess[str], db: Path) -> None:
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 2, (result.returncode, result.stdout[-2000:], result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    (line,) = lines
    assert line.startswith("error: "), line
    assert str(db) in line, line
    assert any(advice in line for advice in ADVICE), line


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("kind", list(DAMAGES))
def test_a_damaged_database_is_one_line_naming_the_file_and_the_fix(
    kind: str, command: str, folder: Path, healthy: Path, llm: FakeLLMServer
) -> None:
    damage = DAMAGES[kind]
    db = damage.make(healthy, folder)
    before = fingerprint(db)
    env = {"AAH_BASE_URL": llm.base_url, "AAH_MODEL": "fake-model", "AAH_LLM_RETRIES": "0"}
    result = aah_as(damage, *COMMANDS[command], "--db", str(db), env=env, home=folder)
    if damage.readable:
        # What SQLite can read, commands read: they work, or fail as on a healthy
        # file (an empty one has no run to grade) in one line.
        assert "Traceback" not in result.stderr, result.stderr
        if result.returncode != 0:
            assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
        return
    assert_one_error_line(result, db)
    if not damage.checkpointed:
        assert fingerprint(db) == before, "the damaged file was written to"


@pytest.mark.parametrize("kind", list(DAMAGES))
def test_db_check_names_every_problem_and_exits_1(kind: str, folder: Path, healthy: Path) -> None:
    damage = DAMAGES[kind]
    db = damage.make(healthy, folder)
    before = fingerprint(db)
    result = aah_as(damage, "db", "check", "--db", str(db), env={}, home=folder)
    assert "Traceback" not in result.stderr, result.stderr
    assert fingerprint(db) == before, "db check wrote to the file"
    if damage.readable:
        assert result.returncode == 0, result.stdout + result.stderr
        return
    if not db.exists() and not db.is_symlink():
        assert_one_error_line(result, db)  # nothing there to check
        return
    assert result.returncode == 1, (result.returncode, result.stdout, result.stderr)
    problems = [line for line in result.stdout.splitlines() if line.startswith("problem: ")]
    assert problems, result.stdout
    assert str(db) in problems[0], problems
    as_json = aah_as(damage, "db", "check", "--db", str(db), "--json", env={}, home=folder)
    assert as_json.returncode == 1, as_json.stderr
    report = json.loads(as_json.stdout)
    assert report["healthy"] is False and report["problems"], report
