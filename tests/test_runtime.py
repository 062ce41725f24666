import asyncio
import json
from pathlib import Path

import pytest
from http_server import LocalServer, closed_port, make_spec
from runtime_support import ask_then_call_script, awareness_rule, call, runtime_on

from aah.desk import FakeClock
from aah.events import (
    AwarenessEvent,
    ErrorEvent,
    FinalAnswerEvent,
    HumanAnswerEvent,
    StoppedEvent,
    ToolCallEvent,
)
from aah.runtime.humans import QueueHuman, ScriptedHuman
from aah.runtime.session import SessionRequest, run_session
from aah.store.sessions import SessionStore
from aah.testing.fake_llm import FakeLLMServer
from aah.tools.spec import ParameterSpec

pytestmark = pytest.mark.usefixtures("allow_private_tool_hosts")

CITY = ParameterSpec(name="city", required=True, description="City name")


def _kinds(store: SessionStore, session_id: str) -> list[str]:
    return [e.kind for e in store.events(session_id)]


async def test_tool_call_through_the_executor_then_final_answer(tmp_path: Path) -> None:
    with LocalServer() as api:
        spec = make_spec(api.url("/json"), name="forecast", params=[CITY])
        script = {
            "rules": [
                awareness_rule("Yes, all there."),
                {"when": {"last_tool_name": "local__forecast"}, "reply": "It is 21.5 in Oslo."},
                {"when": {"has_tools": True}, "reply": call("local__forecast", city="Oslo")},
            ]
        }
        with FakeLLMServer(script) as llm:
            async with runtime_on(llm, tmp_path / "s.db", http_mode="live") as rt:
                outcome = await run_session(SessionRequest("Weather in Oslo?", [spec]), rt)
                events = rt.store.events(outcome.session_id)
            # Awareness was asked in a separate call without a tools parameter.
            awareness_requests = [r for r in llm.requests if not r.get("tools")]
            assert len(awareness_requests) == 2
            assert "local__forecast" in awareness_requests[0]["messages"][0]["content"]
        assert api.count("/json") == 1
    assert outcome.status == "finished" and outcome.final_answer == "It is 21.5 in Oslo."
    tool_events = [e for e in events if isinstance(e, ToolCallEvent)]
    assert tool_events[0].status_code == 200 and tool_events[0].ok
    assert '"city": "Oslo"' in tool_events[0].result or "Oslo" in tool_events[0].result
    assert isinstance(events[-1], FinalAnswerEvent)


@pytest.mark.parametrize("answer", ["No: the city is missing.", "**NO** - city missing"])
async def test_no_skips_the_task_without_running_tools(tmp_path: Path, answer: str) -> None:
    with LocalServer() as api:
        spec = make_spec(api.url("/json"), name="forecast", params=[CITY])
        script = {
            "rules": [awareness_rule(answer), {"reply": call("local__forecast", city="Oslo")}]
        }
        with FakeLLMServer(script) as llm:
            async with runtime_on(llm, tmp_path / "s.db", http_mode="live") as rt:
                request = SessionRequest("Weather?", [spec], awareness="info")
                outcome = await run_session(request, rt)
                session = rt.store.get_session(outcome.session_id)
            assert all(not r.get("tools") for r in llm.requests)  # the agent never acted
        assert api.count() == 0
    assert outcome.status == "skipped"
    assert "city" in outcome.final_answer.lower()
    assert session is not None and session.info_awareness == "no"


async def test_unparseable_awareness_is_asked_again_then_none(tmp_path: Path) -> None:
    script = {"rules": [awareness_rule("Let me think about it."), {"reply": "Fine."}]}
    with FakeLLMServer(script) as llm:
        async with runtime_on(llm, tmp_path / "s.db") as rt:
            outcome = await run_session(SessionRequest("Hi", [], awareness="tool"), rt)
            events = rt.store.events(outcome.session_id)
    awareness = [e for e in events if isinstance(e, AwarenessEvent)]
    assert awareness[0].answer == "none" and awareness[0].attempts == 3
    assert outcome.status == "finished"  # "none" is not "no": the agent still acts


