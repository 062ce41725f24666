"""The human tools aah serves MCP agents: ask_human and request_approval, on the desk's queue.

Each MCP client (by the name it gives) is one session of an external agent,
so its questions (``ask_human``) and calls to approve (``request_approval``,
a request of kind ``approval``) show in the web page and the terminal app
like any agent's, are claimed and decided there, and are counted by ``aah
report``. A request's id is derived from the client and its ``id`` (or,
without one, its whole content), so a client that gave up waiting and asks
again gets the same request: an answer or decision given meanwhile is never
lost. An id is bound to what it first asked: the same id with other content
(another question, another call or other arguments) is refused in one line,
never handed the first one's answer or decision. What a client sends is
checked against one set of caps (``aah.mcp.caps``) before anything is
logged, whichever transport brought it. The same
requests serve as MCP tasks (``start_ask``, ``start_approval``, ``task_view``,
``cancel``; see ``aah.mcp.tasks``).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, Literal, NamedTuple, TypeVar

from aah.desk import QuestionContext, approval_context, question_context
from aah.errors import AahError
from aah.events import (
    ApprovalDecidedEvent,
    ApprovalRequestedEvent,
    Event,
    HumanAnswerEvent,
    HumanQuestionEvent,
)
from aah.mcp.caps import check_data, check_deadline, check_text
from aah.mcp.intake import CLIENT_INFO_CHARS
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
from aah.store import HumanRequestRecord, SessionStore
from aah.terminal_text import printable
from aah.tools import ParameterSpec

T = TypeVar("T")

# Called while a question waits, with the seconds waited: keeps the client's request alive.
Progress = Callable[[float], Awaitable[None]]

# Who settled a request the MCP client itself withdrew (``tasks/cancel``), as the log shows it.
CANCELLED_BY = "mcp-client-cancelled"
# What asking a cancelled question again returns: the cancel settled it.
CANCELLED_ANSWER = "no answer: the MCP client cancelled this question"
# How long a task's creation waits for its request to reach the store before giving up.
CREATE_SECONDS = 30.0


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


class TaskView(NamedTuple):
    """Where one question or call to approve stands, as an MCP task reports it.

    Attributes:
        status: ``working`` (a person has yet to answer), ``completed``,
            ``cancelled`` (the client withdrew it) or ``failed``.
        message: The status in words, for the client.
        created: When the request entered the queue.
        updated: When it last changed.
        tool: The tool asked: ``ask_human`` or ``request_approval``.
        value: What the tool returns, once completed: the answer's text, or
            the decision as ``request_approval`` returns it.
    """

    status: Literal["working", "completed", "cancelled", "failed"]
    message: str
    created: datetime
    updated: datetime
    tool: str
    value: str | dict[str, Any] | None = None


class HumanTools:
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
        # What each of those waits was asked for (a digest): an id is bound to it.
        self._contents: dict[str, str | None] = {}
        # Why a wait in this process failed, by request id: a task reports it.
        self._failed: dict[str, str] = {}
        # Logging a request's one settling event (an answer, a decision, the
        # client's cancel) checks the log first: one at a time, so never two.
        self._settling = asyncio.Lock()

    def session_for(self, client: str) -> str:
        """The session that holds ``client``'s questions (made on first use)."""
        client = client_label(client)
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
        _, shared = await self._asking(question, client)
        text: str = await self._waiting(shared, progress)
        return text

    async def start_ask(self, question: Question, client: str) -> str:
        """Put ``question`` in the queue (once) and return its request id, without waiting.

        The wait goes on in this process: a deadline's fallback applies and the
        answer is logged as for ``ask``; ``task_view`` reads where it stands.
        """
        request_id, shared = await self._asking(question, client)
        await self._created(request_id, shared)
        return request_id

    async def _asking(self, question: Question, client: str) -> tuple[str, asyncio.Future[str]]:
        """``question``'s request id and the wait on it (joined if one runs).

        Raises:
            AahError: ``question`` is past a cap, or its id names another question.
        """
        question, client = _checked_question(question), client_label(client)
        content = _digest(_question_content(question.question, question.context, question.fallback))
        session_id = await asyncio.to_thread(self.session_for, client)
        request_id = f"{session_id}-{_digest(question.ask_id) if question.ask_id else content}"
        reused = f"id {question.ask_id!r} already names another question of this client"
        await self._check_bound(request_id, content, reused)
        shared = self._shared(
            request_id, content, reused, lambda: self._ask(question, client, session_id, request_id)
        )
        return request_id, shared

    async def _ask(self, question: Question, client: str, session_id: str, request_id: str) -> str:
        """Log ``question`` (once), wait for its answer and log that (once)."""
        known = await asyncio.to_thread(self.store.humans.get_human_request, request_id)
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
        text = (question.fallback or IDK_REPLY) if fell_back else reply.answer
        async with self._settling:
            logged = await asyncio.to_thread(self._logged, session_id, request_id, "human_answer")
            if isinstance(logged, HumanAnswerEvent):
                return logged.answer  # settled before (asked again, or the client cancelled)
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
            ``edited``, ``rejected``, ``responded``, ``terminated`` or
            ``timed_out``), ``run`` (whether to make the call), ``arguments``
            (those to run it with), ``reason``, ``decided_by``, ``response``
            (a person's result, used instead of the call) when responded, and
            ``fallback`` when it timed out.

        Raises:
            AahError: the fallback is neither ``reject`` nor ``approve``.
        """
        _, shared = await self._approving(call, client)
        decided: ApprovalDecidedEvent = await self._waiting(shared, progress)
        return _approval_result(decided, call.arguments)

    async def start_approval(self, call: ApprovalAsk, client: str) -> str:
        """Put ``call`` in the queue to approve (once) and return its request id, without waiting.

        Raises:
            AahError: the fallback is neither ``reject`` nor ``approve``.
        """
        request_id, shared = await self._approving(call, client)
        await self._created(request_id, shared)
        return request_id

    async def _approving(
        self, call: ApprovalAsk, client: str
    ) -> tuple[str, asyncio.Future[ApprovalDecidedEvent]]:
        """``call``'s request id and the wait for a decision on it (joined if one runs)."""
        call, client = _checked_call(call), client_label(client)
        shown = [p.model_dump(mode="json") for p in _parameters(call)]
        content = _digest(
            _call_content(call.tool, call.arguments, call.context, call.fallback, shown)
        )
        session_id = await asyncio.to_thread(self.session_for, client)
        call_id = _digest(call.ask_id) if call.ask_id else content
        request_id = f"{session_id}-{call_id}-approval"
        reused = f"id {call.ask_id!r} already names another call of this client"
        await self._check_bound(request_id, content, reused)
        request = ApprovalRequest(
            request_id=request_id,
            session_id=session_id,
            call_id=call_id,
            tool=call.tool,
            method=EXTERNAL_METHOD,
            arguments=call.arguments,
            parameters=shown,
            rule=f"the MCP client {client} asked for approval",
            deadline_seconds=call.deadline,
            fallback="approve" if call.fallback == "approve" else "reject",
            context=QuestionContext(
                asker=f"MCP client {client}", query=call.context or "", content_digest=content
            ),
        )
        return request_id, self._shared(request_id, content, reused, lambda: self._approve(request))

    async def _approve(self, request: ApprovalRequest) -> ApprovalDecidedEvent:
        """Log ``request`` (once), wait for its decision and log that (once)."""
        session_id, request_id, call_id = request.session_id, request.request_id, request.call_id
        known = await asyncio.to_thread(self.store.humans.get_human_request, request_id)
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
        async with self._settling:
            logged = await asyncio.to_thread(self._logged, session_id, request_id, decided.kind)
            if isinstance(logged, ApprovalDecidedEvent):
                return logged  # decided before: the client reads the decision logged then
            await asyncio.to_thread(self.store.set_status, session_id, "running", [decided])
        return decided

    async def _check_bound(self, request_id: str, content: str, reused: str) -> None:
        """Refuse asking ``request_id`` for ``content`` when the store holds it for other content.

        Raises:
            AahError: the request was asked before with other content (an id reused).
        """
        record = await asyncio.to_thread(self.store.humans.get_human_request, request_id)
        # Requests made before ids were bound carry no digest: nothing to compare.
        held = None if record is None else question_context(record.context).content_digest
        if held is not None and held != content:
            raise AahError(_reuse_refusal(reused))

    def _shared(
        self,
        request_id: str,
        content: str | None,
        reused: str,
        start: Callable[[], Awaitable[T]],
    ) -> asyncio.Future[T]:
        """The wait on ``request_id`` in this process, started with ``start`` if none runs.

        Raises:
            AahError: a wait on ``request_id`` runs for other ``content`` (an id reused).
        """
        running = self._inflight.get(request_id)
        if running is None:
            running = asyncio.ensure_future(start())
            self._inflight[request_id] = running
            self._contents[request_id] = content
            running.add_done_callback(lambda done: self._settled(request_id, done))
        elif None not in (content, self._contents.get(request_id)):
            if self._contents[request_id] != content:
                raise AahError(_reuse_refusal(reused))
        return running

    def _settled(self, request_id: str, done: asyncio.Future[Any]) -> None:
        """Forget the wait on ``request_id``; keep why it failed, if it did."""
        self._inflight.pop(request_id, None)
        self._contents.pop(request_id, None)
        if not done.cancelled() and done.exception() is not None:
            self._failed[request_id] = str(done.exception()) or type(done.exception()).__name__

    async def _created(self, request_id: str, work: asyncio.Future[Any]) -> None:
        """Return once ``request_id`` is in the store (a task exists only once it is there).

        Raises:
            AahError: the wait failed before, or never wrote the request.
        """
        waited = 0.0
        while await asyncio.to_thread(self.store.humans.get_human_request, request_id) is None:
            if work.done():
                work.result()  # the wait's own error, if it failed
            if waited >= CREATE_SECONDS:
                raise AahError(f"the request {request_id} did not reach the store: try again")
            await asyncio.sleep(0.02)
            waited += 0.02

    async def task_view(self, request_id: str, client: str) -> TaskView | None:
        """Where ``client``'s request ``request_id`` stands; None if it has no such request.

        A request whose wait is not running in this process (the server
        restarted since it was asked) is waited on again, so its deadline's
        fallback still applies and its answer is logged.
        """
        client = client_label(client)
        found = await asyncio.to_thread(self._found, request_id, client)
        if found is None:
            return None
        record, events = found
        tool = "request_approval" if record.kind == "approval" else "ask_human"
        settled = next(
            (
                event
                for event in events
                if isinstance(event, HumanAnswerEvent | ApprovalDecidedEvent)
                and event.request_id == request_id
            ),
            None,
        )
        if isinstance(settled, HumanAnswerEvent | ApprovalDecidedEvent):
            by = (
                settled.answered_by if isinstance(settled, HumanAnswerEvent) else settled.decided_by
            )
            if by == CANCELLED_BY:
                return TaskView(
                    "cancelled", "the client cancelled it", record.created, settled.ts, tool
                )
            if isinstance(settled, HumanAnswerEvent):
                return TaskView(
                    "completed",
                    f"answered by {by}",
                    record.created,
                    settled.ts,
                    tool,
                    settled.answer,
                )
            asked = next(
                (
                    e
                    for e in events
                    if isinstance(e, ApprovalRequestedEvent) and e.request_id == request_id
                ),
                None,
            )
            proposed = asked.arguments if asked is not None else {}
            value = _approval_result(settled, proposed)
            return TaskView(
                "completed", f"decided by {by}", record.created, settled.ts, tool, value
            )
        if request_id in self._failed:
            return TaskView(
                "failed", self._failed[request_id], record.created, record.created, tool
            )
        if request_id not in self._inflight:
            self._resume(record, client)
        return TaskView(
            "working", "waiting for a person in aah's queue", record.created, record.created, tool
        )

    async def cancel(self, request_id: str, client: str) -> TaskView | None:
        """Withdraw ``client``'s request ``request_id`` from the queue, logged once.

        A request already answered or decided stays as it is (cancelling is
        cooperative). A question is logged as declined by ``CANCELLED_BY``, a
        call to approve as terminated by it.

        Returns:
            Where the request stands afterwards; None if ``client`` has no such request.
        """
        found = await asyncio.to_thread(self._found, request_id, client)
        if found is None:
            return None
        record, _ = found
        async with self._settling:
            await asyncio.to_thread(self._withdraw, record)
        return await self.task_view(request_id, client)

    def _withdraw(self, record: HumanRequestRecord) -> None:
        """Log the client's cancel of ``record`` unless it is settled; take it off the queue."""
        session_id, request_id = record.session_id, record.id
        kind = "approval_decided" if record.kind == "approval" else "human_answer"
        if self._logged(session_id, request_id, kind) is not None:
            return
        seconds = max(0.0, (datetime.now(record.created.tzinfo) - record.created).total_seconds())
        event: Event
        if record.kind == "approval":
            call = approval_context(record.context).call
            event = ApprovalDecidedEvent(
                session_id=session_id,
                request_id=request_id,
                call_id=call.call_id,
                tool=call.tool,
                decision="terminate",
                reason="the MCP client cancelled the request",
                decided_by=CANCELLED_BY,
            )
        else:
            event = HumanAnswerEvent(
                session_id=session_id,
                request_id=request_id,
                answer=CANCELLED_ANSWER,
                answered_by=CANCELLED_BY,
                seconds=seconds,
                declined=True,
            )
        # Logged first: a wait that sees the request leave the queue finds it settled.
        self.store.set_status(session_id, "running", [event])
        self.store.humans.expire_human_request(request_id)

    def _found(self, request_id: str, client: str) -> tuple[HumanRequestRecord, list[Event]] | None:
        """``request_id``'s record and its session's log, if it is ``client``'s request."""
        record = self.store.humans.get_human_request(request_id)
        # Only the client's own requests: a task id is no way into other agents' questions.
        if record is None or record.session_id != self.session_for(client):
            return None
        return record, list(self.store.events(record.session_id))

    def _resume(self, record: HumanRequestRecord, client: str) -> None:
        """Wait again on ``record`` (asked before this process started), in the background."""
        if record.kind == "approval":
            request = ApprovalRequest.from_stored(approval_context(record.context))
            held = request.context.content_digest
            self._shared(record.id, held, "", lambda: self._approve(request))
            return
        context = question_context(record.context)
        question = Question(
            record.question, context=context.query or None, fallback=context.fallback_answer
        )
        held = context.content_digest
        self._shared(
            record.id, held, "", lambda: self._ask(question, client, record.session_id, record.id)
        )

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

    def _logged(self, session_id: str, request_id: str, kind: str) -> Event | None:
        """The event of ``kind`` already logged for ``request_id``, if any."""
        for event in self.store.events(session_id):
            if event.kind == kind and getattr(event, "request_id", None) == request_id:
                return event
        return None


def client_label(name: str) -> str:
    """A client's name as aah shows and stores it: one line, no controls, at most 200 characters.

    The name is the client's own (``clientInfo.name``); every face shows it
    beside the client's questions, so it carries no terminal controls, and
    it is bounded like every field (``aah mcp serve`` refuses a longer one).
    A client that gives none is ``unknown``.
    """
    shown = " ".join(printable(name).split()) or "unknown"
    return shown if len(shown) <= CLIENT_INFO_CHARS else shown[: CLIENT_INFO_CHARS - 1] + "…"


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
        response=reply.response if decision == "respond" else "",
        decided_by=reply.decided_by,
        timed_out=reply.decided_by == "deadline-fallback",
    )


