"""``--ray``: the workers as Ray actors on a local cluster give what one process gives.

The tests that need Ray start a cluster of their own (``ray start --head
--num-cpus 2`` on 127.0.0.1, in a temporary folder, stopped at the end) and
skip without Ray installed, unless ``AAH_RAY_REQUIRED=1`` (CI, with the ray
extra) makes that a failure. The store is the throwaway PostgreSQL database
of the store tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ctrl_c import restore_ctrl_c
from postgres_cluster import SUPERUSER_PASSWORD, PostgresServer
from pydantic import SecretStr
from runtime_support import ASK_FIRST_SCRIPT, fake_config
from test_workers import (
    AGENT,
    ANSWERS,
    HeldModel,
    _failtalms,
    _kill_when,
    _noting,
    _pid_file,
    answer_every_question,
    assert_each_task_ended_once,
    counts,
    grades,
    stored,
)
from test_workers_cli import HeldModel as HeldEvery
from test_workers_cli import aah as cli
from test_workers_cli import held_run

from aah.benchmark import RunOptions, pick_tasks
from aah.benchmark.bfcl import (
    MULTI_TURN_STEP_LIMIT,
    BfclRunner,
    bfcl_source,
    load_bfcl,
    load_multi_turn,
    score_bfcl_run,
    score_multi_turn_run,
)
from aah.benchmark.failtalms.dataset import load_tasks
from aah.benchmark.ray_workers import check_ray
from aah.benchmark.when2call import When2CallRunner, label_run_with_rules, load_when2call
from aah.benchmark.when2call.tasks import When2CallTask
from aah.db_url import parse_location
from aah.errors import AahError
from aah.llm import ModelConfig
from aah.runtime import Runtime, SessionRequest
from aah.store import SessionStore
from aah.testing import FakeLLMServer
from aah.testing.bfcl_script import ground_truth_script

ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _ours(folder: str) -> list[int]:
    """The cluster's processes: those whose command line names ``folder``, and their children."""
    parents: dict[int, int] = {}
    ours: set[int] = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            parents[int(entry.name)] = int(
                (entry / "stat").read_text().rsplit(")", 1)[1].split()[1]
            )
        except (OSError, ValueError, IndexError):
            continue
        if folder in line:
            ours.add(int(entry.name))
    grown = True
    while grown:
        more = {pid for pid, parent in parents.items() if parent in ours} - ours
        ours |= more
        grown = bool(more)
    return sorted(ours)