async def test_bad_calls_get_feedback_and_send_no_request(tmp_path: Path) -> None:
    with LocalServer() as api:
        spec = make_spec(api.url("/json"), name="forecast", params=[CITY])
        script = {
            "replies": [
                "Yes.",
                "Yes.",
                call("local__forcast", city="Oslo"),  # IFN
                call("local__forecast", town="Oslo"),  # IAN
                call("local__forecast"),  # IAV (missing)
                '<tool_call>{"name": "local__forecast", "arguments": {city: Oslo}}</tool_call>',
                '<tool_call>{"name": "local__forecast", "arguments": {"city": "Oslo"}}</tool_call>',
                call("local__forecast", city="Oslo"),  # RAC
                "Oslo is 21.5 degrees.",
            ]
        }
        with FakeLLMServer(script) as llm:
            async with runtime_on(llm, tmp_path / "s.db", http_mode="live") as rt:
                outcome = await run_session(SessionRequest("Weather in Oslo?", [spec]), rt)
                events = rt.store.events(outcome.session_id)
            tool_messages = [m for m in llm.requests[-1]["messages"] if m["role"] == "tool"]
        assert api.count("/json") == 1  # only the well-formed text call ran
    checks = [e.check for e in events if isinstance(e, ToolCallEvent)]
    assert checks == ["IFN", "IAN", "IAV", "IFE", "ok", "RAC"]
    assert "local__forecast" in tool_messages[0]["content"]  # valid choices named
    assert "city (string, required)" in tool_messages[1]["content"]
    assert outcome.final_answer == "Oslo is 21.5 degrees."


async def test_step_limit_ends_the_session_without_a_final_answer(tmp_path: Path) -> None:
    spec = make_spec("http://127.0.0.1:9/x", name="loop", params=[CITY])
    counter = iter(range(100))
    script = {
        "rules": [
            awareness_rule("Yes."),
            *(
                {"reply": call("local__loop", city=f"c{next(counter)}"), "times": 1}
                for _ in range(20)
            ),
        ]
    }
    with FakeLLMServer(script) as llm:
        async with runtime_on(llm, tmp_path / "s.db") as rt:
            request = SessionRequest("Loop", [spec], step_limit=3)
            outcome = await run_session(request, rt)
            events = rt.store.events(outcome.session_id)
    assert outcome.step_limit_hit and outcome.status == "step_limit"
    final = events[-1]
    assert isinstance(final, StoppedEvent) and final.reason == "step_limit"
    assert not any(isinstance(e, FinalAnswerEvent) for e in events)
    assert sum(isinstance(e, ToolCallEvent) for e in events) == 2


async def test_ask_human_answer_flows_back(tmp_path: Path) -> None:
    spec = make_spec("https://api.example.org/forecast", name="forecast", params=[CITY])
    with FakeLLMServer(ask_then_call_script("local__forecast", {"city": "Lisbon"})) as llm:
        human = ScriptedHuman(["Lisbon"])
        async with runtime_on(llm, tmp_path / "s.db", human=human) as rt:
            outcome = await run_session(SessionRequest("Weather where I live?", [spec]), rt)
            events = rt.store.events(outcome.session_id)
            session = rt.store.get_session(outcome.session_id)
        tool_reply = [m for m in llm.requests[-2]["messages"] if m["role"] == "tool"][-1]
    assert tool_reply["content"] == "Lisbon"
    assert human.asked[0].question == "Which city?"
    assert human.asked[0].context.query == "Weather where I live?"
    kinds = [e.kind for e in events]
    assert kinds.index("human_question") < kinds.index("human_answer") < kinds.index("tool_call")
    assert session is not None and session.n_human_questions == 1
    assert outcome.final_answer == "Done: the forecast is above."


async def test_without_aah_the_ask_human_tool_is_not_offered(tmp_path: Path) -> None:
    spec = make_spec("https://api.example.org/f", name="forecast", params=[CITY])
    with FakeLLMServer({"rules": [awareness_rule("Yes."), {"reply": "No idea."}]}) as llm:
        async with runtime_on(llm, tmp_path / "s.db") as rt:
            await run_session(SessionRequest("Weather?", [spec], aah=False), rt)
        offered = [t["function"]["name"] for r in llm.requests for t in r.get("tools", [])]
    assert offered == ["local__forecast"]


