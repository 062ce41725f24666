"""A session that ends by timeout or error keeps every event it emitted."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from http_server import LocalServer, make_spec
from runtime_support import awareness_rule, runtime_on

from aah.events import ErrorEvent, ToolCallEvent
from aah.runtime.session import SessionRequest, record_failure, run_session
from aah.testing.fake_llm import FakeLLMServer
from aah.tools.spec import ParameterSpec

pytestmark = pytest.mark.usefixtures("allow_private_tool_hosts")

CITY = ParameterSpec(name="city", required=True, description="City name")


async def test_a_task_timing_out_after_two_tool_calls_keeps_their_events(tmp_path: Path) -> None:
    with LocalServer(slow_seconds=5) as api:
        forecast = make_spec(api.url("/json"), name="forecast", params=[CITY])
        radar = make_spec(api.url("/slow"), name="radar", params=[CITY])
        # One turn, three calls: two answer at once, the third outlasts the task.
        turn = {
            "tool_calls": [
                {"name": "local__forecast", "arguments": {"city": "Oslo"}},
                {"name": "local__forecast", "arguments": {"city": "Bergen"}},
                {"name": "local__radar", "arguments": {"city": "Oslo"}},
            ]
        }
        script = {"rules": [awareness_rule("Yes: all there."), {"reply": turn}]}
        with FakeLLMServer(script) as llm:
            # As a batch run: events wait for a checkpoint that a timeout never reaches.
            async with runtime_on(
                llm, tmp_path / "s.db", http_mode="live", durability="exit"
            ) as rt:
                request = SessionRequest("Weather?", [forecast, radar], run="r", task_id="t")
                rt.store.create_run("r", {"model": "fake-model"})
                with pytest.raises(TimeoutError):
                    await asyncio.wait_for(run_session(request, rt), 1.5)
                outcome = record_failure(request, rt, "task timed out after 1.5 s", "runner")
                events = rt.store.events(outcome.session_id)
        assert api.count("/json") == 2
    calls = [e for e in events if isinstance(e, ToolCallEvent)]
    assert sorted(c.arguments["city"] for c in calls) == ["Bergen", "Oslo"]
    assert all(c.ok and c.tool == "local__forecast" for c in calls)
    assert isinstance(events[-1], ErrorEvent) and events[-1].where == "runner"
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
