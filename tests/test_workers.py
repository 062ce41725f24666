"""``--workers``: one run in several processes gives what one process gives, and survives a kill."""

import asyncio
import multiprocessing
import os
import pickle
import signal
import sqlite3
import threading
import time
from collections import Counter
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, SecretStr
from runtime_support import ASK_FIRST_SCRIPT, fake_config

from aah.benchmark import RunOptions, RunSummary
from aah.benchmark.bfcl import (
    BfclRunner,
    bfcl_source,
    load_bfcl,
    load_multi_turn,
    score_bfcl_run,
)
from aah.benchmark.failtalms import BatchRunner, batch_human_factory, choose_tasks
from aah.benchmark.failtalms.dataset import Task, load_tasks
from aah.benchmark.when2call import When2CallRunner, label_run_with_rules, load_when2call
from aah.benchmark.workers import (
    WorkerJob,
    _Worker,
    check_local_workers,
    concurrency_shares,
    parse_workers,
    run_in_workers,
    start_method,
)
from aah.errors import AahError
from aah.events import FinalAnswerEvent, HumanAnswerEvent, HumanQuestionEvent, ToolCallEvent
from aah.llm import ModelConfig
from aah.runtime import Runtime, ScriptedHuman, SessionRequest
from aah.store import SessionStore
from aah.testing.fake_llm import FakeLLMServer
from aah.tools.registry.read import Registry

# The oracle agent of tests/test_runner.py: every task asks once, then answers.
AGENT = {
    "rules": [
        {"when": {"has_tools": False}, "reply": "IDK: I may need more details."},
        {"when": {"last_tool_name": "ask_human"}, "reply": "Done: here is what you asked for."},
        {
            "when": {"has_tools": True},
            "reply": {
                "tool_calls": [
                    {"name": "ask_human", "arguments": {"question": "Which one do you mean?"}}
                ]
            },
        },
    ]
}
# A model that answers in one turn (When2Call, BFCL single-turn).
ANSWERS = {
    "rules": [
        {"when": {"has_tools": False}, "reply": "IDK: maybe."},
        {"when": {"has_tools": True}, "reply": "Done: no call needed."},
    ]
}


def stored(db: Path, run: str) -> dict[str, tuple[Any, ...]]:
    """Each task's session as a comparable row: status, final answer, calls, questions."""
    rows: dict[str, tuple[Any, ...]] = {}
    with SessionStore(db) as store:
        sessions = store.list_sessions(run=run)
        assert len({s.task_id for s in sessions}) == len(sessions), "a task has two sessions"
        for session in sessions:
            events = store.events(session.id)
            rows[str(session.task_id)] = (
                session.status,
                session.final_answer,
                [(e.tool, e.arguments, e.ok) for e in events if isinstance(e, ToolCallEvent)],
                [e.question for e in events if isinstance(e, HumanQuestionEvent)],
                [e.answer for e in events if isinstance(e, HumanAnswerEvent)],
                sum(isinstance(e, FinalAnswerEvent) for e in events),
            )
    return rows


def grades(db: Path, run: str) -> dict[str, list[tuple[str, str]]]:
    """Each task's stored verdicts: grader and verdict."""
    with SessionStore(db) as store:
        return {
            str(s.task_id): [(g.grader_model, g.verdict) for g in store.grades(s.id)]
            for s in store.list_sessions(run=run)
        }


def counts(summary: RunSummary) -> tuple[Any, ...]:
    return (summary.total, summary.finished, summary.skipped, summary.errors, summary.stopped)


# -- the option --------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [("1", 1), ("2", 2), (" auto ", 3), ("AUTO", 3)])
def test_workers_reads_a_count_or_auto(text: str, expected: int) -> None:
    assert parse_workers(text, cores=3) == expected


@pytest.mark.parametrize("text", ["0", "-2", "two", "1.5", ""])
def test_a_bad_workers_value_is_one_line(text: str) -> None:
    with pytest.raises(AahError) as raised:
        parse_workers(text)
    assert "\n" not in str(raised.value) and "--workers" in str(raised.value)
    assert str(raised.value).endswith("or auto")


def test_the_concurrency_is_the_runs_total_shared_among_workers() -> None:
    assert concurrency_shares(64, 2) == [32, 32]
    assert concurrency_shares(5, 2) == [3, 2]
    with pytest.raises(AahError, match="more than --concurrency 2"):
        concurrency_shares(2, 3)


