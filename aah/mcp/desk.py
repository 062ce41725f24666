"""aah's human desk for MCP agents: questions and calls to approve go to the store's queue.

Each MCP client (by the name it gives) is one session of an external agent,
so its questions (``ask_human``) and calls to approve (``request_approval``,
a request of kind ``approval``) show in the web page and the terminal app
like any agent's, are claimed and decided there, and are counted by ``aah
report``. A request's id is derived from the client and its ``id`` (or its
text), so a client that gave up waiting and asks again gets the same
request: an answer or decision given meanwhile is never lost.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any, Literal, NamedTuple, TypeVar

from aah.errors import AahError
from aah.events import (
    ApprovalDecidedEvent,
    ApprovalRequestedEvent,
    Event,
    HumanAnswerEvent,
    HumanQuestionEvent,
)
from aah.mcp.schema import parameters, parameters_of
from aah.runtime import (
    IDK_REPLY,
    ApprovalReply,
    ApprovalRequest,
    HumanRequest,
    QueueApprover,
    QueueHuman,
    SessionEnded,
)
from aah.scoring import EXTERNAL_MODEL_PREFIX
from aah.store import SessionStore
from aah.tools import ParameterSpec

T = TypeVar("T")

# Called while a question waits, with the seconds waited: keeps the client's request alive.
Progress = Callable[[float], Awaitable[None]]


class Question(NamedTuple):
    """One ``ask_human`` call, as the MCP client sent it.

    Attributes:
        question: What the agent asks.
        context: What a person needs to know to answer, if given.
        deadline: Seconds to wait for a person; None waits until answered.
        fallback: The answer when the deadline passes (default: "I don't know").
        ask_id: The client's id for the question; asking again with it
            returns the same request's answer.
    """

    question: str
    context: str | None = None
    deadline: float | None = None
    fallback: str | None = None
    ask_id: str | None = None


# What a deadline with no decision applies to a call (``request_approval``'s fallback).
ApprovalFallback = Literal["reject", "approve"]
APPROVAL_FALLBACKS: tuple[ApprovalFallback, ...] = ("reject", "approve")
# The method shown beside an external agent's call: it is no HTTP request aah makes.
EXTERNAL_METHOD = "MCP"


class ApprovalAsk(NamedTuple):
    """One ``request_approval`` call, as the MCP client sent it.

    Attributes:
        tool: The tool the agent wants to call.
        arguments: The arguments it proposes.
        deadline: Seconds to wait for a decision; None waits until decided.
        fallback: What applies when the deadline passes: ``reject`` (default) or ``approve``.
        ask_id: The client's id for the call; asking again with it returns the same decision.
        context: What a person needs to know to decide, if given.
        input_schema: The tool's JSON schema, if given: an edit is checked
            against it (else against the types of the proposed arguments).
    """

    tool: str
    arguments: dict[str, Any]
    deadline: float | None = None
    fallback: str = "reject"
    ask_id: str | None = None
    context: str | None = None
    input_schema: dict[str, Any] | None = None


class HumanDesk:
    """Questions from MCP clients into the queue, answers back to them.

    Args:
        store: The session store the web page and terminal app answer from.
        poll_seconds: How often a waiting question looks for its answer.
        progress_seconds: How often a waiting client is told the question still waits.
    """

    def __init__(
        self, store: SessionStore, *, poll_seconds: float = 0.5, progress_seconds: float = 10.0
    ) -> None:
        self.store = store
        self.poll_seconds = poll_seconds
        self.progress_seconds = progress_seconds
        # Requests being waited on in this process, by id: a client that asks
        # again while the first ask still waits joins it (one request, one log).
        self._inflight: dict[str, asyncio.Future[Any]] = {}

    def session_for(self, client: str) -> str:
        """The session that holds ``client``'s questions (made on first use)."""
        session_id = f"mcp-{_digest(client)}"
        self.store.open_session(
            f"Questions from the MCP agent {client!r}",
            aah=True,
            model=f"{EXTERNAL_MODEL_PREFIX}{client}",  # how ``aah report`` finds it
            session_id=session_id,
        )
        return session_id

    async def ask(self, question: Question, client: str, progress: Progress | None = None) -> str:
        """Wait for a person's answer to ``question`` (or its fallback) and return it."""
        session_id = await asyncio.to_thread(self.session_for, client)
        request_id = f"{session_id}-{_digest(question.ask_id or question.question)}"
        shared = self._shared(
            request_id, lambda: self._ask(question, client, session_id, request_id)
        )
        text: str = await self._waiting(shared, progress)
        return text

    async def _ask(self, question: Question, client: str, session_id: str, request_id: str) -> str:
        """Log ``question`` (once), wait for its answer and log that (once)."""
        known = await asyncio.to_thread(self.store.get_human_request, request_id)
        if known is None:
            asked = HumanQuestionEvent(
                session_id=session_id, request_id=request_id, question=question.question
            )
            await asyncio.to_thread(self.store.set_status, session_id, "waiting", [asked])
        channel = QueueHuman(
            self.store, poll_seconds=self.poll_seconds, deadline_seconds=question.deadline
        )
        request = HumanRequest(
            request_id=request_id,
            session_id=session_id,
            question=question.question,
            context=_context(question, client),
        )
        reply = await channel.ask(request)
        fell_back = reply.answered_by == "deadline-fallback"
        text = (question.fallback or IDK_REPLY) if fell_back else reply.text
        if not await asyncio.to_thread(self._answer_logged, session_id, request_id):
            answer = HumanAnswerEvent(
                session_id=session_id,
                request_id=request_id,
                answer=text,
                answered_by=reply.answered_by,
                seconds=reply.seconds,
                declined=reply.declined,
            )
            await asyncio.to_thread(self.store.set_status, session_id, "running", [answer])
        return text

    async def approve(
        self, call: ApprovalAsk, client: str, progress: Progress | None = None
    ) -> dict[str, Any]:
        """Wait for a person's decision on ``call`` (or the deadline's fallback).

        Returns:
            How the call ended (science.md §7): ``outcome`` (``approved``,
            ``edited``, ``rejected``, ``terminated`` or ``timed_out``), ``run``
            (whether to make the call), ``arguments`` (those to run it with),
            ``reason``, ``decided_by``, and ``fallback`` when it timed out.

        Raises:
            AahError: the fallback is neither ``reject`` nor ``approve``.
        """
        if call.fallback not in APPROVAL_FALLBACKS:
            raise AahError(
                f"fallback {call.fallback!r} is no decision: "
                "use 'reject' (the default) or 'approve'"
            )
        session_id = await asyncio.to_thread(self.session_for, client)
        proposed = json.dumps(call.arguments, sort_keys=True, ensure_ascii=False)
        call_id = _digest(call.ask_id or f"{call.tool} {proposed}")
        request_id = f"{session_id}-{call_id}-approval"
        request = ApprovalRequest(
            request_id=request_id,
            session_id=session_id,
            call_id=call_id,
            tool=call.tool,
            method=EXTERNAL_METHOD,
            arguments=call.arguments,
            parameters=[p.model_dump(mode="json") for p in _parameters(call)],
            rule=f"the MCP client {client} asked for approval",
            deadline_seconds=call.deadline,
            fallback="approve" if call.fallback == "approve" else "reject",
            context={"query": call.context or "", "agent": f"MCP client {client}"},
        )
        shared = self._shared(request_id, lambda: self._approve(request))
        decided: ApprovalDecidedEvent = await self._waiting(shared, progress)
        return _approval_result(decided, call)

    async def _approve(self, request: ApprovalRequest) -> ApprovalDecidedEvent:
        """Log ``request`` (once), wait for its decision and log that (once)."""
        session_id, request_id, call_id = request.session_id, request.request_id, request.call_id
        known = await asyncio.to_thread(self.store.get_human_request, request_id)
        if known is None:
            asked = ApprovalRequestedEvent(
                session_id=session_id,
                request_id=request_id,
                call_id=call_id,
                tool=request.tool,
                method=EXTERNAL_METHOD,
                arguments=request.arguments,
                rule=request.rule,
            )
            await asyncio.to_thread(self.store.set_status, session_id, "waiting", [asked])
        approver = QueueApprover(QueueHuman(self.store, poll_seconds=self.poll_seconds))
        try:
            reply = await approver.decide(request, _any_edit)
        except SessionEnded as exc:
            reply = ApprovalReply(decision="terminate", reason=str(exc), decided_by="aah")
        decided = _decided_event(request, reply, request.fallback)
        logged = await asyncio.to_thread(self._logged, session_id, request_id, decided.kind)
        if isinstance(logged, ApprovalDecidedEvent):
            return logged  # decided before: the client reads the decision logged then
        await asyncio.to_thread(self.store.set_status, session_id, "running", [decided])
        return decided

    def _shared(self, request_id: str, start: Callable[[], Awaitable[T]]) -> asyncio.Future[T]:
        """The wait on ``request_id`` in this process, started with ``start`` if none runs."""
        running = self._inflight.get(request_id)
        if running is None:
            running = asyncio.ensure_future(start())
            self._inflight[request_id] = running
            running.add_done_callback(lambda _: self._inflight.pop(request_id, None))
        return running

    async def _waiting(self, work: asyncio.Future[T], progress: Progress | None) -> T:
        """``work``'s result, telling ``progress`` every so often that it still waits.

        A client that gives up (its request cancelled) leaves ``work`` running:
        the answer is logged when it comes, for whoever asks again.
        """
        wait = asyncio.shield(work)
        started = time.monotonic()
        while True:
            done, _ = await asyncio.wait({wait}, timeout=self.progress_seconds)
            if done:
                return wait.result()
            if progress is not None:
                await progress(time.monotonic() - started)

    def _answer_logged(self, session_id: str, request_id: str) -> bool:
        # Asked again (the client gave up, or the server restarted meanwhile):
        # the answer is logged once, whichever ask received it first.
        return self._logged(session_id, request_id, "human_answer") is not None

    def _logged(self, session_id: str, request_id: str, kind: str) -> Event | None:
        """The event of ``kind`` already logged for ``request_id``, if any."""
        for event in self.store.events(session_id):
            if event.kind == kind and getattr(event, "request_id", None) == request_id:
                return event
        return None


