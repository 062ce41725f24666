"""Sessions that end without a final answer, and questions past their caps.

Three classes of model behaviour, each a corpus driven over HTTP against the
fake model server (the real client, nothing mocked):

- replies cut by the server's length limit (``finish_reason: length``): asked
  once more with twice the budget; cut again, or a larger budget refused, the
  session stops as ``cut_off`` (never a final answer, never the model's IFE);
- the step limit: a session still calling tools at its last step stops as
  ``step_limit``, with no final answer, and ``aah run`` exits non-zero;
- too many questions: past the caps per reply and per session a question is
  not asked, the model is told why, and the refusal is logged (``CAP``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from http_server import LocalServer, make_spec
from runtime_support import awareness_rule, call, runtime_on

from aah.events import (
    FinalAnswerEvent,
    HumanQuestionEvent,
    ModelCallEvent,
    StoppedEvent,
    ToolCallEvent,
)
from aah.runtime.humans import ScriptedHuman
from aah.runtime.session import SessionRequest, run_session
from aah.scoring.errors import patterns_of
from aah.scoring.metrics import compute_metrics, load_outcomes
from aah.store.sessions import SessionStore
from aah.testing.fake_llm import FakeLLMServer
from aah.testing.fake_llm_script import Reply, ScriptedError
from aah.tools.spec import ParameterSpec

CITY = ParameterSpec(name="city", required=True, description="City name")
AGENT_TOKENS = 1024  # the agent's default max_tokens

# -- replies cut by the length limit ------------------------------------------------

CUT_TEXT = Reply(text="The answer is", finish_reason="length")
CUT_CALL = Reply(
    tool_calls=[{"name": "local__forecast", "arguments": '{"city": "Os'}],
    finish_reason="length",
)
CUT_TEXT_CALL = Reply(
    text='<tool_call>{"name": "local__forecast", "arguments": {"ci', finish_reason="length"
)
CUT_REASONING = Reply(
    text="", reasoning="Let me think about every city " * 20, finish_reason="length"
)
CUT_MIXED = Reply(
    text="Let me look that up.",
    tool_calls=[{"name": "local__forecast", "arguments": '{"city": "Oslo", "da'}],
    finish_reason="length",
)
WHOLE_ANSWER = Reply(text="It is 21.5 degrees in Oslo.")
WHOLE_CALL = Reply.model_validate(call("local__forecast", city="Oslo"))
TOO_LARGE = ScriptedError(status=400, message="max_tokens must be at most 1500 for this model")


class BudgetServer(FakeLLMServer):
    """Answers the agent by its ``max_tokens``: ``small`` at the default budget, ``large`` above.

    Sessions run without awareness, so every request is the agent's; after a tool
    result (a tool message, or "Tool output" in prompt mode) comes a final answer.
    """

    def __init__(self, small: Reply, large: Reply | ScriptedError) -> None:
        super().__init__(["unused"])
        self.small, self.large = small, large
        self.agent_budgets: list[int] = []

    def _answer(self, body: dict[str, Any]) -> list[Reply] | ScriptedError:
        with self._lock:
            self._requests.append(body)
        if any(_is_tool_result(m) for m in body["messages"]):
            return [WHOLE_ANSWER]
        self.agent_budgets.append(int(body["max_tokens"]))
        if body["max_tokens"] <= AGENT_TOKENS:
            return [self.small]
        return [self.large] if isinstance(self.large, Reply) else self.large


def _is_tool_result(message: dict[str, Any]) -> bool:
    return message["role"] == "tool" or str(message.get("content")).startswith("Tool output")


async def _run_on(server: FakeLLMServer, tmp_path: Path, **request: Any) -> tuple[Any, list[Any]]:
    with LocalServer() as api:
        spec = make_spec(api.url("/json"), name="forecast", params=[CITY])
        async with runtime_on(server, tmp_path / "s.db", http_mode="live") as rt:
            query = SessionRequest("Weather in Oslo?", [spec], awareness="none", **request)
            outcome = await run_session(query, rt)
            events = rt.store.events(outcome.session_id)
            session = rt.store.get_session(outcome.session_id)
    assert session is not None and session.status == outcome.status
    return outcome, events


# (first reply, reply with twice the budget, expected status, expected final answer)
CUT_OFF_CASES = [
    pytest.param(CUT_TEXT, WHOLE_ANSWER, "finished", WHOLE_ANSWER.text, id="text-then-whole"),
    pytest.param(CUT_TEXT, CUT_TEXT, "cut_off", None, id="text-cut-twice"),
    pytest.param(CUT_CALL, CUT_CALL, "cut_off", None, id="half-call-twice"),
    pytest.param(CUT_TEXT_CALL, CUT_TEXT_CALL, "cut_off", None, id="half-text-call-twice"),
    pytest.param(CUT_REASONING, CUT_REASONING, "cut_off", None, id="reasoning-ran-out"),
    pytest.param(CUT_MIXED, CUT_TEXT, "cut_off", None, id="mixed-then-text-cut"),
    pytest.param(CUT_CALL, WHOLE_CALL, "finished", WHOLE_ANSWER.text, id="half-call-then-call"),
    pytest.param(CUT_TEXT, TOO_LARGE, "cut_off", None, id="larger-budget-refused"),
]


@pytest.mark.parametrize(("small", "large", "status", "answer"), CUT_OFF_CASES)
@pytest.mark.parametrize("tool_mode", ["native", "prompt"])
async def test_a_reply_cut_by_the_length_limit_is_never_a_final_answer(
    tmp_path: Path,
    small: Reply,
    large: Reply | ScriptedError,
    status: str,
    answer: str | None,
    tool_mode: str,
) -> None:
    if tool_mode == "prompt" and small.tool_calls:
        pytest.skip("in prompt mode calls come as text: the text cases cover them")
    with BudgetServer(small, large) as llm:
        outcome, events = await _run_on(llm, tmp_path, tool_mode=tool_mode)
        budgets = llm.agent_budgets
    # Asked once more, with twice the budget, and only once.
    assert budgets[:2] == [AGENT_TOKENS, 2 * AGENT_TOKENS]
    assert budgets.count(2 * AGENT_TOKENS) == 1
    assert outcome.status == status
    cut_calls = [e for e in events if isinstance(e, ModelCallEvent) and e.cut_off]
    assert cut_calls and all(e.n_tool_calls == 0 for e in cut_calls)
    # A half-written call is no format error of the model's: never checked, never IFE.
    assert not any(isinstance(e, ToolCallEvent) and e.check == "IFE" for e in events)
    if status == "finished":
        assert outcome.final_answer == answer
        assert isinstance(events[-1], FinalAnswerEvent)
    else:
        stopped = events[-1]
        assert isinstance(stopped, StoppedEvent) and stopped.reason == "cut_off"
        assert "AAH_MAX_TOKENS" in stopped.message and "\n" not in stopped.message
        assert not any(isinstance(e, FinalAnswerEvent) for e in events)
        assert outcome.final_answer == ""
    if isinstance(large, ScriptedError):
        assert "at most 1500" in events[-1].message  # the server's reason is quoted


def test_a_cut_off_session_is_counted_apart_and_never_passes(tmp_path: Path) -> None:
    """Stopped sessions have their own counts in a report's cell, and no pass."""
    db = tmp_path / "r.db"
    with SessionStore(db) as store:
        store.create_run("r", {})
        for number, status in enumerate(["cut_off", "step_limit", "step_limit", "finished"]):
            session = store.open_session("q", run="r", task_id=f"t{number}", setting="perfect")
            store.end_session(session.id, status, None if status != "finished" else "A.")  # type: ignore[arg-type]
        cell = compute_metrics(load_outcomes(store, ["r"]))[0]
    assert (cell.cut_off, cell.step_limit, cell.errors, cell.troubles) == (1, 2, 0, 4)
    assert cell.pass_rate.k == 0 and cell.ungraded == 1