def _stop(pids: list[int]) -> None:
    """SIGTERM the cluster's processes, then SIGKILL those still there after 3 s."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + 3
        while pids and time.monotonic() < deadline:
            pids = [pid for pid in pids if Path(f"/proc/{pid}").exists() and not _zombie(pid)]
            time.sleep(0.1)


def _zombie(pid: int) -> bool:
    try:
        return (Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]) == "Z"
    except (OSError, IndexError):
        return True


def _need_ray() -> Any:
    try:
        import ray
    except ImportError:
        if os.environ.get("AAH_RAY_REQUIRED") == "1":
            pytest.fail("AAH_RAY_REQUIRED=1 but Ray is not installed: pip install 'aah[ray]'")
        pytest.skip("Ray is not installed (pip install 'aah[ray]')")
    return ray


@contextlib.contextmanager
def local_cluster() -> Iterator[tuple[str, str]]:
    """A local Ray cluster of 2 CPUs: its address and its folder; stopped by pid at the end."""
    folder = tempfile.mkdtemp(prefix="aahray")  # short: Ray's socket paths have a limit
    port = _free_port()
    command = Path(sys.executable).parent / "ray"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")]),
        "RAY_USAGE_STATS_ENABLED": "0",
    }
    subprocess.run(
        [
            str(command), "start", "--head", "--num-cpus", "2", "--port", str(port),
            "--node-ip-address", "127.0.0.1", "--include-dashboard=false",
            "--temp-dir", folder, "--disable-usage-stats",
        ],
        env=env, check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    try:
        yield f"127.0.0.1:{port}", folder
    finally:
        _stop(_ours(folder))
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def ray_address(request: pytest.FixtureRequest) -> Iterator[str]:
    """A local Ray cluster of 2 CPUs for the test session; its address."""
    ray = _need_ray()
    with contextlib.suppress(pytest.skip.Exception):
        request.getfixturevalue("bfcl_wheel")  # its AAH_BFCL_WHEEL reaches the actors
    with local_cluster() as (address, _):
        try:
            yield address
        finally:
            ray.shutdown()


@pytest.fixture
def pg(postgres_server: PostgresServer) -> Path:
    """A new database, its password in the URL: the actors do not see this PGPASSWORD."""
    database = postgres_server.create_database()
    return parse_location(postgres_server.url(database, password=SUPERUSER_PASSWORD))


def _run_both(questions: list[Any], items: list[Any], db: Path, **ray: Any) -> tuple[Any, ...]:
    with HeldModel(ANSWERS, "never held") as llm:
        options = RunOptions(run="w", concurrency=4, **ray)
        w2c = asyncio.run(When2CallRunner(options, fake_config(llm)).run(questions, db))
        options = RunOptions(run="b", concurrency=4, step_limit=1, **ray)
        bfcl = asyncio.run(BfclRunner(options, fake_config(llm)).run(items, db))
    with SessionStore(db) as store:
        label_run_with_rules(store, "w", questions)
        score_bfcl_run(store, "b", items)
    verdicts = {run: grades(db, run) for run in ("w", "b")}
    return counts(w2c), counts(bfcl), stored(db, "w"), stored(db, "b"), verdicts


def test_a_ray_run_stores_what_one_process_stores(
    ray_address: str, pg: Path, shared_data: Path, tmp_path: Path
) -> None:
    questions = load_when2call(shared_data)[:8]
    items = load_bfcl(bfcl_source(shared_data / "bfcl"), ["simple_python", "irrelevance"])[:8]
    one = _run_both(questions, items, tmp_path / "one.db")
    through_ray = _run_both(questions, items, pg, workers=2, ray=ray_address)
    assert one == through_ray
    assert one[0][0] == len(questions) and one[1][0] == len(items)
    assert all(verdict for run in one[4].values() for verdict in run.values())


def test_a_ray_run_of_failtalms_stores_what_one_process_stores(
    ray_address: str, pg: Path, shared_data: Path, shared_registry: Path, tmp_path: Path
) -> None:
    # The registry travels as its path: each actor opens the same file (here: this host's).
    tasks = pick_tasks(load_tasks(shared_data), 2, [], lambda task: task.setting, "")
    with HeldModel(AGENT, "never held") as llm:
        one = _failtalms(tasks, tmp_path / "one.db", llm, shared_registry, 1)
        two = _failtalms(tasks, pg, llm, shared_registry, 2, ray=ray_address)
    assert counts(one) == counts(two) and one.finished == len(tasks) == 10
    assert stored(tmp_path / "one.db", "r") == stored(pg, "r")


class NotingRunner(When2CallRunner):
    """A When2Call runner that notes which process builds each task's session."""

    folder: Path

    def request_for(self, task: When2CallTask, runtime: Runtime) -> SessionRequest:
        (self.folder / f"{task.id}.pid").write_text(str(os.getpid()))
        return super().request_for(task, runtime)


