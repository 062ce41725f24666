"""BFCL multi-turn entries run end to end: real entries, BFCL's own APIs, a fake model over HTTP.

The fake model plays an entry's ground truth (or a change of it); the
session runs every turn, its calls on BFCL's API classes from the pinned
wheel, and each turn's end is logged with the instances' state and the
check. These tests need the wheel (the ``bfcl_wheel`` fixture).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from runtime_support import fake_config

from aah.benchmark import RunOptions
from aah.benchmark.bfcl import BfclRunner
from aah.benchmark.bfcl.multi_turn_check import parse_call_text
from aah.benchmark.bfcl.multi_turn_run import MULTI_TURN_STEP_LIMIT, guessed_values, model_turns
from aah.benchmark.bfcl.multi_turn_tasks import (
    ADDED_FUNCTIONS_MESSAGE,
    MULTI_TURN_CATEGORIES,
    MultiTurnTask,
    load_multi_turn,
)
from aah.events import (
    HumanAnswerEvent,
    StoppedEvent,
    ToolCallEvent,
    TurnEndedEvent,
    UserTurnEvent,
)
from aah.store import SessionStore
from aah.testing.fake_llm import FakeLLMServer

ASKS = "Which one do you mean? Please tell me the missing detail."


@pytest.fixture(scope="module")
def entries(shared_data: Path) -> dict[str, MultiTurnTask]:
    tasks = load_multi_turn(shared_data / "bfcl", MULTI_TURN_CATEGORIES)
    return {task.id: task for task in tasks}


def calls_reply(texts: list[str]) -> dict[str, Any]:
    calls = [parse_call_text(text) for text in texts]
    return {"tool_calls": [{"name": c.name, "arguments": dict(c.arguments)} for c in calls]}


def playing(task: MultiTurnTask, turns: list[list[str]] | None = None) -> dict[str, Any]:
    """A script that makes ``turns``' calls (the ground truth's by default), one reply a turn."""
    replies: list[Any] = []
    for calls in turns if turns is not None else [list(t) for t in task.ground_truth]:
        if calls:
            replies += [calls_reply(calls), "Done."]
        else:
            replies.append(ASKS)
    return {"replies": replies, "exhausted": "error"}


def run(task: MultiTurnTask, db: Path, llm: FakeLLMServer, name: str = "mt", **options: Any) -> Any:
    settings: dict[str, Any] = {"aah": False, "concurrency": 1, **options}
    runner = BfclRunner(RunOptions(run=name, **settings), fake_config(llm))
    return asyncio.run(runner.run([task], db, categories=[task.category], data_source="test"))


def events_of(db: Path, run_name: str = "mt") -> list[Any]:
    with SessionStore(db) as store:
        (session,) = store.list_sessions(run=run_name)
        return list(store.events(session.id))


def turn_checks(events: list[Any]) -> dict[int, dict[str, Any]]:
    return {e.turn: e.check for e in events if isinstance(e, TurnEndedEvent)}


@pytest.mark.parametrize(
    "entry",
    [
        "multi_turn_base_5",
        "multi_turn_base_46",
        "multi_turn_miss_param_4",
        "multi_turn_miss_func_4",
    ],
)
def test_the_ground_truth_passes_every_turn(
    entry: str, entries: dict[str, MultiTurnTask], tmp_path: Path, bfcl_wheel: Path
) -> None:
    task = entries[entry]
    db = tmp_path / "mt.db"
    with FakeLLMServer(playing(task)) as llm:
        summary = run(task, db, llm)
        requests = list(llm.requests)
    assert summary.finished == 1 and summary.errors == 0
    events = events_of(db)
    said = [e for e in events if isinstance(e, UserTurnEvent)]
    assert [e.turn for e in said] == list(range(1, len(task.turns)))
    checks = turn_checks(events)
    assert sorted(checks) == list(range(len(task.turns)))
    assert all(check["passed"] and check["turn_passed"] for check in checks.values()), checks
    for index, truth in enumerate(task.ground_truth):
        assert checks[index]["ground_truth_empty"] is (not truth)
    # Each turn's state is logged: the file system's working directory is there.
    ended = [e for e in events if isinstance(e, TurnEndedEvent)]
    assert all(e.state and "GorillaFileSystem" in e.state for e in ended)
    # Withheld functions join at their turn, never before; excluded ones never.
    offered = [{t["function"]["name"] for t in r.get("tools", [])} for r in requests]
    for turn, tools in task.added.items():
        names = {tool.name for tool in tools}
        first_of_turn = _first_request_of_turn(requests, task, turn)
        assert all(not names & offered[i] for i in range(first_of_turn))
        assert names <= offered[first_of_turn]


def _first_request_of_turn(requests: list[dict[str, Any]], task: MultiTurnTask, turn: int) -> int:
    text = ADDED_FUNCTIONS_MESSAGE if not task.turns[turn][0].content else None
    wanted = text or task.turns[turn][0].content
    return next(
        i
        for i, request in enumerate(requests)
        if any(m.get("role") == "user" and m.get("content") == wanted for m in request["messages"])
    )


def test_a_password_checked_live_though_the_log_redacts_it(
    entries: dict[str, MultiTurnTask], tmp_path: Path, bfcl_wheel: Path
) -> None:
    """BFCL's APIs take passwords; the log hides them by name, the checks saw the real value.

    (The user's own message says the password in words; the log keeps what the
    user said, as it keeps any query.)
    """
    task = entries["multi_turn_base_5"]
    db = tmp_path / "mt.db"
    with FakeLLMServer(playing(task)) as llm:
        run(task, db, llm)
    events = events_of(db)
    login = next(
        e for e in events if isinstance(e, ToolCallEvent) and e.tool == "authenticate_twitter"
    )
    assert login.arguments["password"] == "[redacted]"
    assert '"authentication_status": true' in login.result
    assert turn_checks(events)[len(task.turns) - 1]["passed"] is True
    # The APIs' state holds the password too (TwitterAPI.password): logged redacted.
    states = [e.state for e in events if isinstance(e, TurnEndedEvent) and e.state]
    assert states and all(s["TwitterAPI"]["password"] == "[redacted]" for s in states)


def test_a_missing_call_fails_its_turn_and_the_entry(
    entries: dict[str, MultiTurnTask], tmp_path: Path, bfcl_wheel: Path
) -> None:
    task = entries["multi_turn_base_1"]
    turns = [list(t) for t in task.ground_truth]
    turns[1] = turns[1][:-1]  # one call of the second turn left out
    db = tmp_path / "mt.db"
    with FakeLLMServer(playing(task, turns)) as llm:
        run(task, db, llm)
    checks = turn_checks(events_of(db))
    assert checks[0]["passed"] is True
    assert checks[1]["passed"] is False and checks[1]["failed_turn"] == 1
    assert checks[1]["error_type"] in ("instance_state_mismatch", "execution_response_mismatch")
    assert checks[len(task.turns) - 1]["passed"] is False


def test_a_turn_that_never_stops_calling_ends_the_entry_at_the_step_limit(
    entries: dict[str, MultiTurnTask], tmp_path: Path, bfcl_wheel: Path
) -> None:
    task = entries["multi_turn_base_1"]
    forever = {"rules": [{"reply": calls_reply(["pwd()"])}]}
    db = tmp_path / "mt.db"
    with FakeLLMServer(forever) as llm:
        summary = run(task, db, llm)
        asked = len(llm.requests)
    # BFCL allows 20 steps with calls and ends the entry at the 21st.
    assert asked == MULTI_TURN_STEP_LIMIT
    assert summary.stopped["step_limit"] == 1
    events = events_of(db)
    stopped = next(e for e in events if isinstance(e, StoppedEvent))
    assert "turn 1 of 4" in stopped.message and "3 later turn(s)" in stopped.message
    assert not any(isinstance(e, UserTurnEvent | TurnEndedEvent) for e in events)
    # A repeated call runs again on a stateful API: no "repeated call" refusal.
    assert all(e.check == "ok" for e in events if isinstance(e, ToolCallEvent))


def test_with_aah_the_oracle_answers_a_missing_parameter_with_the_next_turn(
    entries: dict[str, MultiTurnTask], tmp_path: Path, bfcl_wheel: Path
) -> None:
    task = entries["multi_turn_miss_param_4"]
    empty = next(i for i, t in enumerate(task.ground_truth) if not t)
    replies: list[Any] = []
    for index, truth in enumerate(task.ground_truth):
        if index == empty:
            question = {"question": "Whom should I mention in the post?"}
            replies += [{"tool_calls": [{"name": "ask_human", "arguments": question}]}, ASKS]
        else:
            replies += [calls_reply(list(truth)), "Done."]
    db = tmp_path / "mt.db"
    with FakeLLMServer({"replies": replies, "exhausted": "error"}) as llm:
        summary = run(task, db, llm, aah=True)
    assert summary.finished == 1
    events = events_of(db)
    (answer,) = [e for e in events if isinstance(e, HumanAnswerEvent)]
    assert answer.answer == task.turns[empty + 1][0].content
    checks = turn_checks(events)
    assert checks[empty]["calls"] == [] and checks[empty]["turn_passed"] is True


def test_a_failed_turn_resumes_at_its_turn_with_the_state_rebuilt(
    entries: dict[str, MultiTurnTask], tmp_path: Path, bfcl_wheel: Path
) -> None:
    """A model error in turn 3 ends the session; the rerun resumes there, replaying the calls."""
    task = entries["multi_turn_base_1"]
    script = playing(task)
    first = script["replies"][:4] + [{"error": {"status": 500}}]
    db = tmp_path / "mt.db"
    with FakeLLMServer({"replies": first, "exhausted": "error"}) as llm:
        summary = run(task, db, llm)
    assert summary.errors == 1
    with FakeLLMServer({"replies": script["replies"][4:], "exhausted": "error"}) as llm:
        summary = run(task, db, llm)
        resumed_requests = len(llm.requests)
    assert summary.finished == 1
    # Only the turns after the checkpoint were asked again.
    assert resumed_requests == len(script["replies"]) - 4
    events = events_of(db)
    checks = turn_checks(events)
    assert all(check["passed"] for check in checks.values())
    assert checks[len(task.turns) - 1]["restored"] is True
    # The first two turns' calls ran once in the log, whatever the resume replayed.
    ran = [e.tool for e in events if isinstance(e, ToolCallEvent)]
    assert len(ran) == sum(len(t) for t in task.ground_truth)


def test_model_turns_split_calls_by_turn_and_reply() -> None:
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    messages = [
        HumanMessage("first"),
        AIMessage("", tool_calls=[{"name": "ls", "args": {}, "id": "1"}]),
        ToolMessage("{}", tool_call_id="1"),
        AIMessage("", tool_calls=[{"name": "ask_human", "args": {"question": "?"}, "id": "2"}]),
        ToolMessage("yes", tool_call_id="2"),
        AIMessage("done"),
        HumanMessage("second"),
        AIMessage("nothing to do"),
    ]
    turns = model_turns(messages)
    assert [[[c.name for c in step] for step in turn] for turn in turns] == [[["ls"]], []]


@pytest.mark.parametrize(
    ("arguments", "given", "guessed"),
    [
        ({"file_name": "report.txt"}, "sort the REPORT.txt please", []),
        ({"mentions": ["@Julia"]}, "post it", ["@Julia"]),
        ({"tweet_id": 0}, "comment on tweet 0", []),
        ({"amount": 2.0}, "buy 2 shares", []),
        ({"amount": 2.5}, "buy 2 shares", ["2.5"]),
        ({"a": True, "b": None, "c": ""}, "", []),
        ({"nested": {"deep": ["x", "secret-y"]}}, "x", ["secret-y"]),
    ],
)
def test_guessed_values_are_those_never_given(
    arguments: dict[str, Any], given: str, guessed: list[str]
) -> None:
    assert guessed_values(arguments, given) == guessed


def test_a_run_killed_mid_entry_resumes_at_its_turn(
    entries: dict[str, MultiTurnTask], shared_data: Path, tmp_path: Path, bfcl_wheel: Path
) -> None:
    """SIGKILL while the third turn waits for the model: the rerun starts at that turn.

    The first two turns' checkpoint holds; the rerun rebuilds the APIs' state by
    replaying their calls, asks the model only from the third turn on, and
    the entry passes with each turn's end logged once.
    """
    task = entries["multi_turn_base_1"]
    replies = playing(task)["replies"]
    first = [*replies[:4], {"text": "too late", "delay_ms": 120_000}]
    db = tmp_path / "aah.db"
    base = [
        sys.executable, "-m", "aah", "bench", "run", "--benchmark", "bfcl", "--run", "kill",
        "--category", task.category, "--ids", task.id, "--no-probe",
        "--data", str(shared_data / "bfcl"), "--db", str(db),
    ]  # fmt: skip

    def env_for(llm: FakeLLMServer) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AAH_", "OPENAI_"))}
        return env | {
            "AAH_BASE_URL": llm.base_url,
            "AAH_MODEL": "fake-model",
            "AAH_API_KEY": "fake",
            "AAH_CACHE_DIR": str(tmp_path / "cache"),
            "AAH_BFCL_WHEEL": str(bfcl_wheel),
            "COLUMNS": "200",
        }

    with FakeLLMServer({"replies": first, "exhausted": "error"}) as llm:
        process = subprocess.Popen(
            base, env=env_for(llm), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        deadline = time.monotonic() + 120
        while len(llm.requests) < 5:
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the third turn never asked the model"
            time.sleep(0.05)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    with FakeLLMServer({"replies": replies[4:], "exhausted": "error"}) as llm:
        done = subprocess.run(
            base, env=env_for(llm), capture_output=True, text=True, timeout=300, check=False
        )
        asked_again = len(llm.requests)
    assert done.returncode == 0, done.stderr
    assert asked_again == len(replies) - 4
    events = events_of(db, "kill")
    ended = [e.turn for e in events if isinstance(e, TurnEndedEvent)]
    assert ended == list(range(len(task.turns)))
    checks = turn_checks(events)
    assert all(check["passed"] for check in checks.values())
    assert checks[2]["restored"] is True


def test_prompt_mode_reads_the_calls_from_text_and_offers_added_functions_in_the_prompt(
    entries: dict[str, MultiTurnTask], tmp_path: Path, bfcl_wheel: Path
) -> None:
    task = entries["multi_turn_miss_func_4"]
    replies: list[Any] = []
    for truth in task.ground_truth:
        if not truth:
            replies.append("I cannot sort files with the functions I have.")
            continue
        calls = [parse_call_text(text) for text in truth]
        blocks = [json.dumps({"name": c.name, "arguments": dict(c.arguments)}) for c in calls]
        replies += ["".join(f"<tool_call>{b}</tool_call>" for b in blocks), "Done."]
    db = tmp_path / "mt.db"
    with FakeLLMServer({"replies": replies, "exhausted": "error"}) as llm:
        summary = run(task, db, llm, tool_mode="prompt")
        requests = list(llm.requests)
    assert summary.finished == 1
    checks = turn_checks(events_of(db))
    assert all(check["passed"] for check in checks.values()), checks
    # No tools field in prompt mode: the functions are in the system prompt, sort from its turn.
    assert all(not r.get("tools") for r in requests)
    prompts = [r["messages"][0]["content"] for r in requests]
    added_at = _first_request_of_turn(requests, task, min(task.added))
    assert all('"sort"' not in p for p in prompts[:added_at])
    assert '"sort"' in prompts[added_at]


def test_sessions_resume_sends_a_conversation_over_stateful_tools_to_its_run(
    tmp_path: Path,
) -> None:
    from aah.errors import AahError
    from aah.runtime import resume_request

    with SessionStore(tmp_path / "s.db") as store:
        store.create_run("mt", {"benchmark": "bfcl"})
        recipe = {
            "tools": [],
            "tool_result_tokens": 1000,
            "human": {"kind": "queue"},
            "follow_ups": [{"text": "and now?", "tools": []}],
            "check_calls": "names",
        }
        record = store.open_session("first", run="mt", task_id="multi_turn_base_0", recipe=recipe)
        with pytest.raises(AahError) as error:
            resume_request(store, record.id)
    assert str(error.value) == (
        f"session {record.id} is a conversation over stateful tools: resume it with "
        "`aah bench run --run mt` (the same flags)"
    )