def test_worker_processes_are_bounded_by_the_machines_cores() -> None:
    check_local_workers(8, cores=2)  # 4 a core at most
    for workers, cores in ((9, 2), (10**18, 64)):
        with pytest.raises(AahError) as raised:
            check_local_workers(workers, cores=cores)
        assert "\n" not in str(raised.value) and f"at most {4 * cores}" in str(raised.value)
        assert "--ray" in str(raised.value)


def test_a_worker_asks_a_few_tasks_ahead_in_one_message_each_time(tmp_path: Path) -> None:
    # Share 32: it holds up to 8 tasks beyond the 32 it runs, and asks again
    # once 4 places are free, so the parent is woken once every few ended tasks.
    ours, theirs = multiprocessing.Pipe()
    options = RunOptions(run="r", concurrency=64, workers=2)
    model = ModelConfig(base_url="http://127.0.0.1:9/v1", model="m", api_key=SecretStr("k"))

    def never(task: Task, runtime: Runtime) -> SessionRequest:
        raise AssertionError("no task runs here")

    job: WorkerJob[Task] = WorkerJob([], tmp_path / "s.db", model, options, never, 32)
    worker = _Worker(theirs, job)

    async def asks() -> list[Any]:
        said = []
        for active, asked in ((0, 0), (37, 0), (36, 0), (30, 10)):
            worker.active, worker.asked = active, asked
            worker._top_up()
            worker._send(("waiting", 0))  # sent with the ask, in one write
            await asyncio.sleep(0)
            said.append(ours.recv() if ours.poll() else None)
        return said

    assert asyncio.run(asks()) == [
        [("ask", 40), ("waiting", 0)],
        [("waiting", 0)],
        [("ask", 4), ("waiting", 0)],
        [("waiting", 0)],
    ]


def test_workers_start_by_fork_here() -> None:
    assert start_method() == "fork"


def test_the_tasks_and_options_of_every_benchmark_pickle(shared_data: Path) -> None:
    # Spawned workers (where fork is missing) get them pickled.
    options = RunOptions(run="r", workers=2)
    tasks: list[Any] = [
        *load_tasks(shared_data, ["underspecified"])[:2],
        *load_when2call(shared_data)[:2],
        *load_bfcl(bfcl_source(shared_data / "bfcl"), ["simple_python"])[:2],
        *load_multi_turn(shared_data / "bfcl", ["multi_turn_base"])[:2],
    ]
    for thing in [options, *tasks]:
        assert pickle.loads(pickle.dumps(thing)) == thing


# -- the same sessions as one process ------------------------------------------------


def _failtalms(
    tasks: list[Task], db: Path, llm: FakeLLMServer, registry: Path, workers: int, **options: Any
) -> RunSummary:
    runner = BatchRunner(
        RunOptions(run="r", concurrency=4, workers=workers, **options),
        Registry(registry),
        fake_config(llm),
        batch_human_factory("oracle", Registry(registry)),
    )
    return asyncio.run(runner.run(tasks, db))


