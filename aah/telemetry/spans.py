"""A session's events as spans, following OpenTelemetry's GenAI semantic conventions.

The same code serves a live exporter (told of events as they are stored) and
``aah sessions export --otlp`` (reading them back): spans are built from the
events' own timestamps, and every id is derived from what the store keeps, so a
session resumed days later in another process lands in the same trace.

A session's work is cut where it waits for a person: the agent's part before
a question (or a call to approve) is one ``invoke_agent`` span that ends when
the question is asked, the wait is a span of its own from question to answer,
and the work after the answer is a new ``invoke_agent`` span linked to the one
before. A parked session's spans can then all be exported when it parks.

Nothing here imports OpenTelemetry: spans are plain records
(:class:`SpanRecord`), which :mod:`aah.telemetry.encoding` writes as OTLP
JSON and :mod:`aah.telemetry.live` hands to the SDK.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal
from urllib.parse import urlsplit

from aah.annotators import RESERVED_NAMES
from aah.events import (
    ApprovalDecidedEvent,
    ApprovalRequestedEvent,
    AwarenessEvent,
    DiscoveryEvent,
    ElicitationAnsweredEvent,
    ElicitationAskedEvent,
    ErrorEvent,
    Event,
    FinalAnswerEvent,
    HumanAnswerEvent,
    HumanQuestionEvent,
    ModelCallEvent,
    StoppedEvent,
    ToolCallEvent,
)
from aah.secrets import Scrubber, scrub_text
from aah.store import HumanRequestRecord, RunRecord, SessionRecord

AttributeValue = str | bool | int | float | list[str]
SpanKind = Literal["internal", "client"]
# The events that end the agent's part of a session: it waits, or it is over.
PAUSES = ("human_question", "approval_requested")
ENDINGS = ("final_answer", "stopped", "error")
# Who answers when no person does: never a person's name.
FALLBACK = "deadline-fallback"
AGENT_NAME = "aah"


@dataclass(frozen=True)
class SpanRef:
    """Where a span is: its trace and its own id (hex, as OTLP JSON writes them)."""

    trace_id: str
    span_id: str


@dataclass
class SpanRecord:
    """One finished span, with explicit times.

    Attributes:
        closed_by: The ``seq`` of the event that closed it (a segment's last
            event for the spans inside it); a live exporter sends a span once
            that event is stored. 0 for spans not made from a session's events.
    """

    name: str
    trace_id: str
    span_id: str
    parent_id: str | None
    start: datetime
    end: datetime
    attributes: dict[str, AttributeValue] = field(default_factory=dict)
    kind: SpanKind = "internal"
    links: tuple[SpanRef, ...] = ()
    error: str | None = None
    closed_by: int = 0


@dataclass(frozen=True)
class SessionFacts:
    """What the spans of one session say beyond its events.

    Attributes:
        record: The stored session.
        trace_id: Its trace (see :func:`trace_id_of`).
        parent: The span its parts hang under (a batch run's), if any.
        server_url: The model server's base URL, when known.
        content: Whether message content goes into spans.
        person_names: Whether the names of people who answered do.
    """

    record: SessionRecord
    trace_id: str
    parent: SpanRef | None = None
    server_url: str | None = None
    content: bool = False
    person_names: bool = False


def _hex(text: str, chars: int) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:chars]


def trace_id_of(session: SessionRecord, run: RunRecord | None = None) -> str:
    """The session's trace id, the same in every process that ever reads it.

    A batch run's sessions share the run's trace (its name and creation time
    name it: two stores' runs of one name stay apart); a session of its own
    has its own.
    """
    if session.run is not None and run is not None:
        return run_trace_id(run)
    return _hex(f"aah-session:{session.id}", 32)


def run_trace_id(run: RunRecord) -> str:
    """The trace of a batch run, its sessions' spans and its own."""
    return _hex(f"aah-run:{run.name}:{run.created.isoformat()}", 32)


def run_span_id(run: RunRecord, salt: str = "") -> str:
    """The span id of a run's span (``salt`` tells apart the processes that ran it)."""
    return _hex(f"aah-run-span:{run.name}:{run.created.isoformat()}:{salt}", 16)


def run_span(
    run: RunRecord, trace_id: str, start: datetime, end: datetime, span_id: str, tasks: int
) -> SpanRecord:
    """The span over a batch run's tasks."""
    return SpanRecord(
        name=f"run {run.name}",
        trace_id=trace_id,
        span_id=span_id,
        parent_id=None,
        start=start,
        end=max(end, start),
        attributes=_scrubbed(
            {
                "aah.run_id": run.name,
                "aah.run.tasks": tasks,
                "openinference.span.kind": "CHAIN",
            }
        ),
    )


class _Segment:
    """The agent's work between two waits for a person: one ``invoke_agent`` span."""

    def __init__(self, facts: SessionFacts, first: Event, index: int, link: SpanRef | None):
        self.first = first
        self.index = index
        self.link = link
        self.span_id = _hex(f"{facts.trace_id}:{first.session_id}:part:{first.seq}", 16)
        self.children: list[SpanRecord] = []
        self.last_ts = first.ts
        self.held_chat: ModelCallEvent | None = None


class _Builder:
    def __init__(self, facts: SessionFacts, requests: Mapping[str, HumanRequestRecord]):
        self.facts = facts
        self.requests = requests
        self.spans: list[SpanRecord] = []
        self.segment: _Segment | None = None
        self.parts = 0
        self.last_part: SpanRef | None = None
        self.asked: dict[str, tuple[Event, str]] = {}  # request id: (the ask, its part's span)
        self.elicited: dict[str, ElicitationAskedEvent] = {}
        self.server = _server(facts.server_url)
        record = facts.record
        self.common: dict[str, AttributeValue] = {
            "aah.session_id": record.id,
            "gen_ai.conversation.id": record.id,
        }
        if record.run is not None:
            self.common["aah.run_id"] = record.run
        if record.task_id is not None:
            self.common["aah.task_id"] = record.task_id

    # --- segments ---

    def open(self, event: Event) -> _Segment:
        if self.segment is None:
            self.segment = _Segment(self.facts, event, self.parts, self.last_part)
            self.parts += 1
        return self.segment

    def close(
        self,
        event: Event,
        error: str | None = None,
        extra: dict[str, AttributeValue] | None = None,
    ) -> None:
        segment = self.open(event)
        self.segment = None
        record = self.facts.record
        attributes: dict[str, AttributeValue] = {
            **self.common,
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": AGENT_NAME,
            "gen_ai.provider.name": "openai",
            "aah.part": segment.index + 1,
            "aah.part.ended": "waiting" if event.kind in PAUSES else event.kind,
            "aah.aah": record.aah,
            "openinference.span.kind": "AGENT",
        }
        if record.model:
            attributes["gen_ai.request.model"] = record.model
        if record.setting:
            attributes["aah.setting"] = record.setting
        if self.facts.content and segment.index == 0:
            attributes["gen_ai.input.messages"] = record.query
            attributes["input.value"] = record.query
        if self.facts.content and isinstance(event, FinalAnswerEvent):
            attributes["output.value"] = event.text
        attributes |= extra or {}
        trace, parent = self.facts.trace_id, self.facts.parent
        start = _earliest(segment.first.ts, segment.children)
        if segment.index == 0:
            start = min(start, record.started)  # the session's opening, before its first step
        span = SpanRecord(
            name=f"invoke_agent {AGENT_NAME}",
            trace_id=trace,
            span_id=segment.span_id,
            parent_id=parent.span_id if parent is not None else None,
            start=start,
            end=event.ts,
            attributes=attributes,
            links=(segment.link,) if segment.link is not None else (),
            error=error,
            closed_by=event.seq,
        )
        for child in segment.children:
            child.closed_by = event.seq
        self.spans += [span, *segment.children]
        self.last_part = SpanRef(trace, segment.span_id)

    def child(
        self,
        segment: _Segment,
        name: str,
        event: Event,
        start: datetime,
        attributes: dict[str, AttributeValue],
        *,
        kind: SpanKind = "internal",
        error: str | None = None,
        parent: str | None = None,
        key: str = "",
    ) -> SpanRecord:
        span = SpanRecord(
            name=name,
            trace_id=self.facts.trace_id,
            span_id=_hex(f"{self.facts.trace_id}:{event.session_id}:{event.seq}:{key}", 16),
            parent_id=parent or segment.span_id,
            start=min(start, event.ts),
            end=event.ts,
            attributes={**self.common, **attributes},
            kind=kind,
            error=error,
        )
        segment.children.append(span)
        return span

    # --- events ---

    def add(self, event: Event) -> None:
        if isinstance(event, HumanAnswerEvent | ApprovalDecidedEvent):
            self.answered(event)
            return
        segment = self.open(event)
        since = segment.last_ts
        segment.last_ts = event.ts
        if isinstance(event, ModelCallEvent):
            if event.purpose == "awareness":
                segment.held_chat = event
            else:
                self.chat(segment, event, None)
        elif isinstance(event, AwarenessEvent):
            self.awareness(segment, event, since)
        elif isinstance(event, ToolCallEvent):
            self.tool(segment, event)
        elif isinstance(event, DiscoveryEvent):
            self.discovery(segment, event, since)
        elif isinstance(event, ElicitationAskedEvent):
            self.elicited[event.request_id] = event
        elif isinstance(event, ElicitationAnsweredEvent):
            self.elicitation(segment, event)
        elif isinstance(event, HumanQuestionEvent | ApprovalRequestedEvent):
            self.asked[event.request_id] = (event, segment.span_id)
            self.close(event)
        elif isinstance(event, FinalAnswerEvent):
            self.close(event, extra={"aah.step_limit_hit": event.step_limit_hit})
        elif isinstance(event, StoppedEvent):
            self.close(
                event, extra={"aah.stop.reason": event.reason, "aah.stop.message": event.message}
            )
        elif isinstance(event, ErrorEvent):
            self.close(event, error=event.message, extra={"error.type": event.where or "error"})

    def chat(self, segment: _Segment, event: ModelCallEvent, parent: str | None) -> None:
        attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.response.model": event.model,
            "gen_ai.response.finish_reasons": [_finish_reason(event)],
            "aah.model.purpose": event.purpose,
            "openinference.span.kind": "LLM",
        }
        requested = self.facts.record.model or event.model
        attributes["gen_ai.request.model"] = requested
        if event.prompt_tokens is not None:
            attributes["gen_ai.usage.input_tokens"] = event.prompt_tokens
        if event.completion_tokens is not None:
            attributes["gen_ai.usage.output_tokens"] = event.completion_tokens
        attributes |= self.server
        if self.facts.content:
            attributes["gen_ai.output.messages"] = event.text
        start = event.ts - timedelta(milliseconds=event.latency_ms)
        self.child(
            segment, f"chat {requested}", event, start, attributes, kind="client", parent=parent
        )

    def awareness(self, segment: _Segment, event: AwarenessEvent, since: datetime) -> None:
        chat, segment.held_chat = segment.held_chat, None
        start = since
        if chat is not None:
            start = chat.ts - timedelta(milliseconds=chat.latency_ms)
        attributes: dict[str, AttributeValue] = {
            "aah.awareness.question": event.question,
            "aah.awareness.answer": event.answer,
            "aah.awareness.attempts": event.attempts,
            "openinference.span.kind": "CHAIN",
        }
        if self.facts.content:
            attributes["aah.awareness.reason"] = event.reason
        span = self.child(segment, f"awareness {event.question}", event, start, attributes)
        if chat is not None:
            self.chat(segment, chat, span.span_id)

    def tool(self, segment: _Segment, event: ToolCallEvent) -> None:
        attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": event.tool,
            "gen_ai.tool.call.id": event.call_id,
            "gen_ai.tool.type": "function",
            "aah.tool.ok": event.ok,
            "aah.tool.check": event.check,
            "aah.tool.protocol": event.protocol,
            "aah.http.mode": event.http_mode,
            "openinference.span.kind": "TOOL",
        }
        error = None
        if event.status_code is not None:
            attributes["http.response.status_code"] = event.status_code
        if event.http_mode == "fault":
            attributes["aah.tool.fault_mode"] = "fault"
        if not event.ok:
            attributes["error.type"] = _tool_error(event)
            error = event.feedback or event.result or str(attributes["error.type"])
        if self.facts.content:
            attributes["gen_ai.tool.call.arguments"] = _json(event.arguments)
            attributes["gen_ai.tool.call.result"] = event.result or event.feedback
        start = event.ts - timedelta(milliseconds=event.latency_ms)
        self.child(segment, f"execute_tool {event.tool}", event, start, attributes, error=error)

    def discovery(self, segment: _Segment, event: DiscoveryEvent, since: datetime) -> None:
        attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "find_tools",
            "gen_ai.tool.call.id": event.call_id,
            "aah.discovery.hits": len(event.hits),
            "aah.discovery.added": list(event.added),
            "openinference.span.kind": "TOOL",
        }
        self.child(segment, "execute_tool find_tools", event, since, attributes)

    def elicitation(self, segment: _Segment, event: ElicitationAnsweredEvent) -> None:
        asked = self.elicited.pop(event.request_id, None)
        start = asked.ts if asked is not None else event.ts - timedelta(seconds=event.seconds)
        attributes: dict[str, AttributeValue] = {
            "aah.request_id": event.request_id,
            "aah.elicitation.server": event.server,
            "aah.elicitation.action": event.action,
            "aah.human.answered_by": self.who(event.answered_by),
            "aah.human.fallback_used": event.answered_by == FALLBACK,
            "aah.human.wait_seconds": round((event.ts - start).total_seconds(), 3),
            "openinference.span.kind": "CHAIN",
        }
        self.child(segment, f"elicitation {event.server}", event, start, attributes)

    def answered(self, event: HumanAnswerEvent | ApprovalDecidedEvent) -> None:
        """The wait for a person, from the ask to this reply: a span under the part that asked."""
        asked, part = self.asked.pop(event.request_id, (None, None))
        start = asked.ts if asked is not None else event.ts
        request = self.requests.get(event.request_id)
        waited = round((event.ts - start).total_seconds(), 3)
        attributes: dict[str, AttributeValue] = {
            **self.common,
            "aah.request_id": event.request_id,
            "aah.human.wait_seconds": waited,
            "openinference.span.kind": "CHAIN",
        }
        if request is not None and request.deadline is not None:
            attributes["aah.human.deadline"] = request.deadline.isoformat()
        if request is not None and request.fallback:
            attributes["aah.human.fallback"] = request.fallback
        if isinstance(event, HumanAnswerEvent):
            name = "ask_human"
            by = event.answered_by
            attributes |= {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "ask_human",
                "aah.human.channel": _channel(by),
                "aah.human.answered_by": self.who(by),
                "aah.human.declined": event.declined,
                "aah.human.fallback_used": by == FALLBACK,
            }
            if event.flags:
                attributes["aah.human.flags"] = list(event.flags)
            if self.facts.content:
                if isinstance(asked, HumanQuestionEvent):
                    attributes["aah.human.question"] = asked.question
                attributes["aah.human.answer"] = event.answer
        else:
            name = f"approval {event.tool}"
            by = event.decided_by
            attributes |= {
                "gen_ai.tool.name": event.tool,
                "gen_ai.tool.call.id": event.call_id,
                "aah.approval.decision": event.decision,
                "aah.approval.outcome": event.outcome,
                "aah.human.channel": _channel(by),
                "aah.human.answered_by": self.who(by),
                "aah.human.fallback_used": event.timed_out or by == FALLBACK,
            }
            if self.facts.content and event.reason:
                attributes["aah.approval.reason"] = event.reason
        self.spans.append(
            SpanRecord(
                name=name,
                trace_id=self.facts.trace_id,
                span_id=_hex(f"{self.facts.trace_id}:wait:{event.request_id}", 16),
                parent_id=part,
                start=start,
                end=event.ts,
                attributes=attributes,
                closed_by=event.seq,
            )
        )

    def who(self, answered_by: str) -> str:
        """Who answered, as spans may say it: a person's name only with the operator's consent."""
        if answered_by in RESERVED_NAMES or not answered_by or self.facts.person_names:
            return answered_by or "unknown"
        return "person"