async def test_queue_request_answered_from_another_connection(tmp_path: Path) -> None:
    import asyncio

    db = tmp_path / "s.db"
    spec = make_spec("https://api.example.org/forecast", name="forecast", params=[CITY])
    with FakeLLMServer(ask_then_call_script("local__forecast", {"city": "Porto"})) as llm:
        async with runtime_on(llm, db, human=None) as rt:
            rt.human = QueueHuman(SessionStore(db), poll_seconds=0.02)
            task = asyncio.create_task(run_session(SessionRequest("Weather?", [spec]), rt))
            other = SessionStore(db)
            for _ in range(200):
                pending = other.humans.pending_human_requests()
                if pending:
                    break
                await asyncio.sleep(0.02)
            assert pending and pending[0].question == "Which city?"
            assert other.humans.answer_human_request(pending[0].id, "annotator-1", "Porto")
            outcome = await asyncio.wait_for(task, 10)
            answer = next(
                e for e in rt.store.events(outcome.session_id) if isinstance(e, HumanAnswerEvent)
            )
    assert outcome.status == "finished"
    assert answer.answered_by == "annotator-1" and answer.answer == "Porto"


@pytest.mark.parametrize("fallback", ["idk", "skip"])
async def test_queue_deadline_falls_back(tmp_path: Path, fallback: str) -> None:
    db = tmp_path / "s.db"
    spec = make_spec("https://api.example.org/forecast", name="forecast", params=[CITY])
    clock = FakeClock()
    waiting = SessionStore(db, clock=clock)

    async def pass_the_deadline() -> None:
        for _ in range(1_000):  # until the question waits, at most 10 s
            if waiting.humans.pending_human_requests():
                break
            await asyncio.sleep(0.01)
        clock.advance(61)

    with FakeLLMServer(ask_then_call_script("local__forecast", {"city": "?"})) as llm:
        async with runtime_on(llm, db) as rt:
            rt.human = QueueHuman(
                waiting, poll_seconds=0.01, deadline_seconds=60, fallback=fallback
            )  # type: ignore[arg-type]
            session = run_session(SessionRequest("Weather?", [spec]), rt)
            outcome, _ = await asyncio.gather(session, pass_the_deadline())
            requests = SessionStore(db).humans.pending_human_requests()
            events = rt.store.events(outcome.session_id)
    assert requests == []  # the request expired rather than stay pending
    if fallback == "idk":
        answer = next(e for e in events if isinstance(e, HumanAnswerEvent))
        assert answer.answer == "I don't know." and outcome.status == "finished"
    else:
        assert outcome.status == "skipped"


async def test_model_endpoint_down_gives_one_clear_line(tmp_path: Path) -> None:
    from pydantic import SecretStr

    from aah.llm.config import ModelConfig
    from aah.runtime.environment import open_runtime

    config = ModelConfig(
        base_url=f"http://127.0.0.1:{closed_port()}/v1",
        model="m",
        api_key=SecretStr("x"),
        timeout=2,
        retries=0,
    )
    async with open_runtime(db=tmp_path / "s.db", model=config, human=ScriptedHuman([])) as rt:
        outcome = await run_session(SessionRequest("Hi"), rt)
        events = rt.store.events(outcome.session_id)
    assert outcome.status == "error"
    assert outcome.error is not None and "cannot reach the model endpoint" in outcome.error
    assert "\n" not in outcome.error
    assert isinstance(events[-1], ErrorEvent)


async def test_unknown_model_gives_one_clear_line(tmp_path: Path) -> None:
    with FakeLLMServer({"replies": ["Yes."], "models": ["other-model"]}) as llm:
        async with runtime_on(llm, tmp_path / "s.db") as rt:
            outcome = await run_session(SessionRequest("Hi"), rt)
    assert outcome.error is not None and "model 'fake-model' not found" in outcome.error


async def test_api_key_is_never_stored(tmp_path: Path) -> None:
    with FakeLLMServer({"replies": ["Yes.", "Yes.", "Hello."]}) as llm:
        async with runtime_on(llm, tmp_path / "s.db") as rt:
            await run_session(SessionRequest("Hi"), rt)
    for path in tmp_path.iterdir():
        assert b"sk-test-secret-key-123456" not in path.read_bytes()