def _parameters(call: ApprovalAsk) -> list[ParameterSpec]:
    """What a face checks an edit of ``call`` against: its schema's, else its arguments' types."""
    if call.input_schema:
        return parameters(call.input_schema)
    return parameters_of(call.arguments)


def _any_edit(arguments: dict[str, Any]) -> str | None:
    # aah does not know the external tool's schema: the agent checks an edit itself.
    return None


def _decided_event(
    request: ApprovalRequest, reply: ApprovalReply | None, fallback: str
) -> ApprovalDecidedEvent:
    """The one decision on ``request`` as logged (None: the deadline's fallback applied)."""
    if reply is None:
        applied: ApprovalFallback = "approve" if fallback == "approve" else "reject"
        reply = ApprovalReply(decision=applied, decided_by="deadline-fallback")
    decision, arguments, reason = reply.decision, reply.arguments, reply.reason
    if decision == "edit" and arguments is None:
        decision, reason = "reject", "the edit gave no arguments"  # nothing to run
    elif decision == "edit" and arguments == request.arguments:
        decision, arguments = "approve", None  # an edit that changed nothing (science.md §7)
    elif decision != "edit":
        arguments = None
    return ApprovalDecidedEvent(
        session_id=request.session_id,
        request_id=request.request_id,
        call_id=request.call_id,
        tool=request.tool,
        decision=decision,
        arguments=arguments,
        reason=reason,
        decided_by=reply.decided_by,
        timed_out=reply.decided_by == "deadline-fallback",
    )


def _approval_result(decided: ApprovalDecidedEvent, call: ApprovalAsk) -> dict[str, Any]:
    """What the MCP client reads: how the call ended and what, if anything, to run."""
    run = decided.decision in ("approve", "edit")
    result: dict[str, Any] = {
        "outcome": decided.outcome,
        "run": run,
        "arguments": (decided.arguments or call.arguments) if run else None,
        "reason": decided.reason,
        "decided_by": decided.decided_by,
    }
    if decided.timed_out:
        result["fallback"] = decided.decision
    return result


def _context(question: Question, client: str) -> dict[str, Any]:
    """What the person answering sees beside the question, as agents' questions carry it."""
    context: dict[str, Any] = {"query": question.context or "", "agent": f"MCP client {client}"}
    if question.fallback is not None:
        context["fallback"] = question.fallback
    return context


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", errors="replace")).hexdigest()[:16]