def _approval_result(decided: ApprovalDecidedEvent, proposed: dict[str, Any]) -> dict[str, Any]:
    """What the MCP client reads: how the call ended and what, if anything, to run."""
    run = decided.decision in ("approve", "edit")
    result: dict[str, Any] = {
        "outcome": decided.outcome,
        "run": run,
        "arguments": (decided.arguments or proposed) if run else None,
        "reason": decided.reason,
        "decided_by": decided.decided_by,
    }
    if decided.decision == "respond":
        result["response"] = decided.response  # a person's result: use it instead of calling
    if decided.timed_out:
        result["fallback"] = decided.decision
    return result


def _context(question: Question, client: str) -> QuestionContext:
    """What the person answering sees beside the question, as agents' questions carry it."""
    digest = _digest(_question_content(question.question, question.context, question.fallback))
    return QuestionContext(
        asker=f"MCP client {client}",
        query=question.context or "",
        fallback_answer=question.fallback,
        content_digest=digest,
    )


def _checked_question(question: Question) -> Question:
    """``question`` within the caps every transport shares, its deadline as seconds.

    Raises:
        OutOfBounds: a field is past its cap, or the deadline is no bounded number of seconds.
    """
    for field in ("question", "context", "fallback"):
        check_text(getattr(question, field), field)
    check_text(question.ask_id, "id")
    return question._replace(deadline=check_deadline(question.deadline))


