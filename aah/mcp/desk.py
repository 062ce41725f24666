"""aah's human desk for MCP agents: ``ask_human`` puts a question in the store's queue.

Each MCP client (by the name it gives) is one session of an external agent,
so its questions show in the web page and the terminal app like any agent's,
are claimed and answered there, and are counted by ``aah report``. A
question's id is derived from the client and its ``id`` (or its text), so a
client that gave up waiting and asks again gets the same request: an answer
given meanwhile is never lost.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple

from aah.events import HumanAnswerEvent, HumanQuestionEvent
from aah.runtime import IDK_REPLY, HumanRequest, QueueHuman
from aah.store import SessionStore

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

    def session_for(self, client: str) -> str:
        """The session that holds ``client``'s questions (made on first use)."""
        session_id = f"mcp-{_digest(client)}"
        self.store.open_session(
            f"Questions from the MCP agent {client!r}",
            aah=True,
            model=f"mcp:{client}",
            session_id=session_id,
        )
        return session_id

    async def ask(self, question: Question, client: str, progress: Progress | None = None) -> str:
        """Wait for a person's answer to ``question`` (or its fallback) and return it."""
        session_id = await asyncio.to_thread(self.session_for, client)
        request_id = f"{session_id}-{_digest(question.ask_id or question.question)}"
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
        wait = asyncio.ensure_future(channel.ask(request))
        started = time.monotonic()
        while True:
            done, _ = await asyncio.wait({wait}, timeout=self.progress_seconds)
            if done:
                break
            if progress is not None:
                await progress(time.monotonic() - started)
        reply = wait.result()
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

    def _answer_logged(self, session_id: str, request_id: str) -> bool:
        # Asked again (the client gave up, or the server restarted meanwhile):
        # the answer is logged once, whichever ask received it first.
        return any(
            isinstance(event, HumanAnswerEvent) and event.request_id == request_id
            for event in self.store.events(session_id)
        )


def _context(question: Question, client: str) -> dict[str, Any]:
    """What the person answering sees beside the question, as agents' questions carry it."""
    context: dict[str, Any] = {"query": question.context or "", "agent": f"MCP client {client}"}
    if question.fallback is not None:
        context["fallback"] = question.fallback
    return context


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", errors="replace")).hexdigest()[:16]