def test_two_workers_store_what_one_process_stores(
    shared_data: Path, shared_registry: Path, tmp_path: Path
) -> None:
    tasks = choose_tasks(load_tasks(shared_data), 3, [])
    with FakeLLMServer(AGENT) as llm:
        one = _failtalms(tasks, tmp_path / "one.db", llm, shared_registry, 1)
        two = _failtalms(tasks, tmp_path / "two.db", llm, shared_registry, 2)
        again = _failtalms(tasks, tmp_path / "two.db", llm, shared_registry, 2)
    assert counts(one) == counts(two) and one.finished == len(tasks) == 15
    assert (again.already_done, again.finished) == (len(tasks), 0)
    assert stored(tmp_path / "one.db", "r") == stored(tmp_path / "two.db", "r")
    # Concurrent writers from two processes: WAL (and the store's busy timeout) let them.
    with closing(sqlite3.connect(tmp_path / "two.db")) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_two_workers_run_when2call_and_bfcl_as_one_process(
    shared_data: Path, tmp_path: Path
) -> None:
    questions = load_when2call(shared_data)[:8]
    items = load_bfcl(bfcl_source(shared_data / "bfcl"), ["simple_python", "irrelevance"])[:8]
    results = []
    with FakeLLMServer(ANSWERS) as llm:
        for workers in (1, 2):
            options = RunOptions(run="w", concurrency=4, workers=workers)
            db = tmp_path / f"{workers}.db"
            w2c = asyncio.run(When2CallRunner(options, fake_config(llm)).run(questions, db))
            options = RunOptions(run="b", concurrency=4, workers=workers, step_limit=1)
            bfcl = asyncio.run(BfclRunner(options, fake_config(llm)).run(items, db))
            assert w2c.finished + w2c.stopped.total() == len(questions), w2c.error_messages
            assert bfcl.finished + bfcl.stopped.total() == len(items), bfcl.error_messages
            with SessionStore(db) as store:
                label_run_with_rules(store, "w", questions)
                score_bfcl_run(store, "b", items)
            verdicts = {run: grades(db, run) for run in ("w", "b")}
            results.append((counts(w2c), counts(bfcl), stored(db, "w"), stored(db, "b"), verdicts))
    assert results[0] == results[1]
    assert all(verdict for run in results[0][4].values() for verdict in run.values())


# -- tasks handed out as workers ask ---------------------------------------------------


class Item(BaseModel):
    """A task of the fewest parts."""

    id: str
    query: str


def _plain_request(task: Item, runtime: Runtime) -> SessionRequest:
    return SessionRequest(
        query=task.query, aah=False, awareness="none", run="h", task_id=task.id,
        human=ScriptedHuman([]), step_limit=2,
    )  # fmt: skip


class HeldModel(FakeLLMServer):
    """The fake model, holding the first request that names ``marker`` until released."""

    def __init__(self, script: Any, marker: str) -> None:
        super().__init__(script)
        self.marker = marker
        self.arrived, self.release = threading.Event(), threading.Event()

    def _answer(self, body: dict[str, Any]) -> Any:
        if self.marker in str(body.get("messages")) and not self.arrived.is_set():
            self.arrived.set()
            assert self.release.wait(60), "never released"
        return super()._answer(body)


def test_a_worker_held_up_takes_fewer_tasks(tmp_path: Path) -> None:
    items = [Item(id="slow", query="SLOW one")] + [
        Item(id=f"t{n}", query=f"task {n}") for n in range(9)
    ]
    handed: Counter[int] = Counter()
    ended: list[str] = []

    def on_done(task_id: str, outcome: Any) -> None:
        ended.append(task_id)
        if len(ended) == len(items) - 1:  # all but the held one: let it go
            llm.release.set()

    llm = HeldModel({"rules": [{"reply": "Done."}]}, "SLOW")
    with llm:
        summary = asyncio.run(
            run_in_workers(
                items,
                db=tmp_path / "h.db",
                model=fake_config(llm),
                options=RunOptions(run="h", concurrency=2, workers=2),
                manifest={},
                request_for=_plain_request,
                on_done=on_done,
                on_handout=lambda number, task_id: handed.update([number]),
            )
        )
    assert summary.finished == len(items) and ended[-1] == "slow"
    assert sorted(handed.values()) == [1, len(items) - 1]


# -- a worker killed mid-run -------------------------------------------------------------


def _pid_file(folder: Path, task_id: str) -> Path:
    return folder / f"{task_id}.pid"


class NotingRunner(BatchRunner):
    """A Fail-TaLMs runner that notes which process builds each task's session."""

    folder: Path

    def request_for(self, task: Task, runtime: Runtime) -> SessionRequest:
        _pid_file(self.folder, task.id).write_text(str(os.getpid()))
        return super().request_for(task, runtime)


def _noting(tmp_path: Path, registry: Path, llm: FakeLLMServer, **options: Any) -> NotingRunner:
    runner = NotingRunner(
        RunOptions(run="k", workers=2, **options), Registry(registry), fake_config(llm)
    )
    runner.folder = tmp_path
    return runner


def _kill_when(ready: threading.Event, pid_file: Path, then: threading.Event) -> list[int]:
    """SIGKILL the process that built ``pid_file``'s task once ``ready``; the pid killed."""
    killed: list[int] = []

    def kill() -> None:
        assert ready.wait(60)
        killed.append(int(pid_file.read_text()))
        os.kill(killed[0], signal.SIGKILL)
        then.set()

    threading.Thread(target=kill, daemon=True).start()
    return killed


