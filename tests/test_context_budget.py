"""Context budgets: tool results cut to a token budget, and context overflows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from http_server import LocalServer, make_spec
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from runtime_support import awareness_rule, call, runtime_on

from aah.events import ErrorEvent
from aah.llm import ModelStatusError
from aah.runtime.budget import compact_tool_results, cut_tool_result
from aah.runtime.session import SessionRequest, run_session
from aah.testing.fake_llm import FakeLLMServer

pytestmark = pytest.mark.usefixtures("allow_private_tool_hosts")

VLLM = (
    "This model's maximum context length is 2048 tokens. However, you requested "
    "9000 tokens (8000 in the messages, 1000 in the completion)."
)


@pytest.mark.parametrize(
    ("length", "tokens", "expected"),
    [
        (0, 10, ""),
        (40, 10, "x" * 40),  # exactly the budget: whole
        (41, 10, "x" * 40 + "\n[... truncated: 40 of 41 characters shown]"),
        (2_600_000, 2_000, "x" * 8_000 + "\n[... truncated: 8,000 of 2,600,000 characters shown]"),
        (5, 1, "xxxx\n[... truncated: 4 of 5 characters shown]"),
    ],
)
def test_a_tool_result_is_cut_to_its_token_budget(length: int, tokens: int, expected: str) -> None:
    assert cut_tool_result("x" * length, tokens) == expected


@pytest.mark.parametrize(
    ("status", "message", "overflow"),
    [
        (400, VLLM, True),  # vLLM, OpenAI
        (400, "context_length_exceeded: too long", True),
        (
            400,
            "the request exceeds the available context size, try increasing it",
            True,
        ),  # llama.cpp
        (400, "Requested tokens (3000) exceed context window of 2048", True),  # llama-cpp-python
        (422, "Input validation error: too many tokens", True),  # TGI
        (413, "prompt is too long: 250000 tokens > 200000 maximum", True),
        (400, '"auto" tool choice requires --enable-auto-tool-choice', False),
        (404, "The model `m` does not exist.", False),
        (500, VLLM, False),  # a 5xx is the server failing, not the request too long
        (400, "", False),
    ],
)
def test_which_server_errors_are_context_overflows(
    status: int, message: str, overflow: bool
) -> None:
    error = ModelStatusError("x", url="u", status=status, server_message=message)
    assert error.context_overflow is overflow


def test_only_results_of_earlier_turns_are_compacted() -> None:
    old = ToolMessage("a" * 1000, tool_call_id="1", id="old")
    short = ToolMessage("tiny", tool_call_id="2", id="short")
    latest = ToolMessage("b" * 1000, tool_call_id="3", id="latest")
    messages = [
        SystemMessage("s"),
        HumanMessage("q"),
        AIMessage("", tool_calls=[{"name": "t", "args": {}, "id": "1"}]),
        old,
        short,
        AIMessage("", tool_calls=[{"name": "t", "args": {}, "id": "3"}]),
        latest,
    ]
    (compacted,) = compact_tool_results(messages)
    assert compacted.id == "old" and compacted.tool_call_id == "1"
    assert compacted.text == "a" * 200 + "\n[... compacted: 200 of 1,000 characters kept]"
    # Compacting again finds nothing more to do.
    assert compact_tool_results([*messages[:3], compacted, *messages[4:]]) == []


def _overflow(message: str = VLLM) -> dict[str, Any]:
    return {"error": {"status": 400, "message": message, "code": "context_length_exceeded"}}


async def test_tool_results_reach_the_model_within_the_budget(tmp_path: Path) -> None:
    with LocalServer(huge_size=50_000) as api:
        spec = make_spec(api.url("/huge"), name="huge")
        script = {
            "rules": [
                awareness_rule("Yes: all there."),
                {"when": {"last_tool_name": "local__huge"}, "reply": "Done."},
                {"when": {"has_tools": True}, "reply": call("local__huge")},
            ]
        }
        with FakeLLMServer(script) as llm:
            async with runtime_on(llm, tmp_path / "s.db", http_mode="live") as rt:
                request = SessionRequest("Big?", [spec], awareness="none", tool_result_tokens=100)
                outcome = await run_session(request, rt)
            (result,) = [m for m in llm.requests[-1]["messages"] if m["role"] == "tool"]
    assert outcome.status == "finished"
    # The executor's result starts with the status line: 12 characters, then the body.
    shown, marker = result["content"].rsplit("\n", 1)
    assert len(shown) == 400 and shown.startswith("HTTP 200 OK\nxxx")
    assert marker == "[... truncated: 400 of 50,012 characters shown]"


async def test_an_overflow_is_retried_once_with_older_results_compacted(tmp_path: Path) -> None:
    with LocalServer(huge_size=2_000) as api:
        huge = make_spec(api.url("/huge"), name="huge")
        forecast = make_spec(api.url("/json"), name="forecast")
        script = {
            "rules": [
                awareness_rule("Yes: all there."),
                {"when": {"last_tool_name": "local__huge"}, "reply": call("local__forecast")},
                # The whole huge result is too much once a second turn follows it.
                {"when": {"any_message_contains": "x" * 300}, "reply": _overflow()},
                {"when": {"last_tool_name": "local__forecast"}, "reply": "Done: 21.5."},
                {"when": {"has_tools": True}, "reply": call("local__huge")},
            ]
        }
        with FakeLLMServer(script) as llm:
            async with runtime_on(llm, tmp_path / "s.db", http_mode="live") as rt:
                request = SessionRequest("Weather?", [huge, forecast], awareness="none")
                outcome = await run_session(request, rt)
            requests = llm.requests
    assert outcome.status == "finished" and outcome.final_answer == "Done: 21.5."
    assert len(requests) == 4  # huge, forecast, the overflow, and its compacted retry
    sent = [m["content"] for m in requests[-1]["messages"] if m["role"] == "tool"]
    assert sent[0].endswith("[... compacted: 200 of 2,012 characters kept]")


NOTHING_OLDER = [
    # The latest result alone overflows: nothing older to compact, one request.
    {"when": {"last_tool_name": "local__huge"}, "reply": _overflow()},
]
STILL_TOO_LONG = [
    {"when": {"last_tool_name": "local__huge"}, "reply": call("local__forecast")},
    # Compacting keeps 200 characters: still too long for this server.
    {"when": {"any_message_contains": "x" * 100}, "reply": _overflow()},
]


@pytest.mark.parametrize(("rules", "compacted"), [(NOTHING_OLDER, False), (STILL_TOO_LONG, True)])
async def test_a_conversation_that_cannot_fit_fails_the_session_with_the_reason(
    tmp_path: Path, rules: list[dict[str, Any]], compacted: bool
) -> None:
    with LocalServer(huge_size=2_000) as api:
        huge = make_spec(api.url("/huge"), name="huge")
        forecast = make_spec(api.url("/json"), name="forecast")
        script = {
            "rules": [
                awareness_rule("Yes: all there."),
                *rules,
                {"when": {"has_tools": True}, "reply": call("local__huge")},
            ]
        }
        with FakeLLMServer(script) as llm:
            async with runtime_on(llm, tmp_path / "s.db", http_mode="live") as rt:
                request = SessionRequest("Weather?", [huge, forecast], awareness="none")
                outcome = await run_session(request, rt)
                events = rt.store.events(outcome.session_id)
            agent_requests = len(llm.requests)
    assert outcome.status == "error" and outcome.error is not None
    assert outcome.error.startswith(
        "the conversation no longer fits the model's context (its messages about "
    )
    assert "tokens, the tools' descriptions besides" in outcome.error
    assert "maximum context length is 2048 tokens" in outcome.error
    assert outcome.error.endswith(
        "lower --tool-result-tokens (AAH_TOOL_RESULT_TOKENS), offer fewer tools, "
        "or use a model with a larger context"
    )
    assert ("older tool results compacted" in outcome.error) is compacted
    assert "\n" not in outcome.error
    assert isinstance(events[-1], ErrorEvent) and events[-1].where == "model"
    assert agent_requests == (4 if compacted else 2)
