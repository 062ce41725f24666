"""``aah bench run --workers``: bad values are one line; every benchmark runs in two processes."""

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from ctrl_c import restore_ctrl_c

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
        (
            ["--workers", "5000", "--concurrency", "100000"],
            f"error: --workers 5000: this machine has {os.cpu_count()} core(s)",
        ),
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


class HeldModel(FakeLLMServer):
    """The fake model, holding every chat request until released; counts arrivals."""

    def __init__(self, script: Any) -> None:
        super().__init__(script)
        self.release = threading.Event()
        self.arrived = threading.Semaphore(0)

    def _answer(self, body: dict[str, Any]) -> Any:
        self.arrived.release()
        self.release.wait(60)
        return super()._answer(body)


def held_run(
    run: str, db: str, llm: FakeLLMServer, shared_data: Path, shared_registry: Path
) -> tuple[list[str], dict[str, str]]:
    """``aah bench run`` of 4 Fail-TaLMs tasks, 2 workers at 2 in all, against ``llm``; its env."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AAH_", "OPENAI_"))}
    env.update(
        {
            "AAH_REGISTRY": str(shared_registry),
            "AAH_DATA_DIR": str(shared_data),
            "AAH_BASE_URL": llm.base_url,
            "AAH_MODEL": "fake-model",
            "AAH_API_KEY": "x",
            "NO_COLOR": "1",
            "COLUMNS": "200",
        }
    )
    command = [sys.executable, "-m", "aah", "bench", "run", "--run", run, "--db", db]
    command += ["--no-probe", "--setting", "perfect", "--limit", "4", "--workers", "2"]
    return [*command, "--concurrency", "2"], env


def test_ctrl_c_stops_the_workers_and_the_rerun_goes_on(
    shared_data: Path, shared_registry: Path, tmp_path: Path
) -> None:
    db = tmp_path / "s.db"
    llm = HeldModel(AGENT)
    with llm:
        command, env = held_run("c", str(db), llm, shared_data, shared_registry)
        runner = subprocess.Popen(
            command,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=restore_ctrl_c,
        )
        for _ in range(2):  # both workers wait on the model
            assert llm.arrived.acquire(timeout=60)
        children = Path(f"/proc/{runner.pid}/task/{runner.pid}/children").read_text().split()
        assert len(children) == 2
        runner.send_signal(signal.SIGINT)
        runner.communicate(timeout=60)
        llm.release.set()
        assert runner.returncode != 0
        assert not [pid for pid in children if Path(f"/proc/{pid}").exists()]
        rerun = aah(*command[3:], env=env)
    assert rerun.returncode == 0, rerun.stderr
    with SessionStore(db) as store:
        sessions = store.list_sessions(run="c")
    assert len(sessions) == 4 and {s.status for s in sessions} == {"finished"}