def session_spans(
    facts: SessionFacts,
    events: Sequence[Event],
    requests: Mapping[str, HumanRequestRecord] | None = None,
    *,
    close_open: bool = False,
    closed_by: int | None = None,
) -> list[SpanRecord]:
    """The spans of a session's events, in the order they closed, scrubbed of secrets.

    Args:
        facts: The session and what its spans say beyond its events.
        events: Its events, in order (all of them, or the first ones).
        requests: Its human requests by id (deadline and fallback of each wait).
        close_open: End a part still running at the last event (an export of
            a session that is still running, or crashed); else it is left out.
        closed_by: Only the spans the event of this ``seq`` closed (a live
            exporter's, as each event comes).
    """
    builder = _Builder(facts, requests or {})
    for event in events:
        builder.add(event)
    if close_open and builder.segment is not None and events:
        builder.close(events[-1], extra={"aah.part.ended": "open"})
    spans = builder.spans
    if closed_by is not None:
        spans = [span for span in spans if span.closed_by == closed_by]
    scrubber = Scrubber()  # the known secrets read once for all the spans
    for span in spans:
        # Every text through the one scrubber: nothing exported holds a known secret.
        span.attributes = _scrubbed(span.attributes, scrubber)
        span.error = scrubber.text(span.error) if span.error is not None else None
    return spans


