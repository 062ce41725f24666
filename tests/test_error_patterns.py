"""ToolScan error patterns: hand-made sessions with every check code, shares by hand,
IAC from a needed mapping, the empty case, and one real session through the runtime."""

from pathlib import Path
from typing import Any

import pytest
from http_server import make_spec
from runtime_support import awareness_rule, call, runtime_on

from aah.events import HumanQuestionEvent, ToolCallEvent
from aah.runtime.humans import ScriptedHuman
from aah.runtime.session import SessionRequest, run_session
from aah.scoring.errors import ERROR_PATTERNS, call_patterns, error_patterns
from aah.store.sessions import SessionStatus, SessionStore
from aah.testing.fake_llm import FakeLLMServer
from aah.tools.spec import ParameterSpec

pytestmark = pytest.mark.usefixtures("allow_private_tool_hosts")

RUN = "scan-run"
WEATHER, FLIGHTS = "weather__forecast", "flights__search"


def rejected(session_id: str, check: Any, tool: str = WEATHER) -> ToolCallEvent:
    return ToolCallEvent(
        session_id=session_id, call_id="c", tool=tool, ok=False, check=check, feedback="no"
    )


def ran(session_id: str, status: int, tool: str = WEATHER) -> ToolCallEvent:
    return ToolCallEvent(
        session_id=session_id, call_id="c", tool=tool, ok=status < 400, status_code=status
    )


def add_session(
    store: SessionStore,
    task: str,
    events: list[Any],
    run: str = RUN,
    status: SessionStatus = "finished",
) -> str:
    session_id = store.open_session(f"query {task}", run=run, task_id=task).id
    for make in events:
        store.append_event(make(session_id))
    store.finish_session(session_id, status)
    return session_id


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    with SessionStore(tmp_path / "scan.db") as opened:
        for run in (RUN, "other-run"):
            opened.create_run(run, {})
        yield opened


def test_each_check_code_counts_under_its_own_pattern() -> None:
    assert call_patterns(rejected("s", "IFN")) == {"IFN"}
    assert call_patterns(rejected("s", "RAC")) == {"RAC"}
    assert call_patterns(ran("s", 200)) == frozenset()
    # The API calling the values wrong is IAV; a dead or failing tool is not the call's fault.
    assert call_patterns(ran("s", 400)) == {"IAV"} and call_patterns(ran("s", 422)) == {"IAV"}
    assert call_patterns(ran("s", 404)) == frozenset() == call_patterns(ran("s", 500))


def test_shares_free_of_each_pattern_by_hand(store: SessionStore) -> None:
    def asked(session_id: str) -> HumanQuestionEvent:
        return HumanQuestionEvent(session_id=session_id, request_id="r", question="Which city?")

    first = add_session(
        store,
        "a",
        [
            lambda s: ran(s, 200),
            lambda s: rejected(s, "IFN", tool="weather__nowcast"),
            lambda s: rejected(s, "IAN"),
            lambda s: rejected(s, "IAT"),
            lambda s: rejected(s, "IFE", tool="(unparsed)"),
            lambda s: rejected(s, "RAC"),
            lambda s: rejected(s, "IAV"),
            lambda s: ran(s, 422),
            lambda s: ran(s, 404),
            lambda s: ran(s, 500),
            asked,  # a valid ask_human call: a clean call
            lambda s: rejected(s, "IAN", tool="ask_human"),
        ],
    )
    second = add_session(store, "b", [lambda s: ran(s, 400, tool=FLIGHTS)])
    skipped = add_session(store, "c", [], status="skipped")
    no_needs = add_session(store, "d", [])
    add_session(store, "e", [lambda s: rejected(s, "IFN")], run="other-run")
    needed = {
        first: [WEATHER, "ask_human"],  # ask_human is never a needed endpoint
        second: [WEATHER, FLIGHTS],  # weather never called: IAC
        skipped: [WEATHER],  # skipped: nothing was tried, outside N
        no_needs: [],  # needs nothing: outside N
    }

    report = error_patterns(store, RUN, needed)

    assert report.calls == 13 and report.tasks == 2
    free = {pattern: (share.k, share.n) for pattern, share in report.free.items()}
    assert free == {
        "IFN": (12, 13),
        "IAN": (11, 13),
        "IAT": (12, 13),
        "IFE": (12, 13),
        "RAC": (12, 13),
        "IAV": (10, 13),  # the IAV check, the 422 and the 400
        "IAC": (1, 2),
    }
    assert report.hits["IAV"] == 3 and report.hits["IAC"] == 1
    assert report.incomplete == {second: [WEATHER]}
    assert report.free["IAC"].value == pytest.approx(0.5)
    assert report.free["IFN"].low is not None and report.free["IFN"].low < 12 / 13


def test_every_session_counts_without_a_run(store: SessionStore) -> None:
    add_session(store, "a", [lambda s: ran(s, 200)])
    add_session(store, "b", [lambda s: rejected(s, "IFN")], run="other-run")
    report = error_patterns(store, None)
    assert (report.free["IFN"].k, report.free["IFN"].n) == (1, 2)


def test_no_calls_and_no_needed_mapping_give_no_value(store: SessionStore) -> None:
    add_session(store, "quiet", [])
    for report in (error_patterns(store, RUN), error_patterns(store, "no-such-run", {})):
        assert report.calls == 0 and report.tasks == 0
        assert set(report.free) == set(ERROR_PATTERNS)
        assert all(share.value is None and share.n == 0 for share in report.free.values())


async def test_a_real_session_is_scored_from_what_the_runtime_logged(tmp_path: Path) -> None:
    city = ParameterSpec(name="city", required=True, description="City name")
    spec = make_spec("http://127.0.0.1:9/forecast", name="forecast", params=[city])
    script = {
        "rules": [
            awareness_rule("Yes, all there."),
            {"when": {"last_tool_name": "local__forecast"}, "reply": "It is sunny in Oslo."},
            {
                "when": {"last_tool_name": "ask_human"},
                "reply": call("local__forecast", city="Oslo"),
            },
            {
                "when": {"last_tool_name": "nope__tool"},
                "reply": call("ask_human", question="City?"),
            },
            {"when": {"has_tools": True}, "reply": call("nope__tool", x=1)},
        ]
    }
    with FakeLLMServer(script) as llm:
        async with runtime_on(llm, tmp_path / "s.db", ScriptedHuman(["Oslo"])) as rt:
            rt.store.create_run(RUN, {})
            outcome = await run_session(
                SessionRequest("Weather?", [spec], run=RUN, task_id="t"), rt
            )
            report = error_patterns(rt.store, RUN, {outcome.session_id: ["local__forecast"]})
    assert outcome.final_answer == "It is sunny in Oslo."
    # Three calls: the unknown tool (IFN), ask_human (clean), the forecast (clean).
    assert report.calls == 3
    assert (report.free["IFN"].k, report.free["IAV"].k) == (2, 3)
    assert (report.free["IAC"].k, report.free["IAC"].n) == (1, 1)
