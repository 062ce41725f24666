"""Typed records of what happens in a session, one model per kind of step.

The runtime writes them, the session store keeps them in order, and the UIs
and the scorer read them back as the same models. ``Event`` is the union of
all kinds, told apart by the ``kind`` field; ``parse_event`` turns a stored
dictionary or JSON text back into the right model.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, AwareDatetime, BaseModel, ConfigDict, Field, TypeAdapter

AwarenessQuestion = Literal["information", "tool"]
AwarenessAnswer = Literal["yes", "idk", "no", "none"]
# Which awareness questions a session asks (science.md §1).
AwarenessMode = Literal["info", "tool", "both", "none"]
# "ok", or the ToolScan pattern that stopped the call before it ran.
# "CAP" is no pattern: a question the runtime did not ask, being past the cap on
# questions per reply or per session (the model is told, and it is counted).
CheckResult = Literal["ok", "IFN", "IAN", "IAT", "IFE", "RAC", "IAV", "CAP"]
# Why a session stopped without a final answer (science.md §2), or that a
# person deciding on a tool call ended it (science.md §7).
StopReason = Literal["step_limit", "cut_off", "terminated"]
# What a person decided about a tool call that needed approval.
ApprovalDecision = Literal["approve", "edit", "reject", "respond", "terminate"]
# How a call needing approval ended (science.md §7): exactly one of these.
ApprovalOutcome = Literal["approved", "edited", "rejected", "responded", "timed_out", "terminated"]
EventKind = Literal[
    "awareness",
    "model_call",
    "tool_call",
    "discovery",
    "human_question",
    "human_answer",
    "final_answer",
    "stopped",
    "error",
    "approval_requested",
    "approval_decided",
    "elicitation_asked",
    "elicitation_answered",
    "user_turn",
    "turn_ended",
]
# What a person did with an MCP server's question (the protocol's names).
ElicitationAction = Literal["accept", "decline", "cancel"]

EXCERPT_CHARS = 2_000
_MARKER_ROOM = 24  # room for "…[+N chars]" with any realistic N


def utc_now() -> datetime:
    """The current time, timezone-aware in UTC."""
    return datetime.now(UTC)


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """Cut ``text`` to at most ``limit`` characters, saying how much was left out.

    Model replies and HTTP bodies can be megabytes; a log keeps enough to
    read and grade, and the marker tells a reader the text is not whole.
    """
    if len(text) <= limit:
        return text
    # The marker fits inside the limit, so cutting an excerpt again (as
    # reading a stored event back does) leaves it as it is.
    keep = max(limit - _MARKER_ROOM, 0)
    return f"{text[:keep]}…[+{len(text) - keep} chars]"


# A text field that is cut on validation, so callers may pass whole texts.
Excerpt = Annotated[str, AfterValidator(excerpt)]

REASONING_CHARS = 8_000


def _reasoning_excerpt(text: str | None) -> str | None:
    return excerpt(text, REASONING_CHARS) if text else None


# What a reasoning model thought before it answered (``<think>`` blocks or a
# ``reasoning_content`` field): kept beside the answer, never read as it.
# None when the reply had none, and in events stored before it was recorded.
Reasoning = Annotated[str | None, AfterValidator(_reasoning_excerpt)]


class EventBase(BaseModel):
    """Fields every event has.

    Attributes:
        session_id: The session the event belongs to.
        seq: Position in the session, from 1; 0 until the store assigns it.
        ts: When the step happened (UTC).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    session_id: str
    seq: int = Field(default=0, ge=0)
    ts: AwareDatetime = Field(default_factory=utc_now)


class AwarenessEvent(EventBase):
    """The answer to one awareness question, asked before acting.

    Attributes:
        question: Which question: do I have the information, or the tools?
        answer: The parsed answer; ``none`` when no reply could be parsed.
        reason: The short reason that followed the answer.
        raw: The model's reply as received (of the last attempt), reasoning removed.
        attempts: How many replies were needed (1 when the first parsed).
        reasoning: The reasoning that came with the last reply, if any.
    """

    kind: Literal["awareness"] = "awareness"
    question: AwarenessQuestion
    answer: AwarenessAnswer
    reason: str = ""
    raw: Excerpt = ""
    attempts: int = Field(default=1, ge=1)
    reasoning: Reasoning = None


class ModelCallEvent(EventBase):
    """One chat completion made by the agent.

    Attributes:
        model: The model name the endpoint reported or was asked for.
        prompt_tokens: Input tokens, when the server reports usage.
        completion_tokens: Output tokens, when the server reports usage.
        latency_ms: Wall time of the request.
        n_tool_calls: Tool calls in the reply (parsed ones, whatever their format).
        text: The reply's text content, reasoning removed.
        raw: The reply's text as the server sent it, when tool calls were
            read out of it (``text`` is then what was left); None otherwise.
        reasoning: The reasoning the reply came with, if any.
        cut_off: True when the server cut the reply at its length limit
            (``finish_reason: length``): it is no answer and no call.
    """

    kind: Literal["model_call"] = "model_call"
    model: str
    purpose: Literal["agent", "awareness", "human", "grader"] = "agent"
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_ms: float = 0.0
    n_tool_calls: int = 0
    text: Excerpt = ""
    raw: Reasoning = None
    reasoning: Reasoning = None
    cut_off: bool = False


