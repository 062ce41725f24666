"""Approvers: how a tool call that needs approval reaches a person, and the decision back.

An approver has one async method, ``decide``. The session driver does not
know who decides: the person at this terminal (``ConsoleApprover``), anyone
watching the shared queue (``QueueApprover``, a request of kind
``approval``), a script in a test, or, in batch runs, the oracle or the
simulated user (``aah.benchmark.failtalms.humans``). ``approver_for`` finds
the approver that goes with a human channel.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterable
from datetime import timedelta
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field, field_validator

from aah.bounds import OutOfBounds, check_seconds, parse_json
from aah.desk import (
    ApprovalContext,
    CallToApprove,
    Decision,
    QuestionContext,
    decision_of,
    rule_words,
)
from aah.runtime.approval_policy import TimeoutStep
from aah.runtime.humans import ConsoleHuman, Parked, QueueHuman, SessionEnded, while_waiting
from aah.runtime.work_clock import waiting_for_person
from aah.store import HumanRequestRecord

# Given proposed arguments, why they cannot run (one line), or None when they can.
EditCheck = Callable[[dict[str, Any]], str | None]


class ApprovalRequest(BaseModel):
    """A tool call for a person to approve, edit, reject, or to terminate its session.

    Attributes:
        request_id: The human request carrying this ask (one per ask).
        session_id: The calling session.
        call_id: The id the model gave the call.
        tool: The qualified tool name.
        method: The endpoint's HTTP method.
        url: The endpoint's URL template.
        arguments: The arguments the model proposed.
        parameters: The endpoint's parameters (name, type, required, enum...),
            for a face that builds an edit form.
        rule: The policy rule that made the call need approval, in words.
        ask: 1 for the first ask; more when a deadline asked again.
        deadline_seconds: How long a person has for this ask; None: forever.
        fallback: What this ask's deadline brings (``ask_again``, ``reject``, ``approve``).
        context: What else a person may want, as a question's: the task, the
            tools the agent was given, the steps so far.
    """

    request_id: str
    session_id: str
    call_id: str
    tool: str
    method: str
    url: str = ""
    arguments: dict[str, Any] = Field(default_factory=dict)
    parameters: list[dict[str, Any]] = Field(default_factory=list)
    rule: str = ""
    ask: int = 1
    deadline_seconds: float | None = None
    fallback: TimeoutStep = "reject"
    context: QuestionContext = Field(default_factory=QuestionContext)

    @field_validator("deadline_seconds")
    @classmethod
    def _bounded(cls, value: float | None) -> float | None:
        """A deadline is finite, positive and bounded: no clock can add 1e18 seconds."""
        return None if value is None else check_seconds(value, "the deadline")

    @property
    def summary(self) -> str:
        """The call on one line: ``POST booking__create {"room": 2}``."""
        arguments = json.dumps(self.arguments, ensure_ascii=False)
        return f"{self.method} {self.tool} {arguments}"

    def stored_context(self) -> ApprovalContext:
        """What the queue keeps with the request: the question's context and the call."""
        call = CallToApprove.model_validate(self.model_dump(mode="json", exclude={"context"}))
        return ApprovalContext.model_validate({**self.context.stored(), "call": call})

    @classmethod
    def from_stored(cls, context: ApprovalContext) -> ApprovalRequest:
        """The request a stored approval's context holds (``stored_context``'s inverse)."""
        question = QuestionContext.model_validate(context.model_dump(exclude={"call"}))
        return cls.model_validate({**context.call.model_dump(), "context": question})


# A decision on one call: the desk's decision, under the name approvers have used.
ApprovalReply = Decision


@runtime_checkable
class Approver(Protocol):
    """Anything that can decide on a tool call waiting for approval."""

    async def decide(self, request: ApprovalRequest, check: EditCheck) -> ApprovalReply | None:
        """The decision on ``request``, or None when no one decided before its deadline.

        ``check`` says why edited arguments cannot run; an approver that lets
        a person edit uses it to refuse an invalid edit before returning it.
        """
        ...