async def test_finished_session_of_a_run_is_not_run_again(tmp_path: Path) -> None:
    with FakeLLMServer({"replies": ["Yes.", "Yes.", "Hello."]}) as llm:
        async with runtime_on(llm, tmp_path / "s.db") as rt:
            rt.store.create_run("r", {"note": "test"})
            first = await run_session(SessionRequest("Hi", run="r", task_id="t1"), rt)
            sent = len(llm.requests)
            second = await run_session(SessionRequest("Hi", run="r", task_id="t1"), rt)
            assert len(llm.requests) == sent
            assert len(rt.store.list_sessions(run="r")) == 1
    assert first.session_id == second.session_id and second.status == "finished"
    assert json.dumps(first.final_answer) == json.dumps(second.final_answer)


async def test_checkpoints_live_in_the_session_database_beside_their_events(
    tmp_path: Path,
) -> None:
    import sqlite3

    spec = make_spec("https://api.example.org/forecast", name="forecast", params=[CITY])
    with FakeLLMServer(ask_then_call_script("local__forecast", {"city": "Lisbon"})) as llm:
        for durability in ("step", "exit"):
            db = tmp_path / f"{durability}.db"
            human = ScriptedHuman(["Lisbon"], at_once=False)  # pauses, as for a person
            async with runtime_on(llm, db, human=human, durability=durability) as rt:
                outcome = await run_session(SessionRequest("Weather where I live?", [spec]), rt)
                events = rt.store.events(outcome.session_id)
            with sqlite3.connect(db) as conn:
                (saved,) = conn.execute(
                    "SELECT count(*) FROM checkpoints WHERE thread_id = ?", [outcome.session_id]
                ).fetchone()
            assert outcome.status == "finished"
            assert saved >= 2  # at the question, at the end
            assert [e.seq for e in events] == list(range(1, len(events) + 1))
            kinds = [e.kind for e in events]
            assert kinds.count("awareness") == 2 and kinds.count("final_answer") == 1
            assert kinds.index("human_question") < kinds.index("human_answer")
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".db") == [
        "exit.db",
        "step.db",
    ]


async def test_secrets_in_the_conversation_stay_out_of_every_file(tmp_path: Path) -> None:
    typed_key = "sk-live-" + "a1" * 12
    argument_key = "plain-argument-secret-42"
    spec = make_spec(
        "https://api.example.org/forecast",
        name="forecast",
        params=[CITY, ParameterSpec(name="api_key", required=True)],
    )
    script = {
        "rules": [
            awareness_rule("Yes, all there."),
            {"when": {"last_tool_name": "local__forecast"}, "reply": "Done."},
            {
                "when": {"has_tools": True},
                "reply": call("local__forecast", city="Oslo", api_key=argument_key),
            },
        ]
    }
    with FakeLLMServer(script) as llm:
        async with runtime_on(llm, tmp_path / "s.db", durability="step") as rt:
            query = f"Weather in Oslo? My key is {typed_key}."
            outcome = await run_session(SessionRequest(query, [spec]), rt)
        # The live session had the key: the model saw it in the request.
        assert typed_key in json.dumps(llm.requests[-1])
    assert outcome.status == "finished"
    for path in tmp_path.iterdir():
        data = path.read_bytes()
        assert typed_key.encode() not in data, path.name
        assert argument_key.encode() not in data, path.name


async def test_a_session_without_awareness_questions_skips_the_awareness_superstep(
    tmp_path: Path,
) -> None:
    import sqlite3

    spec = make_spec("https://api.example.org/forecast", name="forecast", params=[CITY])
    saved: dict[str, int] = {}
    with FakeLLMServer(ask_then_call_script("local__forecast", {"city": "Lisbon"})) as llm:
        for awareness in ("none", "tool"):
            db = tmp_path / f"{awareness}.db"
            async with runtime_on(llm, db, human=ScriptedHuman(["Lisbon"])) as rt:
                request = SessionRequest("Weather where I live?", [spec], awareness=awareness)
                outcome = await run_session(request, rt)
                kinds = [e.kind for e in rt.store.events(outcome.session_id)]
            assert outcome.status == "finished" and kinds.count("final_answer") == 1
            with sqlite3.connect(db) as conn:
                (saved[awareness],) = conn.execute("SELECT count(*) FROM checkpoints").fetchone()
    # A checkpoint a superstep: asking no question takes one fewer, the rest alike.
    assert saved["tool"] == saved["none"] + 1