class ToolCallEvent(EventBase):
    """One tool call: checked, then (if it passed) executed over HTTP.

    Attributes:
        call_id: The id the model gave the call.
        tool: The qualified tool name (``<tool>__<endpoint>``) as called.
        arguments: The arguments as the model gave them.
        status_code: The HTTP status, or None when no response came back
            (rejected by the check, timeout, replay miss) and for an MCP tool,
            whose results have none.
        ok: Whether the call produced a usable result.
        latency_ms: Wall time of the HTTP request; 0 when not executed.
        check: ``ok``, or the error pattern that stopped the call.
        feedback: The corrective text returned to the agent instead of a result.
        result: The result text returned to the agent.
        http_mode: How HTTP was served (live, record, replay, mock, fault).
        protocol: ``http`` for an endpoint, ``mcp`` for a tool of an MCP
            server (its result is ok or an error, with no status).
    """

    kind: Literal["tool_call"] = "tool_call"
    call_id: str
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    status_code: int | None = None
    ok: bool
    latency_ms: float = 0.0
    check: CheckResult = "ok"
    feedback: str = ""
    result: Excerpt = ""
    http_mode: str = "live"
    protocol: Literal["http", "mcp"] = "http"


class DiscoveryEvent(EventBase):
    """The agent called ``find_tools``: what it asked for, what it found, what joined its tools.

    A ``find_tools`` call that a check stopped is a ``ToolCallEvent`` with its
    pattern, as any tool call's; one that ran leaves this event.

    Attributes:
        call_id: The id the model gave the call.
        need: The need as the agent described it.
        hits: The endpoints returned (qualified names), best first.
        added: Those of ``hits`` that were not among the session's tools yet:
            they are offered from the next model step on.
    """

    kind: Literal["discovery"] = "discovery"
    call_id: str
    need: Excerpt
    hits: list[str] = Field(default_factory=list)
    added: list[str] = Field(default_factory=list)


class HumanQuestionEvent(EventBase):
    """The agent asked a person something.

    Attributes:
        request_id: The human request that carries the question to a person.
        question: The question as the agent wrote it.
    """

    kind: Literal["human_question"] = "human_question"
    request_id: str
    question: str


class HumanAnswerEvent(EventBase):
    """A person (or a scripted or simulated one) answered the agent.

    Attributes:
        request_id: The human request answered.
        answer: The reply handed back to the agent.
        answered_by: Who answered: an annotator name, ``oracle``, ``simulated``...
        seconds: Time from the question to the answer.
        declined: True when the person chose not to answer.
        flags: Checks the reply failed, e.g. ``leak`` when a simulated user
            revealed more than the question asked for.
    """

    kind: Literal["human_answer"] = "human_answer"
    request_id: str
    answer: str
    answered_by: str
    seconds: float = 0.0
    declined: bool = False
    flags: list[str] = Field(default_factory=list)


class FinalAnswerEvent(EventBase):
    """The agent's final answer to the user.

    Attributes:
        text: The answer, reasoning removed.
        step_limit_hit: True when the session stopped at its step limit.
        reasoning: The reasoning of the reply that gave the answer, if any.
    """

    kind: Literal["final_answer"] = "final_answer"
    text: str
    step_limit_hit: bool = False
    reasoning: Reasoning = None


class StoppedEvent(EventBase):
    """The session stopped at a limit without a final answer.

    Attributes:
        reason: ``step_limit`` (the agent was still calling tools at its last
            step) or ``cut_off`` (the model's reply was cut by its length
            limit, also when asked again with a larger one).
        message: One line saying what happened and what to change.
    """

    kind: Literal["stopped"] = "stopped"
    reason: StopReason
    message: str


class UserTurnEvent(EventBase):
    """The user's next message in a conversation of several turns (BFCL multi-turn, τ²).

    Each later turn starts with this event, once the agent has replied to
    the turn before without a call. The first turn is the session's query,
    except in a conversation whose user opens it (τ²: the user answers the
    agent's greeting): then this event, turn 0, holds the user's first message.

    Attributes:
        turn: The turn's index (0 for the first, 1 for the second).
        text: What the user says.
        added_tools: Tools offered from this turn on (a function withheld until now).
    """

    kind: Literal["user_turn"] = "user_turn"
    turn: int = Field(ge=0)
    text: Excerpt
    added_tools: list[str] = Field(default_factory=list)


class TurnEndedEvent(EventBase):
    """The agent replied to a turn without a call: what its tools' world looks like now.

    Attributes:
        turn: The index of the turn that ended (0 for the first).
        state: The state of a stateful tool environment after the turn (BFCL:
            each API's public attributes), or None when the tools keep none.
        check: A benchmark's verdict on the turn (BFCL multi-turn: the state
            and response checks, see ``aah.benchmark.bfcl``), or None.
    """

    kind: Literal["turn_ended"] = "turn_ended"
    turn: int = Field(ge=0)
    state: dict[str, Any] | None = None
    check: dict[str, Any] | None = None