class ScriptedApprover:
    """Decides from a list, in order (or with a function of the request): for tests."""

    def __init__(
        self,
        decisions: Iterable[ApprovalReply | None]
        | Callable[[ApprovalRequest], ApprovalReply | None],
    ) -> None:
        """Decide with ``decisions`` in order (None: the deadline passes), or with a function."""
        self._decisions = decisions if callable(decisions) else iter(list(decisions))
        self.asked: list[ApprovalRequest] = []

    async def decide(self, request: ApprovalRequest, check: EditCheck) -> ApprovalReply | None:
        """The next scripted decision; a rejection once the list is used up."""
        self.asked.append(request)
        if callable(self._decisions):
            return self._decisions(request)
        default = ApprovalReply(decision="reject", reason="no more decisions", decided_by="script")
        return next(self._decisions, default)


class QueueApprover:
    """Puts the call in the store's queue (kind ``approval``) and waits for a decision.

    The same queue, claims and deadlines as questions (``QueueHuman``, whose
    settings it takes): the request id comes from the session, the call and
    the ask, so a restarted runner finds the request it wrote before; with
    ``park`` it raises :class:`Parked` while the request is pending.
    """

    _LIVENESS_POLLS = 10

    def __init__(self, queue: QueueHuman) -> None:
        """Decide through ``queue``'s store, poll interval, annotators and parking."""
        self.queue = queue

    async def decide(self, request: ApprovalRequest, check: EditCheck) -> ApprovalReply | None:
        """Enqueue ``request`` (once); the first decision, or None at its deadline.

        An edit is checked by the runner, not here (see ``aah.runtime.approval_gate``).

        Raises:
            Parked: The queue parks and the request is still pending.
            SessionEnded: The session was cancelled while it waited.
        """
        with waiting_for_person():
            record = await self._store(
                self.queue.store.humans.get_human_request, request.request_id
            )
            if record is None:
                record = await self._store(self._create, request)
            polls = 0
            while record.status == "pending":
                if record.deadline is not None and self.queue.clock.now() >= record.deadline:
                    await self._store(
                        self.queue.store.humans.expire_human_request, request.request_id
                    )
                    return None
                if self.queue.park:
                    raise Parked(record.id, record.deadline)
                polls += 1
                if polls % self._LIVENESS_POLLS == 0:
                    await self._check_session(request.session_id)
                await asyncio.sleep(self.queue.poll_seconds)
                found = await while_waiting(
                    self.queue.store.humans.get_human_request, request.request_id
                )
                assert found is not None
                record = found
        if record.status == "expired":
            return None
        reply = decision_of(record)
        seconds = _seconds_between(record.created, record.answered_at)
        return reply.model_copy(update={"seconds": seconds})

    def _create(self, request: ApprovalRequest) -> HumanRequestRecord:
        deadline = None
        if request.deadline_seconds is not None:
            deadline = self.queue.clock.now() + timedelta(seconds=request.deadline_seconds)
        return self.queue.store.humans.create_human_request(
            request.session_id,
            f"Approve this call? {request.summary}",
            request.stored_context().stored(),
            k=self.queue.annotators,
            request_id=request.request_id,
            deadline=deadline,
            fallback=request.fallback if deadline is not None else None,
            kind="approval",
        )

    async def _store(self, call: Callable[..., Any], *args: Any) -> Any:
        # A parking queue serves batch runs, which write to the store inline.
        if self.queue.park:
            return call(*args)
        return await while_waiting(call, *args)

    async def _check_session(self, session_id: str) -> None:
        session = await while_waiting(self.queue.store.get_session, session_id)
        if session is not None and session.status not in ("running", "waiting"):
            raise SessionEnded(f"the session was {session.status} while it waited for a person")


def _seconds_between(start: Any, end: Any) -> float:
    try:
        return max(0.0, float((end - start).total_seconds()))
    except TypeError:
        return 0.0


