"""Human channels: how an agent's question reaches a person and comes back.

Every channel has one async method, ``ask``. The session driver does not know
who answers: a person at this terminal, anyone watching the shared queue (the
web and terminal apps), a script in a test, or, in batch runs, an oracle or a
simulated user.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal, NamedTuple, Protocol, TypeVar

from pydantic import BaseModel, Field

from aah.bounds import check_seconds
from aah.clock import Clock
from aah.desk import (
    Answer,
    ElicitationRequest,
    ElicitationResult,
    QuestionContext,
    UserToolCall,
)
from aah.errors import AahError
from aah.extensions import HumanChannelName, choose
from aah.runtime.elicitations import (
    ElicitationAsk,
    console_elicitation,
    elicit_in_queue,
    scripted_result,
)
from aah.runtime.prompts import load_prompt
from aah.runtime.work_clock import waiting_for_person
from aah.store import ServerAwayError, SessionStore

# What a person "says" when no one answers in time, or a script runs out:
# the model reads it, so it is a prompt file with a version.
IDK_REPLY = load_prompt("idk_reply").render()
Fallback = Literal["idk", "skip"]
T = TypeVar("T")


class HumanRequest(BaseModel):
    """A question for a person, with what they need to answer it."""

    request_id: str
    session_id: str
    question: str
    context: QuestionContext = Field(default_factory=QuestionContext)


# A person's reply to a question: the desk's answer, under the name channels have used.
HumanReply = Answer


class SkipTask(Exception):  # noqa: N818 - a signal, not an error
    """Raised by a channel to end the session as skipped (no one will answer)."""


class SessionEnded(Exception):  # noqa: N818 - a signal, not an error
    """Raised by a channel whose session was ended elsewhere (cancelled) while it waited.

    The session's status is already stored; the driver leaves it as it is.
    """


class Parked(Exception):  # noqa: N818 - a signal, not an error
    """Raised by a parking channel: the question waits in the store, the session stops here.

    The session is left ``waiting`` with its checkpoint; whoever runs it again
    once the request is settled (``AnswerWatcher`` in a batch run, or
    ``aah sessions resume``) continues from the question with its answer.

    Attributes:
        request_id: The pending request.
        deadline: When its fallback answers instead, or None.
    """

    def __init__(self, request_id: str, deadline: datetime | None) -> None:
        super().__init__(f"waiting for a person to answer {request_id}")
        self.request_id = request_id
        self.deadline = deadline


class HumanChannel(Protocol):
    """Anything that can answer an agent's question.

    A channel whose class sets ``answers_at_once = True`` (an oracle, a
    script) answers in the step that asks, with no effect outside the process,
    so that asking it again after a crash is harmless: the graph does not
    pause for it (see ``SessionContext.answer_now``).
    """

    async def ask(self, request: HumanRequest) -> HumanReply:
        """Return the reply to ``request`` (may wait as long as a person needs)."""
        ...


class ScriptedHuman:
    """Replies from a list, in order (or from a function of the request): for tests."""

    def __init__(
        self,
        replies: Iterable[str] | Callable[[HumanRequest], str],
        name: str = "scripted",
        elicitations: Callable[[ElicitationRequest], ElicitationResult] | None = None,
        *,
        at_once: bool = True,
    ) -> None:
        """Answer with ``replies`` in order, or with what the function returns.

        ``elicitations`` answers MCP servers' questions (none: each is declined).
        ``at_once=False`` makes the session pause for each answer as it does
        for a person (the question stored, the graph interrupted and resumed).
        """
        self._replies = replies if callable(replies) else iter(list(replies))
        self.answers_at_once = at_once
        self.name = name
        self.asked: list[HumanRequest] = []
        self._elicitations = elicitations

    async def elicit(self, ask: ElicitationAsk) -> ElicitationResult:
        """The script's result for an MCP server's question."""
        return scripted_result(self._elicitations, ask, self.name)

    async def ask(self, request: HumanRequest) -> HumanReply:
        """The next scripted reply; "I don't know." once the list is used up."""
        self.asked.append(request)
        if callable(self._replies):
            text = self._replies(request)
        else:
            text = next(self._replies, IDK_REPLY)
        return HumanReply(answer=text, answered_by=self.name)


class ConsoleHuman:
    """Asks the person at this terminal (the ``aah run --human console`` default)."""

    def __init__(self, prompt: Callable[[str], str] | None = None) -> None:
        """Read answers with ``prompt`` (default: rich's prompt on the terminal)."""
        self._prompt = prompt or _rich_prompt
        # An MCP server's questions are not the agent's: their lines carry no "agent asks".
        self._line = prompt or _rich_line

    async def elicit(self, ask: ElicitationAsk) -> ElicitationResult:
        """An MCP server's question at this terminal, a line at a time (``console_elicitation``)."""
        started = time.perf_counter()
        with waiting_for_person():
            try:
                result = await asyncio.to_thread(console_elicitation, self._line, ask.request)
            except EOFError:
                return ElicitationResult(
                    action="cancel", answered_by="console", why="standard input is closed"
                )
        return result.model_copy(update={"seconds": time.perf_counter() - started})

    async def ask(self, request: HumanRequest) -> HumanReply:
        """Show the question and wait for a line; an empty line declines."""
        started = time.perf_counter()
        with waiting_for_person():
            try:
                text = await asyncio.to_thread(self._prompt, request.question)
            except EOFError:
                raise AahError(
                    "the agent asked a question, but standard input is closed: run it in a "
                    "terminal, pipe the answers in, or choose another --human (queue, oracle)"
                ) from None
        return HumanReply(
            answer=text.strip(),
            answered_by="console",
            seconds=time.perf_counter() - started,
            declined=not text.strip(),
        )


def _rich_prompt(question: str) -> str:
    from rich.markup import escape
    from rich.prompt import Prompt

    from aah.terminal_text import printable

    return Prompt.ask(
        f"[bold magenta]agent asks[/] {escape(printable(question))}\n[bold]your answer[/]",
        default="",
        show_default=False,
    )


def _rich_line(text: str) -> str:
    from rich.markup import escape
    from rich.prompt import Prompt

    from aah.terminal_text import printable

    return Prompt.ask(escape(printable(text)), default="", show_default=False)


class QueueHuman:
    """Puts the question in the store's queue and waits for anyone to answer it.

    The web and terminal apps answer from other processes. The request id is
    derived from the session and tool call, so a runner that restarts finds
    the request it wrote before, and an answer given meanwhile is not lost.
    The deadline is stored with the request (the queue shows it), and a
    restarted runner keeps the first deadline rather than starting a new one.
    The wait does not count against a task's work time (``work_clock``).

    With ``park`` the channel does not wait: while the request is pending it
    raises :class:`Parked`, so that a batch of thousands of waiting sessions
    holds no coroutine, thread or connection per session; the runner resumes
    each one when its request settles or its deadline passes.
    """

    # How many polls between checks that the session still lives (cancelled elsewhere).
    _LIVENESS_POLLS = 10

    def __init__(
        self,
        store: SessionStore,
        *,
        poll_seconds: float = 0.5,
        deadline_seconds: float | None = None,
        fallback: Fallback | HumanChannel = "idk",
        annotators: int = 1,
        park: bool = False,
        clock: Clock | None = None,
    ) -> None:
        """Wait on ``store``; after ``deadline_seconds`` use ``fallback``.

        Args:
            store: the shared session store.
            poll_seconds: how often to look for an answer.
            deadline_seconds: how long to wait; None waits forever.
            fallback: "idk" replies "I don't know.", "skip" ends the session as
                skipped, a channel is asked instead.
            annotators: how many people should answer (the first one decides).
            park: raise ``Parked`` instead of waiting while the request is pending.
            clock: what "now" is for the deadline; the store's clock by default.

        Raises:
            OutOfBounds: ``deadline_seconds`` is not a finite, positive,
                bounded number of seconds (``aah.bounds.check_seconds``).
        """
        self.store = store
        self.poll_seconds = poll_seconds
        self.deadline_seconds = (
            None if deadline_seconds is None else check_seconds(deadline_seconds, "the deadline")
        )
        self.fallback = fallback
        self.annotators = annotators
        self.park = park
        self.clock = clock or store.clock

    @property
    def fallback_name(self) -> str:
        """What answers at the deadline, as the queue shows it."""
        if isinstance(self.fallback, str):
            return self.fallback
        return str(getattr(self.fallback, "name", None) or type(self.fallback).__name__)

    async def ask(self, request: HumanRequest) -> HumanReply:
        """Enqueue ``request`` (once) and return the first answer or the fallback.

        Raises:
            SkipTask: The deadline passed and the fallback is ``skip``.
            SessionEnded: The session was cancelled while it waited.
            Parked: The channel parks and the request is still pending.
        """
        with waiting_for_person():
            return await self._wait(request)

    async def elicit(self, ask: ElicitationAsk) -> ElicitationResult:
        """Queue an MCP server's question (kind ``elicitation``); decline at the deadline."""
        return await elicit_in_queue(
            self.store,
            ask,
            deadline_seconds=self.deadline_seconds,
            poll_seconds=self.poll_seconds,
            clock=self.clock.now,
        )

    async def _store(self, call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        # A parking channel serves batch runs, whose session driver writes to
        # the store inline (sub-millisecond on WAL): a thread hand-off would
        # cost more, and give each worker thread its own connection and cache.
        if self.park:
            return call(*args, **kwargs)
        return await while_waiting(functools.partial(call, *args, **kwargs))

    async def _wait(self, request: HumanRequest) -> HumanReply:
        record = await self._store(self.store.humans.get_human_request, request.request_id)
        if record is None:
            deadline = None
            if self.deadline_seconds is not None:
                deadline = self.clock.now() + timedelta(seconds=self.deadline_seconds)
            record = await self._store(
                self.store.humans.create_human_request,
                request.session_id,
                request.question,
                request.context.stored(),
                k=self.annotators,
                request_id=request.request_id,
                deadline=deadline,
                fallback=self.fallback_name if deadline is not None else None,
            )
        polls = 0
        while record.status == "pending":
            if record.deadline is not None and self.clock.now() >= record.deadline:
                return await self._give_up(request)
            if self.park:
                raise Parked(record.id, record.deadline)
            polls += 1
            if polls % self._LIVENESS_POLLS == 0:
                await self._check_session(request)
            await asyncio.sleep(self.poll_seconds)
            found = await while_waiting(self.store.humans.get_human_request, request.request_id)
            assert found is not None
            record = found
        if record.status == "expired":
            return await self._give_up(request, expire=False)
        seconds = _seconds_between(record.created, record.answered_at)
        return HumanReply(
            answer=record.answer or "",
            answered_by=record.answered_by or "unknown",
            seconds=seconds,
            declined=record.status == "declined",
            # A call the person made with their own tools, from its own column.
            call=None if record.user_call is None else UserToolCall.from_stored(record.user_call),
        )

    async def _check_session(self, request: HumanRequest) -> None:
        session = await while_waiting(self.store.get_session, request.session_id)
        if session is not None and session.status not in ("running", "waiting"):
            # No session id in the text: a batch run groups its failures by message.
            raise SessionEnded(f"the session was {session.status} while it waited for a person")

    async def _give_up(self, request: HumanRequest, expire: bool = True) -> HumanReply:
        if expire:
            await self._store(self.store.humans.expire_human_request, request.request_id)
        if self.fallback == "skip":
            raise SkipTask(f"no one answered {request.question!r} in time")
        if self.fallback == "idk":
            return HumanReply(answer=IDK_REPLY, answered_by="deadline-fallback")
        return await self.fallback.ask(request)


def _seconds_between(start: Any, end: Any) -> float:
    try:
        return max(0.0, float((end - start).total_seconds()))
    except TypeError:
        return 0.0


# The pauses between tries while a waited-on store's server is away: a
# restart takes seconds, and a person's answer waits in it meanwhile.
_AWAY_PAUSES_S = (1.0, 2.0, 5.0)
_log = logging.getLogger(__name__)


async def while_waiting(call: Callable[..., T], /, *args: Any) -> T:
    """``call(*args)``, a store call made while a session waits for a person, on a thread.

    A server that cannot be reached (restarting, the network dropped) is
    tried again until it answers: the person's answer is kept there, and a
    wait for a person never fails a session. Said once, as a warning.
    """
    tries = 0
    while True:
        try:
            return await asyncio.to_thread(call, *args)
        except ServerAwayError as exc:
            if tries == 0:
                _log.warning("%s; still waiting for the answer, trying again", exc.problem)
            await asyncio.sleep(_AWAY_PAUSES_S[min(tries, len(_AWAY_PAUSES_S) - 1)])
            tries += 1


class ChannelOptions(NamedTuple):
    """What an interactive human channel's factory may need.

    Attributes:
        db: The session database whose queue the web and terminal apps watch.
        deadline_seconds: How long the queue waits for a person; None waits forever.
    """

    db: Path
    deadline_seconds: float | None = None


HumanChannelFactory = Callable[[ChannelOptions], HumanChannel]

# Who answers an interactive session (``aah run --human``), by name.
HUMAN_CHANNELS: dict[HumanChannelName, HumanChannelFactory] = {
    "console": lambda options: ConsoleHuman(),
    "queue": lambda options: QueueHuman(
        SessionStore(options.db), deadline_seconds=options.deadline_seconds
    ),
}


def make_human_channel(name: str, options: ChannelOptions) -> HumanChannel:
    """The interactive human channel called ``name`` (a key of :data:`HUMAN_CHANNELS`).

    Raises:
        AahError: No channel has that name; the message lists those that do.
    """
    return choose(HUMAN_CHANNELS, name, "human channel")(options)
