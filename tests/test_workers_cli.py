"""``aah bench run --workers``: bad values are one line; every benchmark runs in two processes."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from aah.store import SessionStore
from aah.testing.fake_llm import FakeLLMServer

AGENT = {
    "rules": [
        {"when": {"has_tools": False}, "reply": "IDK: I may need more details."},
        {"when": {"last_tool_name": "ask_human"}, "reply": "Done: here is what you asked for."},
        {"when": {"has_tools": True}, "reply": "Done: nothing to ask."},
    ]
}


def aah(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("AAH_", "OPENAI_"))}
    full_env.update({"COLUMNS": "200", "NO_COLOR": "1", **(env or {})})
    return subprocess.run(
        [sys.executable, "-m", "aah", *args],
        text=True,
        capture_output=True,
        env=full_env,
        timeout=180,
    )


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--workers", "0"], "error: --workers '0': use a number of processes (1 or more) or auto"),
        (["--workers", "many"], "error: --workers 'many': use a number"),
        (["--workers", "3", "--concurrency", "2"], "error: --workers 3 is more than --concurrency"),
    ],
)
def test_a_bad_workers_value_is_a_one_line_error(
    flags: list[str], said: str, tmp_path: Path
) -> None:
    result = aah("bench", "run", "--run", "r", "--db", str(tmp_path / "s.db"), *flags)
    assert result.returncode == 2
    assert result.stderr.startswith(said) and len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "s.db").exists()


@pytest.mark.parametrize(
    "benchmark",
    [
        ["--benchmark", "fail-talms", "--setting", "underspecified,perfect", "--limit", "3"],
        ["--benchmark", "when2call", "--limit", "2"],
        ["--benchmark", "bfcl", "--category", "simple_python,irrelevance", "--limit", "3"],
    ],
)
def test_every_benchmark_runs_in_two_worker_processes(
    benchmark: list[str], shared_data: Path, shared_registry: Path, tmp_path: Path
) -> None:
    db = tmp_path / "s.db"
    with FakeLLMServer(AGENT) as llm:
        env = {
            "AAH_REGISTRY": str(shared_registry),
            "AAH_DATA_DIR": str(shared_data),
            "AAH_BASE_URL": llm.base_url,
            "AAH_MODEL": "fake-model",
            "AAH_API_KEY": "x",
        }
        command = ["bench", "run", "--run", "w", "--db", str(db), "--no-probe", *benchmark]
        result = aah(*command, "--workers", "2", "--concurrency", "4", env=env)
    assert result.returncode == 0, result.stderr
    if "fail-talms" in benchmark:
        assert "2 worker processes" in result.stdout.splitlines()[0]
    with SessionStore(db) as store:
        sessions = store.list_sessions(run="w")
    assert sessions and {s.status for s in sessions} <= {"finished", "step_limit"}, sessions
    assert len({s.task_id for s in sessions}) == len(sessions)
