"""How an event reads: one description that every face renders its own way.

The console trace, the terminal app's timeline and the conversation shown to
people who answer the agent's questions all read events through
:func:`describe_event`. It says what an event is in words (a label and a
text), what goes with it (``detail``, e.g. a tool call's arguments), how it
went (``tone``, a style hint) and, for steps a person answering the agent
should see, the line of the conversation it makes. A face chooses only
layout and colour.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Literal, NamedTuple

from aah.desk import rule_words
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
from aah.secrets import scrub
from aah.terminal_text import printable_value

# How a step went, as a style hint: faces map each tone to a colour.
Tone = Literal["info", "ok", "fail", "warn", "ask", "answer", "final"]
# Who speaks a line of the conversation shown to a person.
Speaker = Literal["agent", "tool", "agent asks", "user"]

_AWARENESS_TONE: dict[str, Tone] = {"yes": "ok", "idk": "warn", "no": "fail", "none": "fail"}
# "none" is no answer a model gave: it means no reply could be read as one.
_AWARENESS_ANSWER = {
    "none": "NONE (could not be parsed: no reply read as yes, idk or no; the task goes on)",
}
# Model text, tool arguments and tool results are cut to these lengths: a
# description is read at a glance, the event keeps the whole text.
SAID_CHARS = 200
ARGUMENT_CHARS = 120
RESULT_CHARS = 240
# An MCP tool's error in a trace line: its first words (the result below has the rest).
OUTCOME_CHARS = 60
# The HTTP mode of a tool run in this process, not over HTTP (BFCL's stateful APIs).
LOCAL_MODE = "bfcl"
# How a failed tool's result begins: its own error (MCP), or no answer at all.
MCP_ERROR_PREFIX = "tool error: "
FAILED_PREFIX = "request failed: "


class ConversationLine(NamedTuple):
    """One line of the conversation a person reads before answering the agent.

    ``reasoning_chars`` is the length of the reasoning the agent's reply came
    with: a person is told it exists, not shown it.
    """

    role: Speaker
    text: str
    reasoning_chars: int = 0


class EventDescription(NamedTuple):
    """What one event says, for a face to lay out.

    Attributes:
        kind: The event's kind.
        label: A one-line heading, e.g. ``✓ weather__forecast → 200, 12 ms [mock]``.
        text: The main text under it (a reason, a question, an answer, a result).
        detail: What goes with the label (a tool call's arguments), or "".
        tone: How the step went, as a style hint.
        conversation: The line the step adds to the conversation shown to a
            person answering the agent, or None when it adds none.
        reasoning: The reasoning the model's reply came with, or "": faces
            show it collapsed (see :func:`reasoning_summary`), never as the text.
    """

    kind: EventKind
    label: str
    text: str = ""
    detail: str = ""
    tone: Tone = "info"
    conversation: ConversationLine | None = None
    reasoning: str = ""


def reasoning_summary(reasoning: str) -> str:
    """The one line a face shows in place of a reply's reasoning."""
    return f"reasoning ({len(reasoning):,} chars)"


def clip(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _displayable(event: Event) -> Event:
    """A copy of ``event`` without secrets or terminal control sequences in its texts."""
    update = {
        name: printable_value(scrub(value))
        for name, value in event
        if isinstance(value, str | dict | list)
    }
    return event.model_copy(update=update)


def describe_event(event: Event) -> EventDescription | None:
    """The description of ``event``, or None for steps no face shows.

    Model calls other than the agent's (awareness, a simulated user, a grader)
    are shown through the events they lead to, so they get no description.
    A live event still holds what its session saw, secrets included; the
    description is made from a copy scrubbed by ``aah.secrets``, as the log is,
    and without the terminal control sequences that model, tool or human text
    may hold (``aah.terminal_text``): every face shows it as text.
    """
    event = _displayable(event)
    if isinstance(event, AwarenessEvent):
        answer = _AWARENESS_ANSWER.get(event.answer, event.answer.upper())
        label = f"awareness ({event.question}): {answer}"
        tone = _AWARENESS_TONE[event.answer]
        # An unparsed reply has no reason to show: the reply itself says why.
        said = event.reason or (clip(event.raw, SAID_CHARS) if event.answer == "none" else "")
        return EventDescription(event.kind, label, said, tone=tone, reasoning=event.reasoning or "")
    if isinstance(event, ModelCallEvent):
        return _describe_model_call(event)
    if isinstance(event, ToolCallEvent):
        return _describe_tool_call(event)
    if isinstance(event, DiscoveryEvent):
        return _describe_discovery(event)
    if isinstance(event, HumanQuestionEvent):
        line = ConversationLine("agent asks", event.question)
        return EventDescription(
            event.kind, "? the agent asks", event.question, tone="ask", conversation=line
        )
    if isinstance(event, HumanAnswerEvent):
        line = ConversationLine("user", event.answer)
        if event.declined:
            label = f"↳ {event.answered_by} declined to answer"
            return EventDescription(event.kind, label, tone="warn", conversation=line)
        label = f"↳ {event.answered_by} answers"
        return EventDescription(event.kind, label, event.answer, tone="answer", conversation=line)
    if isinstance(event, FinalAnswerEvent):
        reasoning = event.reasoning or ""
        if event.step_limit_hit:
            label = "final answer (step limit reached)"
            return EventDescription(event.kind, label, event.text, tone="warn", reasoning=reasoning)
        return EventDescription(
            event.kind, "final answer", event.text, tone="final", reasoning=reasoning
        )
    if isinstance(event, ApprovalRequestedEvent | ApprovalDecidedEvent):
        return _describe_approval(event)
    if isinstance(event, ElicitationAskedEvent | ElicitationAnsweredEvent):
        return _describe_elicitation(event)
    if isinstance(event, UserTurnEvent):
        added = f" (tools added: {', '.join(event.added_tools)})" if event.added_tools else ""
        label = f"▶ turn {event.turn + 1}: the user says{added}"
        line = ConversationLine("user", event.text)
        return EventDescription(event.kind, label, event.text, tone="info", conversation=line)
    if isinstance(event, TurnEndedEvent):
        return _describe_turn_end(event)
    if isinstance(event, StoppedEvent):
        label = "■ stopped without a final answer" + _STOPPED_WHY[event.reason]
        return EventDescription(event.kind, label, event.message, tone="warn")
    if isinstance(event, ErrorEvent):
        label = f"✗ error in {event.where or 'the runtime'}"
        return EventDescription(event.kind, label, event.message, tone="fail")
    return None


def _describe_turn_end(event: TurnEndedEvent) -> EventDescription:
    """The end of one turn of a conversation: the benchmark's verdict and the tools' state."""
    check = event.check or {}
    state = json.dumps(event.state, ensure_ascii=False, sort_keys=True) if event.state else ""
    detail = clip(f"state: {state}", RESULT_CHARS) if state else ""
    if "passed" not in check:
        return EventDescription(event.kind, f"— end of turn {event.turn + 1}", detail=detail)
    passed = bool(check.get("passed"))
    verdict = "passes its checks" if passed else "fails its checks"
    label = f"— end of turn {event.turn + 1}: {verdict}"
    reason = str(check.get("reason") or "")
    return EventDescription(
        event.kind, label, reason, detail=detail, tone="ok" if passed else "fail"
    )


_STOPPED_WHY = {
    "step_limit": " (step limit reached)",
    "cut_off": " (reply cut off)",
    "terminated": " (a person terminated the session)",
}
_DECIDED: dict[str, tuple[str, Tone]] = {
    "approved": ("approved", "ok"),
    "edited": ("edited the arguments of", "warn"),
    "rejected": ("rejected", "fail"),
    "responded": ("gave the result in place of", "warn"),
    "timed_out": ("no one decided in time on", "warn"),
    "terminated": ("terminated the session at", "fail"),
}


_ELICITED: dict[str, tuple[str, Tone]] = {
    "accept": ("accepted", "answer"),
    "decline": ("declined", "warn"),
    "cancel": ("cancelled", "warn"),
}


def _describe_elicitation(
    event: ElicitationAskedEvent | ElicitationAnsweredEvent,
) -> EventDescription:
    """An MCP server's question for the user, and what went back to it."""
    if isinstance(event, ElicitationAskedEvent):
        what = "a link to open" if event.mode == "url" else ", ".join(event.fields) or "a form"
        if event.refused:
            label = f"? MCP server {event.server} asks (not shown: declined)"
            return EventDescription(event.kind, label, event.refused, event.message, "warn")
        label = f"? MCP server {event.server} asks ({what})"
        line = ConversationLine("tool", f"{event.server} asks the user: {event.message}")
        return EventDescription(event.kind, label, event.message, tone="ask", conversation=line)
    words, tone = _ELICITED[event.action]
    waited = f" after {event.seconds:.1f} s" if event.seconds >= 0.1 else ""
    label = f"↳ {event.answered_by or 'someone'} {words} {event.server}'s question{waited}"
    detail = ""
    if event.content is not None:
        detail = clip(json.dumps(event.content, ensure_ascii=False), ARGUMENT_CHARS)
    line = ConversationLine("user", f"{words} {event.server}'s question")
    return EventDescription(event.kind, label, event.why, detail, tone, line)


def _describe_approval(event: ApprovalRequestedEvent | ApprovalDecidedEvent) -> EventDescription:
    if isinstance(event, ApprovalRequestedEvent):
        arguments = clip(json.dumps(event.arguments, ensure_ascii=False), ARGUMENT_CHARS)
        again = f" (asked again, {event.ask})" if event.ask > 1 else ""
        label = f"⏸ {event.method} {event.tool} waits for approval{again}".replace("  ", " ")
        why = rule_words(event.rule) if event.rule else ""
        line = ConversationLine("agent", f"wants to call {event.tool} (needs approval)")
        return EventDescription(event.kind, label, why, arguments, "ask", line)
    words, tone = _DECIDED[event.outcome]
    who = "" if event.timed_out else f"{event.decided_by or 'someone'} "
    label = f"↳ {who}{words} {event.tool}"
    if event.timed_out:
        label += f": the fallback {event.decision}s"
    detail = ""
    if event.arguments is not None:
        detail = clip(json.dumps(event.arguments, ensure_ascii=False), ARGUMENT_CHARS)
    elif event.response:
        detail = clip(event.response, ARGUMENT_CHARS)
    line = ConversationLine("user", f"{event.outcome.replace('_', ' ')}: {event.tool}")
    return EventDescription(event.kind, label, event.reason, detail, tone, line)


def _describe_model_call(event: ModelCallEvent) -> EventDescription | None:
    if event.purpose != "agent":
        return None
    tokens = (event.prompt_tokens or 0) + (event.completion_tokens or 0)
    did = f"{event.n_tool_calls} tool call(s)" if event.n_tool_calls else "a reply"
    label = f"model step: {did}, {tokens} tokens, {event.latency_ms:.0f} ms"
    # A reply without tool calls is the final answer, described by its own event.
    said = clip(event.text, SAID_CHARS) if event.n_tool_calls else ""
    reasoning = event.reasoning or ""
    line = ConversationLine("agent", event.text, len(reasoning)) if event.text else None
    return EventDescription(event.kind, label, said, conversation=line, reasoning=reasoning)


def _describe_tool_call(event: ToolCallEvent) -> EventDescription:
    arguments = clip(json.dumps(event.arguments, ensure_ascii=False), ARGUMENT_CHARS)
    if event.check != "ok":
        label = f"✗ {event.tool} rejected before running ({event.check})"
        line = ConversationLine("tool", f"{event.tool} → rejected ({event.check})")
        feedback = clip(event.feedback, RESULT_CHARS)
        return EventDescription(event.kind, label, feedback, arguments, "fail", line)
    outcome = _tool_outcome(event)
    mark = "✓" if event.ok else "✗"
    label = f"{mark} {event.tool} → {outcome}, {event.latency_ms:.0f} ms [{event.http_mode}]"
    # The conversation keeps what a person needs: which tool, and what came back.
    line = ConversationLine("tool", f"{event.tool} → {outcome}")
    result = clip(event.result, RESULT_CHARS)
    return EventDescription(
        event.kind, label, result, arguments, "ok" if event.ok else "fail", line
    )


def _tool_outcome(event: ToolCallEvent) -> str:
    """What came back, in a few words: the HTTP status, or an MCP tool's ok or error."""
    if event.protocol == "mcp":
        if event.ok:
            return "MCP ok"
        said = event.result.removeprefix(MCP_ERROR_PREFIX).removeprefix(FAILED_PREFIX)
        return f"MCP error: {clip(said, OUTCOME_CHARS) or 'no text'}"
    if event.status_code is not None:
        return str(event.status_code)
    if event.http_mode == LOCAL_MODE:  # a tool run in this process (BFCL's APIs): no HTTP
        return "ok" if event.ok else f"error: {clip(event.result, OUTCOME_CHARS) or 'no text'}"
    return "no response"


def _describe_discovery(event: DiscoveryEvent) -> EventDescription:
    found = f"{len(event.hits)} endpoint(s)" if event.hits else "nothing"
    added = f", {len(event.added)} new" if event.hits else ""
    label = f"⌕ find_tools → {found}{added}"
    need = clip(json.dumps({"need": event.need}, ensure_ascii=False), ARGUMENT_CHARS)
    # The new ones are marked: they joined the agent's tools with this call.
    names = [f"{name} (new)" if name in event.added else name for name in event.hits]
    text = clip(", ".join(names), RESULT_CHARS)
    line = ConversationLine(
        "tool", f"find_tools({event.need!r}) → {', '.join(event.hits) or 'none'}"
    )
    return EventDescription(event.kind, label, text, need, "ok" if event.hits else "warn", line)


def conversation_lines(events: Iterable[Event]) -> list[ConversationLine]:
    """The conversation a person reads before answering the agent, from a session's events."""
    lines: list[ConversationLine] = []
    for event in events:
        description = describe_event(event)
        if description is not None and description.conversation is not None:
            lines.append(description.conversation)
    return lines
