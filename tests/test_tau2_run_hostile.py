"""τ² simulations against bad input: user replies of any shape (a corpus and generated), a user
that never stops, a user that calls the agent's tools, a model that calls the user's tools, and
damaged data through the CLI: each ends in one line or a graded simulation, never a lost run."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from runtime_support import fake_config
from tau2_data import damaged_copy, domain, shared_data

from aah.benchmark import RunOptions
from aah.benchmark.tau2 import Tau2Message, load_tau2_tasks
from aah.benchmark.tau2.runner import Tau2Runner, run_tasks, score_tau2_run, tau2_results
from aah.benchmark.tau2.simulation import (
    MAX_USER_CHARS,
    USER_STOP_TOKENS,
    RunCall,
    Tau2Simulation,
)
from aah.store import SessionStore
from aah.testing.fake_llm import FakeLLMServer

CORPUS = Path(__file__).parent / "fixtures" / "hostile" / "tau2_runs.jsonl"


class _Says:
    """A user who says ``text`` (whatever it is) and makes the calls in ``calls`` first."""

    def __init__(self, text: Any, calls: Sequence[tuple[str, dict[str, Any]]] = ()) -> None:
        self.text = text
        self.calls = list(calls)
        self.results: list[Any] = []

    async def respond(
        self, turn: int, agent_text: str, run: RunCall, history: Sequence[Tau2Message] = ()
    ) -> Any:
        for name, arguments in self.calls:
            self.results.append(await run(name, arguments))
        return self.text


def _reply(tau2_wheel: Path, text: Any) -> tuple[Tau2Simulation, Any]:
    mock = domain("mock", tau2_wheel)
    task = load_tau2_tasks(mock, ids=["create_task_1"])[0]
    simulation = Tau2Simulation(mock, task, _Says(text))
    messages = [SystemMessage("s"), HumanMessage("hi"), AIMessage("How can I help?")]
    return simulation, asyncio.run(simulation.reply(0, messages))


def _check(simulation: Tau2Simulation, reply: Any, stops: bool) -> None:
    if stops:
        assert reply is None
        assert simulation.termination == "user_stop"
        assert simulation.grade is not None
        return
    assert reply is not None and simulation.termination is None
    assert len(reply.text) <= MAX_USER_CHARS + 100
    reply.text.encode("utf-8")  # storable
    assert "\x00" not in reply.text


@pytest.mark.parametrize("case", [json.loads(line) for line in CORPUS.read_text().splitlines()])
def test_corpus_user_replies(tau2_wheel: Path, case: dict[str, Any]) -> None:
    text = case["reply"]
    if text is not None:
        text = text * case.get("repeat", 1) + case.get("suffix", "")
    simulation, reply = _reply(tau2_wheel, text)
    _check(simulation, reply, case["stops"])


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])  # fmt: skip
@given(
    st.one_of(
        st.text(max_size=200),
        st.builds(
            lambda a, token, b: a + token + b,
            st.text(max_size=50),
            st.sampled_from(USER_STOP_TOKENS),
            st.text(max_size=50),
        ),
    )
)
def test_any_user_reply_goes_on_or_stops_as_tau2_says(tau2_wheel: Path, text: str) -> None:
    simulation, reply = _reply(tau2_wheel, text)
    _check(simulation, reply, any(token in text for token in USER_STOP_TOKENS))


def _session(
    tau2_wheel: Path,
    db: Path,
    name: str,
    task_id: str,
    user: Any,
    script: dict[str, Any],
) -> dict[str, Any]:
    loaded = domain(name, tau2_wheel)
    tasks = load_tau2_tasks(loaded, ids=[task_id])
    with FakeLLMServer(script) as llm:
        runner = Tau2Runner(
            RunOptions(run="h", aah=False),
            fake_config(llm),
            {name: loaded},
            tasks,
            lambda d, t: user,
        )
        summary = asyncio.run(runner.run(run_tasks(tasks), db))
    assert summary.errors == 0, summary.error_messages
    with SessionStore(db) as store:
        score_tau2_run(store, "h")
        return tau2_results(store, "h")[0]


def test_a_user_that_never_stops_ends_at_taus_step_limit(tau2_wheel: Path, tmp_path: Path) -> None:
    row = _session(tau2_wheel, tmp_path / "n.db", "mock", "create_task_1", _Says("and then?"),
                   {"replies": ["Done."]})  # fmt: skip
    assert row["termination"] == "max_steps"
    assert row["reward"] == 0.0


def test_a_user_calling_the_agents_tools_is_refused(tau2_wheel: Path, tmp_path: Path) -> None:
    user = _Says("###STOP###", [("cancel_reservation", {"reservation_id": "4WQ150"})])
    row = _session(tau2_wheel, tmp_path / "u.db", "airline", "3", user, {"replies": ["Done."]})
    assert user.results and all(result.error for result in user.results)
    assert user.results[0].text == "Error: User tools not available"  # τ²'s own answer
    assert row["termination"] == "user_stop"
    assert row["components"].get("DB") == 1.0, (row["failures"], row["tau2_reward"])


def test_a_model_calling_the_users_tools_is_refused(tau2_wheel: Path, tmp_path: Path) -> None:
    telecom = domain("telecom", tau2_wheel)
    task = load_tau2_tasks(telecom)[0]
    phone_tool = sorted(telecom.user_tool_names)[0]
    script = {"replies": [{"tool_calls": [{"name": phone_tool, "arguments": {}}]}, "Done."]}
    row = _session(tau2_wheel, tmp_path / "m.db", "telecom", task.id, _Says("###STOP###"), script)
    assert row["termination"] == "user_stop"
    assert row["status"] == "finished"
    # Recorded with τ²'s own answer, so its evaluator's replay agrees.
    assert not any("evaluator failed" in failure for failure in row["failures"]), row["failures"]


@pytest.mark.parametrize(
    ("file", "mutation"),
    [
        ("domains/airline/tasks.json", {"kind": "truncate", "keep": 100}),
        ("domains/airline/db.json", {"kind": "write", "text": "{not json"}),
    ],
)
def test_damaged_files_say_one_line(
    tau2_wheel: Path, tmp_path: Path, file: str, mutation: dict[str, Any]
) -> None:
    data = damaged_copy(tmp_path / "data", file, mutation)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AAH_", "OPENAI_"))}
    env |= {"AAH_MODEL": "m", "AAH_BASE_URL": "http://127.0.0.1:9/v1", "AAH_API_KEY": "k",
            "AAH_TAU2_WHEEL": str(tau2_wheel), "AAH_CACHE_DIR": str(tmp_path / "c")}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "aah", "bench", "run", "--benchmark", "tau2", "--run", "d", "--domain", "airline",
         "--user", "gold", "--no-probe", "--data", str(data), "--db", str(tmp_path / "d.db")],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert file.rsplit("/", 1)[-1] in lines[0]


def test_shared_data_is_there() -> None:
    assert (shared_data() / "tau2").is_dir()


def test_a_user_whose_first_message_stops_ends_there(tau2_wheel: Path, tmp_path: Path) -> None:
    row = _session(tau2_wheel, tmp_path / "f.db", "mock", "create_task_1", _Says("###STOP###"),
                   {"replies": ["Done."]})  # fmt: skip
    assert row["termination"] == "user_stop"
    with SessionStore(tmp_path / "f.db") as store:
        from aah.events import TurnEndedEvent

        (ended,) = [e for e in store.events(row["session_id"]) if isinstance(e, TurnEndedEvent)]
    recorded = (ended.state or {})["tau2_messages"]
    assert recorded[-1]["role"] == "user" and recorded[-1]["content"] == "###STOP###"