class ConsoleApprover:
    """Asks the person at this terminal: a approve, e edit, r reject, s respond, t terminate.

    An edit is typed as a JSON object and checked against the endpoint's
    parameters at once; an invalid one is refused with the reason and asked
    again (an empty line goes back to the choice). A response is the text
    the agent reads as the call's result, the call not run.
    """

    _CHOICES = {
        "a": "approve",
        "approve": "approve",
        "e": "edit",
        "edit": "edit",
        "r": "reject",
        "reject": "reject",
        "s": "respond",
        "respond": "respond",
        "t": "terminate",
        "terminate": "terminate",
    }

    def __init__(
        self,
        prompt: Callable[[str], str] | None = None,
        say: Callable[[str], None] | None = None,
    ) -> None:
        """Read lines with ``prompt`` and show text with ``say`` (default: the terminal)."""
        self._prompt = prompt or _terminal_prompt
        self._say = say or _terminal_say

    async def decide(self, request: ApprovalRequest, check: EditCheck) -> ApprovalReply | None:
        """Show the call and read a decision (never None: the terminal waits)."""
        started = time.perf_counter()
        with waiting_for_person():
            reply = await asyncio.to_thread(self._read, request, check)
        return reply.model_copy(update={"seconds": time.perf_counter() - started})

    def _read(self, request: ApprovalRequest, check: EditCheck) -> ApprovalReply:
        why = f"\n{rule_words(request.rule)}" if request.rule else ""
        self._say(f"approve? {request.summary}{why}")
        while True:
            typed = self._prompt("[a]pprove, [e]dit, [r]eject, re[s]pond, [t]erminate")
            choice = self._CHOICES.get(typed.strip().lower())
            if choice is None:
                self._say("type a, e, r, s or t (or approve, edit, reject, respond, terminate)")
            elif choice == "approve":
                return ApprovalReply(decision="approve", decided_by="console")
            elif choice == "edit":
                arguments = self._read_edit(request, check)
                if arguments is not None:
                    return ApprovalReply(decision="edit", arguments=arguments, decided_by="console")
            elif choice == "respond":
                response = self._prompt("the result the agent reads (empty: back)").strip()
                if response:
                    return ApprovalReply(
                        decision="respond", response=response, decided_by="console"
                    )
            else:
                reason = self._prompt(f"reason (optional) to {choice}").strip()
                return ApprovalReply(decision=choice, reason=reason, decided_by="console")

    def _read_edit(self, request: ApprovalRequest, check: EditCheck) -> dict[str, Any] | None:
        self._say(f"arguments now: {json.dumps(request.arguments, ensure_ascii=False)}")
        while True:
            text = self._prompt("new arguments as JSON (empty: back)").strip()
            if not text:
                return None
            try:
                arguments = parse_json(text, "the edit")
            except json.JSONDecodeError as exc:
                self._say(f"not JSON ({exc.msg} at column {exc.colno}): type it again")
                continue
            except OutOfBounds as exc:
                self._say(f"refused: {exc}; type it again")
                continue
            if not isinstance(arguments, dict):
                self._say('the arguments are a JSON object, e.g. {"city": "Oslo"}: type it again')
                continue
            problem = check(arguments)
            if problem is not None:
                self._say(f"refused: {problem}: type it again")
                continue
            return arguments


def _terminal_prompt(label: str) -> str:
    from rich.markup import escape
    from rich.prompt import Prompt

    # Escaped: "[a]pprove" is no markup tag.
    return Prompt.ask(f"[bold]{escape(label)}[/]", default="", show_default=False)


def _terminal_say(text: str) -> None:
    from rich.console import Console
    from rich.markup import escape

    from aah.terminal_text import printable

    Console().print(f"[bold magenta]{escape(printable(text))}[/]", highlight=False)


def approver_for(channel: object) -> Approver | None:
    """The approver that goes with a human channel, or None when it cannot decide on calls."""
    if isinstance(channel, Approver):
        return channel
    if isinstance(channel, QueueHuman):
        return QueueApprover(channel)
    if isinstance(channel, ConsoleHuman):
        return ConsoleApprover()
    return None