def _checked_call(call: ApprovalAsk) -> ApprovalAsk:
    """``call`` within the caps every transport shares, its deadline as seconds.

    Raises:
        AahError: the fallback is no decision, or a field is past its cap.
    """
    if call.fallback not in APPROVAL_FALLBACKS:
        raise AahError(
            f"fallback {call.fallback!r} is no decision: use 'reject' (the default) or 'approve'"
        )
    check_text(call.tool, "tool")
    check_text(call.context, "context")
    check_text(call.ask_id, "id")
    check_data(call.arguments, "arguments")
    check_data(call.input_schema, "input_schema")
    return call._replace(deadline=check_deadline(call.deadline))


def _question_content(question: str, context: str | None, fallback: str | None) -> str:
    """What binds a question's id: everything the client asked but the deadline."""
    return json.dumps(["ask_human", question, context or "", fallback], ensure_ascii=False)


def _call_content(
    tool: str,
    arguments: dict[str, Any],
    context: str | None,
    fallback: str,
    parameters: list[dict[str, Any]],
) -> str:
    """What binds a call's id: the call, what a person is shown of it, and its fallback."""
    content = ["request_approval", tool, arguments, context or "", fallback, parameters]
    return json.dumps(content, sort_keys=True, ensure_ascii=False)


def _reuse_refusal(reused: str) -> str:
    return (
        f"{reused} (its answer or decision is for that one): use a new id for a new request, "
        "or ask again with the same content to get its answer"
    )


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", errors="replace")).hexdigest()[:16]