def assert_each_task_ended_once(db: Path, run: str, tasks: list[Task]) -> None:
    rows = stored(db, run)
    assert sorted(rows) == sorted(t.id for t in tasks)
    for task_id, (status, answer, _, questions, answers, finals) in rows.items():
        assert status == "finished" and answer and finals == 1, (task_id, rows[task_id])
        assert len(questions) == len(answers) == 1, (task_id, rows[task_id])


def test_a_worker_killed_mid_run_loses_nothing_and_runs_nothing_twice(
    shared_data: Path, shared_registry: Path, tmp_path: Path, store_location: Path
) -> None:
    # On a SQLite file in WAL, then on PostgreSQL: the workers share the store.
    tasks = choose_tasks(load_tasks(shared_data), 2, [])
    held = tasks[3]
    marker = held.query[:40]
    assert "'" not in marker and sum(marker in t.query for t in tasks) == 1
    llm = HeldModel(AGENT, marker)
    with llm:
        killed = _kill_when(llm.arrived, _pid_file(tmp_path, held.id), llm.release)
        runner = _noting(tmp_path, shared_registry, llm, concurrency=4)
        summary = asyncio.run(runner.run(tasks, store_location))
    # Handed once more, to the other worker, which ran it to its end.
    assert killed and int(_pid_file(tmp_path, held.id).read_text()) not in (killed[0], os.getpid())
    assert (summary.finished, summary.errors) == (len(tasks), 0), summary.error_messages
    assert_each_task_ended_once(store_location, "k", tasks)


def answer_every_question(db: Path, count: int, start: threading.Event, seconds: float) -> None:
    """An annotator: once ``start`` is set, answers each question in the queue until ``count``."""
    assert start.wait(seconds)
    answered: set[str] = set()
    deadline = time.monotonic() + seconds
    with SessionStore(db) as store:
        while len(answered) < count and time.monotonic() < deadline:
            for request in store.humans.pending_human_requests():
                if request.id not in answered:
                    assert store.humans.answer_human_request(request.id, "ana", "Lisbon")
                    answered.add(request.id)
            time.sleep(0.05)


def test_sessions_parked_in_a_killed_worker_are_woken_in_the_other(
    shared_data: Path, shared_registry: Path, tmp_path: Path
) -> None:
    tasks = choose_tasks(load_tasks(shared_data), 1, [])[:6]
    db = tmp_path / "q.db"
    waiting: list[int] = []
    all_parked, killed = threading.Event(), threading.Event()

    def on_waiting(count: int) -> None:
        waiting.append(count)
        if count == len(tasks):
            all_parked.set()

    person = threading.Thread(
        target=answer_every_question, args=(db, len(tasks), killed, 60), daemon=True
    )
    person.start()
    with FakeLLMServer(ASK_FIRST_SCRIPT) as llm:
        dead = _kill_when(all_parked, _pid_file(tmp_path, tasks[0].id), killed)
        runner = _noting(tmp_path, shared_registry, llm, human="queue", concurrency=4)
        summary = asyncio.run(runner.run(tasks, db, on_waiting=on_waiting))
    person.join()
    assert dead and int(_pid_file(tmp_path, tasks[0].id).read_text()) != dead[0]
    assert (summary.finished, summary.errors) == (len(tasks), 0), summary.error_messages
    assert max(waiting) == len(tasks) and waiting[-1] == 0
    assert_each_task_ended_once(db, "k", tasks)


def test_two_workers_run_bfcl_multi_turn_entries_as_one_process(
    shared_data: Path, tmp_path: Path, bfcl_wheel: Path
) -> None:
    from aah.benchmark.bfcl import MULTI_TURN_STEP_LIMIT, score_multi_turn_run
    from aah.testing.bfcl_script import ground_truth_script

    entries = load_multi_turn(shared_data / "bfcl", ["multi_turn_base", "multi_turn_miss_param"])
    entries = [*entries[:3], *[e for e in entries if e.category == "multi_turn_miss_param"][:3]]
    results = []
    with FakeLLMServer(ground_truth_script(entries)) as llm:
        for workers in (1, 2):
            db = tmp_path / f"{workers}.db"
            options = RunOptions(
                run="m", aah=False, concurrency=4, workers=workers, step_limit=MULTI_TURN_STEP_LIMIT
            )
            summary = asyncio.run(
                BfclRunner(options, fake_config(llm)).run(
                    entries, db, categories=["multi_turn_base", "multi_turn_miss_param"]
                )
            )
            assert summary.errors == 0, summary.error_messages
            with SessionStore(db) as store:
                score_multi_turn_run(store, "m", entries)
            results.append((counts(summary), stored(db, "m"), grades(db, "m")))
    assert results[0] == results[1]
    assert any(v == "pass" for grades in results[0][2].values() for _, v in grades)


