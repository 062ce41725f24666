"""describe_event: one description of every kind of event, rendered by each face."""

from __future__ import annotations

from typing import get_args

import pytest
from rich.console import Console

from aah.cli.trace import render_event
from aah.event_text import (
    ConversationLine,
    EventDescription,
    conversation_lines,
    describe_event,
)
from aah.events import (
    ApprovalDecidedEvent,
    ApprovalRequestedEvent,
    AwarenessEvent,
    DiscoveryEvent,
    ElicitationAnsweredEvent,
    ElicitationAskedEvent,
    ErrorEvent,
    Event,
    EventKind,
    FinalAnswerEvent,
    HumanAnswerEvent,
    HumanQuestionEvent,
    ModelCallEvent,
    StoppedEvent,
    ToolCallEvent,
    TurnEndedEvent,
    UserTurnEvent,
)
from aah.runtime.session import conversation_so_far
from aah.ui.tui.widgets import EntryView, entry_view

S = "s1"
LONG = "word " * 200
UNPARSED = "NONE (could not be parsed: no reply read as yes, idk or no; the task goes on)"

# Every kind of event, in its variants, and the description it must get.
CASES: list[tuple[Event, EventDescription | None]] = [
    (
        AwarenessEvent(session_id=S, question="tool", answer="idk", reason="no city given"),
        EventDescription("awareness", "awareness (tool): IDK", "no city given", tone="warn"),
    ),
    (
        AwarenessEvent(session_id=S, question="information", answer="yes"),
        EventDescription("awareness", "awareness (information): YES", "", tone="ok"),
    ),
    (
        AwarenessEvent(session_id=S, question="tool", answer="none", reason="?"),
        EventDescription("awareness", f"awareness (tool): {UNPARSED}", "?", tone="fail"),
    ),
    (
        # No reason to show: the reply that could not be parsed stands in.
        AwarenessEvent(session_id=S, question="information", answer="none", raw="Hmm, maybe?"),
        EventDescription(
            "awareness", f"awareness (information): {UNPARSED}", "Hmm, maybe?", tone="fail"
        ),
    ),
    (
        ModelCallEvent(
            session_id=S,
            model="m",
            prompt_tokens=10,
            completion_tokens=5,
            latency_ms=30.4,
            n_tool_calls=2,
            text="Let me check.",
        ),
        EventDescription(
            "model_call",
            "model step: 2 tool call(s), 15 tokens, 30 ms",
            "Let me check.",
            conversation=ConversationLine("agent", "Let me check."),
        ),
    ),
    (
        # A reply without calls is the final answer: its text shows there.
        ModelCallEvent(session_id=S, model="m", text="Done."),
        EventDescription(
            "model_call",
            "model step: a reply, 0 tokens, 0 ms",
            "",
            conversation=ConversationLine("agent", "Done."),
        ),
    ),
    (ModelCallEvent(session_id=S, model="m", purpose="awareness", text="IDK"), None),
    (ModelCallEvent(session_id=S, model="m", purpose="human", text="Paris"), None),
    (
        ToolCallEvent(
            session_id=S,
            call_id="c1",
            tool="weather__get",
            arguments={"city": "Oslo"},
            status_code=200,
            ok=True,
            latency_ms=12.0,
            result='{"temp": 21}',
            http_mode="mock",
        ),
        EventDescription(
            "tool_call",
            "✓ weather__get → 200, 12 ms [mock]",
            '{"temp": 21}',
            '{"city": "Oslo"}',
            "ok",
            ConversationLine("tool", "weather__get → 200"),
        ),
    ),
    (
        ToolCallEvent(
            session_id=S,
            call_id="c2",
            tool="weather__get",
            ok=False,
            result="timeout",
            http_mode="fault",
        ),
        EventDescription(
            "tool_call",
            "✗ weather__get → no response, 0 ms [fault]",
            "timeout",
            "{}",
            "fail",
            ConversationLine("tool", "weather__get → no response"),
        ),
    ),
    (
        ToolCallEvent(
            session_id=S,
            call_id="m1",
            tool="calc__add",
            arguments={"a": 2, "b": 3},
            ok=True,
            latency_ms=4.0,
            result="5",
            protocol="mcp",
        ),
        EventDescription(
            "tool_call",
            "✓ calc__add → MCP ok, 4 ms [live]",
            "5",
            '{"a": 2, "b": 3}',
            "ok",
            ConversationLine("tool", "calc__add → MCP ok"),
        ),
    ),
    (
        ToolCallEvent(
            session_id=S,
            call_id="m2",
            tool="calc__fail",
            ok=False,
            latency_ms=3.0,
            result="tool error: Error executing tool fail: quota\nsecond line",
            protocol="mcp",
            http_mode="record",
        ),
        EventDescription(
            "tool_call",
            "✗ calc__fail → MCP error: Error executing tool fail: quota second line, 3 ms [record]",
            "tool error: Error executing tool fail: quota second line",
            "{}",
            "fail",
            ConversationLine(
                "tool", "calc__fail → MCP error: Error executing tool fail: quota second line"
            ),
        ),
    ),
    (
        ToolCallEvent(
            session_id=S,
            call_id="m3",
            tool="calc__hang",
            ok=False,
            result="request failed: MCP server calc gave no answer to hang within 8 s: " + "x" * 90,
            protocol="mcp",
        ),
        EventDescription(
            "tool_call",
            "✗ calc__hang → MCP error: MCP server calc gave no answer to hang within 8 s: xxxxxxxx…,"
            " 0 ms [live]",
            "request failed: MCP server calc gave no answer to hang within 8 s: " + "x" * 90,
            "{}",
            "fail",
            ConversationLine(
                "tool",
                "calc__hang → MCP error: MCP server calc gave no answer to hang within 8 s: xxxxxxxx…",
            ),
        ),
    ),
    (
        ToolCallEvent(
            session_id=S,
            call_id="c3",
            tool="weather__get",
            arguments={"town": "Oslo"},
            ok=False,
            check="IAN",
            feedback="weather__get has no argument named 'town'.",
        ),
        EventDescription(
            "tool_call",
            "✗ weather__get rejected before running (IAN)",
            "weather__get has no argument named 'town'.",
            '{"town": "Oslo"}',
            "fail",
            ConversationLine("tool", "weather__get → rejected (IAN)"),
        ),
    ),
    (
        DiscoveryEvent(
            session_id=S,
            call_id="d1",
            need="weather forecast",
            hits=["openmeteo__get_weather_forecast", "weather__get"],
            added=["openmeteo__get_weather_forecast"],
        ),
        EventDescription(
            "discovery",
            "⌕ find_tools → 2 endpoint(s), 1 new",
            "openmeteo__get_weather_forecast (new), weather__get",
            '{"need": "weather forecast"}',
            "ok",
            ConversationLine(
                "tool",
                "find_tools('weather forecast') → openmeteo__get_weather_forecast, weather__get",
            ),
        ),
    ),
    (
        # Nothing found: a warning, and the conversation says so.
        DiscoveryEvent(session_id=S, call_id="d2", need="teleport me"),
        EventDescription(
            "discovery",
            "⌕ find_tools → nothing",
            "",
            '{"need": "teleport me"}',
            "warn",
            ConversationLine("tool", "find_tools('teleport me') → none"),
        ),
    ),
    (
        HumanQuestionEvent(session_id=S, request_id="r", question="Which city?"),
        EventDescription(
            "human_question",
            "? the agent asks",
            "Which city?",
            tone="ask",
            conversation=ConversationLine("agent asks", "Which city?"),
        ),
    ),
    (
        HumanAnswerEvent(session_id=S, request_id="r", answer="Paris", answered_by="console"),
        EventDescription(
            "human_answer",
            "↳ console answers",
            "Paris",
            tone="answer",
            conversation=ConversationLine("user", "Paris"),
        ),
    ),
    (
        HumanAnswerEvent(session_id=S, request_id="r", answer="", answered_by="ann", declined=True),
        EventDescription(
            "human_answer",
            "↳ ann declined to answer",
            tone="warn",
            conversation=ConversationLine("user", ""),
        ),
    ),
    (
        FinalAnswerEvent(session_id=S, text="It is 21 degrees."),
        EventDescription("final_answer", "final answer", "It is 21 degrees.", tone="final"),
    ),
    (
        FinalAnswerEvent(session_id=S, text="(stopped)", step_limit_hit=True),
        EventDescription(
            "final_answer", "final answer (step limit reached)", "(stopped)", tone="warn"
        ),
    ),
    (
        StoppedEvent(session_id=S, reason="step_limit", message="stopped after 3 steps"),
        EventDescription(
            "stopped",
            "■ stopped without a final answer (step limit reached)",
            "stopped after 3 steps",
            tone="warn",
        ),
    ),
    (
        StoppedEvent(session_id=S, reason="cut_off", message="cut twice"),
        EventDescription(
            "stopped", "■ stopped without a final answer (reply cut off)", "cut twice", tone="warn"
        ),
    ),
    (
        StoppedEvent(session_id=S, reason="terminated", message="a person terminated it"),
        EventDescription(
            "stopped",
            "■ stopped without a final answer (a person terminated the session)",
            "a person terminated it",
            tone="warn",
        ),
    ),
    (
        ApprovalRequestedEvent(
            session_id=S,
            request_id="r",
            call_id="c",
            tool="booking__hotel",
            method="POST",
            arguments={"rooms": 2},
            rule="method POST",
            ask=2,
        ),  # fmt: skip
        EventDescription(
            "approval_requested",
            "⏸ POST booking__hotel waits for approval (asked again, 2)",
            "Why it waits for you: the approval policy holds calls made with POST.",
            '{"rooms": 2}',
            "ask",
            ConversationLine("agent", "wants to call booking__hotel (needs approval)"),
        ),
    ),
    (
        ApprovalDecidedEvent(
            session_id=S,
            request_id="r",
            call_id="c",
            tool="booking__hotel",
            decision="edit",
            arguments={"rooms": 1},
            reason="one is enough",
            decided_by="ann",
        ),  # fmt: skip
        EventDescription(
            "approval_decided",
            "↳ ann edited the arguments of booking__hotel",
            "one is enough",
            '{"rooms": 1}',
            "warn",
            ConversationLine("user", "edited: booking__hotel"),
        ),
    ),
    (
        ApprovalDecidedEvent(
            session_id=S,
            request_id="r",
            call_id="c",
            tool="booking__hotel",
            decision="reject",
            decided_by="deadline-fallback",
            timed_out=True,
        ),  # fmt: skip
        EventDescription(
            "approval_decided",
            "↳ no one decided in time on booking__hotel: the fallback rejects",
            tone="warn",
            conversation=ConversationLine("user", "timed out: booking__hotel"),
        ),
    ),
    (
        ElicitationAskedEvent(
            session_id=S,
            request_id="e",
            server="hotel",
            message="Who stays?",
            fields=["name", "nights"],
        ),  # fmt: skip
        EventDescription(
            "elicitation_asked",
            "? MCP server hotel asks (name, nights)",
            "Who stays?",
            tone="ask",
            conversation=ConversationLine("tool", "hotel asks the user: Who stays?"),
        ),
    ),
    (
        ElicitationAskedEvent(
            session_id=S,
            request_id="e",
            server="hotel",
            message="Address?",
            refused="hotel's field 'address' is of type 'object'",
        ),  # fmt: skip
        EventDescription(
            "elicitation_asked",
            "? MCP server hotel asks (not shown: declined)",
            "hotel's field 'address' is of type 'object'",
            "Address?",
            "warn",
        ),
    ),
    (
        ElicitationAnsweredEvent(
            session_id=S,
            request_id="e",
            server="hotel",
            action="accept",
            content={"nights": 3},
            answered_by="ann",
            seconds=4.2,
        ),  # fmt: skip
        EventDescription(
            "elicitation_answered",
            "↳ ann accepted hotel's question after 4.2 s",
            "",
            '{"nights": 3}',
            "answer",
            ConversationLine("user", "accepted hotel's question"),
        ),
    ),
    (
        ElicitationAnsweredEvent(
            session_id=S,
            request_id="e",
            server="hotel",
            action="decline",
            answered_by="deadline-fallback",
            why="no one answered in time",
        ),  # fmt: skip
        EventDescription(
            "elicitation_answered",
            "↳ deadline-fallback declined hotel's question",
            "no one answered in time",
            tone="warn",
            conversation=ConversationLine("user", "declined hotel's question"),
        ),
    ),
    (
        ToolCallEvent(
            session_id=S,
            call_id="c",
            tool="cd",
            arguments={"folder": "doc"},
            ok=True,
            result='{"current_working_directory": "doc"}',
            http_mode="bfcl",
        ),  # fmt: skip
        EventDescription(
            "tool_call",
            "✓ cd → ok, 0 ms [bfcl]",
            '{"current_working_directory": "doc"}',
            '{"folder": "doc"}',
            "ok",
            ConversationLine("tool", "cd → ok"),
        ),
    ),
    (
        ToolCallEvent(
            session_id=S,
            call_id="c",
            tool="cd",
            ok=False,
            http_mode="bfcl",
            result="Error during execution: cd() missing 1 required positional argument",
        ),  # fmt: skip
        EventDescription(
            "tool_call",
            "✗ cd → error: Error during execution: cd() missing 1 required positional …, "
            "0 ms [bfcl]",
            "Error during execution: cd() missing 1 required positional argument",
            "{}",
            "fail",
            ConversationLine(
                "tool", "cd → error: Error during execution: cd() missing 1 required positional …"
            ),
        ),
    ),
    (
        UserTurnEvent(session_id=S, turn=1, text="Now sort it.", added_tools=["sort"]),
        EventDescription(
            "user_turn",
            "▶ turn 2: the user says (tools added: sort)",
            "Now sort it.",
            conversation=ConversationLine("user", "Now sort it."),
        ),
    ),
    (
        TurnEndedEvent(
            session_id=S,
            turn=0,
            state={"GorillaFileSystem": {"cwd": "doc"}},
            check={"passed": False, "reason": "turn 0: the state differs"},
        ),
        EventDescription(
            "turn_ended",
            "— end of turn 1: fails its checks",
            "turn 0: the state differs",
            'state: {"GorillaFileSystem": {"cwd": "doc"}}',
            "fail",
        ),
    ),
    (
        TurnEndedEvent(session_id=S, turn=2, check={"passed": True, "reason": "all 3 turns pass"}),
        EventDescription(
            "turn_ended", "— end of turn 3: passes its checks", "all 3 turns pass", tone="ok"
        ),
    ),
    (
        TurnEndedEvent(session_id=S, turn=1),
        EventDescription("turn_ended", "— end of turn 2"),
    ),
    (
        ErrorEvent(session_id=S, message="model down", where="model"),
        EventDescription("error", "✗ error in model", "model down", tone="fail"),
    ),
    (
        ErrorEvent(session_id=S, message="boom"),
        EventDescription("error", "✗ error in the runtime", "boom", tone="fail"),
    ),
]