def requests_of(
    events: Sequence[Event], lookup: Callable[[str], HumanRequestRecord | None], since: int = 0
) -> dict[str, HumanRequestRecord]:
    """The human requests answered by ``events`` after ``since``, looked up by id."""
    found: dict[str, HumanRequestRecord] = {}
    for event in events:
        if event.seq > since and isinstance(event, HumanAnswerEvent | ApprovalDecidedEvent):
            request = lookup(event.request_id)
            if request is not None:
                found[event.request_id] = request
    return found


def _tool_error(event: ToolCallEvent) -> str:
    """What went wrong with a failed call, as ``error.type`` says it."""
    if event.check != "ok":
        return f"check_{event.check}"  # stopped before it ran (a ToolScan pattern)
    if event.status_code is not None:
        return str(event.status_code)
    # No response: an MCP tool's error, or an HTTP timeout, refusal or replay miss.
    return "mcp_error" if event.protocol == "mcp" else "no_response"


def _finish_reason(event: ModelCallEvent) -> str:
    if event.cut_off:
        return "length"
    return "tool_calls" if event.n_tool_calls else "stop"


def _channel(answered_by: str) -> str:
    """How the answer came: a machine channel by its name, else the desk (people, deadline)."""
    if answered_by in RESERVED_NAMES and answered_by != FALLBACK:
        return answered_by
    return "queue"


def _server(url: str | None) -> dict[str, AttributeValue]:
    if not url:
        return {}
    parts = urlsplit(url)
    found: dict[str, AttributeValue] = {}
    if parts.hostname:
        found["server.address"] = parts.hostname
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is not None:
        found["server.port"] = port
    return found


def _earliest(start: datetime, children: Sequence[SpanRecord]) -> datetime:
    return min([start, *(child.start for child in children)])


def _json(value: object) -> str:
    import json

    return json.dumps(value, ensure_ascii=False, default=str)


def _scrub(text: str) -> str:
    return scrub_text(text) or ""


def _scrubbed(
    attributes: dict[str, AttributeValue], scrubber: Scrubber | None = None
) -> dict[str, AttributeValue]:
    """Every text value through the one scrubber: nothing exported holds a known secret."""
    scrub_one = scrubber.text if scrubber is not None else _scrub
    clean: dict[str, AttributeValue] = {}
    for key, value in attributes.items():
        if isinstance(value, str):
            clean[key] = scrub_one(value)
        elif isinstance(value, list):
            clean[key] = [scrub_one(item) for item in value]
        else:
            clean[key] = value
    return clean