def test_spawned_workers_run_what_pickles_and_refuse_what_does_not_in_one_line(
    shared_data: Path, shared_registry: Path, tmp_path: Path
) -> None:
    # Where fork is missing, each worker imports aah afresh and gets its job pickled.
    questions = load_when2call(shared_data)[:4]
    options = RunOptions(run="s", concurrency=2, workers=2)
    with FakeLLMServer(ANSWERS) as llm:
        runner = When2CallRunner(options, fake_config(llm))
        summary = asyncio.run(
            run_in_workers(
                questions,
                db=tmp_path / "s.db",
                model=fake_config(llm),
                options=options,
                manifest=runner.manifest(),
                request_for=runner.request_for,
                method="spawn",
            )
        )
        assert summary.finished + summary.stopped.total() == len(questions), summary
        failtalms = BatchRunner(options, Registry(shared_registry), fake_config(llm))
        with pytest.raises(AahError) as raised:
            asyncio.run(
                run_in_workers(
                    load_tasks(shared_data, ["perfect"])[:2],
                    db=tmp_path / "f.db",
                    model=fake_config(llm),
                    options=options,
                    manifest={},
                    request_for=failtalms.request_for,
                    method="spawn",
                )
            )
    message = str(raised.value)
    assert message.startswith("--workers: this run cannot be sent to worker processes")
    assert message.endswith("use --workers 1 on this platform") and "\n" not in message
    assert not (tmp_path / "f.db").exists()


class HeldTwice(FakeLLMServer):
    """The fake model, holding the first two requests that name ``marker``, each until released."""

    def __init__(self, script: Any, marker: str) -> None:
        super().__init__(script)
        self.marker, self.seen = marker, 0
        self.arrived = [threading.Event(), threading.Event()]
        self.release = [threading.Event(), threading.Event()]

    def _answer(self, body: dict[str, Any]) -> Any:
        if self.marker in str(body.get("messages")) and self.seen < 2:
            held, self.seen = self.seen, self.seen + 1
            self.arrived[held].set()
            assert self.release[held].wait(60), "never released"
        return super()._answer(body)


def test_a_task_whose_two_workers_die_is_left_to_the_rerun_which_ends_every_task(
    shared_data: Path, shared_registry: Path, tmp_path: Path
) -> None:
    tasks = choose_tasks(load_tasks(shared_data), 1, [])
    held = tasks[2]
    marker = held.query[:40]
    assert "'" not in marker and sum(marker in t.query for t in tasks) == 1
    db = tmp_path / "k.db"
    llm = HeldTwice(AGENT, marker)
    with llm:
        killed = [
            _kill_when(llm.arrived[n], _pid_file(tmp_path, held.id), llm.release[n]) for n in (0, 1)
        ]
        try:
            first = asyncio.run(
                _noting(tmp_path, shared_registry, llm, concurrency=2).run(tasks, db)
            )
        except AahError as stopped:  # tasks were left when the second worker died
            message = str(stopped)
            assert message.startswith("every worker process died (the last: killed by SIGKILL)")
            assert message.endswith("run the same command again to go on")
        else:  # it was the last task left: the run ended, that task failed
            assert first.errors == 1 and first.error_messages[0].startswith(
                "the worker processes running it died twice"
            )
        assert killed[0] != killed[1]
        rerun = asyncio.run(_noting(tmp_path, shared_registry, llm, concurrency=2).run(tasks, db))
    assert rerun.errors == 0 and rerun.finished + rerun.already_done == len(tasks)
    assert rerun.finished >= 1  # the held task at least
    assert_each_task_ended_once(db, "k", tasks)