def test_the_cases_cover_every_kind_of_event() -> None:
    assert {event.kind for event, _ in CASES} == set(get_args(EventKind))


@pytest.mark.parametrize(("event", "expected"), CASES)
def test_describe_event(event: Event, expected: EventDescription | None) -> None:
    assert describe_event(event) == expected


@pytest.mark.parametrize(("event", "expected"), CASES)
def test_every_face_renders_the_same_description(
    event: Event, expected: EventDescription | None
) -> None:
    line = render_event(event)
    view = entry_view(event)
    if expected is None:
        assert line is None and view is None
        return
    console = Console(width=400, record=True, color_system=None)
    assert line is not None
    console.print(line)
    shown = console.export_text()
    assert expected.label in shown and expected.text in shown and expected.detail in shown
    body = "\n".join(part for part in (expected.detail, expected.text) if part)
    assert view == EntryView(expected.label, body, expected.tone)


def test_long_texts_are_clipped_and_markup_is_shown_as_written() -> None:
    event = ToolCallEvent(
        session_id=S,
        call_id="c",
        tool="t__[bold]x",
        arguments={"q": LONG},
        status_code=200,
        ok=True,
        result=LONG,
    )
    described = describe_event(event)
    assert described is not None
    assert len(described.text) == 240 and described.text.endswith("…")
    assert len(described.detail) == 120
    console = Console(width=400, record=True, color_system=None)
    console.print(render_event(event))
    assert "t__[bold]x" in console.export_text()


def test_the_conversation_is_the_described_lines_in_order() -> None:
    events = [event for event, _ in CASES]
    lines = conversation_lines(events)
    assert lines == [d.conversation for _, d in CASES if d is not None and d.conversation]
    assert conversation_so_far(events) == [{"role": line.role, "text": line.text} for line in lines]
    assert conversation_so_far(events)[:3] == [
        {"role": "agent", "text": "Let me check."},
        {"role": "agent", "text": "Done."},
        {"role": "tool", "text": "weather__get → 200"},
    ]