def test_a_ray_worker_killed_mid_run_loses_nothing_and_runs_nothing_twice(
    ray_address: str, pg: Path, shared_data: Path, tmp_path: Path
) -> None:
    questions = load_when2call(shared_data)[:10]
    held = questions[3]
    marker = held.query[:40]
    assert sum(marker in q.query for q in questions) == 1
    killed: list[int] = []
    llm = HeldModel(ANSWERS, marker)

    def kill() -> None:
        assert llm.arrived.wait(120)
        killed.append(int((tmp_path / f"{held.id}.pid").read_text()))
        os.kill(killed[0], signal.SIGKILL)
        llm.release.set()

    with llm:
        threading.Thread(target=kill, daemon=True).start()
        runner = NotingRunner(
            RunOptions(run="k", concurrency=4, workers=2, ray=ray_address), fake_config(llm)
        )
        runner.folder = tmp_path
        summary = asyncio.run(runner.run(questions, pg))
        alone = asyncio.run(
            When2CallRunner(RunOptions(run="k", concurrency=4), fake_config(llm)).run(
                questions, tmp_path / "one.db"
            )
        )
    assert killed and int((tmp_path / f"{held.id}.pid").read_text()) not in (killed[0], os.getpid())
    assert summary.errors == 0 and counts(summary) == counts(alone), summary.error_messages
    # One session per task (``stored`` checks), each ended as in one process.
    assert stored(pg, "k") == stored(tmp_path / "one.db", "k")


