"""The majority-vote grader, driven over HTTP against the fake model server."""

from pathlib import Path
from typing import Any

import pytest
import typer
from http_server import closed_port
from pydantic import SecretStr
from runtime_support import fake_config
from typer.testing import CliRunner

from aah.cli.grade import grade
from aah.errors import AahError
from aah.events import FinalAnswerEvent, HumanAnswerEvent, HumanQuestionEvent, ToolCallEvent
from aah.llm.config import ModelConfig
from aah.scoring.grader.vote import (
    MajorityVoteGrader,
    grade_run,
    grade_session,
    majority_vote,
    parse_vote,
)
from aah.store.sessions import SessionStatus, SessionStore
from aah.testing.fake_llm import FakeLLMServer
from aah.testing.fake_llm_script import Reply, ScriptedError

pytestmark = pytest.mark.usefixtures("allow_private_tool_hosts")

RUN = "bench-1"


class IgnoresNServer(FakeLLMServer):
    """A real fake server that answers one choice whatever ``n`` says, as Ollama does."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.asked_n: list[int] = []  # the n of each request, as the client sent it

    def _answer(self, body: dict[str, Any]) -> list[Reply] | ScriptedError:
        self.asked_n.append(int(body.get("n") or 1))
        return super()._answer({**body, "n": 1})


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    with SessionStore(tmp_path / "grades.db") as opened:
        opened.create_run(RUN, {"model": "agent-model"})
        yield opened


def add_session(
    store: SessionStore,
    query: str,
    answer: str = "It is 21 degrees.",
    *,
    status: SessionStatus = "finished",
    results: tuple[str, ...] = (),
    exchanges: tuple[tuple[str, str], ...] = (),
) -> str:
    session = store.open_session(query, run=RUN, task_id=query)
    for number, result in enumerate(results):
        store.append_event(
            ToolCallEvent(
                session_id=session.id,
                call_id=f"call_{number}",
                tool="weather__current",
                arguments={"city": "Oslo"},
                status_code=200,
                ok=True,
                result=result,
            )
        )
    for number, (question, reply) in enumerate(exchanges):
        request_id = f"req_{number}"
        store.append_event(
            HumanQuestionEvent(session_id=session.id, request_id=request_id, question=question)
        )
        store.append_event(
            HumanAnswerEvent(
                session_id=session.id, request_id=request_id, answer=reply, answered_by="oracle"
            )
        )
    if status != "skipped":
        store.append_event(FinalAnswerEvent(session_id=session.id, text=answer))
    store.finish_session(session.id, status, answer)
    return session.id


def prompt_of(request: dict[str, Any]) -> str:
    return str(request["messages"][-1]["content"])


@pytest.mark.parametrize(
    ("text", "vote"),
    [
        ("Pass", "pass"),
        ("Fail", "fail"),
        ("**PASS**: the forecast is right", "pass"),
        ("fail.", "fail"),
        ('> "Pass" - grounded in the tool result', "pass"),
        ("  `FAIL`", "fail"),
        ("The answer should Pass", None),
        ("Passable", None),
        ("", None),
        ("I cannot decide.", None),
        # Misreads the one reply grammar fixed (the full set: test_reply_grammar.py).
        ("Pass/Fail: Fail", "fail"),
        ("Verdict: Pass", "pass"),
        ("Passed", "pass"),
        ("Pass or Fail", None),
        ("<think>Pass?</think>Fail", "fail"),
    ],
)
def test_votes_must_begin_with_pass_or_fail(text: str, vote: str | None) -> None:
    assert parse_vote(text) == vote


def test_majority_of_valid_votes_and_flagged_ties() -> None:
    assert majority_vote(["pass", "fail", "pass"]) == ("pass", False, None)
    assert majority_vote(["fail", None, "fail", "pass", None]) == ("fail", False, None)
    assert majority_vote(["pass", "pass", "fail", "fail", None]) == ("fail", True, "tie")
    assert majority_vote([None, None, None]) == ("fail", True, "no_quorum")


async def test_one_request_with_n_gives_the_verdict_and_stores_every_vote(
    store: SessionStore,
) -> None:
    session_id = add_session(store, "Weather in Oslo?", results=("21 degrees",))
    replies = ["Pass: grounded.", "fail.", "**PASS**: ok", "Pass", "Fail - no"]
    with FakeLLMServer(replies) as llm:
        result = await grade_session(store, session_id, fake_config(llm))
        requests = llm.requests
    assert len(requests) == 1 and requests[0]["n"] == 5 and requests[0]["temperature"] == 1.0
    assert "Weather in Oslo?" in prompt_of(requests[0])
    assert result.outcome == "graded" and result.grade is not None
    assert result.grade.verdict == "pass" and not result.grade.flagged
    (stored,) = store.grades(session_id)
    assert stored.grader_model == "fake-model" and stored.prompt_version == "grader/1"
    assert [v["raw"] for v in stored.votes] == replies
    assert [v["vote"] for v in stored.votes] == ["pass", "fail", "pass", "pass", "fail"]


async def test_unparseable_votes_are_asked_for_again(store: SessionStore) -> None:
    session_id = add_session(store, "Weather in Oslo?")
    replies = ["Pass", "Pass", "Let me think.", "Fail", "Hmm", "Fail", "Pass"]
    with FakeLLMServer(replies) as llm:
        result = await grade_session(store, session_id, fake_config(llm))
        requests = llm.requests
    assert [r.get("n", 1) for r in requests] == [5, 2]
    assert result.grade is not None and result.grade.verdict == "pass"
    assert [v["round"] for v in result.grade.votes] == [0] * 5 + [1] * 2
    assert [v["vote"] for v in result.grade.votes].count(None) == 2


async def test_an_echoed_option_list_is_no_vote_and_is_asked_for_again(
    store: SessionStore,
) -> None:
    session_id = add_session(store, "Weather in Oslo?")
    replies = ["Pass/Fail", "Pass or Fail: Fail", "Pass and fail", "Fail", "Fail"]
    with FakeLLMServer(replies) as llm:
        result = await grade_session(store, session_id, fake_config(llm), votes=3)
        assert [r.get("n", 1) for r in llm.requests] == [3, 2]
    assert result.grade is not None
    assert [v["vote"] for v in result.grade.votes] == [None, "fail", None, "fail", "fail"]
    assert (result.grade.verdict, result.grade.flagged) == ("fail", False)


async def test_a_tie_after_dropped_votes_is_a_flagged_fail(store: SessionStore) -> None:
    session_id = add_session(store, "Weather in Oslo?")
    replies = ["Pass", "Pass", "Fail", "Fail", "unsure", "still unsure", "no idea"]
    with FakeLLMServer(replies) as llm:
        result = await grade_session(store, session_id, fake_config(llm))
        assert len(llm.requests) == 3  # the first, then two bounded retries for one vote
    assert result.grade is not None
    assert (result.grade.verdict, result.grade.flagged) == ("fail", True)
    assert len(result.grade.votes) == 7


async def test_no_valid_vote_is_a_flagged_fail(store: SessionStore) -> None:
    session_id = add_session(store, "Weather in Oslo?")
    with FakeLLMServer(["Verdict: it depends."]) as llm:
        result = await grade_session(store, session_id, fake_config(llm), votes=3)
        assert [r["n"] for r in llm.requests] == [3, 3, 3]
    assert result.grade is not None
    assert (result.grade.verdict, result.grade.flagged) == ("fail", True)
    assert [v["vote"] for v in result.grade.votes] == [None] * 9


async def test_a_server_that_ignores_n_gets_v_single_requests(store: SessionStore) -> None:
    for city in ("Oslo", "Lima", "Pune"):
        add_session(store, f"Weather in {city}?")
    with IgnoresNServer(["Pass"]) as llm:
        summary = await grade_run(store, RUN, fake_config(llm), progress=False)
        asked_n = llm.asked_n
    assert summary.requests == len(asked_n) == 15  # V per verdict
    assert asked_n.count(5) == 1  # n was tried once, even with sessions graded at once
    assert summary.graded == summary.passed == 3


async def test_a_server_that_rejects_n_falls_back_to_single_requests(store: SessionStore) -> None:
    session_id = add_session(store, "Weather in Oslo?")
    refusal = {"error": {"status": 400, "message": "n > 1 is not supported by this server"}}
    with FakeLLMServer([refusal, "Pass", "Fail", "Pass", "Pass", "Fail"]) as llm:
        async with MajorityVoteGrader(fake_config(llm)) as grader:
            session = store.get_session(session_id)
            assert session is not None
            result = await grader.grade(store, session)
        assert len(llm.requests) == 6 and grader.n_supported is False
    assert result.grade is not None and result.grade.verdict == "pass"


async def test_grading_again_sends_nothing_but_a_new_vote_count_does(
    store: SessionStore,
) -> None:
    ids = [add_session(store, f"Weather in {city}?") for city in ("Oslo", "Lima")]
    with FakeLLMServer(["Pass"]) as llm:
        first = await grade_run(store, RUN, fake_config(llm), progress=False)
        again = await grade_run(store, RUN, fake_config(llm), progress=False)
        three = await grade_run(store, RUN, fake_config(llm), votes=3, progress=False)
    assert (first.graded, first.requests) == (2, 2)
    assert (again.graded, again.cached, again.requests, again.passed) == (0, 2, 0, 2)
    assert (three.graded, three.requests) == (2, 2)
    assert all(len(store.grades(session_id)) == 2 for session_id in ids)


async def test_skipped_and_error_sessions_are_not_sent(store: SessionStore) -> None:
    graded = add_session(store, "Weather in Oslo?")
    skipped = add_session(store, "Book me a flight", "Skipped: no booking tool.", status="skipped")
    failed = add_session(store, "Convert the currency", status="error")
    with FakeLLMServer(["Pass"]) as llm:
        summary = await grade_run(store, RUN, fake_config(llm), progress=False)
        prompts = [prompt_of(r) for r in llm.requests]
    assert len(prompts) == 1 and "Oslo" in prompts[0]
    assert (summary.sessions, summary.graded, summary.skipped, summary.no_answer) == (3, 1, 1, 1)
    assert summary.ended == {"error": 1} and summary.unfinished == 0
    assert len(store.grades(graded)) == 1
    assert store.grades(skipped) == [] and store.grades(failed) == []


async def test_the_prompt_holds_calls_cut_results_and_human_replies(store: SessionStore) -> None:
    long_result = "{" + '"hour": 21.5, ' * 400 + "}"
    session_id = add_session(
        store,
        "Weather in my city?",
        "It is 21.5 degrees in Oslo.",
        results=(long_result,),
        exchanges=(("Which city?", "Oslo, please."),),
    )
    with FakeLLMServer(["Pass"]) as llm:
        await grade_session(store, session_id, fake_config(llm))
        prompt = prompt_of(llm.requests[0])
    assert "weather__current" in prompt and '"city": "Oslo"' in prompt
    assert "Q: Which city?\nA: Oslo, please." in prompt
    assert "It is 21.5 degrees in Oslo." in prompt
    assert long_result not in prompt and "chars]" in prompt
    assert len(prompt) < 4_000


async def test_bad_settings_and_unknown_runs_are_one_line_errors(store: SessionStore) -> None:
    config = fake_config(FakeLLMServer(["Pass"]))
    with pytest.raises(AahError, match="odd"):
        await grade_run(store, RUN, config, votes=4, progress=False)
    with pytest.raises(AahError, match="above 0"):
        await grade_run(store, RUN, config, temperature=0.0, progress=False)
    with pytest.raises(AahError, match=f"one of {RUN}"):
        await grade_run(store, "nope", config, progress=False)


async def test_an_unreachable_grader_is_a_one_line_failure_per_session(
    store: SessionStore,
) -> None:
    add_session(store, "Weather in Oslo?")
    add_session(store, "Weather in Bergen?")
    config = ModelConfig(
        base_url=f"http://127.0.0.1:{closed_port()}/v1",
        model="fake-model",
        api_key=SecretStr("x"),
        timeout=5,
        retries=0,
    )
    summary = await grade_run(store, RUN, config, progress=False)
    assert summary.failed == 2 and summary.graded == 0
    ((message, count),) = summary.failures.items()
    assert count == 2 and message.startswith("cannot reach") and "\n" not in message


def test_the_grade_command_prints_a_summary(
    store: SessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_session(store, "Weather in Oslo?")
    add_session(store, "Book me a flight", status="skipped")
    app = typer.Typer()
    app.command("grade")(grade)
    app.callback()(lambda: None)  # keeps "grade" a subcommand, as under the aah root
    runner = CliRunner()
    with FakeLLMServer(["Pass"]) as llm:
        monkeypatch.setenv("AAH_BASE_URL", llm.base_url)
        monkeypatch.setenv("AAH_GRADER_MODEL", "fake-model")
        monkeypatch.setenv("COLUMNS", "200")
        result = runner.invoke(app, ["grade", "--run", RUN, "--db", str(store.path)])
        even = runner.invoke(app, ["grade", "--run", RUN, "--votes", "2", "--db", str(store.path)])
        unknown = runner.invoke(app, ["grade", "--run", "nope", "--db", str(store.path)])
    assert result.exit_code == 0, result.output
    assert "graded now" in result.output and "1 of 1 graded" in result.output
    assert isinstance(even.exception, AahError) and "odd" in str(even.exception)
    assert isinstance(unknown.exception, AahError) and RUN in str(unknown.exception)


# (votes as parsed, V asked for, the verdict with its flag): science.md §2's quorum.
QUORUM_CORPUS = [
    (["pass"] + [None] * 14, 5, ("fail", True, "no_quorum")),  # 1 readable vote of 15
    (["pass", None, None, None, None], 5, ("fail", True, "no_quorum")),
    (["pass", "pass", None, None, None], 5, ("fail", True, "no_quorum")),
    (["pass", "pass", "pass", None, None], 5, ("pass", False, None)),
    (["fail", "fail", "fail"], 5, ("fail", False, None)),  # fewer replies than asked
    (["pass", "pass"], 5, ("fail", True, "no_quorum")),
    (["pass", "fail", None], 3, ("fail", True, "tie")),  # 2 of 3 is a quorum, but a tie
    (["pass", None, None], 3, ("fail", True, "no_quorum")),
    (["pass"], 1, ("pass", False, None)),
    ([None], 1, ("fail", True, "no_quorum")),
    ([], 5, ("fail", True, "no_quorum")),
    (["pass"] * 4 + [None] * 5, 9, ("fail", True, "no_quorum")),
    (["pass"] * 5 + [None] * 4, 9, ("pass", False, None)),
    (["pass", "pass", "fail", "fail", None, None, None], 7, ("fail", True, "tie")),
    (["pass", "fail", "pass", None, None, None, None], 7, ("fail", True, "no_quorum")),
]


@pytest.mark.parametrize(("votes", "asked", "expected"), QUORUM_CORPUS)
def test_a_verdict_needs_a_quorum_of_valid_votes(
    votes: list[str | None], asked: int, expected: tuple[str, bool, str | None]
) -> None:
    assert majority_vote(votes, asked) == expected  # type: ignore[arg-type]


# Replies a tiny real model gave in place of a vote: none of them is one.
NOISE = ["", "The", "I think the", "(stopped)", "Pass/Fail", "…", "Grade:", "PASSFAIL"]


async def test_one_readable_vote_of_fifteen_is_no_pass(store: SessionStore) -> None:
    session_id = add_session(store, "Weather in Oslo?", results=("21 degrees",))
    script = {
        "rules": [
            {"reply": {"choices": ["Pass", *NOISE[:4]]}, "times": 1},
            {"reply": {"choices": NOISE[:5]}},
        ]
    }
    with FakeLLMServer(script) as llm:
        result = await grade_session(store, session_id, fake_config(llm))
    grade = result.grade
    assert grade is not None and grade.verdict == "fail"
    assert grade.flagged and grade.flag == "no_quorum"
    assert sum(v["vote"] is not None for v in grade.votes) == 1


@pytest.mark.parametrize("status", ["step_limit", "cut_off", "error", "cancelled"])
async def test_a_session_without_a_final_answer_is_fail_and_never_sent(
    store: SessionStore, status: SessionStatus
) -> None:
    stopped = add_session(store, "Weather in Oslo?", "(stopped after 10 steps)", status=status)
    with FakeLLMServer(["Pass"] * 5) as llm:
        summary = await grade_run(store, RUN, fake_config(llm), progress=False)
        sent = len(llm.requests)
    assert sent == 0 and store.grades(stopped) == []
    assert (summary.no_answer, summary.ended[status], summary.passed) == (1, 1, 0)
