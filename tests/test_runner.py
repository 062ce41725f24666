"""Batch runs: a 30-task run, a run killed with SIGKILL and resumed, shards merged."""

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from pydantic import SecretStr
from runtime_support import fake_config

from aah.benchmark import RunOptions, check_manifest, parse_shard, shard_tasks
from aah.benchmark.failtalms import BatchRunner, batch_human_factory, choose_tasks
from aah.benchmark.failtalms.dataset import load_tasks
from aah.errors import AahError
from aah.llm import ModelConfig
from aah.runtime.humans import QueueHuman
from aah.runtime.loop import worker_count, worker_threads
from aah.store import PINNED_FIELDS, pinned_difference
from aah.store.merge import merge_databases
from aah.store.sessions import SessionStore
from aah.testing.fake_llm import FakeLLMServer
from aah.tools.registry.build import build_registry
from aah.tools.registry.read import Registry

# A stateless agent: every task asks one question, then answers.
AGENT = {
    "rules": [
        {"when": {"has_tools": False}, "reply": "IDK: I may need more details."},
        {"when": {"last_tool_name": "ask_human"}, "reply": "Done: here is what you asked for."},
        {
            "when": {"has_tools": True},
            "reply": {
                "tool_calls": [
                    {
                        "name": "ask_human",
                        "arguments": {"question": "Which one do you mean exactly?"},
                    }
                ]
            },
        },
    ]
}