class ErrorEvent(EventBase):
    """Something failed in the runtime itself (not a failing tool call).

    Attributes:
        message: The error in one line.
        where: The part that failed, e.g. ``agent``, ``awareness``, ``human``.
    """

    kind: Literal["error"] = "error"
    message: str
    where: str = ""


class ApprovalRequestedEvent(EventBase):
    """A tool call that passed its checks waits for a person's approval before it runs.

    Attributes:
        request_id: The human request that carries the call to a person
            (one per ask: a timeout may ask again).
        call_id: The id the model gave the call.
        tool: The qualified tool name.
        method: The endpoint's HTTP method.
        arguments: The arguments as the model proposed them.
        rule: The policy rule that made the call need approval, in words.
        ask: 1 for the first ask, 2 when the first deadline asked again...
    """

    kind: Literal["approval_requested"] = "approval_requested"
    request_id: str
    call_id: str
    tool: str
    method: str = ""
    arguments: dict[str, Any] = Field(default_factory=dict)
    rule: str = ""
    ask: int = Field(default=1, ge=1)


class ApprovalDecidedEvent(EventBase):
    """The one decision on a call that needed approval (science.md §7).

    Attributes:
        request_id: The request whose answer (or deadline) decided.
        call_id: The call decided.
        tool: The qualified tool name.
        decision: What applies: ``approve``, ``edit``, ``reject``, ``respond`` or ``terminate``.
        arguments: The arguments the call runs with (an edit's), else None.
        reason: Why, as the person said (a rejection's reason reaches the agent).
        response: A response's text: the call does not run, the agent reads this
            as its result (a person doing the tool's job).
        decided_by: An annotator, ``console``, ``oracle``, ``simulated``,
            or ``deadline-fallback`` when no one decided in time.
        timed_out: No one decided in time: the policy's fallback decided.
    """

    kind: Literal["approval_decided"] = "approval_decided"
    request_id: str
    call_id: str
    tool: str
    decision: ApprovalDecision
    arguments: dict[str, Any] | None = None
    reason: str = ""
    response: str = ""
    decided_by: str = ""
    timed_out: bool = False

    @property
    def outcome(self) -> ApprovalOutcome:
        """How the call ended, as science.md §7 counts it."""
        return "timed_out" if self.timed_out else _OUTCOME_OF[self.decision]


_OUTCOME_OF: dict[ApprovalDecision, ApprovalOutcome] = {
    "approve": "approved",
    "edit": "edited",
    "reject": "rejected",
    "respond": "responded",
    "terminate": "terminated",
}


class ElicitationAskedEvent(EventBase):
    """An MCP server asked the user for input while the agent called one of its tools.

    Attributes:
        request_id: The human request that carries it to a person.
        server: The server's name (who asks).
        message: What the server said.
        mode: ``form`` (fields to fill) or ``url`` (a link to open).
        fields: The form's field names, or the link in URL mode.
        refused: Why aah did not show it (not primitives-only, too big), if it did not.
    """

    kind: Literal["elicitation_asked"] = "elicitation_asked"
    request_id: str
    server: str
    message: Excerpt
    mode: Literal["form", "url"] = "form"
    fields: list[str] = Field(default_factory=list)
    refused: str = ""


class ElicitationAnsweredEvent(EventBase):
    """What went back to the server: accept (with content), decline or cancel.

    Attributes:
        request_id: The request answered.
        server: The server that asked.
        action: ``accept``, ``decline`` or ``cancel``.
        content: The form's values, when accepted.
        answered_by: A person, ``oracle``, ``scripted``, ``deadline-fallback``, ``aah``...
        seconds: How long the server waited for the answer.
        why: Why aah answered for the person (a refusal, a deadline), if it did.
    """

    kind: Literal["elicitation_answered"] = "elicitation_answered"
    request_id: str
    server: str
    action: ElicitationAction
    content: dict[str, Any] | None = None
    answered_by: str = ""
    seconds: float = 0.0
    why: str = ""


Event = Annotated[
    AwarenessEvent
    | ModelCallEvent
    | ToolCallEvent
    | DiscoveryEvent
    | HumanQuestionEvent
    | HumanAnswerEvent
    | FinalAnswerEvent
    | StoppedEvent
    | ErrorEvent
    | ApprovalRequestedEvent
    | ApprovalDecidedEvent
    | ElicitationAskedEvent
    | ElicitationAnsweredEvent
    | UserTurnEvent
    | TurnEndedEvent,
    Field(discriminator="kind"),
]

EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)


def parse_event(data: dict[str, Any] | str | bytes) -> Event:
    """Build the typed event that ``data`` (a dict or JSON text) describes.

    Raises:
        pydantic.ValidationError: ``data`` is no known kind of event.
    """
    if isinstance(data, dict):
        return EVENT_ADAPTER.validate_python(data)
    return EVENT_ADAPTER.validate_json(data)