def test_a_stopped_ray_worker_is_killed_once_silent_past_the_bound_and_loses_nothing(
    ray_address: str,
    pg: Path,
    shared_data: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The actor's process is stopped (SIGSTOP) while its model call is out: Ray
    # sees nothing wrong, its events call just never returns.
    monkeypatch.setenv("AAH_WORKER_TIMEOUT", "3")
    caplog.set_level(logging.WARNING, logger="aah.benchmark.workers")
    questions = load_when2call(shared_data)[:10]
    held = questions[3]
    marker = held.query[:40]
    assert sum(marker in q.query for q in questions) == 1
    stopped: list[tuple[int, float]] = []
    run_over = threading.Event()
    llm = HeldModel(ANSWERS, marker)

    def stop() -> None:
        assert llm.arrived.wait(120)
        pid = int((tmp_path / f"{held.id}.pid").read_text())
        os.kill(pid, signal.SIGSTOP)
        stopped.append((pid, time.time()))
        llm.release.set()
        if not run_over.wait(60) and Path(f"/proc/{pid}").exists():
            os.kill(pid, signal.SIGCONT)  # not noticed: the test fails on its checks, not a hang

    with llm:
        threading.Thread(target=stop, daemon=True).start()
        runner = NotingRunner(
            RunOptions(run="k", concurrency=4, workers=2, ray=ray_address), fake_config(llm)
        )
        runner.folder = tmp_path
        try:
            summary = asyncio.run(runner.run(questions, pg))
        finally:
            run_over.set()
        alone = asyncio.run(
            When2CallRunner(RunOptions(run="k", concurrency=4), fake_config(llm)).run(
                questions, tmp_path / "one.db"
            )
        )
    (pid, stopped_at), *_ = stopped
    warnings = [r for r in caplog.records if "handed to the others" in r.getMessage()]
    assert len(warnings) == 1 and "silent for" in warnings[0].getMessage(), warnings
    assert warnings[0].created - stopped_at < 3 + 3.0  # noticed within the bound
    # ray.kill ended the stopped process (Ray's raylet reaps it).
    deadline = time.monotonic() + 30
    while not _zombie(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _zombie(pid), f"the stopped actor's process {pid} is still there"
    assert int((tmp_path / f"{held.id}.pid").read_text()) not in (pid, os.getpid())
    assert summary.errors == 0 and counts(summary) == counts(alone), summary.error_messages
    assert stored(pg, "k") == stored(tmp_path / "one.db", "k")


def test_ray_with_a_sqlite_store_is_refused_in_one_line(tmp_path: Path) -> None:
    for db in (tmp_path / "aah.db", Path("sqlite.db")):
        with pytest.raises(AahError) as raised:
            check_ray(db)
        message = str(raised.value)
        assert "\n" not in message and "PostgreSQL" in message and "--db postgresql://" in message


def test_ray_with_a_sqlite_store_is_refused_before_the_run_is_made(tmp_path: Path) -> None:
    db = tmp_path / "aah.db"
    config = ModelConfig(model="fake", base_url="http://127.0.0.1:9/v1", api_key=SecretStr("k"))
    runner = When2CallRunner(RunOptions(run="r", workers=2, ray="auto"), config)
    with pytest.raises(AahError, match="--ray needs the store on PostgreSQL"):
        asyncio.run(runner.run([], db))
    assert not db.exists()


def test_ray_at_an_address_where_no_cluster_listens_is_one_line() -> None:
    from aah.benchmark.ray_workers import _reachable  # what connect checks before ray.init

    with pytest.raises(AahError) as raised:
        _reachable(f"127.0.0.1:{_free_port()}")
    assert "\n" not in str(raised.value) and "no Ray cluster answers there" in str(raised.value)


def test_ray_without_ray_installed_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now raises ImportError
    with pytest.raises(AahError) as raised:
        check_ray(parse_location("postgresql://u@127.0.0.1:9/db"))
    assert "\n" not in str(raised.value) and "pip install 'aah[ray]'" in str(raised.value)


def test_the_cli_refuses_ray_with_sqlite_in_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "aah", "bench", "run", "--run", "r", "--ray", "auto",
         "--db", str(tmp_path / "aah.db"), "--benchmark", "when2call"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode != 0
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    assert len(lines) == 1 and "--ray needs the store on PostgreSQL" in lines[0], lines


@pytest.mark.parametrize(
    "benchmark",
    [
        ["--benchmark", "fail-talms", "--setting", "underspecified,perfect", "--limit", "2"],
        ["--benchmark", "when2call", "--limit", "2"],
        ["--benchmark", "bfcl", "--category", "simple_python,irrelevance", "--limit", "2"],
    ],
)
def test_every_benchmark_runs_through_ray_from_the_command_line(
    benchmark: list[str], ray_address: str, pg: Path, shared_data: Path, shared_registry: Path
) -> None:
    with HeldModel(AGENT, "never held") as llm:
        env = {
            "AAH_REGISTRY": str(shared_registry),
            "AAH_DATA_DIR": str(shared_data),
            "AAH_BASE_URL": llm.base_url,
            "AAH_MODEL": "fake-model",
            "AAH_API_KEY": "x",
        }
        command = ["bench", "run", "--run", "w", "--db", pg.url, "--no-probe", *benchmark]
        result = cli(
            *command, "--ray", ray_address, "--workers", "2", "--concurrency", "4", env=env
        )
    assert result.returncode == 0, result.stderr
    if "fail-talms" in benchmark:
        assert f"2 Ray worker(s) on {ray_address}" in result.stdout.splitlines()[0]
    with SessionStore(pg) as store:
        sessions = store.list_sessions(run="w")
    assert sessions and len({s.task_id for s in sessions}) == len(sessions)
    assert {s.status for s in sessions} <= {"finished", "step_limit"}, sessions


def test_sessions_parked_in_a_killed_ray_worker_are_woken_in_the_other(
    ray_address: str, pg: Path, shared_data: Path, shared_registry: Path, tmp_path: Path
) -> None:
    # The queue human: questions wait in PostgreSQL for a person; the actor that
    # parked them dies, and the other wakes them when their answers come.
    tasks = pick_tasks(load_tasks(shared_data), 1, [], lambda task: task.setting, "")[:6]
    waiting: list[int] = []
    all_parked, killed = threading.Event(), threading.Event()

    def on_waiting(count: int) -> None:
        waiting.append(count)
        if count == len(tasks):
            all_parked.set()

    person = threading.Thread(
        target=answer_every_question, args=(pg, len(tasks), killed, 120), daemon=True
    )
    person.start()
    with HeldModel(ASK_FIRST_SCRIPT, "never held") as llm:
        dead = _kill_when(all_parked, _pid_file(tmp_path, tasks[0].id), killed)
        runner = _noting(
            tmp_path, shared_registry, llm, human="queue", concurrency=4, ray=ray_address
        )
        summary = asyncio.run(runner.run(tasks, pg, on_waiting=on_waiting))
    person.join()
    assert dead and int(_pid_file(tmp_path, tasks[0].id).read_text()) != dead[0]
    assert (summary.finished, summary.errors) == (len(tasks), 0), summary.error_messages
    assert max(waiting) == len(tasks) and waiting[-1] == 0
    assert_each_task_ended_once(pg, "k", tasks)


def test_ctrl_c_stops_the_ray_workers_and_the_rerun_goes_on(
    ray_address: str, pg: Path, shared_data: Path, shared_registry: Path
) -> None:
    from aah.benchmark.ray_workers import connect

    ray = connect(ray_address)
    llm = HeldEvery(AGENT)
    with llm:
        command, env = held_run("c", pg.url, llm, shared_data, shared_registry)
        command += ["--ray", ray_address]
        runner = subprocess.Popen(
            command,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=restore_ctrl_c,
        )
        for _ in range(2):  # both actors wait on the model
            assert llm.arrived.acquire(timeout=120)
        assert ray.available_resources().get("CPU", 0) == 0  # the two actors hold both CPUs
        runner.send_signal(signal.SIGINT)
        runner.communicate(timeout=60)
        llm.release.set()
        assert runner.returncode != 0
        # The actors are gone: their CPUs come back to the cluster.
        deadline = time.monotonic() + 60
        while ray.available_resources().get("CPU", 0) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert ray.available_resources().get("CPU", 0) == 2
        rerun = cli(*command[3:], env=env)
    assert rerun.returncode == 0, rerun.stderr
    with SessionStore(pg) as store:
        sessions = store.list_sessions(run="c")
    assert len(sessions) == 4 and {s.status for s in sessions} == {"finished"}


def test_the_head_stopped_mid_run_and_a_rerun_on_a_new_cluster_end_every_task_once(
    pg: Path, shared_data: Path, shared_registry: Path
) -> None:
    _need_ray()
    llm = HeldEvery(AGENT)
    with llm:
        command, env = held_run("h", pg.url, llm, shared_data, shared_registry)
        with local_cluster() as (address, folder):
            runner = subprocess.Popen(
                [*command, "--ray", address],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(2):  # both actors wait on the model
                assert llm.arrived.acquire(timeout=120)
            _stop(_ours(folder))  # the head goes, and its actors with it
            _, err = runner.communicate(timeout=180)
        llm.release.set()
        assert runner.returncode != 0
        said = [line for line in err.splitlines() if line.strip()]
        # A warning for each actor lost, then the one error line saying what to do.
        assert said[-1].startswith("error: ") and "run the same command again" in said[-1], err
        assert all("handed to the others" in line for line in said[:-1]), err
        with local_cluster() as (address, _):
            rerun = cli(*command[3:], "--ray", address, env=env)
    assert rerun.returncode == 0, rerun.stderr
    rows = stored(pg, "h")
    assert len(rows) == 4, rows
    for task_id, (status, answer, *_, finals) in rows.items():  # one session a task
        assert status == "finished" and answer and finals == 1, (task_id, rows[task_id])


def test_bfcl_multi_turn_entries_through_ray_as_in_one_process(
    ray_address: str, pg: Path, shared_data: Path, tmp_path: Path, bfcl_wheel: Path
) -> None:
    # Each actor builds BFCL's API instances from the wheel and checks every turn's end.
    categories = ["multi_turn_base", "multi_turn_miss_param"]
    entries = load_multi_turn(shared_data / "bfcl", categories)
    entries = [*entries[:3], *[e for e in entries if e.category == "multi_turn_miss_param"][:3]]
    results = []
    with FakeLLMServer(ground_truth_script(entries)) as llm:
        for db, ray in ((tmp_path / "one.db", {}), (pg, {"workers": 2, "ray": ray_address})):
            options = RunOptions(
                run="m", aah=False, concurrency=4, step_limit=MULTI_TURN_STEP_LIMIT, **ray
            )
            runner = BfclRunner(options, fake_config(llm))
            summary = asyncio.run(runner.run(entries, db, categories=categories))
            assert summary.errors == 0, summary.error_messages
            with SessionStore(db) as store:
                score_multi_turn_run(store, "m", entries)
            results.append((counts(summary), stored(db, "m"), grades(db, "m")))
    assert results[0] == results[1]
    assert any(v == "pass" for verdicts in results[0][2].values() for _, v in verdicts)