@pytest.fixture(scope="module")
def registry_path(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("registry") / "registry.db"
    build_registry(shared_data, path)
    return path


def _tasks(shared_data: Path, limit: int) -> list:  # type: ignore[type-arg]
    return choose_tasks(load_tasks(shared_data), limit, [])


def _run(
    tasks: list,
    db: Path,
    server: FakeLLMServer,
    registry_path: Path,  # type: ignore[type-arg]
    run: str = "r",
    **options: object,
) -> object:
    runner = BatchRunner(
        RunOptions(run=run, concurrency=8, **options),  # type: ignore[arg-type]
        Registry(registry_path),
        fake_config(server),
        batch_human_factory("oracle", Registry(registry_path)),
    )
    return asyncio.run(runner.run(tasks, db))


def test_thirty_tasks_across_all_settings(
    shared_data: Path, registry_path: Path, tmp_path: Path
) -> None:
    tasks = _tasks(shared_data, 6)
    assert len(tasks) == 30 and len({t.setting for t in tasks}) == 5
    db = tmp_path / "aah.db"
    with FakeLLMServer(AGENT) as llm:
        summary = _run(tasks, db, llm, registry_path)
    assert summary.finished == 30 and summary.errors == 0  # type: ignore[attr-defined]
    store = SessionStore(db)
    sessions = store.list_sessions(run="r")
    assert sorted(s.task_id for s in sessions) == sorted(t.id for t in tasks)
    assert all(s.n_human_questions == 1 for s in sessions)
    run = store.get_run("r")
    assert run is not None and run.manifest["human"] == "oracle"
    assert run.manifest["registry_hash"] == Registry(registry_path).registry_hash
    assert "agent_system" in run.manifest["prompt_versions"]
    # Under-specified tasks got their hidden facts from the oracle.
    under = next(s for s in sessions if s.setting == "underspecified")
    answer = [e for e in store.events(under.id) if e.kind == "human_answer"][0]
    assert answer.answered_by == "oracle" and answer.answer  # type: ignore[union-attr]
    # A rerun finds everything done and sends no request.
    with FakeLLMServer(AGENT) as llm:
        again = _run(tasks, db, llm, registry_path)
        assert llm.requests == []
    assert again.already_done == 30  # type: ignore[attr-defined]


def test_resuming_with_other_flags_is_refused(
    shared_data: Path, registry_path: Path, tmp_path: Path
) -> None:
    tasks = _tasks(shared_data, 1)
    with FakeLLMServer(AGENT) as llm:
        _run(tasks, tmp_path / "a.db", llm, registry_path)
        with pytest.raises(AahError, match="was made with aah=True"):
            _run(tasks, tmp_path / "a.db", llm, registry_path, aah=False)


def test_a_timed_out_task_is_recorded_as_the_runtime_records_a_failure(
    shared_data: Path, registry_path: Path, tmp_path: Path
) -> None:
    tasks = _tasks(shared_data, 1)[:2]
    db = tmp_path / "slow.db"
    with FakeLLMServer(AGENT, latency_ms=1200) as llm:
        runner = BatchRunner(
            RunOptions(run="slow", concurrency=2, task_timeout=0.3),
            Registry(registry_path),
            fake_config(llm),
        )
        summary = asyncio.run(runner.run(tasks, db))
    assert summary.errors == 2 and summary.error_messages[0].startswith("task timed out after")
    store = SessionStore(db)
    for session in store.list_sessions(run="slow"):
        assert session.status == "error"
        last = store.events(session.id)[-1]
        assert last.kind == "error" and last.where == "runner"  # type: ignore[union-attr]
        assert last.message.startswith("task timed out after")  # type: ignore[union-attr]
    store.close()


def test_a_runner_without_a_human_factory_uses_the_named_batch_human(
    shared_data: Path, registry_path: Path, tmp_path: Path
) -> None:
    config = ModelConfig(base_url="http://127.0.0.1:9/v1", model="m", api_key=SecretStr("k"))
    runner = BatchRunner(
        RunOptions(run="r", human="queue", human_deadline=4), Registry(registry_path), config
    )
    task = _tasks(shared_data, 1)[0]
    store = SessionStore(tmp_path / "q.db")
    human = runner.human_factory(task, SimpleNamespace(store=store))  # type: ignore[arg-type]
    assert isinstance(human, QueueHuman) and human.deadline_seconds == 4 and human.store is store
    store.close()
    with pytest.raises(AahError, match="^unknown human 'nobody': use one of oracle, simulated"):
        BatchRunner(
            RunOptions(run="r", human="nobody"),  # type: ignore[arg-type]
            Registry(registry_path),
            config,
        )


# Two manifests of one run, and the pinned field they disagree on (None: they agree).
MANIFEST_PAIRS = [
    ({"model": "a", "seed": 1}, {"model": "a", "seed": 2}, None),
    ({"model": "a"}, {"model": "b"}, ("model", "a", "b")),
    (
        {"http": "mock", "human": "oracle"},
        {"http": "live", "human": "queue"},
        ("human", "oracle", "queue"),
    ),
    ({"registry_hash": "x"}, {}, None),
    ({"step_limit": 10, "aah": True}, {"step_limit": 10, "aah": False}, ("aah", True, False)),
    ({"unavailable": "hidden"}, {"unavailable": "broken"}, ("unavailable", "hidden", "broken")),
    ({"prompt_versions": {"a": "1"}}, {"prompt_versions": {"a": "2"}}, None),
    # Given the tools or found them (find_tools) are two experiments.
    ({"tools": "given"}, {"tools": "registry"}, ("tools", "given", "registry")),
    ({"discover": False}, {"discover": True}, ("discover", False, True)),
    ({"discover_k": 5}, {"discover_k": 8}, ("discover_k", 5, 8)),
    ({"approvals": None}, {"approvals": {"rules": []}}, ("approvals", None, {"rules": []})),
    ({"model": "a"}, {"model": "a", "approvals": None}, None),  # a run from before approvals
]


@pytest.mark.parametrize(("ours", "theirs", "expected"), MANIFEST_PAIRS)
def test_the_pinned_fields_are_one_list_for_resume_and_merge(
    ours: dict[str, object], theirs: dict[str, object], expected: tuple[object, ...] | None
) -> None:
    assert pinned_difference(ours, theirs) == expected
    if expected is None:
        check_manifest(ours, theirs, "r")
    else:
        with pytest.raises(AahError, match=f"^run 'r' was made with {expected[0]}="):
            check_manifest(ours, theirs, "r")
    # Resume and merge refuse on the same fields, and only on those.
    assert set(PINNED_FIELDS) == {"model", "aah", "human", "http", "unavailable"} | {
        "step_limit",
        "registry_hash",
        "tools",
        "discover",
        "discover_k",
        "approvals",
    }


def test_worker_threads_are_sized_for_the_run_and_leave_the_loop_usable() -> None:
    async def main() -> tuple[float, list[int]]:
        async with worker_threads(8):
            started = time.perf_counter()
            await asyncio.gather(*(asyncio.to_thread(time.sleep, 0.5) for _ in range(16)))
            elapsed = time.perf_counter() - started
        # The default-sized pool that replaced it still runs work.
        after = await asyncio.gather(*(asyncio.to_thread(lambda: 1) for _ in range(3)))
        return elapsed, after

    elapsed, after = asyncio.run(main())
    # 16 sleeps on 16 threads take one round (0.5 s); Python's default pool (6
    # here) takes three (1.5 s). The margin is for a loaded machine.
    assert elapsed < 1.2 and after == [1, 1, 1]
    assert worker_count(8) == 16 and worker_count(64) == 128 and worker_count(1) >= 5


def test_broken_mode_offers_the_unavailable_tool_and_it_fails(
    shared_data: Path, registry_path: Path, tmp_path: Path
) -> None:
    task = next(t for t in load_tasks(shared_data, ["replaceable"]) if t.unavailable)
    broken = task.unavailable[0]
    script = {
        "rules": [
            {"when": {"has_tools": False}, "reply": "Yes."},
            {"when": {"last_tool_name": broken}, "reply": "That service is down."},
            {
                "when": {"has_tools": True},
                "reply": {"tool_calls": [{"name": broken, "arguments": {}}]},
            },
        ]
    }
    db = tmp_path / "b.db"
    with FakeLLMServer(script) as llm:
        _run([task], db, llm, registry_path, unavailable="broken")
        offered = {t["function"]["name"] for t in llm.requests[-1]["tools"]}
    assert broken in offered
    store = SessionStore(db)
    calls = [e for e in store.events(store.list_sessions()[0].id) if e.kind == "tool_call"]
    assert calls and not calls[0].ok  # type: ignore[union-attr]


def test_shards_are_disjoint_and_cover_everything() -> None:
    items = list(range(10))
    shards = [shard_tasks(items, (i, 3)) for i in (1, 2, 3)]  # type: ignore[arg-type]
    assert sorted(sum(shards, [])) == items
    assert parse_shard("2/4") == (2, 4)
    for bad in ("0/4", "5/4", "x", "1-2"):
        with pytest.raises(AahError):
            parse_shard(bad)


def test_shard_then_merge_equals_an_unsharded_run(
    shared_data: Path, registry_path: Path, tmp_path: Path
) -> None:
    tasks = _tasks(shared_data, 2)
    with FakeLLMServer(AGENT) as llm:
        _run(tasks, tmp_path / "whole.db", llm, registry_path)
        for index in (1, 2):
            shard = shard_tasks(tasks, (index, 2))
            _run(shard, tmp_path / f"shard{index}.db", llm, registry_path)
    merge_databases([tmp_path / "shard1.db", tmp_path / "shard2.db"], tmp_path / "merged.db")
    merge_databases([tmp_path / "shard1.db"], tmp_path / "merged.db")  # idempotent

    def digest(db: Path) -> list[tuple[object, ...]]:
        store = SessionStore(db)
        return sorted(
            (
                s.task_id,
                s.status,
                s.final_answer,
                s.n_human_questions,
                tuple(e.kind for e in store.events(s.id)),
            )
            for s in store.list_sessions(run="r")
        )

    assert digest(tmp_path / "merged.db") == digest(tmp_path / "whole.db")


def test_killed_run_resumes_and_every_task_exists_once(
    shared_data: Path, registry_path: Path, tmp_path: Path
) -> None:
    db = tmp_path / "kill.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AAH_", "OPENAI_"))}
    command = [
        sys.executable,
        "-m",
        "aah",
        "bench",
        "run",
        "--run",
        "k",
        "--setting",
        "all",
        "--limit",
        "4",
        "--concurrency",
        "4",
        "--db",
        str(db),
    ]
    with FakeLLMServer(AGENT, latency_ms=40) as llm:
        env.update(
            {
                "AAH_REGISTRY": str(registry_path),
                "AAH_BASE_URL": llm.base_url,
                "AAH_MODEL": "fake-model",
                "AAH_DATA_DIR": str(shared_data),
                "AAH_LLM_RETRIES": "0",
            }
        )
        first = subprocess.Popen(
            command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        deadline = time.monotonic() + 120
        while True:
            assert first.poll() is None, "the run ended before it could be killed"
            assert time.monotonic() < deadline
            if db.exists():
                done = [
                    s for s in SessionStore(db).list_sessions(run="k") if s.status == "finished"
                ]
                if len(done) >= 3:
                    break
            time.sleep(0.05)
        first.send_signal(signal.SIGKILL)
        first.wait()
        partial = SessionStore(db).list_sessions(run="k")
        assert len(partial) < 20
        second = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
        assert second.returncode == 0, second.stderr
    sessions = SessionStore(db).list_sessions(run="k")
    assert len(sessions) == 20
    assert len({s.task_id for s in sessions}) == 20
    assert all(s.status == "finished" for s in sessions)
    for session in sessions:
        # The log agrees with the checkpoints: no step of a session killed
        # mid-flight is logged twice, and seqs have no gap.
        events = SessionStore(db).events(session.id)
        kinds = [e.kind for e in events]
        assert [e.seq for e in events] == list(range(1, len(events) + 1))
        assert kinds.count("final_answer") == 1
        assert kinds.count("human_question") == kinds.count("human_answer") == 1
        assert kinds.count("model_call") == kinds.count("awareness") + 2
    assert "already done (resumed)" in second.stdout


def test_activity_shows_the_work_of_a_slow_server_while_no_task_ends(
    shared_data: Path, registry_path: Path, tmp_path: Path
) -> None:
    """A progress bar at 0/N still shows sessions running and model calls out."""
    from aah.runtime import Activity

    tasks = _tasks(shared_data, 1)[:3]
    activity = Activity()
    seen: list[str] = []

    async def run_and_watch() -> None:
        runner = BatchRunner(
            RunOptions(run="slow", concurrency=3),
            Registry(registry_path),
            fake_config(llm),
            batch_human_factory("oracle", Registry(registry_path)),
        )
        job = asyncio.ensure_future(runner.run(tasks, tmp_path / "a.db", activity=activity))
        while not job.done():
            seen.append(activity.describe())
            await asyncio.sleep(0.05)
        await job

    with FakeLLMServer(AGENT, latency_ms=400) as llm:
        asyncio.run(run_and_watch())
    busy = [line for line in seen if "model call" in line]
    assert busy and busy[0].startswith("3 running"), seen[:5]
    assert any("last step" in line for line in seen)
    assert activity.running == 0 and activity.describe() == ""


def test_merge_carries_approved_calls_run_records_once(tmp_path: Path) -> None:
    # A shard resumed from the merged file must find its approved calls'
    # runs there, or it would send an approved call a second time.
    shard = tmp_path / "shard.db"
    with SessionStore(shard) as store:
        store.create_run("r", {"model": "m"})
        session = store.open_session("Book it", run="r", task_id="1")
        assert store.approved.start_approved_run(session.id, "call-1", {"day": "Monday"}) is None
        store.approved.finish_approved_run(
            session.id,
            "call-1",
            status_code=200,
            ok=True,
            result="booked",
            latency_ms=3.0,
            http_mode="live",
        )
    into = tmp_path / "merged.db"
    (summary,) = merge_databases([shard], into)
    (again,) = merge_databases([shard], into)  # idempotent
    assert (summary.approved_runs, again.approved_runs) == (1, 0)
    with SessionStore(into) as store:
        run = store.approved.start_approved_run(session.id, "call-1", {"day": "Monday"})
    assert run is not None and run.finished and run.result == "booked"