# -- the step limit -----------------------------------------------------------------


def _looping_script(limit: int) -> dict[str, Any]:
    counter = iter(range(1000))
    return {
        "rules": [
            awareness_rule("Yes."),
            *(
                {"reply": call("local__forecast", city=f"c{next(counter)}"), "times": 1}
                for _ in range(limit + 5)
            ),
        ]
    }


@pytest.mark.parametrize("limit", [1, 2, 5])
async def test_the_step_limit_is_its_own_outcome(tmp_path: Path, limit: int) -> None:
    with FakeLLMServer(_looping_script(limit)) as llm:
        outcome, events = await _run_on(llm, tmp_path, step_limit=limit)
    assert outcome.status == "step_limit" and outcome.final_answer == ""
    stopped = events[-1]
    assert isinstance(stopped, StoppedEvent) and stopped.reason == "step_limit"
    assert f"after {limit} steps" in stopped.message and "--step-limit" in stopped.message


def test_aah_run_at_the_step_limit_exits_non_zero(tmp_path: Path) -> None:
    db = tmp_path / "run.db"
    # Every turn calls a tool nobody offered (rejected, IFN): the agent never answers.
    script = {"rules": [{"reply": call("weather__nowhere", city="Oslo")}]}
    with FakeLLMServer(script) as llm:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AAH_", "OPENAI_"))}
        env |= {"AAH_BASE_URL": llm.base_url, "AAH_MODEL": "m", "AAH_API_KEY": "sk-x"}
        env |= {"NO_COLOR": "1", "COLUMNS": "200"}
        child = subprocess.run(
            [sys.executable, "-m", "aah", "run", "Weather?", "--db", str(db), "--step-limit", "2"]
            + ["--awareness", "none", "--no-aah"],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
    printed = child.stdout + child.stderr
    assert child.returncode != 0, printed
    assert "Traceback" not in printed
    assert "step limit" in printed or "stopped after 2 steps" in printed
    with SessionStore(db) as store:
        (session,) = store.list_sessions()
    assert session.status == "step_limit" and session.final_answer is None


# -- questions past the caps --------------------------------------------------------


def _asking_script(per_reply: int, replies: int) -> dict[str, Any]:
    """Awareness IDK; ``replies`` turns of ``per_reply`` questions each; then an answer."""
    turns = [
        {
            "reply": {
                "tool_calls": [
                    {"name": "ask_human", "arguments": {"question": f"Question {turn}.{n}?"}}
                    for n in range(per_reply)
                ]
            },
            "times": 1,
        }
        for turn in range(replies)
    ]
    return {"rules": [awareness_rule("IDK: unsure."), *turns, {"reply": "Done."}]}


# (questions per reply, replies, cap per reply, cap per session, asked, capped)
CAP_CASES = [
    pytest.param(500, 1, 3, 10, 3, 497, id="500-in-one-reply"),
    pytest.param(4, 1, 3, 10, 3, 1, id="one-over-per-reply"),
    pytest.param(3, 1, 3, 10, 3, 0, id="at-the-cap"),
    pytest.param(2, 6, 3, 10, 10, 2, id="per-session-cap"),
    pytest.param(1, 12, 3, 10, 10, 2, id="one-at-a-time-past-session"),
    pytest.param(5, 2, 1, 10, 2, 8, id="cap-of-one"),
]


@pytest.mark.parametrize(
    ("per_reply", "replies", "cap", "session_cap", "asked", "capped"), CAP_CASES
)
async def test_questions_past_the_caps_are_not_asked(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    per_reply: int,
    replies: int,
    cap: int,
    session_cap: int,
    asked: int,
    capped: int,
) -> None:
    monkeypatch.setenv("AAH_MAX_QUESTIONS_PER_REPLY", str(cap))
    monkeypatch.setenv("AAH_MAX_QUESTIONS_PER_SESSION", str(session_cap))
    human = ScriptedHuman(["an answer"] * 1000)
    with FakeLLMServer(_asking_script(per_reply, replies)) as llm:
        async with runtime_on(llm, tmp_path / "s.db", human=human) as rt:
            request = SessionRequest("Help me", [], step_limit=replies + 2)
            outcome = await run_session(request, rt)
            events = rt.store.events(outcome.session_id)
        last_tool_messages = [m for m in llm.requests[-1]["messages"] if m["role"] == "tool"]
    assert outcome.status == "finished"
    assert sum(isinstance(e, HumanQuestionEvent) for e in events) == asked
    refused = [e for e in events if isinstance(e, ToolCallEvent) and e.check == "CAP"]
    assert len(refused) == capped
    assert all(not patterns_of(e.check, e.status_code) for e in refused)  # no ToolScan pattern
    if capped:
        told = [m for m in last_tool_messages if "Not asked" in m["content"]]
        assert told and f"at most {cap} question(s)" in told[0]["content"]
    with SessionStore(tmp_path / "s.db") as store, store.queries() as read:
        (summary,) = read.session_summaries(None, outside_runs=True)
    assert summary.questions_capped == capped
