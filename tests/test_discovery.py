"""Tools the agent discovers as it goes: find_tools, against the fake model over real HTTP."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from runtime_support import awareness_rule, call, runtime_on

from aah.desk import question_context
from aah.events import DiscoveryEvent, FinalAnswerEvent, ToolCallEvent
from aah.runtime import QueueHuman, SessionRequest, ToolFinder, resume_request, run_session
from aah.scoring import error_patterns
from aah.store import SessionStore
from aah.testing.fake_llm import FakeLLMServer
from aah.tools.registry import Registry

WEATHER = "openmeteo__get_weather_forecast"
PARIS = {"latitude": 48.85, "longitude": 2.35}
# Today's BM25 ranking puts the Open-Meteo forecast fifth for this plain need
# (and not in the top ten for the user's own words): the script phrases it plainly.
NEED = "weather forecast"
FOUND_REPLY = "Tomorrow in Paris: mild, light rain in the afternoon."


@pytest.fixture
def registry(shared_registry: Path, monkeypatch: pytest.MonkeyPatch) -> Registry:
    # Resuming a session reopens the registry named by the environment.
    monkeypatch.setenv("AAH_REGISTRY", str(shared_registry))
    return Registry(shared_registry)


def discover_then_call(need: str = NEED, tool: str = WEATHER, **arguments: Any) -> dict[str, Any]:
    """Awareness yes; find_tools(need); call ``tool`` once it is offered; answer."""
    return {
        "rules": [
            awareness_rule("Yes: a forecast tool will do."),
            {"when": {"last_tool_name": tool}, "reply": FOUND_REPLY},
            {"when": {"tool_offered": tool}, "reply": call(tool, **(arguments or PARIS))},
            {"when": {"tool_offered": "find_tools"}, "reply": call("find_tools", need=need)},
        ]
    }


def _aah(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("AAH_", "OPENAI_"))}
    full |= {"COLUMNS": "200", "NO_COLOR": "1", **env}
    return subprocess.run(
        [sys.executable, "-m", "aah", *args], text=True, capture_output=True, env=full, timeout=180
    )


# -- aah run with no tool named: the agent finds the forecast ------------------


def test_aah_run_with_no_tool_named_reaches_the_forecast_through_find_tools(
    shared_registry: Path, tmp_path: Path
) -> None:
    db = tmp_path / "run.db"
    with FakeLLMServer(discover_then_call()) as llm:
        env = {
            "AAH_REGISTRY": str(shared_registry),
            "AAH_BASE_URL": llm.base_url,
            "AAH_MODEL": "fake-model",
            "AAH_API_KEY": "sk-test-0000",
        }
        result = _aah(
            "run", "What is the weather in Paris tomorrow?", "--http", "mock", "--db", str(db),
            env=env,
        )  # fmt: skip
        requests = llm.requests
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "find_tools (5 per search)" in out, out
    assert "⌕ find_tools → 5 endpoint(s), 5 new" in out and f"{WEATHER} (new)" in out, out
    assert f"✓ {WEATHER} → 200" in out and f"final answer: {FOUND_REPLY}" in out, out
    # The model was offered find_tools (and ask_human) first, the forecast once found.
    offered = [[t["function"]["name"] for t in r.get("tools", [])] for r in requests]
    agent_turns = [names for names in offered if names]
    assert agent_turns[0] == ["find_tools", "ask_human"]
    assert WEATHER in agent_turns[1] and agent_turns[1][-2:] == ["find_tools", "ask_human"]
    with SessionStore(db) as store:
        (session,) = store.list_sessions()
        events = store.events(session.id)
    assert session.status == "finished"
    (found,) = [e for e in events if isinstance(e, DiscoveryEvent)]
    assert found.need == NEED and WEATHER in found.hits and WEATHER in found.added
    calls = [e for e in events if isinstance(e, ToolCallEvent)]
    assert [(c.tool, c.check, c.ok) for c in calls] == [(WEATHER, "ok", True)]


def test_no_discover_keeps_aah_run_tool_free(shared_registry: Path, tmp_path: Path) -> None:
    script = {"rules": [{"when": {"has_tools": True}, "reply": "tools!"}, {"reply": "No tools."}]}
    with FakeLLMServer(script) as llm:
        env = {"AAH_REGISTRY": str(shared_registry), "AAH_BASE_URL": llm.base_url}
        result = _aah(
            "run", "Hi", "--no-discover", "--no-aah", "--awareness", "none",
            "--db", str(tmp_path / "a.db"), env=env | {"AAH_MODEL": "m"},
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "final answer: No tools." in result.stdout


def test_discover_asked_without_any_registry_is_one_error_line(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with FakeLLMServer(["unused"]) as llm:
        env = {
            "AAH_REGISTRY": str(tmp_path / "none.db"),
            "AAH_DATA_DIR": str(empty),
            "AAH_BASE_URL": llm.base_url,
            "AAH_MODEL": "m",
        }
        asked = _aah("run", "Hi", "--discover", "--db", str(tmp_path / "a.db"), env=env)
        implied = _aah(
            "run", "Hi", "--awareness", "none", "--no-aah", "--db", str(tmp_path / "b.db"),
            env=env,
        )  # fmt: skip
    assert asked.returncode == 2 and asked.stderr.startswith("error: ")
    assert asked.stderr.count("\n") == 1 and "aah data fetch" in asked.stderr
    # Not asked for: the run goes on without find_tools, and says why in one line.
    assert implied.returncode == 0, implied.stderr
    assert implied.stderr.startswith("warning: find_tools is off: ")


# -- tool checks: a discovered tool is an offered one ----------------------------


def _run(
    llm: FakeLLMServer, db: Path, finder: ToolFinder | None, query: str = "Weather in Paris?"
) -> tuple[str, list[Any]]:
    async def scenario() -> tuple[str, list[Any]]:
        async with runtime_on(llm, db) as runtime:
            outcome = await run_session(
                SessionRequest(query=query, finder=finder, awareness="none"), runtime
            )
            return outcome.status, runtime.store.events(outcome.session_id)

    return asyncio.run(scenario())


def test_a_discovered_tool_is_checked_like_an_offered_one(
    registry: Registry, tmp_path: Path
) -> None:
    # A wrong argument name to a discovered endpoint: IAN, listing its own arguments.
    script = {
        "rules": [
            {
                "when": {"last_message_contains": "no argument named"},
                "reply": call(WEATHER, **PARIS),
            },
            {"when": {"last_tool_name": WEATHER}, "reply": "Done."},
            {"when": {"tool_offered": WEATHER}, "reply": call(WEATHER, city="Paris")},
            {"when": {"tool_offered": "find_tools"}, "reply": call("find_tools", need=NEED)},
        ]
    }
    with FakeLLMServer(script) as llm:
        status, events = _run(llm, tmp_path / "c.db", ToolFinder(registry))
    calls = [e for e in events if isinstance(e, ToolCallEvent)]
    assert status == "finished"
    assert [(c.tool, c.check) for c in calls] == [(WEATHER, "IAN"), (WEATHER, "ok")]
    assert "latitude (number, required)" in calls[0].feedback


# Calls to endpoints the session has not discovered: each is IFN, not run, and
# the feedback points to find_tools, in the same words whether or not the
# registry holds the name (a removed endpoint is never revealed).
UNDISCOVERED_CORPUS = {
    "a registry endpoint never searched for": WEATHER,
    "an endpoint of the same API": "openmeteo__get_air_quality",
    "a name the registry does not hold": "weather__get_tomorrow",
    "a registry name in other case": "OpenMeteo__Get_Weather_Forecast",
    "the endpoint the setting removed": "coinbase__get_buy_price",
    "a bare tool name": "openmeteo",
    "a name with spaces": "open meteo forecast",
}


@pytest.mark.parametrize("name", sorted(UNDISCOVERED_CORPUS))
def test_an_undiscovered_endpoint_gets_feedback_that_suggests_find_tools(
    registry: Registry, tmp_path: Path, name: str
) -> None:
    tool = UNDISCOVERED_CORPUS[name]
    script = {
        "rules": [
            {"when": {"last_message_contains": "Call find_tools"}, "reply": "I will search."},
            {"reply": call(tool, latitude=1, longitude=2)},
        ]
    }
    finder = ToolFinder(registry, removed={"coinbase__get_buy_price"})
    with FakeLLMServer(script) as llm:
        status, events = _run(llm, tmp_path / "u.db", finder)
    (rejected,) = [e for e in events if isinstance(e, ToolCallEvent)]
    assert status == "finished"
    assert rejected.check == "IFN" and rejected.status_code is None
    assert "Call find_tools with what you need" in rejected.feedback
    # The same words for every name: nothing tells the removed endpoint apart.
    assert rejected.feedback == (
        f"There is no tool named {tool!r} among your tools yet. Call find_tools with what "
        "you need done, in a few plain words, and call one of the endpoints it lists. "
        "Your tools now: ask_human, find_tools."
    )


def test_without_discovery_an_unknown_tool_gets_the_plain_feedback(tmp_path: Path) -> None:
    script = {
        "rules": [
            {"when": {"last_message_contains": "There is no tool"}, "reply": "Sorry."},
            {"reply": call(WEATHER, **PARIS)},
        ]
    }
    with FakeLLMServer(script) as llm:
        _, events = _run(llm, tmp_path / "p.db", None)
    (rejected,) = [e for e in events if isinstance(e, ToolCallEvent)]
    assert rejected.check == "IFN" and "find_tools" not in rejected.feedback


def test_the_removed_endpoint_is_never_found(registry: Registry) -> None:
    need = "buy price coinbase bitcoin"
    assert registry.search(need, 1)[0].spec.qualified_name == "coinbase__get_buy_price"
    finder = ToolFinder(registry, k=5, removed={"coinbase__get_buy_price"})
    found = [spec.qualified_name for spec in finder.find(need)]
    assert len(found) == 5 and "coinbase__get_buy_price" not in found
    assert not finder.findable("coinbase__get_buy_price") and finder.findable(WEATHER)
    assert not finder.findable("find_tools") and not finder.findable("ask_human")


def test_find_tools_counts_as_a_clean_call_in_the_error_patterns(
    registry: Registry, tmp_path: Path
) -> None:
    # science.md §4 names no exception: a valid find_tools call is a clean call,
    # as a valid ask_human call is; finding an endpoint is not calling it.
    db = tmp_path / "e.db"
    with FakeLLMServer(discover_then_call()) as llm:
        _run(llm, db, ToolFinder(registry))
    with SessionStore(db) as store:
        (session,) = store.list_sessions()
        report = error_patterns(store, None, {session.id: [WEATHER, "openmeteo__get_air_quality"]})
    assert report.calls == 2 and report.hits["IFN"] == 0
    assert report.incomplete == {session.id: ["openmeteo__get_air_quality"]}


# -- discovery survives parking for a person and a resume ------------------------


def test_discovered_tools_survive_park_and_resume(registry: Registry, tmp_path: Path) -> None:
    db = tmp_path / "park.db"
    script = {
        "rules": [
            {"when": {"last_tool_name": WEATHER}, "reply": FOUND_REPLY},
            {"when": {"last_tool_name": "ask_human"}, "reply": call(WEATHER, **PARIS)},
            {"when": {"last_tool_name": "find_tools"}, "reply": call("ask_human", question="Day?")},
            {"when": {"tool_offered": "find_tools"}, "reply": call("find_tools", need=NEED)},
        ]
    }

    async def scenario(llm: FakeLLMServer) -> tuple[str, str, str]:
        async with runtime_on(llm, db) as first:
            request = SessionRequest(
                query="Weather in Paris?",
                awareness="none",
                human=QueueHuman(first.store, park=True),
                finder=ToolFinder(registry, k=5),
            )
            parked = await run_session(request, first)
        assert parked.status == "waiting" and parked.waiting_on is not None
        with SessionStore(db) as store:
            store.humans.answer_human_request(parked.waiting_on, "ana", "Tomorrow")
        # Another process: the session comes back from its checkpoint and recipe.
        async with runtime_on(llm, db) as again:
            resumed = resume_request(again.store, parked.session_id).request
            assert resumed.finder is not None and resumed.finder.k == 5
            outcome = await run_session(resumed, again)
            return outcome.session_id, outcome.status, parked.waiting_on

    with FakeLLMServer(script) as llm:
        session_id, status, request_id = asyncio.run(scenario(llm))
        last = llm.requests[-1]
    assert status == "finished"
    # The resumed session's model was still offered the endpoint found before parking.
    assert WEATHER in [t["function"]["name"] for t in last["tools"]]
    with SessionStore(db) as store:
        events = store.events(session_id)
        asked = store.humans.get_human_request(request_id)
    assert asked is not None
    calls = [e for e in events if isinstance(e, ToolCallEvent)]
    assert [(c.tool, c.check) for c in calls] == [(WEATHER, "ok")]
    assert sum(isinstance(e, DiscoveryEvent) for e in events) == 1
    assert isinstance(events[-1], FinalAnswerEvent) and events[-1].text == FOUND_REPLY
    # The person answering saw the discovered endpoints among the agent's tools.
    assert any(line.startswith(WEATHER) for line in question_context(asked.context).tools)


# -- aah bench run --tools registry, and the report ---------------------------------

IDS = ["nonreplaceable-3", "nonreplaceable-5"]
# Finds coinbase__get_buy_price first, in the registry; task 3 removes it.
COIN_NEED = "buy price coinbase bitcoin"


def test_bench_run_with_tools_from_the_registry_and_its_report(
    shared_registry: Path, shared_data: Path, tmp_path: Path
) -> None:
    db = tmp_path / "bench.db"
    script = {
        "rules": [
            awareness_rule("IDK: I will look for tools."),
            {"when": {"last_tool_name": "find_tools"}, "reply": "The price is unknown to me."},
            {"when": {"tool_offered": "find_tools"}, "reply": call("find_tools", need=COIN_NEED)},
            {"reply": "Given tools; no search."},
        ]
    }
    with FakeLLMServer(script) as llm:
        env = {
            "AAH_REGISTRY": str(shared_registry),
            "AAH_BASE_URL": llm.base_url,
            "AAH_MODEL": "fake-model",
        }
        common = ["--setting", "nonreplaceable", "--ids", IDS[0], "--ids", IDS[1]]
        common += ["--data", str(shared_data), "--db", str(db), "--no-probe", "--human", "oracle"]
        found = _aah("bench", "run", "--run", "found", "--tools", "registry", *common, env=env)
        given = _aah("bench", "run", "--run", "given", *common, env=env)
        wrong = _aah(
            "bench", "run", "--run", "w", "--tools", "registry", "--benchmark", "when2call",
            "--db", str(db), env=env,
        )  # fmt: skip
        first_requests = [r for r in llm.requests if r.get("tools")]
    assert found.returncode == 0, found.stderr
    assert given.returncode == 0, given.stderr
    assert wrong.returncode == 2 and wrong.stderr.startswith(
        "error: --tools applies to --benchmark fail-talms, not when2call"
    )
    # Found the tools: the agent starts with find_tools and ask_human only.
    assert [t["function"]["name"] for t in first_requests[0]["tools"]] == [
        "find_tools",
        "ask_human",
    ]
    with SessionStore(db) as store:
        manifest = store.get_run("found").manifest
        assert manifest["tools"] == "registry" and manifest["discover"] is True
        assert store.get_run("given").manifest["tools"] == "given"
        searches = {
            s.task_id: [e for e in store.events(s.id) if isinstance(e, DiscoveryEvent)]
            for s in store.list_sessions(run="found")
        }
    assert sorted(searches) == IDS
    # The removed endpoint is not findable in the task that removed it, and is in the other.
    assert "coinbase__get_buy_price" not in searches[IDS[0]][0].hits
    assert "coinbase__get_buy_price" in searches[IDS[1]][0].hits

    shown = _aah(
        "report", "--db", str(db), "--data", str(shared_data), "--format", "json",
        env={"AAH_REGISTRY": str(shared_registry)},
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    report = json.loads(shown.stdout)
    (discovery,) = report["discovery"]
    assert discovery["run"] == "found" and discovery["tools"] == "found the tools"
    assert discovery["searches"] == 2 and discovery["per_task"] == {IDS[0]: 1, IDS[1]: 1}
    # Task 5's gold (coinbase buy price; its kucoin ticker was removed) was found;
    # task 3's (the kucoin ticker; its coinbase price was removed) was not.
    assert (discovery["gold_found"]["k"], discovery["gold_found"]["n"]) == (1, 2)
    assert discovery["missed"] and list(discovery["missed"].values()) == [["kucoin__get_ticker"]]
    (cost,) = report["discovery_cost"]
    assert (cost["given_run"], cost["found_run"]) == ("given", "found")
    assert cost["setting"] == "nonreplaceable"
    text = _aah(
        "report", "--db", str(db), "--data", str(shared_data),
        env={"AAH_REGISTRY": str(shared_registry)},
    )  # fmt: skip
    assert "Tool discovery" in text.stdout and "Cost of discovery" in text.stdout


def test_the_terminal_app_counts_a_search_as_a_tool_call() -> None:
    from aah.ui.tui.widgets import SessionStats, entry_view

    event = DiscoveryEvent(session_id="s", call_id="c", need=NEED, hits=[WEATHER], added=[WEATHER])
    assert SessionStats().after(event).tool_calls == 1
    view = entry_view(event)
    assert view is not None and view.heading == "⌕ find_tools → 1 endpoint(s), 1 new"
    assert f"{WEATHER} (new)" in view.body


# find_tools called with needs a model may send: each gets a check's feedback
# or a search's answer, and the session goes on to its end.
LONG_NEED = " ".join(f"word{i}" for i in range(2_000))
NEED_CORPUS: dict[str, tuple[dict[str, Any], str]] = {
    "empty": ({"need": ""}, "IAV"),
    "spaces only": ({"need": "   \t"}, "IAV"),
    "a zero-width space": ({"need": "\u200b"}, "IAV"),
    "no need at all": ({}, "IAV"),
    "a number": ({"need": 5}, "IAT"),
    "a list": ({"need": ["weather", "forecast"]}, "IAT"),
    "an extra argument": ({"need": NEED, "k": 50}, "IAN"),
    "stop words only": ({"need": "what is the"}, "ok"),
    "search syntax": ({"need": 'weather" OR * NEAR(forecast'}, "ok"),
    "another script": ({"need": "天気予報"}, "ok"),
    "two thousand words": ({"need": LONG_NEED}, "ok"),
}


@pytest.mark.parametrize("case", sorted(NEED_CORPUS))
def test_find_tools_takes_any_need_a_model_sends(
    registry: Registry, tmp_path: Path, case: str
) -> None:
    arguments, expected = NEED_CORPUS[case]
    script = {
        "rules": [
            {"when": {"last_role": "tool"}, "reply": "Done."},
            {"reply": {"tool_calls": [{"name": "find_tools", "arguments": arguments}]}},
        ]
    }
    with FakeLLMServer(script) as llm:
        status, events = _run(llm, tmp_path / "n.db", ToolFinder(registry))
    assert status == "finished"
    rejected = [e for e in events if isinstance(e, ToolCallEvent)]
    searches = [e for e in events if isinstance(e, DiscoveryEvent)]
    if expected == "ok":
        assert not rejected and len(searches) == 1
        assert len(searches[0].need) <= 2_000  # a long need is stored cut, with a marker
    else:
        assert [e.check for e in rejected] == [expected] and not searches


def test_a_discovered_endpoint_waits_for_approval_like_an_offered_one(
    registry: Registry, tmp_path: Path
) -> None:
    from aah.events import ApprovalDecidedEvent
    from aah.runtime import ApprovalPolicy, ApprovalReply, ApprovalRule, ScriptedApprover

    approver = ScriptedApprover([ApprovalReply(decision="approve", decided_by="ann")])
    policy = ApprovalPolicy(rules=(ApprovalRule(methods=("GET",)),))

    async def scenario(llm: FakeLLMServer) -> tuple[str, list[Any]]:
        async with runtime_on(llm, tmp_path / "a.db") as runtime:
            request = SessionRequest(
                "Weather in Paris?",
                awareness="none",
                finder=ToolFinder(registry),
                approvals=policy,
                approver=approver,
            )
            outcome = await run_session(request, runtime)
            return outcome.status, runtime.store.events(outcome.session_id)

    with FakeLLMServer(discover_then_call()) as llm:
        status, events = asyncio.run(scenario(llm))
    assert status == "finished"
    (asked,) = approver.asked
    assert (asked.tool, asked.method, asked.arguments) == (WEATHER, "GET", PARIS)
    (decided,) = [e for e in events if isinstance(e, ApprovalDecidedEvent)]
    assert decided.outcome == "approved"
    calls = [e for e in events if isinstance(e, ToolCallEvent)]
    assert [(c.tool, c.check, c.ok) for c in calls] == [(WEATHER, "ok", True)]
