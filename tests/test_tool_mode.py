"""Prompt tool mode: tools described in the system prompt, calls and results as text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from http_server import LocalServer, make_spec
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from runtime_support import fake_config, runtime_on

from aah.errors import AahError
from aah.events import ToolCallEvent
from aah.runtime.prompts import prompt_versions
from aah.runtime.session import SessionRequest, run_session
from aah.runtime.tool_mode import (
    choose_tool_mode,
    prompted_conversation,
    tool_mode_choice,
    tools_prompt,
)
from aah.testing.fake_llm import FakeLLMServer
from aah.tools.calls import openai_tool
from aah.tools.spec import ParameterSpec

pytestmark = pytest.mark.usefixtures("allow_private_tool_hosts")

CITY = ParameterSpec(name="city", required=True, description="City name")
HERMES_CALL = (
    '<tool_call>\n{"name": "local__forecast", "arguments": {"city": "Oslo"}}\n</tool_call>'
)


async def test_a_model_that_writes_hermes_calls_gets_them_run_and_reads_results_as_user(
    tmp_path: Path,
) -> None:
    with LocalServer() as api:
        spec = make_spec(api.url("/json"), name="forecast", params=[CITY])
        script = {
            "rules": [
                {"when": {"last_message_contains": "Tool output"}, "reply": "It is 21.5 in Oslo."},
                {"when": {"system_contains": "<tool_call>"}, "reply": HERMES_CALL},
                {"reply": "Yes: all there."},  # awareness
            ]
        }
        with FakeLLMServer(script) as llm:
            async with runtime_on(llm, tmp_path / "s.db", http_mode="live") as rt:
                request = SessionRequest("Weather in Oslo?", [spec], tool_mode="prompt")
                outcome = await run_session(request, rt)
                events = rt.store.events(outcome.session_id)
            requests = llm.requests
        assert api.count("/json") == 1
    assert outcome.status == "finished" and outcome.final_answer == "It is 21.5 in Oslo."
    (tool_event,) = [e for e in events if isinstance(e, ToolCallEvent)]
    assert tool_event.ok and tool_event.arguments == {"city": "Oslo"}
    # No request carried tools or a tool-role message.
    assert all("tools" not in r and "tool_choice" not in r for r in requests)
    roles = [m["role"] for r in requests for m in r["messages"]]
    assert "tool" not in roles
    last = requests[-1]["messages"]
    assert [m["role"] for m in last] == ["system", "user", "assistant", "user"]
    assert '"name": "local__forecast"' in last[0]["content"]  # the tools, described
    assert "<tool_call>" in last[2]["content"] and "tool_calls" not in last[2]
    assert last[3]["content"].startswith("Tool output")
    assert '<tool_response name="local__forecast">' in last[3]["content"]
    assert "21.5" in last[3]["content"]


def test_the_conversation_is_rewritten_in_plain_roles() -> None:
    calls = [
        {"name": "a", "args": {"x": 1}, "id": "1"},
        {"name": "b", "args": {}, "id": "2"},
    ]
    messages = [
        SystemMessage("Be brief."),
        HumanMessage("Q"),
        AIMessage("Let me look.", tool_calls=calls),
        ToolMessage("one", tool_call_id="1", name="a"),
        ToolMessage("two", tool_call_id="2", name="b"),
        AIMessage(
            "",
            invalid_tool_calls=[
                {"name": None, "args": "<tool_call>{oops", "id": "3", "error": "bad"}
            ],
        ),
        ToolMessage("Your call could not be read.", tool_call_id="3"),
    ]
    written = prompted_conversation(messages, "TOOLS")
    assert [type(m).__name__ for m in written] == [
        "SystemMessage",
        "HumanMessage",
        "AIMessage",
        "HumanMessage",
        "AIMessage",
        "HumanMessage",
    ]
    assert written[0].text == "Be brief.\n\nTOOLS"
    assert written[2].text.startswith("Let me look.\n<tool_call>\n")
    assert json.loads(written[2].text.split("<tool_call>\n")[2].split("\n</tool_call>")[0]) == {
        "name": "b",
        "arguments": {},
    }
    assert "one" in written[3].text and "two" in written[3].text  # one message for the turn
    assert written[4].text == "<tool_call>{oops"  # an unreadable attempt, as written
    assert '<tool_response name="tool">' in written[5].text
    assert not any(isinstance(m, AIMessage) and m.tool_calls for m in written)


def test_the_tools_prompt_is_versioned_and_lists_every_tool() -> None:
    spec = make_spec("http://127.0.0.1:9/json", name="forecast", params=[CITY])
    text = tools_prompt([openai_tool(spec)])
    assert '"name": "local__forecast"' in text and "<tool_call>" in text
    assert tools_prompt([]) == ""
    versions = prompt_versions()
    assert versions["agent_tools_in_prompt"].startswith("agent-tools-in-prompt/")
    assert versions["tool_output_message"].startswith("tool-output-message/")


NATIVE_CALL = {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}
TEXT_CALL = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
REFUSED = {
    "error": {"status": 400, "message": '"auto" tool choice requires --enable-auto-tool-choice'}
}


@pytest.mark.parametrize(
    ("choice", "reply_to_tools", "mode"),
    [
        ("native", "It is sunny.", "native"),  # as asked: no probe
        ("prompt", NATIVE_CALL, "prompt"),
        ("auto", NATIVE_CALL, "native"),
        ("auto", TEXT_CALL, "native"),  # calls in text are read in either mode
        ("auto", "It is sunny.", "prompt"),  # tools ignored
        ("auto", REFUSED, "prompt"),  # a server that refuses requests with tools
    ],
)
async def test_tool_mode_choices(choice: str, reply_to_tools: object, mode: str) -> None:
    script = {"rules": [{"when": {"has_tools": True}, "reply": reply_to_tools}, {"reply": "OK"}]}
    with FakeLLMServer(script) as llm:
        chosen, why = await choose_tool_mode(tool_mode_choice(choice), fake_config(llm))
        probed = bool(llm.requests)
    assert chosen == mode
    assert probed is (choice == "auto")
    assert why == "as asked" or why.startswith("auto: the server's tool calls are ")


@pytest.mark.parametrize("value", ["", "Prompt", "text", "native "])
def test_an_unknown_tool_mode_is_a_one_line_error(value: str) -> None:
    with pytest.raises(AahError, match="use native, prompt or auto"):
        tool_mode_choice(value)
